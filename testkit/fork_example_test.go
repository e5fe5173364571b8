package testkit_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/tapebox/tapebox/tape"
	"github.com/tapebox/tapebox/testkit"
	"github.com/tapebox/tapebox/testkit/miniagent"
)

// Fork a recorded run at step 2 onto "a cheaper model" (here a second scripted provider
// that continues differently) and check that the verify step still passes. The harness is
// the small real agent, run in this process; ForkCommand runs a real Claude Code or Codex.
func ExampleFork() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "testkit-fork-example-")
	defer os.RemoveAll(dir)
	bash := func(cmd string) tape.ToolCall { return testkit.Call("Bash", map[string]string{"command": cmd}) }
	agent := func(ctx context.Context, baseURL, work string) error {
		_, err := miniagent.Run(ctx, miniagent.Config{BaseURL: baseURL, Provider: tape.ProviderAnthropic,
			Prompt: "Count to three in n.txt.", Dir: work, APIKey: "placeholder"})
		return err
	}

	// The recording: three edits and a final answer, from a workspace with one file.
	p, _ := testkit.StartProvider(testkit.Script{Threads: []testkit.Thread{{Name: "main", Turns: []testkit.Turn{
		{Calls: []tape.ToolCall{bash("echo 1 > n.txt")}},
		{Calls: []tape.ToolCall{bash("echo 2 >> n.txt")}},
		{Calls: []tape.ToolCall{bash("echo 3 >> n.txt")}},
		{Text: "Counted."},
	}}}})
	defer p.Close()
	work := filepath.Join(dir, "work")
	os.Mkdir(work, 0o755)
	os.WriteFile(filepath.Join(work, "README"), []byte("count\n"), 0o644)
	g, _ := testkit.StartGateway(p.URL(), filepath.Join(dir, "run.json"), testkit.Workspace(work))
	agent(ctx, g.URL, work)
	if _, err := g.Finish(); err != nil {
		fmt.Println(err)
		return
	}

	// The cheaper model: from step 2 on it writes "three" instead of "3".
	cheap, _ := testkit.StartProvider(testkit.Script{Threads: []testkit.Thread{{Name: "main", Turns: []testkit.Turn{
		{Text: "never asked"}, {Text: "never asked"},
		{Calls: []tape.ToolCall{bash("echo three >> n.txt")}},
		{Text: "Counted, cheaply."},
	}}}})
	defer cheap.Close()
	r, err := testkit.StartFork(ctx, g.Path, 2, cheap.URL(), testkit.ForkModel("cheap-model"), testkit.ForkAgent(agent))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer r.Close()
	fmt.Println(r.Ended, "served:", r.Served["main"], "live:", r.Live, "cheap model calls:", len(cheap.Requests()))
	fmt.Println(r.Tape.Meta.ForkedFrom.Step, r.Tape.Meta.ForkedFrom.Overrides["model"])
	fmt.Println(testkit.CheckVerify(r, "grep -qx three n.txt"))
	err = testkit.CheckVerify(r, "grep -qx 3 n.txt")
	fmt.Println(strings.SplitN(err.Error(), ":", 2)[0], "failed")
	// Output:
	// complete served: 2 live: 2 cheap model calls: 2
	// 2 cheap-model
	// <nil>
	// testkit.CheckVerify failed
}
