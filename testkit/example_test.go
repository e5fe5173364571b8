package testkit_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/tapebox/tapebox/tape"
	"github.com/tapebox/tapebox/testkit"
	"github.com/tapebox/tapebox/testkit/miniagent"
)

// Record a scripted agent run through the gateway, replay the tape in a fresh directory
// without a model, and check the replay. In a test, NewProvider, NewGateway and Replay do the
// same with t and clean up by themselves.
func Example() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "testkit-example-")
	defer os.RemoveAll(dir)

	// Record: a scripted model, the recording gateway, a small real agent.
	p, _ := testkit.StartProvider(testkit.Script{Threads: []testkit.Thread{{Name: "main", Turns: []testkit.Turn{
		{Calls: []tape.ToolCall{testkit.Call("Bash", map[string]string{"command": "echo hi > hello.txt && cat hello.txt"})}},
		{Text: "Wrote hello.txt."},
	}}}})
	defer p.Close()
	g, _ := testkit.StartGateway(p.URL(), filepath.Join(dir, "run.json"), testkit.Harness("claude-code"))
	work := filepath.Join(dir, "work")
	os.Mkdir(work, 0o755)
	answer, _ := miniagent.Run(ctx, miniagent.Config{BaseURL: g.URL, Provider: tape.ProviderAnthropic,
		Prompt: "Say hi in hello.txt.", Dir: work, APIKey: "placeholder"})
	rec, err := g.Finish()
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(answer, rec.Meta.Ended.Reason)

	// Replay in a fresh temporary directory and check.
	r, err := testkit.Run(ctx, g.Path, "local")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer r.Close()
	fmt.Println(r.Controller.Steps, "steps,", r.Controller.ToolCalls, "tool call")
	fmt.Println(testkit.CheckIdentical(r))
	fmt.Println(testkit.CheckFiles(r, map[string]string{"hello.txt": "hi\n"}))
	fmt.Println(testkit.CheckFiles(r, map[string]string{"hello.txt": "bye\n", "other.txt": ""}))
	// Output:
	// Wrote hello.txt. complete
	// 2 steps, 1 tool call
	// <nil>
	// <nil>
	// testkit.CheckFiles: 2 problems:
	// 	hello.txt: content "hi\n", want "bye\n"
	// 	other.txt: missing
}
