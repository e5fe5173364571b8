package provider_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/tape"
	"github.com/tapebox/tapebox/tape/provider"
)

func TestGeminiPath(t *testing.T) {
	tests := []struct {
		path   string
		model  string
		stream bool
		ok     bool
	}{
		{"/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse", "gemini-2.5-pro", true, true},
		{"/v1beta/models/gemini-2.5-pro:generateContent", "gemini-2.5-pro", false, true},
		{"/r/run-1/v1beta/models/gemini-3.1-pro-preview:generateContent?key=x", "gemini-3.1-pro-preview", false, true},
		{"/v1/models/gemini-2.0-flash:streamGenerateContent", "gemini-2.0-flash", true, true},
		{"/v1alpha/tunedModels/my-tune:generateContent", "my-tune", false, true},
		{"/v1beta/models/gemini-2.5-pro:countTokens", "", false, false},
		{"/v1beta/models/gemini-2.5-pro:embedContent", "", false, false},
		{"/v1beta/models/:generateContent", "", false, false},
		{"/v1beta/models/a/b:generateContent", "", false, false},
		{"/v1beta/files/x:generateContent", "", false, false},
		{"/models/gemini:generateContent", "", false, false},
		{"/v1/messages", "", false, false},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			model, stream, ok := provider.GeminiPath(tt.path)
			assert.Equal(t, tt.ok, ok)
			assert.Equal(t, tt.model, model)
			assert.Equal(t, tt.stream, stream)
			p, detected := provider.Detect(tt.path)
			if tt.ok {
				assert.True(t, detected)
				assert.Equal(t, tape.ProviderGemini, p)
			} else if detected {
				assert.NotEqual(t, tape.ProviderGemini, p)
			}
		})
	}
}

// TestGeminiCLIRequest normalizes a request Gemini CLI 0.61.0 sent: the model and the
// stream flag come from the path, the session context names the working directory, the
// calls carry the ids the CLI made up and the results answer them.
func TestGeminiCLIRequest(t *testing.T) {
	s := &tape.Step{Request: tape.Request{Path: "/v1beta/models/gemini-3.1-pro-preview:streamGenerateContent?alt=sse", Raw: readFile(t, "gemini/cli_request.json")}}
	require.NoError(t, provider.Normalize(tape.ProviderGemini, s))
	r := s.Request
	assert.True(t, r.Stream)
	assert.Equal(t, `"gemini-3.1-pro-preview"`, string(r.Params["model"]))
	assert.Contains(t, r.Params, "generationConfig")
	assert.NotContains(t, r.Params, "contents")
	assert.True(t, strings.HasPrefix(r.System, "You are"), r.System[:40])
	assert.Equal(t, "/tmp/gem/ws", provider.Cwd(&r))
	var names []string
	for _, tl := range r.Tools {
		names = append(names, tl.Name)
		assert.Equal(t, "function", tl.Kind)
		assert.NotEmpty(t, tl.InputSchema, tl.Name)
	}
	assert.Contains(t, names, "run_shell_command")
	assert.Contains(t, names, "replace")
	require.Len(t, r.Messages, 3)
	assert.Equal(t, []string{"user", "assistant", "user"}, []string{r.Messages[0].Role, r.Messages[1].Role, r.Messages[2].Role})
	model := r.Messages[1].Content
	require.Len(t, model, 2)
	assert.Equal(t, tape.Block{Type: tape.BlockToolUse, ID: "run_shell_command_1796657757551_0", Name: "run_shell_command", Input: json.RawMessage(`{"command":"echo hi; ls"}`)}, model[0])
	results := r.Messages[2].Content
	require.Len(t, results, 2)
	assert.Equal(t, "run_shell_command_1796657757551_0", results[0].ToolCallID)
	assert.Equal(t, "<untrusted_context>\nOutput: hi\na.txt\nProcess Group PGID: 21160\n</untrusted_context>", tape.BlocksText(results[0].Content))
	assert.Equal(t, "hello\n", tape.BlocksText(results[1].Content))
	assert.Equal(t, 1, provider.AssistantTurns(&r))

	// The answer that asked for these calls came without ids: the tape names them, and
	// the results are found under the ids the CLI gave them.
	calls := []tape.ToolCall{
		{ID: "gemini-0011223344556677-0", Name: "run_shell_command", Input: json.RawMessage(`{"command":"echo hi; ls"}`)},
		{ID: "gemini-0011223344556677-1", Name: "read_file", Input: json.RawMessage(`{"file_path":"a.txt"}`)},
	}
	rs, err := provider.ToolResults(tape.ProviderGemini, s.Request.Raw, calls)
	require.NoError(t, err)
	require.Len(t, rs, 2)
	assert.Equal(t, calls[0].ID, rs[0].ToolCallID)
	assert.Equal(t, "hello\n", rs[1].Text())
	// Calls the request does not hold (another name) have no result.
	rs, err = provider.ToolResults(tape.ProviderGemini, s.Request.Raw, []tape.ToolCall{{ID: "x", Name: "glob"}})
	require.NoError(t, err)
	assert.Empty(t, rs)
}

