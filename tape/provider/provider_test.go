package provider_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/tape"
	"github.com/tapebox/tapebox/tape/provider"
)

const (
	anth = tape.ProviderAnthropic
	chat = tape.ProviderOpenAIChat
	resp = tape.ProviderOpenAIResponses
)

func readFile(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	require.NoError(t, err)
	return b
}

// chunksOf splits a recorded stream into chunks the way the gateway does: one per event.
func chunksOf(stream []byte) []tape.Chunk {
	var sp provider.EventSplitter
	var out []tape.Chunk
	for i, ev := range sp.Write(stream) {
		out = append(out, tape.Chunk{AtMS: float64(i), Data: ev})
	}
	if rest := sp.Flush(); rest != "" {
		out = append(out, tape.Chunk{AtMS: float64(len(out)), Data: rest})
	}
	return out
}

// chunksOfSize splits a stream into chunks of n bytes, ignoring event boundaries.
func chunksOfSize(stream []byte, n int) []tape.Chunk {
	var out []tape.Chunk
	for len(stream) > 0 {
		k := min(n, len(stream))
		out = append(out, tape.Chunk{Data: string(stream[:k])})
		stream = stream[k:]
	}
	return out
}

// stepFor builds a step holding a response read from testdata: a stream (.sse) or a body.
func stepFor(t testing.TB, request []byte, response string) *tape.Step {
	t.Helper()
	s := &tape.Step{Request: tape.Request{Raw: request}}
	body := readFile(t, response)
	if strings.HasSuffix(response, ".sse") {
		s.Response.Chunks = chunksOf(body)
	} else {
		s.Response.Raw = body
	}
	return s
}

// show renders blocks compactly for comparisons.
func show(bs []tape.Block) string {
	var parts []string
	for _, b := range bs {
		switch b.Type {
		case tape.BlockText, tape.BlockThinking:
			parts = append(parts, fmt.Sprintf("%s %q", b.Type, b.Text))
		case tape.BlockToolUse:
			parts = append(parts, fmt.Sprintf("tool_use %s %s %s", b.ID, b.Name, compact(b.Input)))
		case tape.BlockToolResult:
			e := ""
			if b.IsError {
				e = " error"
			}
			parts = append(parts, fmt.Sprintf("tool_result %s%s [%s]", b.ToolCallID, e, show(b.Content)))
		default:
			var v struct {
				Type string `json:"type"`
			}
			_ = json.Unmarshal(b.Raw, &v)
			parts = append(parts, b.Type+":"+v.Type)
		}
	}
	return strings.Join(parts, "; ")
}

func showMessages(ms []tape.Message) []string {
	out := []string{}
	for _, m := range ms {
		out = append(out, m.Role+": "+show(m.Content))
	}
	return out
}

func showCalls(cs []tape.ToolCall) []string {
	out := []string{}
	for _, c := range cs {
		out = append(out, fmt.Sprintf("%s %s %s %s", c.Kind, c.ID, c.Name, compact(c.Input)))
	}
	return out
}

func compact(raw []byte) string {
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return "INVALID:" + string(raw)
	}
	return b.String()
}

func TestDetect(t *testing.T) {
	for _, tc := range []struct {
		path string
		want tape.Provider
		ok   bool
	}{
		{"/v1/messages", anth, true},
		{"/v1/messages?beta=true", anth, true},
		{"/r/run-1/v1/messages?beta=true", anth, true},
		{"/v1/chat/completions", chat, true},
		{"/proxy/openai/v1/chat/completions", chat, true},
		{"/v1/responses", resp, true},
		{"/r/a/b/v1/responses?x=1#f", resp, true},
		{"/v1/messages/count_tokens", "", false},
		{"/v1/models", "", false},
		{"/messages", "", false},
		{"/chat/completions", "", false},
		{"/xv1/responses", "", false},
		{"", "", false},
	} {
		t.Run(tc.path, func(t *testing.T) {
			got, ok := provider.Detect(tc.path)
			assert.Equal(t, tc.ok, ok)
			assert.Equal(t, tc.want, got)
		})
	}
}

