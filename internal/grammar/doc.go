// Package grammar holds what the seeded tool-call grammars of the harnesses share: the
// starting directory of a generated sequence (files of every shape users meet: empty,
// huge, binary, non-UTF-8, CRLF, long lines, many lines, no final newline, unicode and
// spaces in names, symlinks, directories, read-only and executable modes) and the pickers
// the per-harness grammars (grammar/codex, grammar/pi, grammar/gemini, grammar/opencode) draw their inputs from.
//
// A grammar is a pure function of a *rand.Rand: the same seed gives the same sequence, so a
// divergence found by the differential tests (executor/conformance) is reproduced by its
// seed alone.
package grammar
