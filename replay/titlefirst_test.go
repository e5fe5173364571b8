package replay_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/replay"
	"github.com/tapebox/tapebox/tape"
	"github.com/tapebox/tapebox/testkit"
	"github.com/tapebox/tapebox/testkit/miniagent"
)

// titleRequest is a side request without tools, shaped like OpenCode's: it asks the small
// model for the session's title beside the agent's first call.
func titleRequest(t *testing.T, url, prompt string) {
	t.Helper()
	body, err := json.Marshal(map[string]any{
		"model": "claude-haiku-4-5", "max_tokens": 32,
		"system": "You are a title generator. You output ONLY a thread title. Nothing else.",
		"messages": []any{map[string]any{"role": "user", "content": []any{
			map[string]any{"type": "text", "text": "Generate a title for this conversation:\n"},
			map[string]any{"type": "text", "text": prompt},
		}}},
	})
	require.NoError(t, err)
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url+"/v1/messages", bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("x-api-key", "sk-test-placeholder")
	req.Header.Set("anthropic-version", "2023-06-01")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	out, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", out)
}

// TestTitleFirst: a harness that asks for the session's title beside its agent's first
// call (OpenCode without --title) records a tape that replays and compares IDENTICAL
// whichever request reaches the gateway first.
func TestTitleFirst(t *testing.T) {
	for _, c := range []struct{ titleFirst, scriptedTitle bool }{{true, true}, {false, true}, {true, false}, {false, false}} {
		titleFirst, scriptedTitle := c.titleFirst, c.scriptedTitle
		name := "agent first"
		if titleFirst {
			name = "title first"
		}
		if !scriptedTitle {
			name += ", title answered with a call"
		}
		t.Run(name, func(t *testing.T) {
			const prompt = "[agent] make it"
			script := testkit.Script{Threads: []testkit.Thread{
				{Name: "main", Marker: "[agent]", Turns: []testkit.Turn{
					{Calls: []tape.ToolCall{testkit.Call("Bash", map[string]string{"command": "mkdir -p app && echo made > app/made.txt && ls"})}},
					{Calls: []tape.ToolCall{testkit.Call("Bash", map[string]string{"command": "cat app/made.txt"})}},
					{Text: "Made it."},
				}},
			}}
			if !scriptedTitle {
				// A scripted model that answers by marker answers the title request, which
				// quotes the prompt, with the agent's first turn: a call to a tool the
				// request does not offer (internal/fidelity's provider does).
			} else {
				script.Threads = append(script.Threads, testkit.Thread{Name: "title", Marker: "Generate a title", Turns: []testkit.Turn{{Text: "Making app"}}})
			}
			p := testkit.NewProvider(t, script)
			work := t.TempDir()
			require.NoError(t, os.WriteFile(filepath.Join(work, "README.md"), []byte("read me\n"), 0o644))
			g := testkit.NewGateway(t, p.URL(), testkit.Harness("claude-code"), testkit.Workspace(work))
			if titleFirst {
				titleRequest(t, g.URL, prompt)
			}
			_, err := miniagent.Run(t.Context(), miniagent.Config{BaseURL: g.URL, Provider: tape.ProviderAnthropic, Stream: true,
				Prompt: prompt, Dir: work, APIKey: "sk-test-placeholder"})
			require.NoError(t, err)
			if !titleFirst {
				titleRequest(t, g.URL, prompt)
			}
			rec, err := g.Finish()
			require.NoError(t, err)
			require.Len(t, rec.Threads, 2)
			main := rec.Main()
			require.NotNil(t, main)
			assert.Len(t, main.Steps, 3, "the agent's thread is the main thread")
			assert.Equal(t, "fake-model", rec.Meta.Model, "meta.model is the agent's, not the title's claude-haiku-4-5")

			loaded, err := testkit.LoadTape(g.Path)
			require.NoError(t, err)
			res, err := replay.Run(t.Context(), loaded, replay.LocalTemp, replay.Options{TapePath: g.Path, Compare: true})
			require.NoError(t, err)
			require.NotNil(t, res.Report)
			assert.True(t, res.Identical(), "%+v", res.Report.Differences)
			assert.Equal(t, 3, res.Steps)
		})
	}
}
