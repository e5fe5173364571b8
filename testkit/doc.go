// Package testkit lets go test record agent runs as tapes, replay tapes against sandboxes,
// check what the replays did, and benchmark them, in the style of net/http/httptest and
// testing/fstest: helpers take a testing.TB and clean up with tb.Cleanup; checkers return
// one error listing every problem.
//
// A test that replays a recorded tape in a fresh container and checks its end state:
//
//	func TestFixBug(t *testing.T) {
//		r := testkit.Replay(t, "testdata/fix-bug.json", "docker-image:tapebox/sandbox:bookworm")
//		if err := testkit.CheckIdentical(r); err != nil {
//			t.Error(err)
//		}
//		if err := testkit.CheckSnapshot(r, "testdata/fix-bug.golden"); err != nil {
//			t.Error(err) // TAPEBOX_UPDATE=1 go test rewrites the golden file
//		}
//	}
//
// The sandbox is "local" (a fresh temporary directory, isolated with bubblewrap where the
// machine allows it, see package sandbox), "local:DIR", "unsafe-local" or "unsafe-local:DIR"
// (never isolated), "docker-image:IMAGE" or just an image reference (a
// fresh container, removed at the end), or "docker:NAME" (an existing container). Docker
// sandboxes skip the test when no engine answers or the image is missing, unless
// TAPEBOX_REQUIRE_DOCKER=1. The replay runs in executor mode with the model latency removed
// (Speed changes that); in a Docker sandbox it runs in the directory the tape was recorded in
// (meta.cwd), unless Cwd says otherwise.
//
// Checkers: CheckReachedEnd (every thread played to its end), CheckIdentical (compare finds
// no difference with the recording), CheckFiles (expected files and contents) and
// CheckSnapshot (every file, mode and content of the working directory against a golden file
// in testdata/, rewritten when Updating: the test package's own -update flag, if it defines
// one, or TAPEBOX_UPDATE=1; .git and the patterns of Exclude are left out). testkit defines
// no flag, so it never collides with a test package's; its advice names -update only where
// the package defines it.
//
// Recording: NewProvider serves a Script (a scripted model speaking the Anthropic and OpenAI
// wire formats) and NewGateway records the calls an agent makes through it into a tape, so a
// project can record its own tapes in its tests:
//
//	p := testkit.NewProvider(t, testkit.Script{Threads: []testkit.Thread{{Name: "main", Turns: []testkit.Turn{
//		{Calls: []tape.ToolCall{testkit.Call("Bash", map[string]string{"command": "make test"})}},
//		{Text: "Tests pass."},
//	}}}})
//	g := testkit.NewGateway(t, p.URL(), testkit.Harness("claude-code"))
//	// ... run the agent with ANTHROPIC_BASE_URL=g.URL ...
//	rec, err := g.Finish() // the tape, at g.Path
//
// Benchmarks: Bench replays a tape once per b.Loop iteration in a fresh sandbox and reports
// replay-ms/op, tool-ms/op, overhead-ms/step and steps/s; a failed replay fails the
// benchmark.
//
//	func BenchmarkFixBug(b *testing.B) {
//		testkit.Bench(b, "testdata/fix-bug.json", "docker-image:tapebox/sandbox:bookworm", testkit.Cwd("/app"))
//	}
//
// Run, StartProvider and StartGateway are the same without a testing.TB, for examples and
// programs; their callers close what they return.
//
// Forking: Fork runs a harness from step N of a recording onto another provider or model
// (package fork), and CheckVerify runs a verify command in the fork's final workspace, so a
// test can assert that a cheaper model still passes from step N:
//
//	r := testkit.Fork(t, "testdata/fix-bug.json", 2, provider.URL(), testkit.ForkModel("cheap-model"),
//		testkit.ForkCommand(nil, "claude", "-p", "Fix the bug."), testkit.ForkWorkdir("/tmp/fix-bug"))
//	if err := testkit.CheckVerify(r, "go test ./..."); err != nil {
//		t.Error(err)
//	}
package testkit