func TestGeminiRouterRequest(t *testing.T) {
	s := &tape.Step{Request: tape.Request{Path: "/v1beta/models/gemini-3.5-flash-lite:generateContent", Raw: readFile(t, "gemini/router_request.json")}}
	require.NoError(t, provider.Normalize(tape.ProviderGemini, s))
	assert.False(t, s.Request.Stream)
	assert.Empty(t, s.Request.Tools)
	assert.Contains(t, s.Request.System, "Task Routing AI")
	assert.Len(t, s.Request.Messages, 2)
}

func TestGeminiResponses(t *testing.T) {
	tests := []struct {
		file    string
		content []tape.Block
		calls   int
		stop    string
		usage   tape.Usage
	}{
		{"response_thinking_calls.json", nil, 2, "STOP", tape.Usage{InputTokens: 200, CacheReadInputTokens: 1000, OutputTokens: 90, ReasoningTokens: 50}},
		{"response_call_ids.json", nil, 1, "STOP", tape.Usage{InputTokens: 10, OutputTokens: 3}},
		{"response_empty_parts.json", nil, 0, "STOP", tape.Usage{InputTokens: 10}},
		{"response_no_candidates.json", nil, 0, "SAFETY", tape.Usage{InputTokens: 8}},
		{"response_safety.json", nil, 0, "SAFETY", tape.Usage{}},
		{"response_null_usage.json", []tape.Block{{Type: tape.BlockText, Text: "Hi."}}, 0, "MAX_TOKENS", tape.Usage{}},
		{"error_body.json", nil, 0, "", tape.Usage{}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			s := &tape.Step{Response: tape.Response{Raw: readFile(t, "gemini/"+tt.file)}}
			s.Request.Raw = json.RawMessage(`{"contents":[]}`)
			require.NoError(t, provider.Normalize(tape.ProviderGemini, s))
			if tt.content != nil {
				assert.Equal(t, tt.content, s.Response.Content)
			}
			assert.Len(t, s.ToolCalls, tt.calls)
			assert.Equal(t, tt.stop, s.Response.StopReason)
			assert.Equal(t, tt.usage, s.Response.Usage)
		})
	}
	s := &tape.Step{Request: tape.Request{Raw: json.RawMessage(`{}`)}, Response: tape.Response{Raw: readFile(t, "gemini/response_thinking_calls.json")}}
	require.NoError(t, provider.Normalize(tape.ProviderGemini, s))
	c := s.Response.Content
	require.Len(t, c, 4)
	assert.Equal(t, tape.Block{Type: tape.BlockThinking, Text: "Look first."}, c[0])
	assert.Equal(t, tape.Block{Type: tape.BlockText, Text: "I'll look at the files."}, c[1], "adjacent text parts are one block")
	assert.Regexp(t, `^gemini-[0-9a-f]{16}-0$`, s.ToolCalls[0].ID)
	assert.Regexp(t, `^gemini-[0-9a-f]{16}-1$`, s.ToolCalls[1].ID)
	assert.Equal(t, `{"command":"ls -la","description":"List"}`, string(s.ToolCalls[0].Input))
	ids := s.ToolCalls[0].ID
	require.NoError(t, provider.Normalize(tape.ProviderGemini, s))
	assert.Equal(t, ids, s.ToolCalls[0].ID, "the made-up ids are derived from the raw response")

	s = &tape.Step{Request: tape.Request{Raw: json.RawMessage(`{}`)}, Response: tape.Response{Raw: readFile(t, "gemini/response_call_ids.json")}}
	require.NoError(t, provider.Normalize(tape.ProviderGemini, s))
	assert.Equal(t, "call-a", s.ToolCalls[0].ID, "the provider's own id is kept")
}

