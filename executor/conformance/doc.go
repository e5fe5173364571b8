// Package conformance holds only tests: they check that tapebox-exec formats tool results
// exactly as the real harnesses do.
//
// The capture half runs the real Claude Code, Codex CLI and pi coding agent (harnesses/,
// npm, offline) against a scripted fake provider that asks for each tool and variant, and
// stores each call, the directory before and after, and the result the harness sent back in
// its next request as fixtures in testdata/<harness>.json (go test -update). The comparison
// half gives tapebox-exec the same calls in an identical fresh directory (same absolute
// path) and checks that it returns the same results byte for byte, except for the fields
// the harness itself makes volatile, which are named in the harness table
// (tape/harnesses), the one a replay's compare reads too (see volatile_test.go).
//
// Sequences of calls nobody picked, from the seeded grammars of internal/grammar, are
// internal/fidelity's: each is recorded through the real harness and the gateway and
// replayed in executor mode, the path a user's tape takes (make fidelity).
package conformance
