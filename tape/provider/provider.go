package provider

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"maps"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/tapebox/tapebox/internal/jsonlex"
	"github.com/tapebox/tapebox/tape"
)

// InvalidArgumentsKey is the key under which a tool call's input keeps arguments that are
// not a JSON object, as text: {"_invalid_arguments": "{\"cmd\": \"ls"}.
const InvalidArgumentsKey = "_invalid_arguments"

// Detect returns the wire format served at an HTTP path. The path may carry a query string
// (Claude Code sends /v1/messages?beta=true) and any prefix (/r/<run>/v1/messages); it must
// end in /v1/messages, /v1/chat/completions or /v1/responses, or be a Gemini API model
// call (GeminiPath: /v1beta/models/MODEL:streamGenerateContent?alt=sse).
func Detect(path string) (tape.Provider, bool) {
	if i := strings.IndexAny(path, "?#"); i >= 0 {
		path = path[:i]
	}
	if _, _, ok := GeminiPath(path); ok {
		return tape.ProviderGemini, true
	}
	for _, p := range []tape.Provider{tape.ProviderAnthropic, tape.ProviderOpenAIChat, tape.ProviderOpenAIResponses} {
		if strings.HasSuffix(path, paths[p]) {
			return p, true
		}
	}
	return "", false
}

// paths are the request paths of each provider's model calls.
var paths = map[tape.Provider]string{
	tape.ProviderAnthropic:       "/v1/messages",
	tape.ProviderOpenAIChat:      "/v1/chat/completions",
	tape.ProviderOpenAIResponses: "/v1/responses",
}

// Path is the request path of p's model calls ("/v1/messages" ...), the one Detect knows p
// by; "" for a provider it does not know, and for the Gemini API, whose paths name the
// model (GeminiPath).
func Path(p tape.Provider) string { return paths[p] }

// Normalize fills every normalized field of s (request system, messages, tools, params and
// stream; response content, stop_reason and usage; tool_calls) from s.Request.Raw,
// s.Response.Raw and s.Response.Chunks. It does not touch tool_results, timing, headers,
// status or path. The request and the response are normalized independently: when one of
// them does not fit the format, its normalized fields are left empty, the other's are
// filled, and the error says which failed. A body recorded as a truncation marker
// (tape.Truncation) gives empty fields and no error.
func Normalize(p tape.Provider, s *tape.Step) error {
	f, err := formatOf(p)
	if err != nil {
		return err
	}
	var errs []error
	req, err := requestOf(f, s.Request.Raw)
	if err != nil {
		errs = append(errs, fmt.Errorf("normalize %s request: %w", p, err))
		req = request{}
	}
	s.Request.System = req.system
	s.Request.Messages = req.messages
	s.Request.Tools = req.tools
	s.Request.Params = req.params
	s.Request.Stream = req.stream
	if p == tape.ProviderGemini {
		geminiFromPath(s)
	}

	calls, err := normalizeResponse(f, p, &s.Response)
	if err != nil {
		errs = append(errs, err)
	}
	s.ToolCalls = calls
	return errors.Join(errs...)
}

func normalizeResponse(f format, p tape.Provider, r *tape.Response) ([]tape.ToolCall, error) {
	rep, err := responseOf(f, r)
	if err != nil {
		err = fmt.Errorf("normalize %s response: %w", p, err)
		rep = reply{}
	}
	r.Content = rep.content
	r.StopReason = rep.stop
	r.Usage = rep.usage
	return rep.calls, err
}

// ToolResults returns the results of calls found in a thread's next request body: the
// tool_result blocks, function_call_output / custom_tool_call_output items or role:tool
// messages that answer those call ids, in call order. Calls with no answer in the request
// are omitted. When an id is answered more than once, the last answer counts.
func ToolResults(p tape.Provider, nextRequestRaw []byte, calls []tape.ToolCall) ([]tape.ToolResult, error) {
	f, err := formatOf(p)
	if err != nil {
		return nil, err
	}
	req, err := requestOf(f, nextRequestRaw)
	if err != nil {
		return nil, fmt.Errorf("tool results from %s request: %w", p, err)
	}
	if p == tape.ProviderGemini {
		return geminiResults(req.messages, calls), nil
	}
	return tape.ResultsFor(req.messages, calls), nil
}

// RequestResults is ToolResults for a request already normalized: the results req carries
// for calls, in call order.
func RequestResults(p tape.Provider, req *tape.Request, calls []tape.ToolCall) []tape.ToolResult {
	if p == tape.ProviderGemini {
		return geminiResults(req.Messages, calls)
	}
	return tape.ResultsFor(req.Messages, calls)
}

