// Package pi is the harness module for the pi coding agent ("pi",
// @mariozechner/pi-coding-agent): its policy, and each tool call mapped to an action with
// the result worded as Pi 0.73.1 words it (core/tools/*.js).
//
// Tools performed in the sandbox:
//   - read: the text from offset (1-based) for limit lines, cut at 2000 lines or 50 KB with
//     "[Showing lines A-B of N. Use offset=M to continue.]", "[K more lines in file. Use
//     offset=M to continue.]" after a limit that stops early, and Pi's errors (Node's
//     "ENOENT: no such file or directory, access '/app/x'", "Offset N is beyond end of
//     file (M lines total)"). No line numbers. An image (PNG, JPEG, GIF, WebP by its
//     first bytes) replays the recorded result: Pi resizes it with codecs of its own.
//   - bash: `/bin/bash -c COMMAND` in the session's directory, stdout and stderr together,
//     the last 2000 lines or 50 KB with "[Showing lines A-B of N. Full output: FILE]" (the
//     whole output kept in <state_dir>/tool-results/pi-bash-<id>.log, an identifier
//     field of the harness table), "(no output)", "Command exited with code N" and
//     "Command timed out after S seconds" (timeout is in seconds; Pi has no default).
//   - edit: edits[] of {oldText, newText} (or a JSON string of them, or the older
//     top-level oldText/newText), each matched once against the original text, exactly or
//     after Pi's fuzzy normalization (trailing spaces, smart quotes, dashes, special
//     spaces; not its NFKC step), CRLF and a BOM kept; "Successfully replaced N block(s) in
//     PATH." and Pi's not-found, not-unique, overlap, no-change and empty-oldText errors.
//   - write: parent directories made; "Successfully wrote N bytes to PATH", N counted in
//     UTF-16 code units as JavaScript's content.length counts them.
//   - ls: entries sorted case-insensitively as localeCompare sorts ASCII names, "/" after
//     a directory, 500 by default, "(empty directory)".
//
// A parameter missing or of the wrong type gets Pi's validation error ("Validation failed
// for tool ...", with the arguments as JSON.stringify(args, null, 2) writes them); a number
// given as a string, or the other way round, is converted first as Pi's validation does.
//
//   - grep (not among Pi's default tools): Pi runs `rg --json --hidden` and formats the
//     matches itself ("path:N: text", context lines "path-N- text" from the file, lines cut
//     at 500 UTF-16 units, 100 matches by default, "No matches found"). The search here is
//     action.Grep's, with ripgrep's file rules (.gitignore in a git repository, .ignore,
//     hidden files searched, binary files skipped), in path order; where the recording
//     lists the same lines in ripgrep's own order, that order is kept. A recording made
//     without ripgrep ("ripgrep (rg) is not available ...") or refused by it (a regex
//     ripgrep rejects) replays the recorded result.
//
// find (fd, whose version-dependent output Pi relativizes) and any tool of an extension
// replay the recorded result (Noop).
//
// Older versions, by hello's harness_version and the harness table's Since (checked against
// Pi 0.67.1): edit of a file it cannot open says "File not found: P" before 0.71; bash
// before 0.73 formats only the last 64 KiB chunks it read while they held more than 100 KB.
//
// Policy: parallel_tool_calls true (Pi's agent loop runs one answer's calls together);
// spawning_tools none.
package pi