// TestPath: each provider's path is the one Detect knows it by.
func TestPath(t *testing.T) {
	for _, p := range []tape.Provider{tape.ProviderAnthropic, tape.ProviderOpenAIChat, tape.ProviderOpenAIResponses} {
		path := provider.Path(p)
		assert.NotEmpty(t, path, p)
		got, ok := provider.Detect("/proxy" + path)
		assert.True(t, ok, p)
		assert.Equal(t, p, got)
	}
	assert.Empty(t, provider.Path(tape.ProviderUnknown))
}

func TestRequests(t *testing.T) {
	for _, tc := range []struct {
		name     string
		p        tape.Provider
		file     string
		system   string
		messages []string
		tools    []string
		params   []string
		stream   bool
	}{
		{
			name:   "claude code",
			p:      anth,
			file:   "anthropic/claude_code_request.json",
			system: "x-anthropic-billing-header: cc_version=2.1.332.0b8; cc_entrypoint=sdk-cli;\nYou are a Claude agent, built on Anthropic's Claude Agent SDK.",
			messages: []string{
				`user: text "<system-reminder>\nAttribution for git commits and pull requests you create from here on.\n</system-reminder>"; text "Add a greeting script and run it."; image:image`,
				`system: text "# Environment\nYou have been invoked in the following environment: \n - Primary working directory: /tmp/work"`,
				`assistant: thinking ""; thinking ""; text "I'll look around first."; tool_use toolu_01A Bash {"command":"ls -la","description":"List files"}; tool_use toolu_01B Read {"file_path":"/tmp/work/README.md"}; other:server_tool_use`,
				`user: tool_result toolu_01A [text "total 8\ndrwxr-xr-x 2 root root 4096 Nov 29 10:00 .\n-rw-r--r-- 1 root root   12 Nov 29 10:00 README.md"]; tool_result toolu_01B [text "1\t# Work"; image:image]; text "<system-reminder>\nThe user sent a new message.\n</system-reminder>"`,
			},
			tools:  []string{"Agent/function", "Bash/function", "Read/function", "web_search/web_search_20250305"},
			params: []string{"context_management", "max_tokens", "metadata", "model", "output_config", "thinking"},
			stream: true,
		},
		{
			name:     "anthropic system string",
			p:        anth,
			file:     "",
			system:   "Be brief.",
			messages: []string{`user: text "hi"`, `assistant: text "hello"`},
			tools:    []string{},
			params:   []string{"max_tokens", "model"},
		},
		{
			name:   "chat",
			p:      chat,
			file:   "chat/request.json",
			system: "",
			messages: []string{
				`system: text "You are a coding agent. Keep answers short."`,
				`system: text "Sandbox: danger-full-access."`,
				`user: text "What is in this directory? Also look at the logo."; image:image_url`,
				`assistant: tool_use call_Ab1 exec_command {"cmd":"ls -la","workdir":"/tmp/work"}; tool_use call_Ab2 exec_command {"cmd":"cat README.md"}; tool_use call_Ab3 apply_patch {"input":"*** Begin Patch\n*** Add File: hello.sh\n+echo hi\n*** End Patch\n"}`,
				`tool: tool_result call_Ab1 [text "Chunk ID: 8e7254\nWall time: 0.0000 seconds\nProcess exited with code 0\nOriginal token count: 5\nOutput:\nREADME.md\n"]`,
				`tool: tool_result call_Ab2 [text "# Work\n"]`,
				`tool: tool_result call_Ab3 [text "Exit code: 0\nWall time: 0 seconds\nOutput:\nSuccess. Updated the following files:\nA hello.sh\n"]`,
				`assistant: thinking "Summarize."; text "There is a README and now hello.sh."`,
				`user: text "Thanks. Run it."`,
			},
			tools:  []string{"exec_command/function", "apply_patch/custom", "spawn_agent/function"},
			params: []string{"model", "parallel_tool_calls", "prompt_cache_key", "reasoning_effort", "store", "stream_options", "tool_choice"},
			stream: true,
		},
		{
			name:   "codex responses",
			p:      resp,
			file:   "responses/codex_request.json",
			system: "You are Codex, a coding agent based on GPT-5.",
			messages: []string{
				`system: text "<permissions instructions>\nFilesystem sandboxing defines which files can be read or written.\n</permissions instructions>"; text "<tools>\nDeferred tool namespaces:\n- multi_agent_v1: Tools for spawning and managing sub-agents.\n</tools>"`,
				`user: text "<environment_context>\n  <cwd>/tmp/work</cwd>\n  <shell>bash</shell>\n</environment_context>"; image:input_image`,
				`user: text "Add a greeting script and run it."`,
				`system: text "Turn aborted by a previous error; continue."`,
				`assistant: thinking "**Planning**\nLook first, then write."`,
				`assistant: tool_use call_fake1795944365276001 exec_command {"cmd":"ls -la"}`,
				`assistant: tool_use call_shell01 local_shell {"type":"exec","command":["bash","-lc","cat README.md"],"timeout_ms":10000,"working_directory":"/tmp/work"}`,
				`tool: tool_result call_fake1795944365276001 [text "Chunk ID: 8e7254\nWall time: 0.0000 seconds\nProcess exited with code 0\nOriginal token count: 3\nOutput:\nREADME.md\n"]`,
				`tool: tool_result call_shell01 [text "# Work\n"]`,
				`assistant: text "I'll add the script."; other:refusal`,
				`assistant: tool_use call_patch01 apply_patch {"input":"*** Begin Patch\n*** Add File: hello.sh\n+#!/bin/sh\n+echo \"hello <world>\"\n*** End Patch\n"}`,
				`tool: tool_result call_patch01 [text "Exit code: 0\nWall time: 0 seconds\nOutput:\nSuccess. Updated the following files:\nA hello.sh\n"]`,
				`assistant: other:web_search_call`,
				`assistant: other:compaction`,
			},
			tools:  []string{"exec_command/function", "apply_patch/custom", "web_search/web_search", "local_shell/local_shell"},
			params: []string{"client_metadata", "include", "model", "parallel_tool_calls", "prompt_cache_key", "reasoning", "store", "text", "tool_choice"},
			stream: true,
		},
		{
			name:     "responses input string",
			p:        resp,
			system:   "",
			messages: []string{`user: text "say hi"`},
			tools:    []string{},
			params:   []string{"model"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			raw := []byte(`{"model":"m","max_tokens":10,"system":"Be brief.","messages":[{"role":"user","content":"hi"},{"role":"assistant","content":[{"type":"text","text":"hello"}]}]}`)
			if tc.p == resp && tc.file == "" {
				raw = []byte(`{"model":"gpt-5.5","input":"say hi"}`)
			}
			if tc.file != "" {
				raw = readFile(t, tc.file)
			}
			s := &tape.Step{Request: tape.Request{Raw: raw}}
			require.NoError(t, provider.Normalize(tc.p, s))
			assert.Equal(t, tc.system, s.Request.System)
			assert.Equal(t, tc.messages, showMessages(s.Request.Messages))
			tools := []string{}
			for _, tl := range s.Request.Tools {
				tools = append(tools, tl.Name+"/"+tl.Kind)
			}
			assert.Equal(t, tc.tools, tools)
			assert.Equal(t, tc.params, slices.Sorted(maps.Keys(s.Request.Params)))
			assert.Equal(t, tc.stream, s.Request.Stream)
			assert.Equal(t, tape.BodyModel(raw), unquote(s.Request.Params["model"]))
		})
	}
}

