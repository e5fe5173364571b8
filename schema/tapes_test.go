package schema

import (
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/tapebox/tapebox/tape"
	"github.com/tapebox/tapebox/tape/seal"
)

// Tapes built with package tape, for fixtures, tests and benchmarks. Ids and times are
// fixed so that the encodings are stable.

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 123456789, time.UTC)

func ptr[T any](v T) *T { return &v }

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

func newTape(p tape.Provider, id string) *tape.Tape {
	t := tape.New(p, t0)
	t.Meta.TapeID = id
	t.Meta.Harness = "claude-code"
	t.Meta.HarnessVersion = "2.1.3"
	t.Meta.Model = "claude-sonnet-4-5"
	t.Meta.Task = map[string]string{"bench": "tb4", "id": "hello-world"}
	return t
}

// everyField returns a tape in which every optional field of every type is set, so that a
// Go field the schema does not describe fails validation.
func everyField() *tape.Tape {
	t := newTape(tape.ProviderAnthropic, "00000000000000000000000000000001")
	t.Meta.ReplayOf = ptr("0123456789abcdef0123456789abcdef")
	t.Meta.Cwd = "/work/app"
	t.Meta.Labels = map[string]string{"run": "7"}
	t.Meta.ForkedFrom = &tape.ForkedFrom{TapeID: "fedcba9876543210fedcba9876543210", Thread: "main", Step: 2,
		Served: map[string]int{"main": 2}, Overrides: map[string]string{"model": "cheap-model"}}
	t.Meta.Workspace = &tape.Workspace{
		Snapshot: "run.workspace.tar.zst", Digest: "sha256:" + strings.Repeat("ab", 32), Size: 4096, Files: 3, Bytes: 2,
		Exclude: []string{"node_modules"},
		End: []tape.FileEntry{
			{Path: "a.txt", Type: "file", Mode: "0644", Size: 2, SHA256: strings.Repeat("0f", 32)},
			{Path: "bin", Type: "dir", Mode: "0755"},
			{Path: "link", Type: "symlink", Mode: "0777", Link: "a.txt"},
		},
	}
	t.Meta.Limits = &tape.Limits{MaxCostUSD: 2.5, MaxSteps: 100, MaxThreadSteps: 40, MaxTokens: 1e6, MaxRepeat: 3}
	t.Meta.Ended = &tape.Ended{Reason: tape.EndBudget, At: t0.Add(9 * time.Second), Detail: "thread main repeated its tool calls 3 times", Limit: "max_repeat"}
	t.Meta.Redactions = []tape.Redaction{{Rule: "aws-access-token", Pointer: "/threads/0/steps/0/request/raw/messages/0/content"}, {Rule: "pattern:acme-[0-9]+", Pointer: "/meta/task/id"}}
	all := []tape.Block{
		{Type: tape.BlockText, Text: "hello"},
		{Type: tape.BlockThinking, Text: "hmm"},
		{Type: tape.BlockToolUse, ID: "toolu_1", Name: "Bash", Input: json.RawMessage(`{"command":"ls"}`)},
		{Type: tape.BlockToolResult, ToolCallID: "toolu_1", Content: []tape.Block{{Type: tape.BlockText, Text: "a\nb"}}, IsError: true},
		{Type: tape.BlockImage, Raw: json.RawMessage(`{"type":"image","source":{"type":"base64","data":"AAAA"}}`)},
		{Type: tape.BlockOther, Raw: json.RawMessage(`{"type":"server_tool_use"}`)},
	}
	step := &tape.Step{
		Request: tape.Request{
			Path:     "/v1/messages",
			System:   "You are helpful.",
			Messages: []tape.Message{{Role: "user", Content: all}, {Role: "system", Content: all[:1]}},
			Tools: []tape.Tool{
				{Name: "Bash", Description: "Run a command", Kind: "function", InputSchema: json.RawMessage(`{"type":"object"}`)},
				{Name: "web_search", Kind: "web_search_20250305"},
			},
			Params:  map[string]json.RawMessage{"max_tokens": json.RawMessage(`1024`), "metadata": json.RawMessage(`{"user_id":"u"}`)},
			Stream:  true,
			Headers: tape.Headers{"content-type": "application/json", "x-api-key": "REDACTED"},
			Raw:     json.RawMessage(`{"model":"claude-sonnet-4-5","messages":[]}`),
		},
		Response: tape.Response{
			Status:     200,
			Headers:    tape.Headers{"content-type": "text/event-stream"},
			Content:    all,
			StopReason: "tool_use",
			Usage:      tape.Usage{InputTokens: 10, OutputTokens: 20, CacheReadInputTokens: 30, CacheCreationInputTokens: 40, ReasoningTokens: 50},
			Raw:        json.RawMessage(`"not json"`),
			Chunks:     []tape.Chunk{{AtMS: 1.5, Data: "event: ping\ndata: {\"type\":\"ping\"}\n\n"}},
		},
		ToolCalls: []tape.ToolCall{{ID: "toolu_1", Name: "apply_patch", Input: json.RawMessage(`{"input":"*** Begin Patch"}`), Kind: "custom"},
			{ID: "toolu_2", Name: "spawn_agent", Input: json.RawMessage(`{}`), Namespace: "multi_agent_v1"}},
		ToolResults: []tape.ToolResult{{ToolCallID: "toolu_1", Content: all[:1], IsError: true, DurationMS: ptr(12.5)},
			{ToolCallID: "toolu_2", Content: all[:1], DurationMS: ptr(1.0)}},
		Timing:         tape.Timing{RequestAt: 1, FirstByteAt: 2.25, LastByteAt: 3.5, NextRequestAt: ptr(4.0)},
		ServedFromTape: true,
	}
	t.Threads = []*tape.Thread{
		{ID: "main", Steps: []*tape.Step{step}},
		{ID: "sub-1", Parent: &tape.Parent{ThreadID: "main", ToolCallID: "toolu_1"}, Steps: []*tape.Step{}},
	}
	// Digests and a signature, by a fixed key so that the fixture is stable.
	if err := seal.Tape(t, ed25519.NewKeyFromSeed(make([]byte, ed25519.SeedSize))); err != nil {
		panic(err)
	}
	return t
}