// format is one wire format's adapter: a reader for each part of a model call.
type format struct {
	// request normalizes a request body.
	request func(raw []byte) (request, error)
	// body normalizes a JSON response body (an object).
	body func(raw []byte) (reply, error)
	// stream normalizes a stream, given its events' data in order. The last event may be
	// cut short (the stream ended inside it); its data then fails to decode and is dropped.
	stream func(events []event) (reply, error)
}

// event is one server-sent event of a recorded stream.
type event struct {
	name, data string
	// last is true for what followed the last complete event: possibly cut short.
	last bool
}

type request struct {
	system   string
	messages []tape.Message
	tools    []tape.Tool
	params   map[string]json.RawMessage
	stream   bool
}

type reply struct {
	content []tape.Block
	calls   []tape.ToolCall
	stop    string
	usage   tape.Usage
}

func formatOf(p tape.Provider) (format, error) {
	switch p {
	case tape.ProviderAnthropic:
		return anthropic, nil
	case tape.ProviderOpenAIChat:
		return chat, nil
	case tape.ProviderOpenAIResponses:
		return responses, nil
	case tape.ProviderGemini:
		return gemini, nil
	}
	return format{}, fmt.Errorf("unknown provider %q", p)
}

// requestOf normalizes a recorded request body. A truncation marker (tape.Truncation)
// gives an empty request: the body was not recorded.
func requestOf(f format, raw []byte) (request, error) {
	if _, cut := tape.TruncationOf(raw); cut {
		return request{}, nil
	}
	return f.request(raw)
}

// responseOf normalizes a recorded response: its stream when it has chunks, else its body.
// A missing body, a body that was not JSON (stored as a JSON string) and a truncation
// marker (tape.Truncation) give an empty reply.
func responseOf(f format, r *tape.Response) (reply, error) {
	if _, cut := tape.TruncationOf(r.Raw); cut {
		return reply{}, nil
	}
	if len(r.Chunks) > 0 {
		return f.stream(splitChunks(r.Chunks))
	}
	raw := trimJSON(r.Raw)
	switch {
	case len(raw) == 0, string(raw) == "null":
		return reply{}, nil
	case raw[0] == '"' && json.Valid(raw):
		return reply{}, nil
	case raw[0] != '{':
		return reply{}, errors.New("response body is neither a JSON object nor a JSON string")
	}
	return f.body(raw)
}

// splitChunks splits recorded chunks into events again: a gateway records one event per
// chunk, but nothing else has to.
func splitChunks(chunks []tape.Chunk) []event {
	var sp EventSplitter
	var evs []event
	add := func(ev string, last bool) {
		name, data := ParseEvent(validUTF8(ev))
		if data != "" {
			evs = append(evs, event{name: name, data: data, last: last})
		}
	}
	for _, c := range chunks {
		for _, ev := range sp.Write([]byte(c.Data)) {
			add(ev, false)
		}
	}
	if rest := sp.Flush(); rest != "" {
		add(rest, true)
	}
	return evs
}