func TestGeminiStreams(t *testing.T) {
	for _, size := range []int{0, 1, 7, 64} {
		s := &tape.Step{}
		stream := readFile(t, "gemini/stream_calls.sse")
		if size == 0 {
			s.Response.Chunks = chunksOf(stream)
		} else {
			s.Response.Chunks = chunksOfSize(stream, size)
		}
		calls, err := provider.NormalizeResponse(tape.ProviderGemini, &s.Response)
		require.NoError(t, err)
		s.ToolCalls = calls
		c := s.Response.Content
		require.Len(t, c, 4, "chunk size %d", size)
		assert.Equal(t, "Plan: list then read.", c[0].Text)
		assert.Equal(t, tape.BlockThinking, c[0].Type)
		assert.Equal(t, "Checking now.", c[1].Text)
		assert.Equal(t, "list_directory", c[2].Name)
		require.Len(t, s.ToolCalls, 2)
		assert.Equal(t, "STOP", s.Response.StopReason)
		assert.Equal(t, tape.Usage{InputTokens: 900, OutputTokens: 50, ReasoningTokens: 20}, s.Response.Usage)
	}
	s := &tape.Step{Response: tape.Response{Chunks: chunksOf(readFile(t, "gemini/stream_truncated.sse"))}}
	_, err := provider.NormalizeResponse(tape.ProviderGemini, &s.Response)
	require.NoError(t, err)
	assert.Equal(t, []tape.Block{{Type: tape.BlockText, Text: "Partial"}}, s.Response.Content, "a stream cut short gives what arrived")
	assert.Empty(t, s.Response.StopReason)
}

