// Package minirec records one small real run for tests: the mini agent (testkit/miniagent)
// through a real gateway against the scripted fake provider, two parallel Bash calls, a
// subagent and a last look at the files. The controller's and the simulator's tests replay
// the tape it writes.
package minirec

import (
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/gateway"
	"github.com/tapebox/tapebox/tape"
	"github.com/tapebox/tapebox/testkit/fakeprovider"
	"github.com/tapebox/tapebox/testkit/miniagent"
)

// Script is the run: main asks for two Bash calls at once, then spawns a subagent (marker
// SUBTASK-1) that writes sub/two.txt, then reads both files.
func Script() fakeprovider.Script {
	bash := func(cmd string) tape.ToolCall { return fakeprovider.Call("Bash", map[string]string{"command": cmd}) }
	return fakeprovider.Script{Threads: []fakeprovider.Thread{
		{Name: "main", Turns: []fakeprovider.Turn{
			{Text: "Two at once.", Calls: []tape.ToolCall{bash("echo one > one.txt && echo made one"), bash("mkdir -p sub && echo ready")}},
			{Calls: []tape.ToolCall{fakeprovider.Call("Agent", map[string]string{"prompt": "SUBTASK-1: write sub/two.txt"})}},
			{Calls: []tape.ToolCall{bash("cat one.txt sub/two.txt")}},
			{Text: "All done."},
		}},
		{Name: "sub", Marker: "SUBTASK-1", Turns: []fakeprovider.Turn{
			{Calls: []tape.ToolCall{bash("echo two > sub/two.txt")}},
			{Text: "Wrote sub/two.txt."},
		}},
	}}
}

// Record runs the mini agent with provider p (streaming or not) through a gateway against
// Script in a fresh directory, and returns the tape and its path.
func Record(t testing.TB, p tape.Provider, stream bool) (*tape.Tape, string) {
	t.Helper()
	up := httptest.NewServer(fakeprovider.New(Script()))
	defer up.Close()
	out := filepath.Join(t.TempDir(), "run.json")
	g, err := gateway.New(gateway.Config{Output: out, Upstream: up.URL, Harness: "claude-code"})
	require.NoError(t, err)
	gw := httptest.NewServer(g)
	defer gw.Close()
	_, err = miniagent.Run(t.Context(), miniagent.Config{BaseURL: gw.URL, Provider: p, Stream: stream, Prompt: "do it", Dir: t.TempDir(), APIKey: "sk-x"})
	require.NoError(t, err)
	require.NoError(t, g.Finish(tape.EndComplete, ""))
	rec, err := tape.LoadFile(out)
	require.NoError(t, err)
	return rec, out
}