func unquote(raw json.RawMessage) string {
	var s string
	_ = json.Unmarshal(raw, &s)
	return s
}

func TestToolsKeepSchemas(t *testing.T) {
	s := &tape.Step{Request: tape.Request{Raw: readFile(t, "responses/codex_request.json")}}
	require.NoError(t, provider.Normalize(resp, s))
	require.Len(t, s.Request.Tools, 4)
	assert.Contains(t, string(s.Request.Tools[0].InputSchema), `"cmd"`)
	assert.Equal(t, "Runs a command in a PTY, returning output or a session ID for ongoing interaction.", s.Request.Tools[0].Description)
	assert.Empty(t, s.Request.Tools[1].InputSchema, "a freeform tool has a grammar, not a JSON schema")

	s = &tape.Step{Request: tape.Request{Raw: readFile(t, "anthropic/claude_code_request.json")}}
	require.NoError(t, provider.Normalize(anth, s))
	assert.Contains(t, string(s.Request.Tools[1].InputSchema), `"dangerouslyDisableSandbox"`)
	// Params are verbatim.
	assert.JSONEq(t, `{"type":"adaptive","display":"omitted"}`, string(s.Request.Params["thinking"]))
}

// A tape holds image and unknown blocks whole, so nothing the provider sent is lost.
func TestRawKeptForImageAndOther(t *testing.T) {
	s := &tape.Step{Request: tape.Request{Raw: readFile(t, "anthropic/claude_code_request.json")}}
	require.NoError(t, provider.Normalize(anth, s))
	img := s.Request.Messages[0].Content[2]
	assert.JSONEq(t, `{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBORw0KGgo="}}`, string(img.Raw))
	other := s.Request.Messages[2].Content[5]
	assert.JSONEq(t, `{"type":"server_tool_use","id":"srvtoolu_01","name":"web_search","input":{"query":"bash greeting"}}`, string(other.Raw))
}

