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
// Policy: parallel_tool_calls true; spawning_tools Agent and Task (their calls never reach
// the executor; if one does, it gets an error result).
//
// Limits, as Claude Code's defaults: Bash output is cut at 30000 characters
// (BASH_MAX_OUTPUT_LENGTH in hello's env overrides it) with "... [N lines truncated] ...";
// Bash timeout 120000 ms by default, 600000 ms at most; Glob lists 100 files; Grep's
// head_limit defaults to 250 and lines over 500 characters are omitted.
package claudecode
