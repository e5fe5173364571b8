// Package minirec records one small real run for tests: the mini agent (testkit/miniagent)
// through a real gateway against the scripted fake provider, two parallel Bash calls, a
// subagent and a last look at the files. The controller's and the simulator's tests replay
// the tape it writes.
package minirec

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
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

// Ghost is the command of the answer RetriedScript's main thread gets at its second turn
// the first time (the attempt the harness retries): a run whose harness ran it, or a
// replay that runs it, leaves ghost.txt behind.
const Ghost = "echo ghost > ghost.txt"

// RetriedScript is Script whose main thread answers its second turn with a Bash call of
// Ghost the first time it is asked, and with Script's answer (the Agent call) when asked
// again: a retry gets another answer, as it would from a model.
func RetriedScript() fakeprovider.Script {
	s := Script()
	main := &s.Threads[0]
	second := main.Turns[1]
	ghost := fakeprovider.Call("Bash", map[string]string{"command": Ghost})
	ghost.ID = "call_ghost_1"
	main.Turns[1] = fakeprovider.Turn{Dynamic: func(r *fakeprovider.Request) fakeprovider.Turn {
		if r.Attempt == 0 {
			return fakeprovider.Turn{Text: "Let me try something.", Calls: []tape.ToolCall{ghost}}
		}
		return second
	}}
	return s
}

// RetryTransport sends every request through Next (nil: http.DefaultTransport), and the
// first one whose body holds Trigger (or the Nth) twice: it reads the first answer to its
// end and throws it away, then sends the identical request again and returns that answer.
// It is a harness's SDK retrying a call the provider (or the gateway) had already
// answered, after a client-side timeout or a dropped connection.
type RetryTransport struct {
	Trigger string
	// Nth, when above 0, picks the Nth request sent (from 1) instead of Trigger.
	Nth  int
	Next http.RoundTripper

	mu   sync.Mutex
	sent int
	done bool
	// Retried counts the requests sent twice (0 or 1).
	Retried int
}

// RoundTrip implements http.RoundTripper.
func (rt *RetryTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	next := rt.Next
	if next == nil {
		next = http.DefaultTransport
	}
	if req.Body == nil || req.GetBody == nil {
		return next.RoundTrip(req)
	}
	body, err := io.ReadAll(req.Body)
	req.Body.Close()
	if err != nil {
		return nil, err
	}
	req.Body = io.NopCloser(bytes.NewReader(body))
	rt.mu.Lock()
	rt.sent++
	retry := !rt.done && (rt.Nth > 0 && rt.sent == rt.Nth || rt.Nth <= 0 && bytes.Contains(body, []byte(rt.Trigger)))
	if retry {
		rt.done = true
		rt.Retried++
	}
	rt.mu.Unlock()
	if !retry {
		return next.RoundTrip(req)
	}
	resp, err := next.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return nil, fmt.Errorf("read the answer to retry: %w", err)
	}
	resp.Body.Close()
	again := req.Clone(req.Context())
	again.Body = io.NopCloser(bytes.NewReader(body))
	return next.RoundTrip(again)
}

// RecordRetried is Record of RetriedScript through a RetryTransport that retries the main
// thread's second call (the one carrying the first Bash call's output "made one"), and
// returns the tape, its path and how many calls were retried.
func RecordRetried(t testing.TB, p tape.Provider, stream bool) (*tape.Tape, string, int) {
	t.Helper()
	rt := &RetryTransport{Trigger: "made one"}
	rec, out := RecordWith(t, RetriedScript(), p, stream, &http.Client{Transport: rt})
	return rec, out, rt.Retried
}

// RecordWith is Record of script with the mini agent's calls sent by client (nil:
// http.DefaultClient). The run must end with Script's "All done." and leave no ghost.txt
// (see Ghost).
func RecordWith(t testing.TB, script fakeprovider.Script, p tape.Provider, stream bool, client *http.Client) (*tape.Tape, string) {
	t.Helper()
	up := httptest.NewServer(fakeprovider.New(script))
	defer up.Close()
	out := filepath.Join(t.TempDir(), "run.json")
	g, err := gateway.New(gateway.Config{Output: out, Upstream: up.URL, Harness: "claude-code"})
	require.NoError(t, err)
	gw := httptest.NewServer(g)
	defer gw.Close()
	dir := t.TempDir()
	final, err := miniagent.Run(t.Context(), miniagent.Config{BaseURL: gw.URL, Provider: p, Stream: stream, Prompt: "do it", Dir: dir, APIKey: "sk-x", Client: client})
	require.NoError(t, err)
	require.Equal(t, "All done.", final)
	require.NoFileExists(t, filepath.Join(dir, "ghost.txt"), "the harness never ran the answer it retried")
	require.NoError(t, g.Finish(tape.EndComplete, ""))
	rec, err := tape.LoadFile(out)
	require.NoError(t, err)
	return rec, out
}