type responseCase struct {
	name string
	p    tape.Provider
	file string
	// stream, when set, is the same message recorded as a stream: it normalizes alike.
	stream  string
	content string
	calls   []string
	stop    string
	usage   tape.Usage
}

var responseCases = []responseCase{
	{
		name:    "anthropic thinking and parallel tools",
		p:       anth,
		file:    "anthropic/response_thinking_tools.json",
		stream:  "anthropic/stream_parallel.sse",
		content: `thinking "Two independent reads: run them together."; text "Checking the tree and the README."; tool_use toolu_01A Bash {"command":"ls -la","description":"List files"}; tool_use toolu_01B Read {"file_path":"/tmp/work/README.md"}`,
		calls:   []string{`function toolu_01A Bash {"command":"ls -la","description":"List files"}`, `function toolu_01B Read {"file_path":"/tmp/work/README.md"}`},
		stop:    "tool_use",
		usage:   tape.Usage{InputTokens: 12, OutputTokens: 187, CacheReadInputTokens: 14211, CacheCreationInputTokens: 1830},
	},
	{
		name:    "anthropic stream unknown events, crlf, multi-line data",
		p:       anth,
		file:    "anthropic/stream_unknown_crlf.sse",
		content: `thinking ""; other:server_tool_use; text "Use echo."`,
		calls:   []string{},
		stop:    "end_turn",
		usage:   tape.Usage{InputTokens: 3, OutputTokens: 9, CacheReadInputTokens: 50},
	},
	{
		name:    "anthropic stream cut inside a tool call",
		p:       anth,
		file:    "anthropic/stream_truncated.sse",
		content: `thinking "Two independent reads: run them together."; text "Checking the tree and the README."; tool_use toolu_01A Bash {"command":"ls -la","description":"List files"}; tool_use toolu_01B Read {"_invalid_arguments":"{\"file_path\": \"/tmp/wo"}`,
		calls:   []string{`function toolu_01A Bash {"command":"ls -la","description":"List files"}`, `function toolu_01B Read {"_invalid_arguments":"{\"file_path\": \"/tmp/wo"}`},
		stop:    "",
		usage:   tape.Usage{InputTokens: 12, OutputTokens: 1, CacheReadInputTokens: 14211, CacheCreationInputTokens: 1830},
	},
	{
		name:  "anthropic error body",
		p:     anth,
		file:  "anthropic/error_body.json",
		calls: []string{},
	},
	{
		name:    "chat parallel tools; stream interleaved, with a usage chunk",
		p:       chat,
		file:    "chat/response_tool_calls.json",
		stream:  "chat/stream_tool_calls.sse",
		content: `text "Running both."; tool_use call_Xy1 exec_command {"cmd":"bash hello.sh"}; tool_use call_Xy2 exec_command {"cmd":"shellcheck hello.sh"}`,
		calls:   []string{`function call_Xy1 exec_command {"cmd":"bash hello.sh"}`, `function call_Xy2 exec_command {"cmd":"shellcheck hello.sh"}`},
		stop:    "tool_calls",
		usage:   tape.Usage{InputTokens: 128, OutputTokens: 96, CacheReadInputTokens: 1920, ReasoningTokens: 64},
	},
	{
		name:    "chat stream cut inside a tool call",
		p:       chat,
		file:    "chat/stream_truncated.sse",
		content: `text "Running both."; tool_use call_Xy1 exec_command {"cmd":"bash hello.sh"}; tool_use call_Xy2 exec_command {"_invalid_arguments":"{\"cmd\":\"shellcheck"}`,
		calls:   []string{`function call_Xy1 exec_command {"cmd":"bash hello.sh"}`, `function call_Xy2 exec_command {"_invalid_arguments":"{\"cmd\":\"shellcheck"}`},
	},
	{
		name:  "chat error body",
		p:     chat,
		file:  "chat/error_body.json",
		calls: []string{},
	},
	{
		name:    "responses json reasoning, text, parallel tools",
		p:       resp,
		file:    "responses/response.json",
		content: `thinking "**Two checks at once**"; text "Running the script and a lint."; tool_use call_R1 exec_command {"cmd":"sh hello.sh"}; tool_use call_R2 exec_command {"cmd":"shellcheck hello.sh","yield_time_ms":1000}`,
		calls:   []string{`function call_R1 exec_command {"cmd":"sh hello.sh"}`, `function call_R2 exec_command {"cmd":"shellcheck hello.sh","yield_time_ms":1000}`},
		stop:    "completed",
		usage:   tape.Usage{InputTokens: 160, OutputTokens: 210, CacheReadInputTokens: 8960, ReasoningTokens: 128},
	},
	{
		name:    "responses json incomplete",
		p:       resp,
		file:    "responses/incomplete.json",
		content: `thinking ""`,
		calls:   []string{},
		stop:    "max_output_tokens",
		usage:   tape.Usage{InputTokens: 100, OutputTokens: 16, ReasoningTokens: 16},
	},
	{
		name:    "responses stream custom tool, unknown event",
		p:       resp,
		file:    "responses/stream_custom_tool.sse",
		content: `thinking "**Fixing the greeting**"; tool_use call_P2 apply_patch {"input":"*** Begin Patch\n*** Update File: hello.sh\n@@\n-echo \"hello <world>\"\n+echo \"hello, world\"\n*** End Patch\n"}`,
		calls:   []string{`custom call_P2 apply_patch {"input":"*** Begin Patch\n*** Update File: hello.sh\n@@\n-echo \"hello <world>\"\n+echo \"hello, world\"\n*** End Patch\n"}`},
		stop:    "completed",
		usage:   tape.Usage{InputTokens: 284, OutputTokens: 140, CacheReadInputTokens: 9216, ReasoningTokens: 40},
	},
	{
		name:    "responses stream whose completed event has no output",
		p:       resp,
		file:    "responses/stream_no_final_output.sse",
		content: `text "Running the script and a lint."; tool_use call_R1 exec_command {"cmd":"sh hello.sh"}; tool_use call_R2 exec_command {"cmd":"shellcheck hello.sh","yield_time_ms":1000}`,
		calls:   []string{`function call_R1 exec_command {"cmd":"sh hello.sh"}`, `function call_R2 exec_command {"cmd":"shellcheck hello.sh","yield_time_ms":1000}`},
		stop:    "completed",
		usage:   tape.Usage{InputTokens: 160, OutputTokens: 210, CacheReadInputTokens: 8960, ReasoningTokens: 128},
	},
	{
		name:    "responses stream cut inside a tool call",
		p:       resp,
		file:    "responses/stream_truncated.sse",
		content: `text "Running the script and a lint."; tool_use call_R1 exec_command {"_invalid_arguments":"{\"cmd\":"}; tool_use call_R2 exec_command {"_invalid_arguments":"{\"cmd\":\"shellcheck hello.sh\","}`,
		calls:   []string{`function call_R1 exec_command {"_invalid_arguments":"{\"cmd\":"}`, `function call_R2 exec_command {"_invalid_arguments":"{\"cmd\":\"shellcheck hello.sh\","}`},
	},
}

