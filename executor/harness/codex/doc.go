// Package codex is the harness module for the Codex CLI ("codex"): its policy, and each
// tool call mapped to an action with the result worded as Codex words it.
//
// Tools performed in the sandbox:
//   - exec_command (unified exec): "Chunk ID: XXXXXX\nWall time: S.SSSS seconds\nProcess
//     exited with code N\nOriginal token count: T\nOutput:\n<output>". A command still
//     running after yield_time_ms (default 10000, clamped to 250..30000) keeps running as
//     a session ("Process running with session ID N" instead of the exit code), polled
//     and fed by write_stdin (default yield 250 ms). The yield, and the wall time, start
//     once the command has had 150 ms to exit (a quick command reports 0.0000 seconds),
//     or 100 ms after write_stdin's characters. As in Codex 0.171: with tty true the
//     command runs in a pseudo-terminal (echo, "\r\n" line ends, 80x24), without it
//     stdin is /dev/null and write_stdin can only poll ("stdin is closed for this
//     session ..."); with login true (the default) the command runs as `bash -c CMD` in
//     the environment of the session's shell snapshot, a login shell run once. Tokens
//     are counted as Codex approximates them, ceil(bytes/4); output over
//     max_output_tokens (default 10000) is cut in the middle with "…N tokens
//     truncated…", after the lines "Warning: truncated output (original token count: T)"
//     and "Total output lines: N". A workdir that is missing or not a directory gets
//     Codex's "exec_command failed: CreateProcess { ... }" and nothing runs.
//   - apply_patch (custom tool, or a function tool with {"input": PATCH}, or a shell call
//     whose argv is ["apply_patch", PATCH]): the full patch grammar of package action;
//     success "Exit code: 0\nWall time: 0 seconds\nOutput:\nSuccess. Updated the following
//     files:\nA path\nM path\nD path\n", failure "apply_patch verification failed: ...",
//     a patch of no hunks "patch rejected: empty patch". As in Codex 0.171, lines a patch
//     adds to a file end as its first line ends ("\r\n" in a CRLF file), context lines
//     keep their ends, and a file that is not UTF-8 or a directory cannot be updated or
//     deleted. A recording of Codex before 0.162 (hello's harness_version; the harness
//     table's Since) gets that version's patches: every rewritten line ends in "\n".
//   - shell and local_shell (argv) and shell_command (a script) of older versions: their
//     JSON output {"output":...,"metadata":{"exit_code":N,"duration_seconds":S}}, or the
//     text form "Exit code: N\nWall time: S seconds\nOutput:\n..." when the recorded
//     result uses it (shell_command defaults to the text form).
//
// A tool the recorded request did not offer (hello's "tools", when the controller sends
// them) gets Codex's "unsupported call: NAME", and nothing runs: Codex 0.171 offers no
// shell, shell_command or update_plan, which older versions did.
//
// Everything else is a Noop (update_plan, view_image, web_search, request_user_input,
// get_goal, create_goal, update_goal, tool_search, MCP tools ...): the recorded result is
// replayed; update_plan without one answers "Plan updated", as Codex does.
//
// Policy: parallel_tool_calls true (Codex sends parallel_tool_calls: true); spawning tool:
// spawn_agent, of the multi_agent_v1 namespace ("Tools for spawning and managing
// sub-agents"). The namespace's other tools (send_input, wait_agent, close_agent,
// resume_agent) manage agents the controller plays, so they replay their recordings.
//
// Codex's function-call outputs carry no error flag, so results here have is_error false
// except for requests the executor could not perform at all (a spawning call, a tool with
// no recording to replay).
package codex