// validUTF8 replaces each byte of s that is not UTF-8 with U+FFFD, as encoding/json does
// when a tape stores a chunk. Events are cleaned the same way before they are decoded, so
// that a stream normalizes alike before and after its tape is saved and loaded.
func validUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b.WriteRune(utf8.RuneError)
		} else {
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// decodeEvent decodes an event's JSON data into v. It reports ok=false without an error
// for the cut-short last event of a stream.
func decodeEvent(ev event, v any) (ok bool, err error) {
	if err := json.Unmarshal([]byte(ev.data), v); err != nil {
		if ev.last {
			return false, nil
		}
		return false, fmt.Errorf("event %q: %w", cut(ev.data, 80), err)
	}
	return true, nil
}

// eventType is a stream event's type, which Anthropic and Responses events carry in their
// data. An event whose data names no type takes the event's name (its event: line).
type eventType struct {
	Type string `json:"type"`
}

func (t eventType) typ() string         { return t.Type }
func (t *eventType) setType(typ string) { t.Type = typ }

// eventsOf yields a stream's events decoded into Es (which embed eventType): each with
// scan, in one pass, or where scan gives up (or is nil) with encoding/json, which decides.
// An event that does not decode ends the stream with its error, but the cut-short last
// event is skipped (see decodeEvent).
func eventsOf[E interface{ typ() string }, P interface {
	*E
	setType(string)
}](events []event, scan func(data string) (E, error)) iter.Seq2[E, error] {
	return func(yield func(E, error) bool) {
		for _, ev := range events {
			var e E
			err := errSlow
			if scan != nil {
				e, err = scan(ev.data)
			}
			if err != nil {
				v := new(E) // on the heap only here, where scan gave up
				ok, err := decodeEvent(ev, v)
				if err != nil {
					yield(*v, err)
					return
				}
				if !ok {
					continue
				}
				e = *v
			}
			if e.typ() == "" {
				v := e // set through a pointer, which puts v on the heap: only here
				P(&v).setType(ev.name)
				e = v
			}
			if !yield(e, nil) {
				return
			}
		}
	}
}

// inOrder returns the values of m in the order of their keys (a stream's block or item
// indexes).
func inOrder[T any](m map[int]T) []T {
	out := make([]T, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		out = append(out, m[k])
	}
	return out
}

// trimJSON trims JSON whitespace (which, unlike bytes.TrimSpace's, does not include \f
// or \v: a body that starts with those is not JSON).
func trimJSON(b []byte) []byte { return bytes.Trim(b, " \t\r\n") }

// object decodes a JSON object into its fields, keeping their raw values.
func object(raw []byte) (map[string]json.RawMessage, error) {
	t := trimJSON(raw)
	if len(t) == 0 || t[0] != '{' {
		return nil, errors.New("body is not a JSON object")
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(t, &m); err != nil {
		return nil, err
	}
	return m, nil
}

// fastOr reads with fast, or where fast gives up or fails, with slow: slow, which must
// agree with fast wherever fast succeeds, decides.
func fastOr[In, T any](fast, slow func(In) (T, error)) func(In) (T, error) {
	return func(in In) (T, error) {
		if v, err := fast(in); err == nil {
			return v, nil
		}
		return slow(in)
	}
}

// requestObject decodes a request's top level with encoding/json: its fields, and a
// request holding the stream flag and the params (the fields but skip and stream).
func requestObject(raw []byte, skip ...string) (map[string]json.RawMessage, request, error) {
	m, err := object(raw)
	if err != nil {
		return nil, request{}, err
	}
	r := request{params: params(m, append(skip, "stream")...)}
	if err := field(m, "stream", &r.stream); err != nil {
		return nil, request{}, err
	}
	return m, r, nil
}

// requestMessages decodes the list m[key] into Ts and normalizes each with f; a failure
// names the message ("messages[3]: ..."). Absent or null, the list is empty (not nil).
func requestMessages[T any](m map[string]json.RawMessage, key string, f func(T) (tape.Message, error)) ([]tape.Message, error) {
	var list []T
	if err := field(m, key, &list); err != nil {
		return nil, err
	}
	return each(key, list, f)
}

// requestTools decodes each entry of m["tools"] into a T (a wire format's tool) and
// normalizes it with f; a failure names the tool ("tools[2]: ..."). nil without tools.
func requestTools[T any](m map[string]json.RawMessage, f func(T) tape.Tool) ([]tape.Tool, error) {
	var list []json.RawMessage
	if err := field(m, "tools", &list); err != nil {
		return nil, err
	}
	var tools []tape.Tool
	for i, raw := range list {
		var t T
		if err := json.Unmarshal(raw, &t); err != nil {
			return nil, fmt.Errorf("tools[%d]: %w", i, err)
		}
		tools = append(tools, f(t))
	}
	return tools, nil
}

// namedTool is a tool as Anthropic and the Responses API declare it. Each reads its own
// schema field; decoding the other's cannot fail, for a json.RawMessage takes any value.
type namedTool struct {
	Type        string          `json:"type"`
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"input_schema"` // Anthropic
	Parameters  json.RawMessage `json:"parameters"`   // Responses
}

// each converts the elements of the JSON list called name with f; a failure names the
// element ("content[1]: ..."). The result is empty, not nil, for an empty list.
func each[T, U any](name string, list []T, f func(T) (U, error)) ([]U, error) {
	out := make([]U, 0, len(list))
	for i, e := range list {
		u, err := f(e)
		if err != nil {
			return nil, fmt.Errorf("%s[%d]: %w", name, i, err)
		}
		out = append(out, u)
	}
	return out, nil
}

// params returns the fields of m not listed in skip.
func params(m map[string]json.RawMessage, skip ...string) map[string]json.RawMessage {
	out := make(map[string]json.RawMessage, len(m))
	for k, v := range m {
		out[k] = v
	}
	for _, k := range skip {
		delete(out, k)
	}
	return out
}

// field decodes m[key] into v when present and not null.
func field(m map[string]json.RawMessage, key string, v any) error {
	raw, ok := m[key]
	if !ok || isNull(raw) {
		return nil
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return fmt.Errorf("%s: %w", key, err)
	}
	return nil
}

func isNull(raw []byte) bool {
	t := trimJSON(raw)
	return len(t) == 0 || string(t) == "null"
}

// typeOf returns the "type" of a JSON object.
func typeOf(raw []byte) (string, error) {
	var v struct {
		Type string `json:"type"`
	}
	err := json.Unmarshal(raw, &v)
	return v.Type, err
}

// role normalizes a message role: instructions inside the conversation are "system".
func role(r string) string {
	if r == "developer" {
		return "system"
	}
	return r
}

func textBlock(s string) tape.Block { return tape.Block{Type: tape.BlockText, Text: s} }

func rawBlock(typ string, raw json.RawMessage) tape.Block {
	return tape.Block{Type: typ, Raw: bytes.Clone(raw)}
}

// argsInput turns a function call's arguments, a string holding JSON, into a tool input
// object.
func argsInput(args string) json.RawMessage {
	t := strings.Trim(args, " \t\r\n")
	if t == "" {
		return json.RawMessage(`{}`)
	}
	if t[0] == '{' {
		if in, ok := compactObject([]byte(t)); ok {
			return in
		}
	}
	return marshal(map[string]string{InvalidArgumentsKey: args})
}

// compactObject returns the compact form of a JSON object (tool inputs are kept compact,
// however the provider spaced them, so that a stream and a body give the same bytes).
func compactObject(raw []byte) (json.RawMessage, bool) {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return nil, false
	}
	return b.Bytes(), true
}

// objectInput turns a tool call's input given as JSON (Anthropic tool_use) into a tool
// input object.
func objectInput(raw json.RawMessage) json.RawMessage {
	t := trimJSON(raw)
	if len(t) == 0 || string(t) == "null" {
		return json.RawMessage(`{}`)
	}
	if t[0] == '{' {
		if in, ok := compactObject(t); ok {
			return in
		}
	}
	return marshal(map[string]string{InvalidArgumentsKey: string(t)})
}

// customInput is the tool input of a freeform (custom) tool call.
func customInput(text string) json.RawMessage {
	return marshal(map[string]string{"input": text})
}

// marshal encodes v without HTML escaping, like the tape's canonical encoding.
func marshal(v any) json.RawMessage {
	b, err := jsonlex.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("provider: marshal %T: %v", v, err)) // only called with strings, maps and raw JSON
	}
	return b
}

// jsonString decodes a JSON string value; it reports false for anything else.
func jsonString(raw json.RawMessage) (string, bool) {
	i := jsonlex.Space(raw, 0)
	if i >= len(raw) || raw[i] != '"' {
		return "", false
	}
	end, f, err := jsonlex.String(raw, i)
	if err != nil || jsonlex.Space(raw, end) != len(raw) {
		return "", false
	}
	body := raw[i+1 : end-1]
	if f.Plain(body) {
		return string(body), true // no escapes: its bytes are its value
	}
	return jsonlex.UnquoteString(body), true
}

func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// toolCall builds the tool call of a tool_use block.
func toolCall(b tape.Block, kind string) tape.ToolCall {
	return tape.ToolCall{ID: b.ID, Name: b.Name, Input: b.Input, Kind: kind}
}

// openAIUsage builds a tape.Usage from OpenAI-style counts, where the prompt count includes
// the cached tokens.
func openAIUsage(prompt, cached, output, reasoning int64) tape.Usage {
	return tape.Usage{
		InputTokens:          max(prompt-cached, 0),
		OutputTokens:         output,
		CacheReadInputTokens: cached,
		ReasoningTokens:      reasoning,
	}
}

// blockOf normalizes one block of content with block, given the block's "type".
func blockOf(raw json.RawMessage, block func(typ string, raw json.RawMessage) (tape.Block, error)) (tape.Block, error) {
	typ, err := typeOf(raw)
	if err != nil {
		return tape.Block{}, err
	}
	return block(typ, raw)
}

// textPart normalizes a text block or part: {"type":...,"text":...}.
func textPart(raw json.RawMessage) (tape.Block, error) {
	var t struct {
		Text string `json:"text"`
	}
	err := json.Unmarshal(raw, &t)
	return textBlock(t.Text), err
}

// contentOf normalizes content that is null, a string (one text block; none when empty) or
// a list of blocks, each normalized by block (see blockOf).
func contentOf(raw json.RawMessage, block func(typ string, raw json.RawMessage) (tape.Block, error)) ([]tape.Block, error) {
	if isNull(raw) {
		return nil, nil
	}
	if s, ok := jsonString(raw); ok {
		if s == "" {
			return nil, nil
		}
		return []tape.Block{textBlock(s)}, nil
	}
	var list []json.RawMessage
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, fmt.Errorf("content: %w", err)
	}
	return each("content", list, func(b json.RawMessage) (tape.Block, error) { return blockOf(b, block) })
}
