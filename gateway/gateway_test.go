package gateway_test

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/gateway"
	"github.com/tapebox/tapebox/tape"
	"github.com/tapebox/tapebox/testkit/fakeprovider"
	"github.com/tapebox/tapebox/testkit/miniagent"
)

const secret = "sk-test-SECRET-0123456789"

// script is the scripted model of the round trip: two parallel Bash calls, a subagent that
// writes a file, then a final answer.
func script() fakeprovider.Script {
	return fakeprovider.Script{Threads: []fakeprovider.Thread{
		{Name: "main", Turns: []fakeprovider.Turn{
			{Text: "Looking around.", Calls: []tape.ToolCall{
				fakeprovider.Call("Bash", map[string]string{"command": "echo one > one.txt && echo made one"}),
				fakeprovider.Call("Bash", map[string]string{"command": "mkdir -p sub && ls -d sub"}),
			}},
			{Calls: []tape.ToolCall{fakeprovider.Call("Agent", map[string]string{"description": "helper", "prompt": "SUBTASK-1: write sub/two.txt"})}},
			{Calls: []tape.ToolCall{fakeprovider.Call("Bash", map[string]string{"command": "cat sub/two.txt; exit 3"})}},
			{Text: "All done."},
		}},
		{Name: "sub", Marker: "SUBTASK-1", Turns: []fakeprovider.Turn{
			{Calls: []tape.ToolCall{fakeprovider.Call("Bash", map[string]string{"command": "echo two > sub/two.txt"})}},
			{Text: "Wrote sub/two.txt."},
		}},
	}}
}

func TestRecordRoundTripShapes(t *testing.T) {
	for _, p := range []tape.Provider{tape.ProviderAnthropic, tape.ProviderOpenAIChat, tape.ProviderOpenAIResponses} {
		for _, stream := range []bool{true, false} {
			name := string(p)
			if stream {
				name += "/stream"
			}
			t.Run(name, func(t *testing.T) {
				fp := fakeprovider.New(script())
				up := httptest.NewServer(fp)
				defer up.Close()
				out := filepath.Join(tapeDir(t), "run.json")
				g, err := gateway.New(gateway.Config{Output: out, Upstream: up.URL, Harness: "claude-code",
					Task: map[string]string{"id": "round-trip"}, Logf: t.Logf})
				require.NoError(t, err)
				gw := httptest.NewServer(g)
				defer gw.Close()
				dir := t.TempDir()
				final, err := miniagent.Run(t.Context(), miniagent.Config{BaseURL: gw.URL + "/r/run-1", Provider: p, Stream: stream,
					Prompt: "do the task", Dir: dir, APIKey: secret})
				require.NoError(t, err)
				require.Equal(t, "All done.", final)
				require.NoError(t, fp.Err())
				require.NoError(t, g.Finish(tape.EndComplete, ""))
				require.NoError(t, g.Close(t.Context()))

				data, err := os.ReadFile(out)
				require.NoError(t, err)
				require.NotContains(t, string(data), secret, "credentials must not reach the tape")
				tp, err := tape.Unmarshal(data)
				require.NoError(t, err)
				require.Equal(t, p, tp.Meta.Provider)
				require.Equal(t, "round-trip", tp.Meta.Task["id"])
				require.Equal(t, tape.EndComplete, tp.Meta.Ended.Reason)
				require.Len(t, tp.Threads, 2)
				main, sub := tp.Threads[0], tp.Threads[1]
				require.Nil(t, main.Parent)
				require.Len(t, main.Steps, 4)
				require.Len(t, sub.Steps, 2)
				require.NotNil(t, sub.Parent)
				require.Equal(t, "main", sub.Parent.ThreadID)
				require.Equal(t, main.Steps[1].ToolCalls[0].ID, sub.Parent.ToolCallID)

				s0 := main.Steps[0]
				require.Len(t, s0.ToolCalls, 2)
				require.Len(t, s0.ToolResults, 2)
				require.Equal(t, "made one", s0.ToolResults[0].Text())
				require.Equal(t, "sub", s0.ToolResults[1].Text())
				require.Equal(t, "Wrote sub/two.txt.", main.Steps[1].ToolResults[0].Text())
				require.Equal(t, "Exit code 3\ntwo", main.Steps[2].ToolResults[0].Text())
				require.Equal(t, stream, s0.Request.Stream)
				if stream {
					require.NotEmpty(t, s0.Response.Chunks)
				} else {
					require.Empty(t, s0.Response.Chunks)
				}
				for _, th := range tp.Threads {
					for i, s := range th.Steps {
						require.Equal(t, http.StatusOK, s.Response.Status)
						require.True(t, strings.HasPrefix(s.Request.Path, "/r/run-1/v1/"), s.Request.Path)
						require.LessOrEqual(t, s.Timing.RequestAt, s.Timing.FirstByteAt)
						require.LessOrEqual(t, s.Timing.FirstByteAt, s.Timing.LastByteAt)
						if i < len(th.Steps)-1 {
							require.NotNil(t, s.Timing.NextRequestAt, "thread %s step %d", th.ID, i)
							require.GreaterOrEqual(t, *s.Timing.NextRequestAt, s.Timing.LastByteAt)
						} else {
							require.Nil(t, s.Timing.NextRequestAt)
						}
					}
				}
				require.Equal(t, gateway.Redacted, headerAny(s0.Request.Headers, "x-api-key", "authorization"))
			})
		}
	}
}

func headerAny(h tape.Headers, names ...string) string {
	for _, n := range names {
		if v, ok := h[n]; ok {
			return v
		}
	}
	return ""
}