func TestResponses(t *testing.T) {
	for _, tc := range responseCases {
		for _, file := range []string{tc.file, tc.stream} {
			if file != "" {
				tc.file = file
				t.Run(tc.name+" "+file, func(t *testing.T) { testResponse(t, tc) })
			}
		}
	}
}

func testResponse(t *testing.T, tc responseCase) {
	s := stepFor(t, []byte(`{"model":"m","messages":[],"input":[]}`), tc.file)
	require.NoError(t, provider.Normalize(tc.p, s))
	assert.Equal(t, tc.content, show(s.Response.Content))
	assert.Equal(t, tc.calls, showCalls(s.ToolCalls))
	assert.Equal(t, tc.stop, s.Response.StopReason)
	assert.Equal(t, tc.usage, s.Response.Usage)

	if len(s.Response.Chunks) == 0 {
		return
	}
	// However the stream was cut into chunks, the result is the same.
	for _, n := range []int{1, 7, 64, 1 << 20} {
		s2 := &tape.Step{Request: s.Request, Response: tape.Response{Chunks: chunksOfSize(readFile(t, tc.file), n)}}
		require.NoError(t, provider.Normalize(tc.p, s2))
		assert.Equal(t, s.Response.Content, s2.Response.Content, "chunks of %d bytes", n)
		assert.Equal(t, s.Response.StopReason, s2.Response.StopReason, "chunks of %d bytes", n)
		assert.Equal(t, s.Response.Usage, s2.Response.Usage, "chunks of %d bytes", n)
		assert.Equal(t, s.ToolCalls, s2.ToolCalls, "chunks of %d bytes", n)
	}
}

