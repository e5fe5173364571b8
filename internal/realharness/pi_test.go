package realharness_test

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/internal/realharness"
	"github.com/tapebox/tapebox/interop"
	"github.com/tapebox/tapebox/tape"
	"github.com/tapebox/tapebox/testkit/fakeprovider"
)

// TestPiImportRealWriter runs the real pi coding agent offline against the fake provider
// (Anthropic Messages) with a script that makes one bash call, then imports the session
// file Pi wrote itself: the tape's steps, call and result must agree with what the fake
// provider received (the prompt, the call it answered, the tool result Pi sent back).
func TestPiImportRealWriter(t *testing.T) {
	realharness.Need(t, realharness.Pi)
	call := fakeprovider.Call("bash", map[string]any{"command": "echo made > out.txt && echo printed"})
	srv := fakeprovider.New(fakeprovider.Script{Threads: []fakeprovider.Thread{{
		Name:   "main",
		Marker: "[pi-task]",
		Turns:  []fakeprovider.Turn{{Text: "Making it.", Calls: []tape.ToolCall{call}}, {Text: "All done."}},
	}}})
	require.NoError(t, srv.Start())
	t.Cleanup(func() { _ = srv.Close() })
	dir, home := t.TempDir(), t.TempDir()
	res, err := realharness.RunPi(t.Context(), realharness.Options{
		BaseURL: srv.URL(),
		Dir:     dir,
		Home:    home,
		Prompt:  "[pi-task] make the file",
	})
	requireMade(t, srv, res, err, dir)
	reqs := srv.ThreadRequests("main")
	require.Len(t, reqs, 2)
	assert.Equal(t, "/v1/messages", reqs[0].Path)

	sessions, err := filepath.Glob(filepath.Join(home, "sessions", "*.jsonl"))
	require.NoError(t, err)
	require.Len(t, sessions, 1, "Pi wrote one session file")
	format, err := interop.Detect(sessions[0])
	require.NoError(t, err)
	require.Equal(t, interop.Pi, format)
	tapes, err := interop.Import(interop.Auto, filepath.Join(home, "sessions"))
	require.NoError(t, err)
	require.Len(t, tapes, 1)
	tp := tapes[0]
	assert.Equal(t, []string{"pi", string(tape.ProviderAnthropic), "fake-model", dir, "1"},
		[]string{tp.Meta.Harness, string(tp.Meta.Provider), tp.Meta.Model, tp.Meta.Cwd, fmt.Sprint(len(tp.Threads))}, "harness, provider, model, cwd, threads")
	steps := tp.Threads[0].Steps
	require.Len(t, steps, 2, "one step per model call the fake provider answered")

	// The first step: the prompt Pi sent, the call the fake model made.
	require.NotEmpty(t, steps[0].Request.Messages)
	first := steps[0].Request.Messages[len(steps[0].Request.Messages)-1]
	assert.Equal(t, "user", first.Role)
	assert.Contains(t, first.Content[0].Text, "[pi-task] make the file")
	require.Len(t, steps[0].ToolCalls, 1)
	c := steps[0].ToolCalls[0]
	assert.Equal(t, "bash", c.Name)
	assert.JSONEq(t, string(call.Input), string(c.Input))
	assert.Equal(t, "tool_use", steps[0].Response.StopReason)
	assert.Equal(t, "end_turn", steps[1].Response.StopReason)
	assert.Equal(t, []tape.Block{{Type: tape.BlockText, Text: "All done."}}, steps[1].Response.Content)

	// The result: what Pi sent the provider in its second request.
	sent, err := realharness.SentResults(tape.ProviderAnthropic, reqs[1].Body)
	require.NoError(t, err)
	require.Contains(t, sent, c.ID, "the second request answers the call the tape holds")
	require.Len(t, steps[0].ToolResults, 1)
	assert.Equal(t, sent[c.ID].Result, steps[0].ToolResults[0])
	assert.Contains(t, steps[0].ToolResults[0].Content[0].Text, "printed")
	// And the conversation of the second step is the one Pi sent: its roles in order.
	var body struct {
		Messages []struct {
			Role string `json:"role"`
		} `json:"messages"`
	}
	require.NoError(t, json.Unmarshal(reqs[1].Body, &body))
	var wire, imported []string
	for _, m := range body.Messages {
		wire = append(wire, m.Role)
	}
	for _, m := range steps[1].Request.Messages {
		imported = append(imported, m.Role)
	}
	assert.Equal(t, wire, imported)
}
