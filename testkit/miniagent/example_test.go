package miniagent_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/tapebox/tapebox/tape"
	"github.com/tapebox/tapebox/testkit/fakeprovider"
	"github.com/tapebox/tapebox/testkit/miniagent"
)

// The small agent runs the Bash calls a scripted model asks for, for real, in its directory.
func Example() {
	srv := fakeprovider.New(fakeprovider.Script{Threads: []fakeprovider.Thread{{Name: "main", Turns: []fakeprovider.Turn{
		{Calls: []tape.ToolCall{fakeprovider.Call("Bash", map[string]string{"command": "echo hi > hello.txt"})}},
		{Text: "Wrote hello.txt."},
	}}}})
	if err := srv.Start(); err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Close()
	dir, _ := os.MkdirTemp("", "miniagent-example-")
	defer os.RemoveAll(dir)
	final, err := miniagent.Run(context.Background(), miniagent.Config{BaseURL: srv.URL(), Provider: tape.ProviderAnthropic,
		Prompt: "Say hi in hello.txt.", Dir: dir, APIKey: "placeholder"})
	if err != nil {
		fmt.Println(err)
		return
	}
	data, _ := os.ReadFile(filepath.Join(dir, "hello.txt"))
	fmt.Printf("%s %q\n", final, data)
	// Output: Wrote hello.txt. "hi\n"
}
