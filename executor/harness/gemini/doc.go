// Package gemini is the harness module for Google's Gemini CLI ("gemini-cli",
// @google/gemini-cli): its policy, and each tool call mapped to an action with the result
// worded as Gemini CLI 0.61.0 words it (packages/core/src/tools/*.ts in its bundle).
//
// A Gemini CLI result is a functionResponse: {"output": TEXT} when the tool succeeded,
// {"error": MESSAGE} when it failed (the tape's text and is_error). Tools performed in the
// sandbox:
//   - run_shell_command: `bash -c` of the command wrapped as the CLI wraps it (a subshell
//     whose EXIT trap lists its background jobs), in dir_path or the session's directory,
//     stdout and stderr together, ANSI escapes stripped and the whole trimmed; the text is
//     "Output: OUT" ("(empty)" for none), then "Exit Code: N" when not 0, "Signal: N",
//     "Background PIDs: ..." and "Process Group PGID: PID" (a volatile field of the harness
//     table), all inside <untrusted_context>. A failing command is not an error.
//   - read_file: the text of a file split on \r?\n and joined with \n, the first 2000 lines
//     (or start_line..end_line), lines over 2000 characters cut with "... [truncated]", and
//     the CLI's truncation header when it shows part of the file; "File not found: PATH"
//     and "Path is a directory, not a file: PATH" as errors. A file that is not text
//     (images, PDFs, binaries, by a NUL byte or its extension) replays the recorded result.
//   - write_file: writes the content (the file's CRLF line ends kept), creating parent
//     directories, "Successfully created and wrote to new file: PATH." or "Successfully
//     overwrote file: PATH.", then "Here is the updated code:" and the CLI's snippet (the
//     changed lines with 5 lines around, "..." between).
//   - replace: old_string replaced exactly (every occurrence with allow_multiple, else
//     exactly one), CRLF files edited as LF and written back as CRLF, a trailing newline
//     kept as it was; "Successfully modified file: PATH (N replacements). Here is the
//     updated code: ..." and the CLI's errors (no occurrence, several, no change, file not
//     found, creating a file that exists). An empty old_string on a missing file creates it
//     ("Created new file: PATH with provided content."). An old_string the exact match misses
//     goes through the CLI's other strategies in its order: flexible (lines compared
//     trimmed, the new text re-indented), regex (its tokens with any whitespace between) and
//     fuzzy (a weighted Levenshtein distance within 10 %, with the CLI's "Applied fuzzy match
//     at line N." after the snippet). One none of them matches, which the recording shows
//     the CLI's model correction took, replays the recorded result.
//   - list_directory: "Directory listing for DIR:" then directories first ("[DIR] name"),
//     then "name (N bytes)", by name; "Directory DIR is empty."; a directory with
//     .gitignore or .geminiignore rules in force replays the recorded result.
//
// Every other tool replays its recorded result, marked copied (not run): glob and
// grep_search (ripgrep and the CLI's file discovery), web_fetch and google_web_search
// (the network), update_topic, enter_plan_mode, activate_skill, the background-process
// tools, MCP tools. A path outside the working directory replays too: the CLI's message
// names its own temporary directory. invoke_agent spawns a subagent, which the controller
// plays.
package gemini
