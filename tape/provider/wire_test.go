package provider_test

// Wire encoders for the golden tapes: they write request bodies, JSON response bodies and
// server-sent event streams in the shapes the real harnesses and providers use (see
// ../../../shared/captures), from a provider-neutral script of a run. Nothing here fills a
// normalized field: the golden test leaves that to Normalize and ToolResults.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/tapebox/tapebox/tape"
)

// A script of one conversation (thread).
type gThread struct {
	id     string
	parent *tape.Parent
	system string // the harness's instructions for this thread
	prompt string // the first user message
	turns  []gTurn
}

// gTurn is one model call: what the model answered and how long things took.
type gTurn struct {
	thinking string
	text     string
	calls    []gCall
	ttfb     float64 // ms from the request to the first byte of the answer
	toolMS   float64 // ms from the answer's last byte to the thread's next request
	// after names a thread whose end this turn's request waits for (a blocking subagent).
	after string
}

type gCall struct {
	id, name string
	input    string // JSON arguments, or the text of a freeform (custom) call
	custom   bool
	result   string
	isError  bool
	// listResult sends the result as a list with one text block (Claude Code's Agent).
	listResult bool
}

func (t gTurn) stopped() bool { return len(t.calls) == 0 }

// obj is a JSON object that keeps its fields in the order written, as the harnesses do.
type obj []kv

type kv struct {
	k string
	v any
}

// get returns the value of field k.
func (o obj) get(k string) any {
	for _, f := range o {
		if f.k == k {
			return f.v
		}
	}
	return nil
}

