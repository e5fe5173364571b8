// Package gemini is the harness module for Google's Gemini CLI ("gemini-cli",
// @google/gemini-cli): its policy, and each tool call mapped to an action with the result
// worded as Gemini CLI 0.61.0 words it (packages/core/src/tools/*.ts in its bundle).
//
// A Gemini CLI result is a functionResponse: {"output": TEXT} when the tool succeeded,
// {"error": MESSAGE} when it failed (the tape's text and is_error). Tools performed in the
// sandbox:
//
//   - run_shell_command: `bash -c` of the command wrapped as the CLI wraps it (a subshell
//     whose EXIT trap lists its background jobs), in dir_path or the session's directory,
//     stdout and stderr together, ANSI escapes stripped and the whole trimmed; the text is
//     "Output: OUT" ("(empty)" for none), then "Exit Code: N" when not 0, "Signal: N",
//     "Background PIDs: ..." and "Process Group PGID: PID" (a volatile field of the harness
//     table), all inside <untrusted_context>. A failing command is not an error.
//
//   - read_file: the text of a file split on \r?\n and joined with \n, the first 2000 lines
//     (or start_line..end_line), lines over 2000 characters cut with "... [truncated]", and
//     the CLI's truncation header when it shows part of the file; "File not found: PATH"
//     and "Path is a directory, not a file: PATH" as errors. A file that is not text
//     (images, PDFs, binaries, by a NUL byte or its extension) replays the recorded result.
//
//   - write_file: writes the content (the file's CRLF line ends kept), creating parent
//     directories, "Successfully created and wrote to new file: PATH." or "Successfully
//     overwrote file: PATH.", then "Here is the updated code:" and the CLI's snippet (the
//     changed lines with 5 lines around, "..." between).
//
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
//
//   - list_directory: "Directory listing for DIR:" then directories first ("[DIR] name"),
//     then "name (N bytes)", by name; "Directory DIR is empty."; a directory with
//     .gitignore or .geminiignore rules in force replays the recorded result.
//
//   - glob: the CLI's GlobTool (node-glob in dir_path or the working directory, dot files
//     included, case folded unless case_sensitive, node_modules, .git, bower_components,
//     .svn and .hg never entered, symbolic links left out, as the CLI drops every entry
//     whose real path is not its own): "Found N file(s) matching "P" within DIR, sorted by
//     modification time (newest first):" and the absolute paths, or "No files found
//     matching pattern "P" within DIR"; its validation errors ("Search path does not exist
//     DIR", "Search path is not a directory: DIR", an empty pattern). Files changed in the
//     last day come first, newest first, the others by path (localeCompare). A restored
//     workspace does not keep the recording's modification times, and files written within
//     one clock tick tie (node-glob's readdir order breaks the tie), so where the sandbox
//     finds the same files as the recording, they are listed in the recording's order.
//
//   - grep_search: the CLI's RipGrepTool, the grep_search it registers when it finds ripgrep
//     (its own or a system one, as on the machines the fidelity tests run on): ripgrep's
//     files (hidden files and the CLI's excluded directories, *.log and *.tmp left out
//     unless no_ignore; include_pattern as --glob, matched from the working directory;
//     binary files, with a NUL byte, skipped) and lines (case folded unless case_sensitive,
//     fixed_strings, context, or before and after in its place, max_matches_per_file; a
//     line that is not UTF-8, which ripgrep's JSON gives as bytes, and one exclude_pattern
//     matches left out), cut at
//     total_max_matches (100) matches; one to three matches are searched again with 50 or 15
//     lines of context, as the CLI does; "Found N matches for pattern "P" in path "D"" with
//     "File: F" and "LN: line" ("LN- line" for context) blocks, "Found N files with matches"
//     for names_only, "No matches found for pattern ...", "Path does not exist: DIR".
//     ripgrep searches on four threads, so the order of files in its output (and which files
//     come before the limit) changes from run to run: the files the recording names come
//     first, in its order.
//
//   - write_todos: "Successfully updated the todo list. The current list is now:" and the
//     numbered list, or "Successfully cleared the todo list.".
//
// glob and grep_search replay the recording where the module cannot reproduce the CLI: an
// ignore file (.geminiignore, .ignore, .rgignore, and .gitignore in a git repository) in the
// searched tree or above the working directory (the CLI's file discovery and ripgrep each
// apply their own rules; so a search in a git repository with a .gitignore, the common case
// for real projects, is copied, not run),
// respect_git_ignore or respect_gemini_ignore false, an absolute glob or one with
// minimatch's extglobs or brace ranges, a regular expression JavaScript (which validates it
// first), Rust (ripgrep) and Go do not read alike (groups with flags or names, lookaround,
// back references, a line break), \b, \w, \d or \s (Unicode classes in Rust, ASCII ones
// in Go) over a file that is not ASCII (but for \bWORD\b, ASCII words, which is rewritten
// with Unicode word classes around it), a UTF-16 file (ripgrep decodes it), a binary file
// (a NUL byte) with a match before its NUL (whether ripgrep 13 prints it rests on its
// buffers and literal search), a path outside the working directory, and invalid
// parameters (the CLI's schema message). write_todos replays a list its validation
// refuses. TestGrepAgainstRipgrep runs the module and ripgrep (with the CLI's arguments)
// on random workspaces and calls.
//
// Every other tool replays its recorded result, marked copied (not run): web_fetch and
// google_web_search (the network), update_topic, enter_plan_mode, activate_skill, the
// background-process tools, MCP tools. A path outside the working directory replays too:
// the CLI's message names its own temporary directory. invoke_agent spawns a subagent,
// which the controller plays.
package gemini
