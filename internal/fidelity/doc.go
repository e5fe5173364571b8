// Package fidelity tests the executor differentially against the real harnesses: it draws
// seeded, reproducible sequences of tool calls from a grammar per harness, runs each through
// the real harness (harnesses/, offline) against the scripted fake provider while the
// gateway records a tape, replays the tape in executor mode in a fresh sandbox, and compares
// the two with compare.Compare, the compare users run: every call and the end state.
//
// It lives under internal/ because it is test tooling: it drives real harness binaries
// (internal/testutil/realharness) and is run by go test (a quick seed set, gated like the other
// real-harness tests) and by make fidelity (many seeds; it writes docs/fidelity.md). It is
// no part of the tapebox CLI or of the executor.
//
// # Adding a harness
//
// A harness plugs in with two values: a Grammar and a Target.
//
//	var MyGrammar = fidelity.Grammar{
//		Harness: "codex",
//		// Generate draws the starting files and the calls from r; cwd is the absolute
//		// directory the harness will run in (calls may name absolute paths under it).
//		Generate: func(r *rand.Rand, cwd string) ([]fidelity.File, []fidelity.Call) { ... },
//	}
//	target := fidelity.Target{Harness: "codex", Version: "0.171.0", Run: realharness.RunCodex}
//	out := fidelity.Run(ctx, target, fidelity.NewSequence(MyGrammar, seed, cwd))
//
// Generate must depend on r and cwd alone, so that a seed names a sequence for good. Each
// Call is one model turn asking for one tool call; Class names the input class it exercises
// ("crlf", "missing-path", ...), which the scoreboard counts by. A grammar may also give
// Simplify, the simpler variants of a call that shrinking tries, and Classes, the known
// divergence classes with their reasons (see Class).
//
// A call of a freeform tool (Codex's apply_patch) has Kind "custom". A call may refer to an
// identifier the harness makes up in an earlier call's result ("<<exec session id:3>>", the
// session Codex's exec_command 3 left running, for write_stdin): the scripted provider fills
// it in from the results the harness sent, and the replay maps it as it maps any id.
//
// Claude Code (claude.go), Codex and Pi (codexpi.go, from the grammars of internal/grammar)
// are the harnesses so far, each at its pinned version and an older one, and Gemini CLI
// (gemini.go) at its pinned version. Gemini CLI names its calls itself (the Gemini API sends
// no ids): a recorded call is then the sequence's call at its place (callIndexes). A Target can
// replay at the harness's pace (Pace: the harness's time between turns and after the last,
// for Pi, whose background jobs outlive their command; the recording waits for such a job
// and Settle more, so that the replay's own job is done when it reads its end state), name
// the harness in the recording
// itself (Declare: the gateway cannot tell Pi from its traffic), and Codex and Pi run
// without capabilities (setpriv), as the local sandbox runs the executor. Gemini CLI
// (gemini.go) and OpenCode (opencode.go, its pinned version alone, run without --title: its
// title request, which the scripted model answers with the agent's first call, races that
// call at the gateway) come from internal/grammar too. OpenCode runs twice: with a model
// that is not a GPT (edit and write), and as "opencode-gpt" (opencode.go's OpenCodeGPT: the
// model gpt-fake, which gets apply_patch in their place); the recordings of both name the
// harness opencode, the scoreboard and the ledger keep them apart by the grammar's name.
//
// # Shrinking and regressions
//
// Shrink reduces a diverging sequence: it drops calls and files, then simplifies calls,
// while the sequence still diverges. Save writes the result as JSON under testdata/; the
// regression test replays every saved case and requires it identical (or, for a case saved
// with Known, its known class).
//
// # Scoreboard
//
// A Board tallies outcomes by harness, version and tool (calls tried, calls identical,
// sequences with an identical end state) and collects each divergence class with the seed
// that shows it; Board.Markdown writes docs/fidelity.md. Nothing in it is specific to one
// harness. make fidelity appends every outcome to a ledger (docs/fidelity-ledger, one JSON
// line a sequence: Entry) and writes the scoreboard of the whole ledger, so that runs made
// in chunks, per harness or version, add up to one page.
package fidelity