// agentTape returns a tape shaped like a real recording: a main thread of steps whose
// requests carry the whole conversation so far (normalized and raw), responses streamed as
// server-sent events or returned as JSON bodies, parallel tool calls with long results, and
// a subagent thread spawned by a Task call. resultSize is the length of each tool result.
func agentTape(p tape.Provider, steps, resultSize int, stream bool) *tape.Tape {
	t := newTape(p, fmt.Sprintf("%032x", steps*1000+resultSize))
	path := map[tape.Provider]string{
		tape.ProviderAnthropic:       "/v1/messages",
		tape.ProviderOpenAIChat:      "/v1/chat/completions",
		tape.ProviderOpenAIResponses: "/v1/responses",
	}[p]
	tools := []tape.Tool{
		{Name: "Bash", Description: "Executes a bash command.", Kind: "function", InputSchema: json.RawMessage(`{"type":"object","properties":{"command":{"type":"string"}},"required":["command"]}`)},
		{Name: "Read", Description: "Reads a file.", Kind: "function", InputSchema: json.RawMessage(`{"type":"object","properties":{"file_path":{"type":"string"}}}`)},
		{Name: "Task", Description: "Launches a subagent.", Kind: "function", InputSchema: json.RawMessage(`{"type":"object"}`)},
	}
	main := &tape.Thread{ID: "main"}
	t.Threads = append(t.Threads, main)
	var history []tape.Message
	history = append(history, tape.Message{Role: "user", Content: []tape.Block{{Type: tape.BlockText, Text: "Fix the failing test in ./pkg and explain the fix."}}})
	clock := 0.0
	var spawn *tape.ToolCall
	for i := range steps {
		req := tape.Request{
			Path:     path,
			System:   "You are Claude Code, an interactive CLI tool that helps users with software engineering tasks.",
			Messages: append([]tape.Message(nil), history...),
			Tools:    tools,
			Params:   map[string]json.RawMessage{"max_tokens": json.RawMessage(`32000`), "temperature": json.RawMessage(`1`)},
			Stream:   stream,
			Headers:  tape.Headers{"content-type": "application/json", "user-agent": "claude-cli/2.1.3", "x-api-key": "REDACTED"},
		}
		req.Raw = mustJSON(map[string]any{"model": t.Meta.Model, "system": req.System, "messages": history, "tools": tools, "max_tokens": 32000, "stream": stream})
		calls := []tape.ToolCall{
			{ID: fmt.Sprintf("toolu_%03d_a", i), Name: "Bash", Input: mustJSON(map[string]string{"command": fmt.Sprintf("go test ./pkg/... -run 'Test%d' 2>&1 | tail -n 50", i)})},
			{ID: fmt.Sprintf("toolu_%03d_b", i), Name: "Read", Input: mustJSON(map[string]string{"file_path": fmt.Sprintf("/app/pkg/file%d.go", i)})},
		}
		if i == 1 {
			calls = append(calls, tape.ToolCall{ID: "toolu_task", Name: "Task", Input: mustJSON(map[string]string{"prompt": "Search the repo for callers of Parse."})})
			spawn = &calls[len(calls)-1]
		}
		text := fmt.Sprintf("Step %d: I will run the tests and read the file to see what \"fails\".", i)
		content := []tape.Block{{Type: tape.BlockThinking, Text: strings.Repeat("Let me think about the failure. ", 8)}, {Type: tape.BlockText, Text: text}}
		for _, c := range calls {
			content = append(content, tape.Block{Type: tape.BlockToolUse, ID: c.ID, Name: c.Name, Input: c.Input})
		}
		resp := tape.Response{
			Status:     200,
			Headers:    tape.Headers{"content-type": "application/json", "request-id": fmt.Sprintf("req_%d", i)},
			Content:    content,
			StopReason: "tool_use",
			Usage:      tape.Usage{InputTokens: int64(1000 * (i + 1)), OutputTokens: 300, CacheReadInputTokens: int64(900 * i), CacheCreationInputTokens: 100},
		}
		if stream {
			resp.Headers["content-type"] = "text/event-stream"
			resp.Raw = json.RawMessage("null")
			at := 0.0
			for j, b := range content {
				for _, piece := range chunksOf(b.Text+string(b.Input), 40) {
					at += 3.25
					data := mustJSON(map[string]any{"type": "content_block_delta", "index": j, "delta": map[string]string{"type": "text_delta", "text": piece}})
					resp.Chunks = append(resp.Chunks, tape.Chunk{AtMS: at, Data: "event: content_block_delta\ndata: " + string(data) + "\n\n"})
				}
			}
		} else {
			resp.Raw = mustJSON(map[string]any{"id": fmt.Sprintf("msg_%d", i), "type": "message", "role": "assistant", "content": content, "stop_reason": "tool_use", "usage": resp.Usage})
		}
		var results []tape.ToolResult
		var resultBlocks []tape.Block
		for k, c := range calls {
			out := toolOutput(i*10+k, resultSize)
			r := tape.ToolResult{ToolCallID: c.ID, Content: []tape.Block{{Type: tape.BlockText, Text: out}}, IsError: k == 0 && i%3 == 0}
			results = append(results, r)
			resultBlocks = append(resultBlocks, tape.Block{Type: tape.BlockToolResult, ToolCallID: c.ID, Content: r.Content, IsError: r.IsError})
		}
		history = append(history, tape.Message{Role: "assistant", Content: content}, tape.Message{Role: "user", Content: resultBlocks})
		timing := tape.Timing{RequestAt: clock, FirstByteAt: clock + 812.5, LastByteAt: clock + 2950.125}
		clock += 4000
		next := clock
		timing.NextRequestAt = &next
		main.Steps = append(main.Steps, &tape.Step{Request: req, Response: resp, ToolCalls: calls, ToolResults: results, Timing: timing})
	}
	if n := len(main.Steps); n > 0 {
		main.Steps[n-1].Timing.NextRequestAt = nil
		main.Steps[n-1].ToolCalls, main.Steps[n-1].ToolResults = nil, nil
		main.Steps[n-1].Response.StopReason = "end_turn"
	}
	if spawn != nil {
		sub := &tape.Thread{ID: "sub-1", Parent: &tape.Parent{ThreadID: "main", ToolCallID: spawn.ID}}
		sub.Steps = append(sub.Steps, &tape.Step{
			Request: tape.Request{Path: path, Messages: []tape.Message{{Role: "user", Content: []tape.Block{{Type: tape.BlockText, Text: "Search the repo for callers of Parse."}}}}, Raw: json.RawMessage(`{"messages":[]}`)},
			Response: tape.Response{
				Status: 200, StopReason: "end_turn", Raw: json.RawMessage(`{"content":[]}`),
				Content: []tape.Block{{Type: tape.BlockText, Text: "Parse is called from cmd/main.go and pkg/run.go."}},
				Usage:   tape.Usage{InputTokens: 500, OutputTokens: 40},
			},
			Timing: tape.Timing{RequestAt: 4100, FirstByteAt: 4500, LastByteAt: 4700},
		})
		t.Threads = append(t.Threads, sub)
	}
	t.Meta.Ended = &tape.Ended{Reason: tape.EndComplete, At: t0.Add(time.Duration(clock) * time.Millisecond)}
	return t
}

// toolOutput is a tool result of about n bytes that looks like code and test output: lines,
// tabs, quotes and backslashes, so that its JSON encoding holds escapes.
func toolOutput(seed, n int) string {
	var sb strings.Builder
	for line := 0; sb.Len() < n; line++ {
		fmt.Fprintf(&sb, "%4d\tfunc f%d_%d(s string) error { return fmt.Errorf(\"bad %%q: %%w\", s, err) } // path C:\\x\n", line, seed, line)
	}
	return sb.String()[:n]
}

func chunksOf(s string, n int) []string {
	var out []string
	for len(s) > n {
		out = append(out, s[:n])
		s = s[n:]
	}
	if s != "" {
		out = append(out, s)
	}
	return out
}

func mustMarshal(t *tape.Tape) []byte {
	b, err := tape.Marshal(t)
	if err != nil {
		panic(err)
	}
	return b
}