func (o obj) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, f := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(enc(f.k))
		b.WriteByte(':')
		b.Write(enc(f.v))
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// enc encodes v compactly without HTML escaping, as JavaScript's JSON.stringify does.
func enc(v any) []byte {
	var b bytes.Buffer
	e := json.NewEncoder(&b)
	e.SetEscapeHTML(false)
	if err := e.Encode(v); err != nil {
		panic(err)
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// pieces cuts s into deltas of about n runes, as a model streams tokens.
func pieces(s string, n int) []string {
	var out []string
	for s != "" {
		k, i := 0, 0
		for i < len(s) && k < n {
			_, size := utf8.DecodeRuneInString(s[i:])
			i += size
			k++
		}
		out = append(out, s[:i])
		s = s[i:]
	}
	return out
}

func sse(name string, data any) string {
	return "event: " + name + "\ndata: " + string(enc(data)) + "\n\n"
}

// wire writes one format's bodies for a script.
type wire interface {
	provider() tape.Provider
	path() string
	requestHeaders(th *gThread, stream bool) tape.Headers
	responseHeaders(th *gThread, i int, stream bool) tape.Headers
	// request is the body of the request for turn i (holding turns before i and their results).
	request(th *gThread, i int, stream bool) []byte
	body(th *gThread, i int) []byte
	events(th *gThread, i int) []string
}

// tokens is a stand-in for a tokenizer: about four bytes a token.
func tokens(n int) int64 { return int64(n/4 + 1) }

func outputSize(t gTurn) int {
	n := len(t.thinking) + len(t.text)
	for _, c := range t.calls {
		n += len(c.name) + len(c.input)
	}
	return n
}

// promptTokens is the size of the prompt of turn i and of the one before it (the part a
// prompt cache holds).
func promptTokens(w wire, th *gThread, i int, base int64) (now, before int64) {
	now = base + tokens(len(w.request(th, i, false)))
	if i > 0 {
		before = base + tokens(len(w.request(th, i-1, false)))
	}
	return now, before
}

// ---- Anthropic Messages, as Claude Code 2.1.332 sends it ----

type anthropicWire struct{ model string }

func (anthropicWire) provider() tape.Provider { return tape.ProviderAnthropic }
func (anthropicWire) path() string            { return "/v1/messages?beta=true" }

func (anthropicWire) requestHeaders(th *gThread, stream bool) tape.Headers {
	return tape.Headers{
		"accept":                   "application/json",
		"anthropic-beta":           "claude-code-20250219,interleaved-thinking-2025-05-14,context-management-2025-06-27,effort-2025-11-24",
		"anthropic-version":        "2023-06-01",
		"content-type":             "application/json",
		"user-agent":               "claude-cli/2.1.332 (external, sdk-cli)",
		"x-api-key":                "[redacted]",
		"x-app":                    "cli",
		"x-claude-code-session-id": "80e11c7d-4db7-4022-91a9-aab86290be27",
		"x-stainless-lang":         "js",
		"x-stainless-retry-count":  "0",
	}
}

func (anthropicWire) responseHeaders(th *gThread, i int, stream bool) tape.Headers {
	ct := "application/json"
	if stream {
		ct = "text/event-stream; charset=utf-8"
	}
	return tape.Headers{"content-type": ct, "request-id": fmt.Sprintf("req_011CXgold%s%02d", idCode(th), i)}
}

func idCode(th *gThread) string {
	if th.parent == nil {
		return "Main"
	}
	return "Sub" + strings.TrimPrefix(th.id, "subagent-")
}

var claudeTools = map[string]obj{
	"Agent": {{"name", "Agent"}, {"description", "Launch a new agent to handle complex, multi-step tasks autonomously."}, {"input_schema", obj{
		{"$schema", "http://json-schema.org/draft-07/schema#"}, {"type", "object"}, {"properties", obj{
			{"description", obj{{"type", "string"}, {"description", "A short (3-5 word) description of the task"}}},
			{"prompt", obj{{"type", "string"}, {"description", "The task for the agent to perform"}}},
			{"subagent_type", obj{{"type", "string"}}},
			{"run_in_background", obj{{"type", "boolean"}}},
		}}, {"required", []string{"description", "prompt"}}, {"additionalProperties", false}}}},
	"Bash": {{"name", "Bash"}, {"description", "Executes a given bash command and returns its output."}, {"input_schema", obj{
		{"$schema", "http://json-schema.org/draft-07/schema#"}, {"type", "object"}, {"properties", obj{
			{"command", obj{{"type", "string"}, {"description", "The command to execute"}}},
			{"timeout", obj{{"type", "number"}}},
			{"description", obj{{"type", "string"}}},
			{"run_in_background", obj{{"type", "boolean"}}},
			{"dangerouslyDisableSandbox", obj{{"type", "boolean"}}},
		}}, {"required", []string{"command"}}, {"additionalProperties", false}}}},
	"Read": {{"name", "Read"}, {"description", "Reads a file from the local filesystem."}, {"input_schema", obj{
		{"$schema", "http://json-schema.org/draft-07/schema#"}, {"type", "object"}, {"properties", obj{
			{"file_path", obj{{"type", "string"}}}, {"offset", obj{{"type", "number"}}}, {"limit", obj{{"type", "number"}}},
		}}, {"required", []string{"file_path"}}, {"additionalProperties", false}}}},
	"Write": {{"name", "Write"}, {"description", "Writes a file to the local filesystem."}, {"input_schema", obj{
		{"$schema", "http://json-schema.org/draft-07/schema#"}, {"type", "object"}, {"properties", obj{
			{"file_path", obj{{"type", "string"}}}, {"content", obj{{"type", "string"}}},
		}}, {"required", []string{"file_path", "content"}}, {"additionalProperties", false}}}},
	"Edit": {{"name", "Edit"}, {"description", "Performs exact string replacements in files."}, {"input_schema", obj{
		{"$schema", "http://json-schema.org/draft-07/schema#"}, {"type", "object"}, {"properties", obj{
			{"file_path", obj{{"type", "string"}}}, {"old_string", obj{{"type", "string"}}}, {"new_string", obj{{"type", "string"}}}, {"replace_all", obj{{"type", "boolean"}}},
		}}, {"required", []string{"file_path", "old_string", "new_string"}}, {"additionalProperties", false}}}},
}

func (w anthropicWire) content(t gTurn) []any {
	var out []any
	if t.thinking != "" {
		out = append(out, obj{{"type", "thinking"}, {"thinking", t.thinking}, {"signature", signature(t.thinking)}})
	}
	if t.text != "" {
		out = append(out, obj{{"type", "text"}, {"text", t.text}})
	}
	for _, c := range t.calls {
		out = append(out, obj{{"type", "tool_use"}, {"id", c.id}, {"name", c.name}, {"input", json.RawMessage(c.input)}})
	}
	return out
}

// signature stands in for the provider's opaque thinking signature.
func signature(s string) string {
	return fmt.Sprintf("EqQBCkgIBxABGAIiQ%08xGoldenSignature==", len(s)*2654435761%4294967296)
}

func (w anthropicWire) request(th *gThread, i int, stream bool) []byte {
	msgs := []any{obj{{"role", "user"}, {"content", []any{
		obj{{"type", "text"}, {"text", "<system-reminder>\nAs you answer the user's questions, you can use the following context:\n# currentDate\nToday's date is 2026-11-29.\n</system-reminder>"}},
		obj{{"type", "text"}, {"text", th.prompt}},
	}}}}
	if th.parent == nil {
		msgs = append(msgs, obj{{"role", "system"}, {"content", "# Environment\nYou have been invoked in the following environment: \n - Primary working directory: /work\n - Is a git repository: false\n - Platform: linux"}, {"output_config", obj{{"effort", "medium"}}}})
	}
	for k := range i {
		t := th.turns[k]
		msgs = append(msgs, obj{{"role", "assistant"}, {"content", w.content(t)}})
		var results []any
		for j, c := range t.calls {
			var content any = c.result
			if c.listResult {
				content = []any{obj{{"type", "text"}, {"text", c.result}}}
			}
			r := obj{{"tool_use_id", c.id}, {"type", "tool_result"}, {"content", content}}
			if c.name != "Write" { // Claude Code sends Write results without is_error
				r = append(r, kv{"is_error", c.isError})
			}
			if k == i-1 && j == len(t.calls)-1 {
				r = append(r, kv{"cache_control", obj{{"type", "ephemeral"}}})
			}
			results = append(results, r)
		}
		msgs = append(msgs, obj{{"role", "user"}, {"content", results}})
	}
	names := []string{"Agent", "Bash", "Edit", "Read", "Write"}
	if th.parent != nil {
		names = names[1:] // a subagent cannot spawn another
	}
	var tools []any
	for _, n := range names {
		tools = append(tools, claudeTools[n])
	}
	body := obj{
		{"model", w.model},
		{"messages", msgs},
		{"system", []any{
			obj{{"type", "text"}, {"text", "x-anthropic-billing-header: cc_version=2.1.332.0b8; cc_entrypoint=sdk-cli;"}},
			obj{{"type", "text"}, {"text", "You are a Claude agent, built on Anthropic's Claude Agent SDK."}, {"cache_control", obj{{"type", "ephemeral"}}}},
			obj{{"type", "text"}, {"text", th.system}, {"cache_control", obj{{"type", "ephemeral"}}}},
		}},
		{"tools", tools},
		{"metadata", obj{{"user_id", `{"device_id":"27fec4604a74fc40856d0d53df9ef28e121f9a29c345a08deee108687d7413ca","account_uuid":"","session_id":"80e11c7d-4db7-4022-91a9-aab86290be27"}`}}},
		{"max_tokens", 32000},
		{"thinking", obj{{"type", "adaptive"}}},
		{"context_management", obj{{"edits", []any{obj{{"type", "clear_thinking_20251015"}, {"keep", "all"}}}}}},
		{"output_config", obj{{"effort", "medium"}}},
	}
	if stream {
		body = append(body, kv{"stream", true})
	}
	return enc(body)
}

func (w anthropicWire) usage(th *gThread, i int, final bool) obj {
	now, before := promptTokens(w, th, i, 14000)
	const fresh = 3
	created := now - before - fresh
	out := int64(1)
	if final {
		out = tokens(outputSize(th.turns[i])) + 24
	}
	return obj{
		{"input_tokens", fresh},
		{"cache_creation_input_tokens", created},
		{"cache_read_input_tokens", before},
		{"cache_creation", obj{{"ephemeral_5m_input_tokens", created}, {"ephemeral_1h_input_tokens", 0}}},
		{"output_tokens", out},
		{"service_tier", "standard"},
	}
}

func (w anthropicWire) message(th *gThread, i int, content []any, stop any, final bool) obj {
	return obj{
		{"id", fmt.Sprintf("msg_01Gold%sTurn%02d", idCode(th), i)},
		{"type", "message"},
		{"role", "assistant"},
		{"model", w.model},
		{"content", content},
		{"stop_reason", stop},
		{"stop_sequence", nil},
		{"usage", w.usage(th, i, final)},
	}
}

func anthropicStop(t gTurn) string {
	if t.stopped() {
		return "end_turn"
	}
	return "tool_use"
}

func (w anthropicWire) body(th *gThread, i int) []byte {
	t := th.turns[i]
	return enc(w.message(th, i, w.content(t), anthropicStop(t), true))
}

func (w anthropicWire) events(th *gThread, i int) []string {
	t := th.turns[i]
	evs := []string{sse("message_start", obj{{"type", "message_start"}, {"message", w.message(th, i, []any{}, nil, false)}})}
	index := 0
	block := func(start obj, deltas []obj) {
		evs = append(evs, sse("content_block_start", obj{{"type", "content_block_start"}, {"index", index}, {"content_block", start}}))
		if index == 0 {
			evs = append(evs, sse("ping", obj{{"type", "ping"}}))
		}
		for _, d := range deltas {
			evs = append(evs, sse("content_block_delta", obj{{"type", "content_block_delta"}, {"index", index}, {"delta", d}}))
		}
		evs = append(evs, sse("content_block_stop", obj{{"type", "content_block_stop"}, {"index", index}}))
		index++
	}
	if t.thinking != "" {
		var ds []obj
		for _, p := range pieces(t.thinking, 24) {
			ds = append(ds, obj{{"type", "thinking_delta"}, {"thinking", p}})
		}
		ds = append(ds, obj{{"type", "signature_delta"}, {"signature", signature(t.thinking)}})
		block(obj{{"type", "thinking"}, {"thinking", ""}, {"signature", ""}}, ds)
	}
	if t.text != "" {
		var ds []obj
		for _, p := range pieces(t.text, 16) {
			ds = append(ds, obj{{"type", "text_delta"}, {"text", p}})
		}
		block(obj{{"type", "text"}, {"text", ""}}, ds)
	}
	for _, c := range t.calls {
		ds := []obj{{{"type", "input_json_delta"}, {"partial_json", ""}}}
		for _, p := range pieces(c.input, 40) {
			ds = append(ds, obj{{"type", "input_json_delta"}, {"partial_json", p}})
		}
		block(obj{{"type", "tool_use"}, {"id", c.id}, {"name", c.name}, {"input", obj{}}}, ds)
	}
	evs = append(evs,
		sse("message_delta", obj{{"type", "message_delta"}, {"delta", obj{{"stop_reason", anthropicStop(t)}, {"stop_sequence", nil}}}, {"usage", obj{{"output_tokens", tokens(outputSize(t)) + 24}}}}),
		sse("message_stop", obj{{"type", "message_stop"}}),
	)
	return evs
}

// ---- OpenAI, as Codex 0.171.0 sends it ----

// codexWire is what both OpenAI wires share: Codex is the client, asking for model, and
// the headers are those of Codex's requests and OpenAI's answers.
type codexWire struct{ model string }

func (codexWire) requestHeaders(th *gThread, stream bool) tape.Headers {
	h := tape.Headers{
		"authorization": "[redacted]",
		"content-type":  "application/json",
		"originator":    "codex_exec",
		"session-id":    "01a226a0-3bf3-7e03-9d95-8375cbe53541",
		"user-agent":    "codex_exec/0.171.0 (Debian 12.0.0; x86_64) unknown (codex_exec; 0.171.0)",
		"version":       "0.171.0",
	}
	if stream {
		h["accept"] = "text/event-stream"
	}
	return h
}

func (codexWire) responseHeaders(th *gThread, i int, stream bool) tape.Headers {
	ct := "application/json"
	if stream {
		ct = "text/event-stream; charset=utf-8"
	}
	return tape.Headers{"content-type": ct, "openai-processing-ms": fmt.Sprint(800 + 37*i), "x-request-id": fmt.Sprintf("req_gold%s%02d", strings.ToLower(idCode(th)), i)}
}

const codexEnvironment = "<environment_context>\n  <cwd>/work</cwd>\n  <shell>bash</shell>\n  <current_date>2026-11-29</current_date>\n  <timezone>Etc/UTC</timezone>\n</environment_context>"

func openAIUsageCounts(w wire, th *gThread, i int) (prompt, cached, output, reasoning int64) {
	now, before := promptTokens(w, th, i, 9000)
	cached = before / 128 * 128
	if th.turns[i].thinking != "" {
		reasoning = 64
	}
	return now, cached, tokens(outputSize(th.turns[i])) + 12 + reasoning, reasoning
}

type chatWire struct{ codexWire }

func (chatWire) provider() tape.Provider { return tape.ProviderOpenAIChat }
func (chatWire) path() string            { return "/v1/chat/completions" }

func chatFunction(name, description string, params obj) obj {
	return obj{{"type", "function"}, {"function", obj{{"name", name}, {"description", description}, {"strict", false}, {"parameters", params}}}}
}

func codexParams(props obj, required ...string) obj {
	return obj{{"type", "object"}, {"properties", props}, {"required", required}, {"additionalProperties", false}}
}

var (
	execParams = codexParams(obj{
		{"cmd", obj{{"type", "string"}, {"description", "Shell command to execute."}}},
		{"workdir", obj{{"type", "string"}}},
		{"yield_time_ms", obj{{"type", "number"}}},
		{"max_output_tokens", obj{{"type", "number"}}},
	}, "cmd")
	spawnParams = codexParams(obj{{"message", obj{{"type", "string"}}}, {"agent_type", obj{{"type", "string"}}}}, "message")
	waitParams  = codexParams(obj{{"ids", obj{{"type", "array"}, {"items", obj{{"type", "string"}}}}}, {"timeout_ms", obj{{"type", "number"}}}}, "ids")
)

func (w chatWire) assistant(t gTurn) obj {
	var content any
	if t.text != "" {
		content = t.text
	}
	m := obj{{"role", "assistant"}, {"content", content}}
	if len(t.calls) > 0 {
		var calls []any
		for _, c := range t.calls {
			calls = append(calls, obj{{"id", c.id}, {"type", "function"}, {"function", obj{{"name", c.name}, {"arguments", c.input}}}})
		}
		m = append(m, kv{"tool_calls", calls})
	}
	return m
}

func (w chatWire) request(th *gThread, i int, stream bool) []byte {
	msgs := []any{obj{{"role", "system"}, {"content", th.system}}}
	if th.parent == nil {
		msgs = append(msgs, obj{{"role", "developer"}, {"content", "<permissions instructions>\nFilesystem sandboxing defines which files can be read or written. `sandbox_mode` is `danger-full-access`.\n</permissions instructions>"}})
	}
	msgs = append(msgs, obj{{"role", "user"}, {"content", codexEnvironment}}, obj{{"role", "user"}, {"content", th.prompt}})
	for k := range i {
		t := th.turns[k]
		msgs = append(msgs, w.assistant(t))
		for _, c := range t.calls {
			msgs = append(msgs, obj{{"role", "tool"}, {"tool_call_id", c.id}, {"content", c.result}})
		}
	}
	tools := []any{
		chatFunction("exec_command", "Runs a command in a PTY, returning output or a session ID for ongoing interaction.", execParams),
		chatFunction("apply_patch", "Use the `apply_patch` tool to edit files.", codexParams(obj{{"input", obj{{"type", "string"}, {"description", "The entire contents of the apply_patch command"}}}}, "input")),
	}
	if th.parent == nil {
		tools = append(tools,
			chatFunction("spawn_agent", "Spawn a sub-agent for a well-scoped task. Returns the agent id.", spawnParams),
			chatFunction("wait", "Wait for agents to reach a final status.", waitParams))
	}
	body := obj{{"model", w.model}, {"messages", msgs}, {"stream", stream}}
	if stream {
		body = append(body, kv{"stream_options", obj{{"include_usage", true}}})
	}
	body = append(body, kv{"tools", tools}, kv{"tool_choice", "auto"}, kv{"parallel_tool_calls", true}, kv{"reasoning_effort", "medium"}, kv{"prompt_cache_key", "01a226a0-3bf3-7e03-9d95-8375cbe53541"})
	return enc(body)
}

func (w chatWire) usage(th *gThread, i int) obj {
	prompt, cached, output, reasoning := openAIUsageCounts(w, th, i)
	return obj{
		{"prompt_tokens", prompt},
		{"completion_tokens", output},
		{"total_tokens", prompt + output},
		{"prompt_tokens_details", obj{{"cached_tokens", cached}, {"audio_tokens", 0}}},
		{"completion_tokens_details", obj{{"reasoning_tokens", reasoning}, {"audio_tokens", 0}, {"accepted_prediction_tokens", 0}, {"rejected_prediction_tokens", 0}}},
	}
}

func chatFinish(t gTurn) string {
	if t.stopped() {
		return "stop"
	}
	return "tool_calls"
}

func (w chatWire) head(th *gThread, i int, object string) obj {
	return obj{{"id", fmt.Sprintf("chatcmpl-Gold%sTurn%02d", idCode(th), i)}, {"object", object}, {"created", 1795944365 + i}, {"model", w.model}}
}

func (w chatWire) body(th *gThread, i int) []byte {
	t := th.turns[i]
	msg := append(w.assistant(t), kv{"refusal", nil}, kv{"annotations", []any{}})
	return enc(append(w.head(th, i, "chat.completion"),
		kv{"choices", []any{obj{{"index", 0}, {"message", msg}, {"logprobs", nil}, {"finish_reason", chatFinish(t)}}}},
		kv{"usage", w.usage(th, i)},
		kv{"service_tier", "default"},
		kv{"system_fingerprint", "fp_5f3c2a1b0d"},
	))
}

func (w chatWire) events(th *gThread, i int) []string {
	t := th.turns[i]
	var evs []string
	chunk := func(delta obj, finish any) {
		c := append(w.head(th, i, "chat.completion.chunk"), kv{"service_tier", "default"}, kv{"system_fingerprint", "fp_5f3c2a1b0d"},
			kv{"choices", []any{obj{{"index", 0}, {"delta", delta}, {"logprobs", nil}, {"finish_reason", finish}}}}, kv{"usage", nil})
		evs = append(evs, "data: "+string(enc(c))+"\n\n")
	}
	chunk(obj{{"role", "assistant"}, {"content", ""}, {"refusal", nil}}, nil)
	for _, p := range pieces(t.text, 16) {
		chunk(obj{{"content", p}}, nil)
	}
	for k, c := range t.calls {
		chunk(obj{{"tool_calls", []any{obj{{"index", k}, {"id", c.id}, {"type", "function"}, {"function", obj{{"name", c.name}, {"arguments", ""}}}}}}}, nil)
		for _, p := range pieces(c.input, 40) {
			chunk(obj{{"tool_calls", []any{obj{{"index", k}, {"function", obj{{"arguments", p}}}}}}}, nil)
		}
	}
	chunk(obj{}, chatFinish(t))
	u := append(w.head(th, i, "chat.completion.chunk"), kv{"service_tier", "default"}, kv{"system_fingerprint", "fp_5f3c2a1b0d"}, kv{"choices", []any{}}, kv{"usage", w.usage(th, i)})
	evs = append(evs, "data: "+string(enc(u))+"\n\n", "data: [DONE]\n\n")
	return evs
}

type responsesWire struct{ codexWire }

func (responsesWire) provider() tape.Provider { return tape.ProviderOpenAIResponses }
func (responsesWire) path() string            { return "/v1/responses" }

func responsesFunction(name, description string, params obj) obj {
	return obj{{"type", "function"}, {"name", name}, {"description", description}, {"strict", false}, {"parameters", params}}
}

func (w responsesWire) itemID(th *gThread, i, k int, prefix string) string {
	return fmt.Sprintf("%s_gold%s%02d%02d", prefix, strings.ToLower(idCode(th)), i, k)
}

// items are the output items of turn i, as the response carries them when done.
func (w responsesWire) items(th *gThread, i int) []obj {
	t := th.turns[i]
	var out []obj
	if t.thinking != "" {
		out = append(out, obj{{"id", w.itemID(th, i, 0, "rs")}, {"type", "reasoning"}, {"summary", []any{obj{{"type", "summary_text"}, {"text", t.thinking}}}}, {"encrypted_content", "gAAAAABpGold" + signature(t.thinking)}})
	}
	if t.text != "" {
		out = append(out, obj{{"id", w.itemID(th, i, 1, "msg")}, {"type", "message"}, {"status", "completed"}, {"content", []any{obj{{"type", "output_text"}, {"annotations", []any{}}, {"logprobs", []any{}}, {"text", t.text}}}}, {"role", "assistant"}})
	}
	for k, c := range t.calls {
		if c.custom {
			out = append(out, obj{{"id", w.itemID(th, i, 2+k, "ctc")}, {"type", "custom_tool_call"}, {"status", "completed"}, {"call_id", c.id}, {"input", c.input}, {"name", c.name}})
		} else {
			out = append(out, obj{{"id", w.itemID(th, i, 2+k, "fc")}, {"type", "function_call"}, {"status", "completed"}, {"arguments", c.input}, {"call_id", c.id}, {"name", c.name}})
		}
	}
	return out
}

func (w responsesWire) request(th *gThread, i int, stream bool) []byte {
	input := []any{obj{{"type", "message"}, {"role", "developer"}, {"content", []any{obj{{"type", "input_text"}, {"text", th.system}}}}}}
	if th.parent == nil {
		input = append(input, obj{{"type", "message"}, {"role", "developer"}, {"content", []any{
			obj{{"type", "input_text"}, {"text", "<permissions instructions>\nFilesystem sandboxing defines which files can be read or written. `sandbox_mode` is `danger-full-access`.\n</permissions instructions>"}},
			obj{{"type", "input_text"}, {"text", "<tools>\nDeferred tool namespaces:\n- multi_agent_v1: Tools for spawning and managing sub-agents.\n</tools>"}},
		}}})
	}
	input = append(input,
		obj{{"type", "message"}, {"role", "user"}, {"content", []any{obj{{"type", "input_text"}, {"text", codexEnvironment}}}}},
		obj{{"type", "message"}, {"role", "user"}, {"content", []any{obj{{"type", "input_text"}, {"text", th.prompt}}}}})
	for k := range i {
		for _, it := range w.items(th, k) {
			// Codex sends its own output back without the server's ids on messages.
			input = append(input, it)
		}
		for _, c := range th.turns[k].calls {
			typ := "function_call_output"
			if c.custom {
				typ = "custom_tool_call_output"
			}
			input = append(input, obj{{"type", typ}, {"call_id", c.id}, {"output", c.result}})
		}
	}
	tools := []any{
		responsesFunction("exec_command", "Runs a command in a PTY, returning output or a session ID for ongoing interaction.", execParams),
		obj{{"type", "custom"}, {"name", "apply_patch"}, {"description", "Use the `apply_patch` tool to edit files. This is a FREEFORM tool, so do not wrap the patch in JSON."},
			{"format", obj{{"type", "grammar"}, {"syntax", "lark"}, {"definition", "start: begin_patch hunk+ end_patch\nbegin_patch: \"*** Begin Patch\" LF\nend_patch: \"*** End Patch\" LF?\n"}}}},
	}
	if th.parent == nil {
		tools = append(tools,
			responsesFunction("spawn_agent", "Spawn a sub-agent for a well-scoped task. Returns the agent id.", spawnParams),
			responsesFunction("wait", "Wait for agents to reach a final status.", waitParams))
	}
	tools = append(tools, obj{{"type", "web_search"}, {"external_web_access", false}})
	body := obj{
		{"model", w.model},
		{"stream", stream},
		{"input", input},
		{"tools", tools},
		{"tool_choice", "auto"},
		{"parallel_tool_calls", true},
		{"reasoning", obj{{"effort", "medium"}, {"summary", "auto"}}},
		{"store", false},
		{"include", []string{"reasoning.encrypted_content"}},
		{"prompt_cache_key", "01a226a0-3bf3-7e03-9d95-8375cbe53541"},
		{"text", obj{{"verbosity", "low"}}},
		{"client_metadata", obj{{"session_id", "01a226a0-3bf3-7e03-9d95-8375cbe53541"}, {"thread_id", th.id}}},
	}
	return enc(body)
}

func (w responsesWire) response(th *gThread, i int, status string, output []obj, usage any) obj {
	out := make([]any, len(output))
	for k, o := range output {
		out[k] = o
	}
	return obj{
		{"id", fmt.Sprintf("resp_gold%s%02d", strings.ToLower(idCode(th)), i)},
		{"object", "response"},
		{"created_at", 1795944365 + i},
		{"status", status},
		{"background", false},
		{"error", nil},
		{"incomplete_details", nil},
		{"instructions", nil},
		{"max_output_tokens", nil},
		{"model", w.model},
		{"output", out},
		{"parallel_tool_calls", true},
		{"previous_response_id", nil},
		{"reasoning", obj{{"effort", "medium"}, {"summary", "auto"}}},
		{"store", false},
		{"tool_choice", "auto"},
		{"tools", []any{}},
		{"usage", usage},
		{"metadata", obj{}},
	}
}

func (w responsesWire) usage(th *gThread, i int) obj {
	prompt, cached, output, reasoning := openAIUsageCounts(w, th, i)
	return obj{
		{"input_tokens", prompt},
		{"input_tokens_details", obj{{"cached_tokens", cached}}},
		{"output_tokens", output},
		{"output_tokens_details", obj{{"reasoning_tokens", reasoning}}},
		{"total_tokens", prompt + output},
	}
}

func (w responsesWire) body(th *gThread, i int) []byte {
	return enc(w.response(th, i, "completed", w.items(th, i), w.usage(th, i)))
}

func (w responsesWire) events(th *gThread, i int) []string {
	var evs []string
	seq := 0
	emit := func(typ string, fields ...kv) {
		evs = append(evs, sse(typ, append(append(obj{{"type", typ}}, fields...), kv{"sequence_number", seq})))
		seq++
	}
	emit("response.created", kv{"response", w.response(th, i, "in_progress", nil, nil)})
	emit("response.in_progress", kv{"response", w.response(th, i, "in_progress", nil, nil)})
	for k, it := range w.items(th, i) {
		id := it.get("id").(string)
		typ := it.get("type").(string)
		at := kv{"output_index", k}
		item := kv{"item_id", id}
		switch typ {
		case "reasoning":
			text := th.turns[i].thinking
			emit("response.output_item.added", at, kv{"item", obj{{"id", id}, {"type", "reasoning"}, {"summary", []any{}}}})
			part := kv{"summary_index", 0}
			emit("response.reasoning_summary_part.added", item, at, part, kv{"part", obj{{"type", "summary_text"}, {"text", ""}}})
			for _, p := range pieces(text, 20) {
				emit("response.reasoning_summary_text.delta", item, at, part, kv{"delta", p})
			}
			emit("response.reasoning_summary_text.done", item, at, part, kv{"text", text})
			emit("response.reasoning_summary_part.done", item, at, part, kv{"part", obj{{"type", "summary_text"}, {"text", text}}})
		case "message":
			text := th.turns[i].text
			emit("response.output_item.added", at, kv{"item", obj{{"id", id}, {"type", "message"}, {"status", "in_progress"}, {"content", []any{}}, {"role", "assistant"}}})
			ci := kv{"content_index", 0}
			emit("response.content_part.added", item, at, ci, kv{"part", obj{{"type", "output_text"}, {"annotations", []any{}}, {"logprobs", []any{}}, {"text", ""}}})
			for _, p := range pieces(text, 16) {
				emit("response.output_text.delta", item, at, ci, kv{"delta", p}, kv{"logprobs", []any{}})
			}
			emit("response.output_text.done", item, at, ci, kv{"text", text}, kv{"logprobs", []any{}})
			emit("response.content_part.done", item, at, ci, kv{"part", obj{{"type", "output_text"}, {"annotations", []any{}}, {"logprobs", []any{}}, {"text", text}}})
		case "function_call":
			args := it.get("arguments").(string)
			emit("response.output_item.added", at, kv{"item", obj{{"id", id}, {"type", "function_call"}, {"status", "in_progress"}, {"arguments", ""}, {"call_id", it.get("call_id")}, {"name", it.get("name")}}})
			for _, p := range pieces(args, 40) {
				emit("response.function_call_arguments.delta", item, at, kv{"delta", p})
			}
			emit("response.function_call_arguments.done", item, at, kv{"arguments", args})
		case "custom_tool_call":
			input := it.get("input").(string)
			emit("response.output_item.added", at, kv{"item", obj{{"id", id}, {"type", "custom_tool_call"}, {"status", "in_progress"}, {"call_id", it.get("call_id")}, {"input", ""}, {"name", it.get("name")}}})
			for _, p := range pieces(input, 40) {
				emit("response.custom_tool_call_input.delta", item, at, kv{"delta", p})
			}
			emit("response.custom_tool_call_input.done", item, at, kv{"input", input})
		}
		emit("response.output_item.done", at, kv{"item", it})
	}
	emit("response.completed", kv{"response", w.response(th, i, "completed", w.items(th, i), w.usage(th, i))})
	return evs
}
