package realharness_test

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/internal/testutil/realharness"
	"github.com/tapebox/tapebox/interop"
	"github.com/tapebox/tapebox/tape"
	"github.com/tapebox/tapebox/testkit/fakeprovider"
)

// TestPiImportRealWriter runs the real pi coding agent offline against the fake provider,
// on each wire API TapeBox has a provider for, with a script that makes one bash call, then
// imports the session file Pi wrote itself: the tape's steps, call and result must agree
// with what the fake provider received (the prompt, the call it answered, the tool result
// Pi sent back), with the provider's path, stop reasons and roles.
func TestPiImportRealWriter(t *testing.T) {
	realharness.Need(t, realharness.Pi)
	for _, c := range []struct {
		api      string
		provider tape.Provider
		path     string
		stops    [2]string
	}{
		{"anthropic-messages", tape.ProviderAnthropic, "/v1/messages", [2]string{"tool_use", "end_turn"}},
		{"openai-completions", tape.ProviderOpenAIChat, "/v1/chat/completions", [2]string{"tool_calls", "stop"}},
		{"openai-responses", tape.ProviderOpenAIResponses, "/v1/responses", [2]string{"completed", "completed"}},
	} {
		t.Run(c.api, func(t *testing.T) {
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
				PiAPI:   c.api,
			})
			requireMade(t, srv, res, err, dir)
			reqs := srv.ThreadRequests("main")
			require.Len(t, reqs, 2)
			assert.Equal(t, c.path, reqs[0].Path)

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
			assert.Equal(t, []string{"pi", string(c.provider), "fake-model", dir, "1", ""},
				[]string{tp.Meta.Harness, string(tp.Meta.Provider), tp.Meta.Model, tp.Meta.Cwd, fmt.Sprint(len(tp.Threads)), tp.Meta.Labels[interop.LabelHarnessAPI]},
				"harness, provider, model, cwd, threads, harness API label")
			steps := tp.Threads[0].Steps
			require.Len(t, steps, 2, "one step per model call the fake provider answered")

			// The first step: the prompt Pi sent, the call the fake model made.
			require.NotEmpty(t, steps[0].Request.Messages)
			first := steps[0].Request.Messages[len(steps[0].Request.Messages)-1]
			assert.Equal(t, "user", first.Role)
			assert.Contains(t, first.Content[0].Text, "[pi-task] make the file")
			require.Len(t, steps[0].ToolCalls, 1)
			got := steps[0].ToolCalls[0]
			assert.Equal(t, "bash", got.Name)
			assert.JSONEq(t, string(call.Input), string(got.Input))
			assert.Equal(t, c.path, steps[0].Request.Path)
			assert.Equal(t, c.stops[0], steps[0].Response.StopReason)
			assert.Equal(t, c.stops[1], steps[1].Response.StopReason)
			assert.Equal(t, []tape.Block{{Type: tape.BlockText, Text: "All done."}}, steps[1].Response.Content)

			// The result: what Pi sent the provider in its second request.
			sent, err := realharness.SentResults(c.provider, reqs[1].Body)
			require.NoError(t, err)
			require.Contains(t, sent, got.ID, "the second request answers the call the tape holds")
			require.Len(t, steps[0].ToolResults, 1)
			assert.Equal(t, sent[got.ID].Result, steps[0].ToolResults[0])
			assert.Contains(t, steps[0].ToolResults[0].Content[0].Text, "printed")
			// The second step's conversation has the roles Pi sent (the system prompt,
			// which Pi does not keep in its session file, aside).
			if c.provider != tape.ProviderOpenAIResponses {
				var body struct {
					Messages []struct {
						Role string `json:"role"`
					} `json:"messages"`
				}
				require.NoError(t, json.Unmarshal(reqs[1].Body, &body))
				var wire, imported []string
				for _, m := range body.Messages {
					if m.Role != "system" && m.Role != "developer" {
						wire = append(wire, m.Role)
					}
				}
				for _, m := range steps[1].Request.Messages {
					imported = append(imported, m.Role)
				}
				assert.Equal(t, wire, imported)
			}
		})
	}
}
