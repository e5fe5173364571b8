// Package claudecode is the harness module for Claude Code ("claude-code"): its policy,
// and each tool call mapped to an action with the result worded as Claude Code words it.
//
// The wording follows Claude Code 2.1.332 (see shared/captures/README.md) and keeps the
// tools of older versions (Glob, Grep, MultiEdit, NotebookEdit, TodoWrite, BashOutput,
// TaskOutput, KillShell). Where versions differ, the recorded result picks the variant:
// the "(file state is current ...)" suffix of Write and Edit, tab or arrow line numbers in
// Read, relative or absolute paths in Glob and Grep, the old or new truncation notes, and
// <tool_use_error> wrapping of errors.
//
// A recording of Claude Code 2.0 (meta.harness_version before 2.1) gets 2.0.77's wording
// where it differs: Read of the whole file with "→" numbers and no cap, Write and Edit with
// a cat -n snippet, a timed-out command "running in background", a long output cut with a
// count of lines. Claude Code 2.1 recordings run grep as the shell snapshot's ugrep would,
// where GNU grep can (see ugrepShadow).
//
// What the harness decides from outside the sandbox is taken from the recorded result, as a
// background task's id is: the page of a Read that the provider's token count cut (2.1) or
// refused (2.0), a write the harness refused for its own file-state reasons, and the
// <system-reminder> notes Claude Code 2.0 appends from its session's state (a TodoWrite
// nudge, news of a background command's output, with the replay's output file).
//
// Policy: parallel_tool_calls true; spawning_tools Agent and Task (their calls never reach
// the executor; if one does, it gets an error result).
//
// Limits, as Claude Code's defaults: Bash output over 30000 characters
// (BASH_MAX_OUTPUT_LENGTH in hello's env overrides it) is saved to
// <state_dir>/tool-results/<id>.txt and shown as a "<persisted-output>" 2 KB preview;
// a Bash command that outlives its timeout (120000 ms by default, 600000 ms at most) is
// moved to the background, not killed, and reported with its task id. Glob lists 100
// files; Grep's head_limit defaults to 250 and lines over 500 characters are omitted.
//
// Foreground Bash commands run as background tasks from the start (see action.Tasks), so
// that moving one to the background needs no restart; the working directory a command
// ends in is the next command's, reset to the session's cwd when it leaves it. A
// background task's output file, which the model may Read, holds the output so far and,
// once the command has ended, "\n[exited with code N]\n", as Claude Code's does.
package claudecode