// TestGeminiEmitRoundTrip writes answers as bodies and streams and checks that they
// normalize back to the answer.
func TestGeminiEmitRoundTrip(t *testing.T) {
	answers := []provider.Answer{
		{ID: "r1", Model: "gemini-2.5-pro", Items: []provider.Item{{Text: "Hello, world."}}, Usage: tape.Usage{InputTokens: 5, OutputTokens: 3}},
		{ID: "r2", Model: "gemini-2.5-pro", Items: []provider.Item{
			{Text: "Think.", Thinking: true}, {Text: "Running ünïcode tools."},
			{Call: &tape.ToolCall{ID: "c1", Name: "run_shell_command", Input: json.RawMessage(`{"command":"ls"}`)}},
			{Call: &tape.ToolCall{ID: "c2", Name: "read_file", Input: json.RawMessage(`{"file_path":"a b.txt"}`)}},
		}, Usage: tape.Usage{InputTokens: 50, CacheReadInputTokens: 20, OutputTokens: 30, ReasoningTokens: 10}},
		{ID: "r3", Model: "m", StopReason: "MAX_TOKENS", Items: []provider.Item{{Text: "cut"}}},
		{ID: "r4", Model: "m"},
	}
	for _, a := range answers {
		t.Run(a.ID, func(t *testing.T) {
			want := func(s *tape.Step) {
				t.Helper()
				var blocks []tape.Block
				var calls []tape.ToolCall
				for _, it := range a.Items {
					switch {
					case it.Call != nil:
						blocks = append(blocks, tape.Block{Type: tape.BlockToolUse, ID: it.Call.ID, Name: it.Call.Name, Input: it.Call.Input})
						c := *it.Call
						c.Kind = "function"
						calls = append(calls, c)
					case it.Thinking:
						blocks = append(blocks, tape.Block{Type: tape.BlockThinking, Text: it.Text})
					default:
						blocks = append(blocks, tape.Block{Type: tape.BlockText, Text: it.Text})
					}
				}
				if len(blocks) == 0 {
					assert.Empty(t, tape.BlocksText(s.Response.Content))
				} else {
					assert.Equal(t, blocks, s.Response.Content)
				}
				assert.Equal(t, calls, s.ToolCalls)
				stop := a.StopReason
				if stop == "" {
					stop = "STOP"
				}
				assert.Equal(t, stop, s.Response.StopReason)
				assert.Equal(t, a.Usage, s.Response.Usage)
			}
			body, err := provider.Body(tape.ProviderGemini, a)
			require.NoError(t, err)
			s := &tape.Step{Response: tape.Response{Raw: body}}
			s.ToolCalls, err = provider.NormalizeResponse(tape.ProviderGemini, &s.Response)
			require.NoError(t, err)
			want(s)
			for _, piece := range []int{0, 2} {
				evs, err := provider.Stream(tape.ProviderGemini, a, provider.StreamOptions{Piece: piece})
				require.NoError(t, err)
				var b strings.Builder
				for _, e := range evs {
					assert.Empty(t, e.Name, "the Gemini API names no events")
					b.WriteString(e.SSE())
				}
				s := &tape.Step{Response: tape.Response{Chunks: chunksOf([]byte(b.String()))}}
				s.ToolCalls, err = provider.NormalizeResponse(tape.ProviderGemini, &s.Response)
				require.NoError(t, err)
				want(s)
			}
		})
	}
	_, err := provider.Body(tape.ProviderGemini, provider.Answer{Items: []provider.Item{{Raw: map[string]any{"type": "x"}}}})
	assert.ErrorContains(t, err, "no raw output items")
}

func TestGeminiErrorBody(t *testing.T) {
	var v struct {
		Error struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
			Status  string `json:"status"`
		} `json:"error"`
	}
	require.NoError(t, json.Unmarshal(provider.ErrorBody(tape.ProviderGemini, "rate_limit_error", "x", "slow down"), &v))
	assert.Equal(t, 429, v.Error.Code)
	assert.Equal(t, "RESOURCE_EXHAUSTED", v.Error.Status)
	assert.Equal(t, "slow down", v.Error.Message)
	require.NoError(t, json.Unmarshal(provider.ErrorBody(tape.ProviderGemini, "no_such_type", "", "m"), &v))
	assert.Equal(t, 500, v.Error.Code)
}

func TestGeminiMalformed(t *testing.T) {
	tests := []struct{ name, req, want string }{
		{"contents not a list", `{"contents":{}}`, "contents"},
		{"parts not a list", `{"contents":[{"role":"user","parts":"x"}]}`, "contents"},
		{"part not an object", `{"contents":[{"role":"user","parts":[1]}]}`, "contents[0]: parts[0]"},
		{"tools not a list", `{"contents":[],"tools":{}}`, "tools"},
		{"declarations not a list", `{"contents":[],"tools":[{"functionDeclarations":{}}]}`, "tools[0].functionDeclarations"},
		{"system not text", `{"contents":[],"systemInstruction":{"parts":[{"text":1}]}}`, "systemInstruction"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &tape.Step{Request: tape.Request{Raw: json.RawMessage(tt.req)}}
			err := provider.Normalize(tape.ProviderGemini, s)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
	s := &tape.Step{Request: tape.Request{Raw: json.RawMessage(`{}`)}, Response: tape.Response{Raw: json.RawMessage(`{"candidates":[{"content":{"parts":[7]}}]}`)}}
	err := provider.Normalize(tape.ProviderGemini, s)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "candidates[0].content.parts[0]")
}