// A stream and the JSON body of the same message normalize alike.
func TestStreamMatchesBody(t *testing.T) {
	for _, tc := range []struct {
		p            tape.Provider
		body, stream string
	}{
		{anth, "anthropic/response_thinking_tools.json", "anthropic/stream_parallel.sse"},
		{chat, "chat/response_tool_calls.json", "chat/stream_tool_calls.sse"},
	} {
		t.Run(string(tc.p), func(t *testing.T) {
			a := stepFor(t, []byte(`{}`), tc.body)
			b := stepFor(t, []byte(`{}`), tc.stream)
			require.NoError(t, provider.Normalize(tc.p, a))
			require.NoError(t, provider.Normalize(tc.p, b))
			a.Response.Raw, a.Response.Chunks, b.Response.Raw, b.Response.Chunks = nil, nil, nil, nil
			assert.Equal(t, a.Response, b.Response)
			assert.Equal(t, a.ToolCalls, b.ToolCalls)
		})
	}
}

func TestNormalizeLeavesRecordedFields(t *testing.T) {
	next := 12.5
	s := stepFor(t, readFile(t, "chat/request.json"), "chat/stream_tool_calls.sse")
	s.Request.Path = "/v1/chat/completions"
	s.Request.Headers = tape.Headers{"authorization": "[redacted]"}
	s.Response.Status = 200
	s.ToolResults = []tape.ToolResult{{ToolCallID: "x"}}
	s.Timing = tape.Timing{RequestAt: 1, FirstByteAt: 2, LastByteAt: 3, NextRequestAt: &next}
	before := *s
	require.NoError(t, provider.Normalize(chat, s))
	assert.Equal(t, before.Request.Path, s.Request.Path)
	assert.Equal(t, before.Request.Headers, s.Request.Headers)
	assert.Equal(t, before.Request.Raw, s.Request.Raw)
	assert.Equal(t, 200, s.Response.Status)
	assert.Equal(t, before.Response.Chunks, s.Response.Chunks)
	assert.Equal(t, before.ToolResults, s.ToolResults)
	assert.Equal(t, before.Timing, s.Timing)
}

