package gateway

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/match"
	"github.com/tapebox/tapebox/tape"
	"github.com/tapebox/tapebox/tape/provider"
)

// TestSubstituteStreamAcrossDeltas: an identifier split over several deltas is substituted,
// in each wire format, and the stream still parses to the substituted tool call.
func TestSubstituteStreamAcrossDeltas(t *testing.T) {
	const old, repl = "/tmp/claude-0/-w/5c1d/tasks/bq7x2k9m1.output", "/tmp/tapebox-exec-state-0-9f3c1e0a7b2d4c68/tasks/b12345678/output"
	args := `{"file_path":"` + old + `"}`
	split := func(s string, n int) []string {
		var out []string
		for len(s) > n {
			out = append(out, s[:n])
			s = s[n:]
		}
		return append(out, s)
	}
	mk := func(event string, v any) tape.Chunk {
		b, _ := json.Marshal(v)
		if event == "" {
			return tape.Chunk{Data: "data: " + string(b) + "\n\n"}
		}
		return tape.Chunk{Data: "event: " + event + "\ndata: " + string(b) + "\n\n"}
	}
	anthropic := []tape.Chunk{
		mk("message_start", map[string]any{"type": "message_start", "message": map[string]any{"id": "m", "type": "message", "role": "assistant", "content": []any{}, "model": "x", "usage": map[string]any{"input_tokens": 1, "output_tokens": 1}}}),
		mk("content_block_start", map[string]any{"type": "content_block_start", "index": 0, "content_block": map[string]any{"type": "tool_use", "id": "toolu_1", "name": "Read", "input": map[string]any{}}}),
	}
	for _, p := range split(args, 7) {
		anthropic = append(anthropic, mk("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0, "delta": map[string]any{"type": "input_json_delta", "partial_json": p}}))
	}
	anthropic = append(anthropic,
		mk("content_block_stop", map[string]any{"type": "content_block_stop", "index": 0}),
		mk("message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": "tool_use"}, "usage": map[string]any{"output_tokens": 5}}),
		mk("message_stop", map[string]any{"type": "message_stop"}))

	chat := []tape.Chunk{mk("", map[string]any{"id": "c", "object": "chat.completion.chunk", "choices": []any{map[string]any{"index": 0, "delta": map[string]any{"role": "assistant", "tool_calls": []any{map[string]any{"index": 0, "id": "call_1", "type": "function", "function": map[string]any{"name": "Read", "arguments": ""}}}}}}})}
	for _, p := range split(args, 5) {
		chat = append(chat, mk("", map[string]any{"id": "c", "object": "chat.completion.chunk", "choices": []any{map[string]any{"index": 0, "delta": map[string]any{"tool_calls": []any{map[string]any{"index": 0, "function": map[string]any{"arguments": p}}}}}}}))
	}
	chat = append(chat, mk("", map[string]any{"id": "c", "object": "chat.completion.chunk", "choices": []any{map[string]any{"index": 0, "delta": map[string]any{}, "finish_reason": "tool_calls"}}}), tape.Chunk{Data: "data: [DONE]\n\n"})

	ids := match.NewIdentifiers(nil)
	ids.Learn(match.Site{Thread: "main"}, "Output is being written to: "+old+".", "Output is being written to: "+repl+".")
	for _, tc := range []struct {
		p      tape.Provider
		chunks []tape.Chunk
	}{{tape.ProviderAnthropic, anthropic}, {tape.ProviderOpenAIChat, chat}} {
		t.Run(string(tc.p), func(t *testing.T) {
			out := substituteStream(tc.p, ids, tc.chunks)
			var served []tape.Chunk
			for _, d := range out {
				require.NotContains(t, d, "bq7x2k9m1")
				served = append(served, tape.Chunk{Data: d})
			}
			s := &tape.Step{Request: tape.Request{Raw: json.RawMessage(`{}`)}, Response: tape.Response{Chunks: served}}
			require.NoError(t, provider.Normalize(tc.p, s))
			require.Len(t, s.ToolCalls, 1)
			require.JSONEq(t, `{"file_path":"`+repl+`"}`, string(s.ToolCalls[0].Input))
		})
	}
}

func TestRedistribute(t *testing.T) {
	got := redistribute([]string{"ab", "cd", "ef"}, "abXYZcdef")
	require.Equal(t, "abXYZcdef", strings.Join(got, ""))
	require.Equal(t, []string{"ab", "XY", "Zcdef"}, got)
	got = redistribute([]string{"abcd", "ef"}, "aé")
	require.Equal(t, "aé", strings.Join(got, ""))
	for _, p := range got {
		require.True(t, utf8Valid(p), "%q", p)
	}
}

func utf8Valid(s string) bool { return strings.ToValidUTF8(s, "?") == s }
