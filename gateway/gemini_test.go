package gateway_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/gateway"
	"github.com/tapebox/tapebox/tape"
	"github.com/tapebox/tapebox/testkit/fakeprovider"
)

// geminiKey is the API key the Gemini tests plant in the x-goog-api-key header and in the
// ?key= query parameter, where Gemini clients send it.
const (
	geminiHeaderKey = "AIzaSyTESTGEMINIHEADER-0000000000000"
	geminiQueryKey  = "AIzaSyTESTGEMINIQUERY-11111111111111"
)

// geminiRequest is a Gemini API request body: the task, then the model turns and results
// given (Gemini CLI's form: calls with the ids it made up, results answering them).
func geminiRequest(history ...map[string]any) []byte {
	contents := []any{map[string]any{"role": "user", "parts": []any{
		map[string]any{"text": "<session_context>\n- **Workspace Directories:**\n  - /work\n</session_context>"},
		map[string]any{"text": "do the gemini task"},
	}}}
	for _, h := range history {
		contents = append(contents, h)
	}
	b, _ := json.Marshal(map[string]any{
		"contents":          contents,
		"systemInstruction": map[string]any{"role": "user", "parts": []any{map[string]any{"text": "You are a CLI agent."}}},
		"tools":             []any{map[string]any{"functionDeclarations": []any{map[string]any{"name": "run_shell_command", "parametersJsonSchema": map[string]any{"type": "object"}}}}},
		"generationConfig":  map[string]any{"temperature": 1},
	})
	return b
}

// TestRecordGemini records a Gemini CLI-shaped run through the gateway, streamed and not:
// the model calls are recognized by their path, the model and the stream flag come from
// it, the results of calls the API sent without ids are found under the ids the client
// made up, the run ends complete, and the planted API keys reach neither the tape nor the
// gateway's log.
func TestRecordGemini(t *testing.T) {
	for _, stream := range []bool{true, false} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			script := fakeprovider.Script{Threads: []fakeprovider.Thread{{Name: "main", Turns: []fakeprovider.Turn{
				{Text: "Listing.", Calls: []tape.ToolCall{
					{Name: "run_shell_command", Input: json.RawMessage(`{"command":"ls"}`)},
					{Name: "run_shell_command", Input: json.RawMessage(`{"command":"false"}`)},
				}},
				{Text: "Done."},
			}}}}
			var logMu sync.Mutex
			var log strings.Builder
			rg := newRig(t, script, func(c *gateway.Config) {
				c.Logf = func(format string, args ...any) {
					logMu.Lock()
					defer logMu.Unlock()
					fmt.Fprintf(&log, format+"\n", args...)
				}
			})
			method := "generateContent"
			query := "?key=" + geminiQueryKey
			if stream {
				method, query = "streamGenerateContent", "?alt=sse&key="+geminiQueryKey
			}
			path := "/v1beta/models/gemini-2.5-pro:" + method + query
			header := http.Header{"Content-Type": {"application/json"}, "X-Goog-Api-Key": {geminiHeaderKey}, "User-Agent": {"GeminiCLI/0.61.0/gemini-2.5-pro (linux; x64)"}}
			first := rg.do(t, call{path: path, header: header, body: geminiRequest()})
			require.Equal(t, http.StatusOK, first.status, string(first.body))
			model := map[string]any{"role": "model", "parts": []any{
				map[string]any{"text": "Listing."},
				map[string]any{"functionCall": map[string]any{"id": "run_shell_command_1_0", "name": "run_shell_command", "args": map[string]any{"command": "ls"}}},
				map[string]any{"functionCall": map[string]any{"id": "run_shell_command_1_1", "name": "run_shell_command", "args": map[string]any{"command": "false"}}},
			}}
			results := map[string]any{"role": "user", "parts": []any{
				map[string]any{"functionResponse": map[string]any{"id": "run_shell_command_1_0", "name": "run_shell_command", "response": map[string]any{"output": "a.txt"}}},
				map[string]any{"functionResponse": map[string]any{"id": "run_shell_command_1_1", "name": "run_shell_command", "response": map[string]any{"error": "Exit Code: 1"}}},
			}}
			second := rg.do(t, call{path: path, header: header, body: geminiRequest(model, results)})
			require.Equal(t, http.StatusOK, second.status, string(second.body))
			require.NoError(t, rg.fp.Err())
			require.NoError(t, rg.g.Finish(tape.EndComplete, ""))

			got := rg.up.got
			require.Len(t, got, 2)
			assert.Equal(t, geminiHeaderKey, got[0].header.Get("X-Goog-Api-Key"), "the upstream gets the key")
			assert.Contains(t, got[0].query, "key="+geminiQueryKey)

			data, err := os.ReadFile(rg.out)
			require.NoError(t, err)
			for _, k := range []string{geminiHeaderKey, geminiQueryKey} {
				assert.NotContains(t, string(data), k, "the tape holds a key")
				assert.NotContains(t, log.String(), k, "the log holds a key")
			}
			tp, err := tape.Unmarshal(data)
			require.NoError(t, err)
			assert.Equal(t, tape.ProviderGemini, tp.Meta.Provider)
			assert.Equal(t, "gemini-2.5-pro", tp.Meta.Model)
			assert.Equal(t, "/work", tp.Meta.Cwd)
			assert.Equal(t, "gemini-cli", tp.Meta.Harness)
			assert.Equal(t, "0.61.0", tp.Meta.HarnessVersion)
			require.NotNil(t, tp.Meta.Ended)
			assert.Equal(t, tape.EndComplete, tp.Meta.Ended.Reason)
			require.Len(t, tp.Threads, 1)
			steps := tp.Threads[0].Steps
			require.Len(t, steps, 2)
			s := steps[0]
			assert.Equal(t, tape.Redacted, s.Request.Headers["x-goog-api-key"])
			assert.Contains(t, s.Request.Path, "key="+tape.Redacted)
			assert.Equal(t, stream, s.Request.Stream)
			assert.Equal(t, stream, len(s.Response.Chunks) > 0)
			require.Len(t, s.ToolCalls, 2)
			require.Len(t, s.ToolResults, 2)
			assert.Equal(t, s.ToolCalls[0].ID, s.ToolResults[0].ToolCallID)
			assert.Equal(t, "a.txt", s.ToolResults[0].Text())
			assert.True(t, s.ToolResults[1].IsError)
			assert.Equal(t, "Done.", tape.BlocksText(steps[1].Response.Content))
			assert.Equal(t, "STOP", steps[1].Response.StopReason)
		})
	}
}

// TestGeminiAmbiguousPathRefused: a path that reads as a Gemini model call once decoded,
// but is not one as sent, is refused.
func TestGeminiAmbiguousPathRefused(t *testing.T) {
	rg := newRig(t, fakeprovider.Script{Threads: []fakeprovider.Thread{{Name: "main", Turns: []fakeprovider.Turn{{Text: "hi"}}}}}, nil)
	for _, p := range []string{
		"/v1beta/models/gemini%2D2.5:generateContent",
		"/v1beta/models/x/..%2Fgemini:streamGenerateContent",
		"/v1beta/files/abc;/models/gemini:generateContent",
	} {
		r := rg.do(t, call{path: p, header: http.Header{"Content-Type": {"application/json"}}, body: geminiRequest()})
		assert.Equal(t, http.StatusBadRequest, r.status, p)
	}
	ok := rg.do(t, call{path: "/r/label/v1beta/models/gemini-2.5:generateContent", header: http.Header{"Content-Type": {"application/json"}}, body: geminiRequest()})
	assert.Equal(t, http.StatusOK, ok.status, string(ok.body))
}