func TestToolResults(t *testing.T) {
	calls := func(ids ...string) []tape.ToolCall {
		var cs []tape.ToolCall
		for _, id := range ids {
			cs = append(cs, tape.ToolCall{ID: id, Name: "x", Input: json.RawMessage(`{}`)})
		}
		return cs
	}
	for _, tc := range []struct {
		name  string
		p     tape.Provider
		file  string
		calls []tape.ToolCall
		want  []string
	}{
		{
			name:  "anthropic, string and block content, call order, unanswered omitted",
			p:     anth,
			file:  "anthropic/claude_code_request.json",
			calls: calls("toolu_01B", "toolu_missing", "toolu_01A"),
			want: []string{
				`toolu_01B false [text "1\t# Work"; image:image]`,
				`toolu_01A false [text "total 8\ndrwxr-xr-x 2 root root 4096 Nov 29 10:00 .\n-rw-r--r-- 1 root root   12 Nov 29 10:00 README.md"]`,
			},
		},
		{
			name:  "chat tool messages",
			p:     chat,
			file:  "chat/request.json",
			calls: calls("call_Ab1", "call_Ab2", "call_Ab3"),
			want: []string{
				`call_Ab1 false [text "Chunk ID: 8e7254\nWall time: 0.0000 seconds\nProcess exited with code 0\nOriginal token count: 5\nOutput:\nREADME.md\n"]`,
				`call_Ab2 false [text "# Work\n"]`,
				`call_Ab3 false [text "Exit code: 0\nWall time: 0 seconds\nOutput:\nSuccess. Updated the following files:\nA hello.sh\n"]`,
			},
		},
		{
			name:  "responses function, local shell and custom outputs",
			p:     resp,
			file:  "responses/codex_request.json",
			calls: calls("call_fake1795944365276001", "call_shell01", "call_patch01"),
			want: []string{
				`call_fake1795944365276001 false [text "Chunk ID: 8e7254\nWall time: 0.0000 seconds\nProcess exited with code 0\nOriginal token count: 3\nOutput:\nREADME.md\n"]`,
				`call_shell01 false [text "# Work\n"]`,
				`call_patch01 false [text "Exit code: 0\nWall time: 0 seconds\nOutput:\nSuccess. Updated the following files:\nA hello.sh\n"]`,
			},
		},
		{
			name:  "no calls",
			p:     resp,
			file:  "responses/codex_request.json",
			calls: nil,
			want:  []string{},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rs, err := provider.ToolResults(tc.p, readFile(t, tc.file), tc.calls)
			require.NoError(t, err)
			got := []string{}
			for _, r := range rs {
				assert.Nil(t, r.DurationMS)
				got = append(got, fmt.Sprintf("%s %v [%s]", r.ToolCallID, r.IsError, show(r.Content)))
			}
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestToolResultIsError(t *testing.T) {
	raw := []byte(`{"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"Exit code 1\nabout to fail","is_error":true},{"type":"tool_result","tool_use_id":"t2"}]}]}`)
	rs, err := provider.ToolResults(anth, raw, []tape.ToolCall{{ID: "t1"}, {ID: "t2"}})
	require.NoError(t, err)
	require.Len(t, rs, 2)
	assert.True(t, rs[0].IsError)
	assert.Equal(t, "Exit code 1\nabout to fail", rs[0].Text())
	assert.False(t, rs[1].IsError)
	assert.NotNil(t, rs[1].Content, "an empty result has empty content, not null")
}

func TestMalformed(t *testing.T) {
	okReq := map[tape.Provider]string{
		anth: `{"model":"m","messages":[]}`,
		chat: `{"model":"m","messages":[]}`,
		resp: `{"model":"m","input":[]}`,
	}
	for _, tc := range []struct {
		name     string
		p        tape.Provider
		request  string
		body     string // a JSON response body
		stream   string // or a stream
		wantPart string // "request" or "response"
	}{
		{"not json", anth, `{"model":`, "", "", "request"},
		{"array body", chat, `[1,2]`, "", "", "request"},
		{"null body", resp, `null`, "", "", "request"},
		{"messages not a list", anth, `{"messages":"hi"}`, "", "", "request"},
		{"content a number", anth, `{"messages":[{"role":"user","content":5}]}`, "", "", "request"},
		{"block not an object", anth, `{"messages":[{"role":"user","content":[7]}]}`, "", "", "request"},
		{"system a number", anth, `{"system":3,"messages":[]}`, "", "", "request"},
		{"tool a string", anth, `{"messages":[],"tools":["<Bash>"]}`, "", "", "request"},
		{"stream a string", chat, `{"messages":[],"stream":"yes"}`, "", "", "request"},
		{"chat tool_calls an object", chat, `{"messages":[{"role":"assistant","tool_calls":{}}]}`, "", "", "request"},
		{"responses input a number", resp, `{"input":5}`, "", "", "request"},
		{"responses item type a number", resp, `{"input":[{"type":5}]}`, "", "", "request"},
		{"anthropic content not a list", anth, "", `{"content":"hi"}`, "", "response"},
		{"chat choices not a list", chat, "", `{"choices":{}}`, "", "response"},
		{"responses output a string", resp, "", `{"output":"x"}`, "", "response"},
		{"body an array", resp, "", `[1]`, "", "response"},
		{"body a broken string", resp, "", `"abc`, "", "response"},
		{"anthropic bad event mid-stream", anth, "", "", "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{}}}\n\nevent: content_block_start\ndata: {not json}\n\nevent: message_stop\ndata: {\"type\":\"message_stop\"}\n\n", "response"},
		{"anthropic block start not an object", anth, "", "", "data: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":3}\n\n", "response"},
		{"chat bad chunk", chat, "", "", "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":5}}]}\n\ndata: [DONE]\n\n", "response"},
		{"responses completed not an object", resp, "", "", "event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":[]}\n\n", "response"},
		{"unknown provider", "bedrock", `{}`, "", "", "provider"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := tc.request
			if req == "" {
				req = okReq[tc.p]
			}
			s := &tape.Step{Request: tape.Request{Raw: json.RawMessage(req)}}
			if tc.body != "" {
				s.Response.Raw = json.RawMessage(tc.body)
			}
			if tc.stream != "" {
				s.Response.Chunks = chunksOf([]byte(tc.stream))
			}
			err := provider.Normalize(tc.p, s)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.wantPart)
			switch tc.wantPart {
			case "request":
				assert.Empty(t, s.Request.Messages)
			case "response":
				assert.Empty(t, s.Response.Content)
				assert.NotEmpty(t, s.Request.Params, "the request is still normalized")
			}
			if tc.wantPart == "request" {
				_, err := provider.ToolResults(tc.p, []byte(req), []tape.ToolCall{{ID: "x"}})
				assert.Error(t, err)
			}
		})
	}
}

// Responses that are no JSON object but are legitimately recorded (an HTML error page kept
// as a JSON string, no body at all) normalize to an empty response without an error.
func TestNonJSONResponses(t *testing.T) {
	for _, raw := range []string{`"<html>502 Bad Gateway</html>"`, `null`, ``} {
		for _, p := range []tape.Provider{anth, chat, resp} {
			s := &tape.Step{Request: tape.Request{Raw: json.RawMessage(`{"model":"m"}`)}, Response: tape.Response{Raw: json.RawMessage(raw)}}
			require.NoError(t, provider.Normalize(p, s), "%s %s", p, raw)
			assert.Empty(t, s.Response.Content)
			assert.Empty(t, s.Response.StopReason)
		}
	}
}

// TestTruncatedBodies: a body recorded as a truncation marker says nothing: empty fields,
// no error, and no params taken from the marker.
func TestTruncatedBodies(t *testing.T) {
	marker := tape.Truncation{Bytes: 100 << 20, Limit: 32 << 20}.Raw()
	for _, p := range []tape.Provider{anth, chat, resp} {
		s := &tape.Step{Request: tape.Request{Raw: marker}, Response: tape.Response{Raw: marker}}
		require.NoError(t, provider.Normalize(p, s), p)
		assert.Empty(t, s.Request.Messages, p)
		assert.Empty(t, s.Request.Params, p)
		assert.Empty(t, s.Response.Content, p)
		assert.Empty(t, s.Response.StopReason, p)
		assert.Empty(t, s.ToolCalls, p)
		results, err := provider.ToolResults(p, marker, []tape.ToolCall{{ID: "call_1", Name: "Bash"}})
		require.NoError(t, err, p)
		assert.Empty(t, results, p)
	}
}
