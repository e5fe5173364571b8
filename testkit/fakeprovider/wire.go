package fakeprovider

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/tapebox/tapebox/internal/jsonlex"
	"github.com/tapebox/tapebox/tape"
)

// created is the fixed creation time of every answer, so answers are deterministic.
const created = 1767225600 // 2026-01-01T00:00:00Z

// errCut reports that a Fault cut the answer short.
var errCut = errors.New("fakeprovider: stream cut by fault")

// errGone reports that the client or the server went away during a wait.
var errGone = errors.New("fakeprovider: request canceled")

// writer writes one answer, applying the turn's delays and cut.
type writer struct {
	w      http.ResponseWriter
	ctx    context.Context // the request's
	done   <-chan struct{} // closed when the server closes
	fault  *Fault
	events int
}

func (o *writer) firstByte() time.Duration {
	if o.fault == nil {
		return 0
	}
	return o.fault.FirstByte
}

// wait sleeps d unless the request or the server ends first; it says whether to go on.
func (o *writer) wait(d time.Duration) bool {
	if d <= 0 {
		return o.ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-o.ctx.Done():
	case <-o.done:
	}
	return false
}

// startStream sends the headers of an event stream.
func (o *writer) startStream() {
	h := o.w.Header()
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	h.Set("Cache-Control", "no-cache")
	o.w.WriteHeader(http.StatusOK)
}

// event sends one server-sent event (name may be empty) and flushes it.
func (o *writer) event(name string, data any) error {
	b, err := jsonlex.Marshal(data)
	if err != nil {
		return fmt.Errorf("fakeprovider: encode event %s: %w", name, err)
	}
	return o.rawEvent(name, string(b))
}

func (o *writer) rawEvent(name, data string) error {
	if o.events > 0 && o.fault != nil && !o.wait(o.fault.BetweenChunks) {
		return errGone
	}
	if o.fault != nil && o.fault.Cut > 0 && o.events >= o.fault.Cut {
		return errCut
	}
	var b strings.Builder
	if name != "" {
		b.WriteString("event: ")
		b.WriteString(name)
		b.WriteByte('\n')
	}
	b.WriteString("data: ")
	b.WriteString(data)
	b.WriteString("\n\n")
	if _, err := o.w.Write([]byte(b.String())); err != nil {
		return err
	}
	if f, ok := o.w.(http.Flusher); ok {
		f.Flush()
	}
	o.events++
	return nil
}

// body sends a whole JSON answer; a Fault's Cut sends half of it and drops the connection.
func (o *writer) body(v any) error {
	b, err := jsonlex.Marshal(v)
	if err != nil {
		return fmt.Errorf("fakeprovider: encode answer: %w", err)
	}
	h := o.w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(b)))
	o.w.WriteHeader(http.StatusOK)
	if o.fault != nil && o.fault.Cut > 0 {
		_, _ = o.w.Write(b[:len(b)/2])
		if f, ok := o.w.(http.Flusher); ok {
			f.Flush()
		}
		return errCut
	}
	_, err = o.w.Write(b)
	return err
}

// answer is a turn made concrete for one request: model, ids and token counts.
type answer struct {
	model     string
	respID    string // message, completion or response id
	msgID     string // Responses message item id
	text      string
	calls     []tape.ToolCall // ids filled in
	itemIDs   []string        // Responses item ids of calls
	ns        map[string]string
	extra     []map[string]any // further Responses output items
	inTokens  int
	outTokens int
}

func newAnswer(req *Request, turn Turn, thread string, step int) *answer {
	var m struct {
		Model string `json:"model"`
	}
	_ = json.Unmarshal(req.Body, &m)
	if m.Model == "" {
		m.Model = "fake-model"
	}
	tag := idPart(thread) + "_" + stepPart(step)
	a := &answer{model: m.Model, text: turn.Text, inTokens: tokens(len(req.Body)), ns: turn.Namespaces, extra: turn.Items}
	out := len(turn.Text)
	switch req.Endpoint {
	case EndpointMessages:
		a.respID = "msg_fake_" + tag
	case EndpointChat:
		a.respID = "chatcmpl-fake_" + tag
	default:
		a.respID = "resp_fake_" + tag
		a.msgID = "msg_fake_" + tag
	}
	for i, c := range turn.Calls {
		n := fmt.Sprintf("%s_%d", tag, i)
		if c.ID == "" {
			if req.Endpoint == EndpointMessages {
				c.ID = "toolu_fake_" + n
			} else {
				c.ID = "call_fake_" + n
			}
		}
		if c.Kind == "" {
			c.Kind = "function"
		}
		if len(c.Input) == 0 {
			c.Input = json.RawMessage("{}")
		}
		prefix := "fc_fake_"
		if c.Kind == "custom" {
			prefix = "ctc_fake_"
		}
		a.itemIDs = append(a.itemIDs, prefix+n)
		a.calls = append(a.calls, c)
		out += len(c.Input)
	}
	a.outTokens = tokens(out)
	return a
}

// idPart keeps the characters of a thread name that every provider allows in ids.
func idPart(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r < utf8.RuneSelf && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	if b.Len() == 0 {
		return "t"
	}
	return b.String()
}

func stepPart(step int) string {
	if step < 0 {
		return "x"
	}
	return strconv.Itoa(step)
}

// compactInput is a call's input as compact JSON.
func compactInput(c tape.ToolCall) string {
	var b bytes.Buffer
	if json.Compact(&b, c.Input) != nil {
		return string(c.Input)
	}
	return b.String()
}

// pieces splits s into chunks of at most n bytes on character boundaries (each holds at
// least one character).
func pieces(s string, n int) []string {
	var out []string
	for len(s) > 0 {
		end := min(n, len(s))
		for end < len(s) && !utf8.RuneStart(s[end]) {
			end++
		}
		out = append(out, s[:end])
		s = s[end:]
	}
	return out
}

// ---- Anthropic Messages ----

func (a *answer) anthropicBlocks() []map[string]any {
	var blocks []map[string]any
	if a.text != "" {
		blocks = append(blocks, map[string]any{"type": "text", "text": a.text})
	}
	for _, c := range a.calls {
		blocks = append(blocks, map[string]any{"type": "tool_use", "id": c.ID, "name": c.Name, "input": json.RawMessage(compactInput(c))})
	}
	if blocks == nil {
		blocks = []map[string]any{}
	}
	return blocks
}

func (a *answer) anthropicStop() string {
	if len(a.calls) > 0 {
		return "tool_use"
	}
	return "end_turn"
}

func (a *answer) anthropicUsage(output int) map[string]any {
	return map[string]any{
		"input_tokens": a.inTokens, "output_tokens": output,
		"cache_creation_input_tokens": 0, "cache_read_input_tokens": 0,
	}
}

func (a *answer) anthropicJSON() map[string]any {
	return map[string]any{
		"id": a.respID, "type": "message", "role": "assistant", "model": a.model,
		"content": a.anthropicBlocks(), "stop_reason": a.anthropicStop(), "stop_sequence": nil,
		"usage": a.anthropicUsage(a.outTokens),
	}
}

func (a *answer) streamAnthropic(o *writer, size int) error {
	o.startStream()
	msg := map[string]any{
		"id": a.respID, "type": "message", "role": "assistant", "model": a.model,
		"content": []any{}, "stop_reason": nil, "stop_sequence": nil, "usage": a.anthropicUsage(1),
	}
	if err := o.event("message_start", map[string]any{"type": "message_start", "message": msg}); err != nil {
		return err
	}
	if err := o.event("ping", map[string]any{"type": "ping"}); err != nil {
		return err
	}
	index := 0
	block := func(start map[string]any, deltaType, field string, parts []string) error {
		if err := o.event("content_block_start", map[string]any{"type": "content_block_start", "index": index, "content_block": start}); err != nil {
			return err
		}
		for _, p := range parts {
			d := map[string]any{"type": "content_block_delta", "index": index, "delta": map[string]any{"type": deltaType, field: p}}
			if err := o.event("content_block_delta", d); err != nil {
				return err
			}
		}
		if err := o.event("content_block_stop", map[string]any{"type": "content_block_stop", "index": index}); err != nil {
			return err
		}
		index++
		return nil
	}
	if a.text != "" {
		if err := block(map[string]any{"type": "text", "text": ""}, "text_delta", "text", pieces(a.text, size)); err != nil {
			return err
		}
	}
	for _, c := range a.calls {
		start := map[string]any{"type": "tool_use", "id": c.ID, "name": c.Name, "input": map[string]any{}}
		// The API opens every tool input with an empty partial_json.
		parts := append([]string{""}, pieces(compactInput(c), size)...)
		if err := block(start, "input_json_delta", "partial_json", parts); err != nil {
			return err
		}
	}
	delta := map[string]any{
		"type":  "message_delta",
		"delta": map[string]any{"stop_reason": a.anthropicStop(), "stop_sequence": nil},
		"usage": map[string]any{"output_tokens": a.outTokens},
	}
	if err := o.event("message_delta", delta); err != nil {
		return err
	}
	return o.event("message_stop", map[string]any{"type": "message_stop"})
}

// ---- OpenAI Chat Completions ----

func (a *answer) chatFinish() string {
	if len(a.calls) > 0 {
		return "tool_calls"
	}
	return "stop"
}

func (a *answer) chatUsage() map[string]any {
	return map[string]any{"prompt_tokens": a.inTokens, "completion_tokens": a.outTokens, "total_tokens": a.inTokens + a.outTokens}
}

func (a *answer) chatToolCall(i int, c tape.ToolCall, args string) map[string]any {
	if c.Kind == "custom" {
		return map[string]any{"index": i, "id": c.ID, "type": "custom", "custom": map[string]any{"name": c.Name, "input": args}}
	}
	return map[string]any{"index": i, "id": c.ID, "type": "function", "function": map[string]any{"name": c.Name, "arguments": args}}
}

func (a *answer) chatJSON() map[string]any {
	msg := map[string]any{"role": "assistant", "content": nil, "refusal": nil}
	if a.text != "" {
		msg["content"] = a.text
	}
	if len(a.calls) > 0 {
		var calls []map[string]any
		for i, c := range a.calls {
			tc := a.chatToolCall(i, c, a.callText(c))
			delete(tc, "index")
			calls = append(calls, tc)
		}
		msg["tool_calls"] = calls
	}
	return map[string]any{
		"id": a.respID, "object": "chat.completion", "created": created, "model": a.model,
		"choices": []any{map[string]any{"index": 0, "message": msg, "logprobs": nil, "finish_reason": a.chatFinish()}},
		"usage":   a.chatUsage(),
	}
}

// callText is a call's arguments as the OpenAI formats carry them: JSON text for a
// function, the raw text for a custom tool.
func (a *answer) callText(c tape.ToolCall) string {
	if c.Kind == "custom" {
		return customText(c)
	}
	return compactInput(c)
}

func (a *answer) streamChat(o *writer, size int, usage bool) error {
	o.startStream()
	chunk := func(delta map[string]any, finish any) error {
		c := map[string]any{
			"id": a.respID, "object": "chat.completion.chunk", "created": created, "model": a.model,
			"choices": []any{map[string]any{"index": 0, "delta": delta, "logprobs": nil, "finish_reason": finish}},
		}
		if usage {
			c["usage"] = nil
		}
		return o.event("", c)
	}
	if err := chunk(map[string]any{"role": "assistant", "content": "", "refusal": nil}, nil); err != nil {
		return err
	}
	for _, p := range pieces(a.text, size) {
		if err := chunk(map[string]any{"content": p}, nil); err != nil {
			return err
		}
	}
	for i, c := range a.calls {
		if err := chunk(map[string]any{"tool_calls": []any{a.chatToolCall(i, c, "")}}, nil); err != nil {
			return err
		}
		for _, p := range pieces(a.callText(c), size) {
			var d map[string]any
			if c.Kind == "custom" {
				d = map[string]any{"index": i, "custom": map[string]any{"input": p}}
			} else {
				d = map[string]any{"index": i, "function": map[string]any{"arguments": p}}
			}
			if err := chunk(map[string]any{"tool_calls": []any{d}}, nil); err != nil {
				return err
			}
		}
	}
	if err := chunk(map[string]any{}, a.chatFinish()); err != nil {
		return err
	}
	if usage {
		c := map[string]any{
			"id": a.respID, "object": "chat.completion.chunk", "created": created, "model": a.model,
			"choices": []any{}, "usage": a.chatUsage(),
		}
		if err := o.event("", c); err != nil {
			return err
		}
	}
	return o.rawEvent("", "[DONE]")
}

// ---- OpenAI Responses ----

func (a *answer) responsesUsage() map[string]any {
	return map[string]any{
		"input_tokens": a.inTokens, "input_tokens_details": map[string]any{"cached_tokens": 0},
		"output_tokens": a.outTokens, "output_tokens_details": map[string]any{"reasoning_tokens": 0},
		"total_tokens": a.inTokens + a.outTokens,
	}
}

// responsesItems returns the output items, complete (done) or as first announced.
func (a *answer) responsesItems(done bool) []map[string]any {
	status := "in_progress"
	if done {
		status = "completed"
	}
	var items []map[string]any
	for _, it := range a.extra {
		items = append(items, maps.Clone(it))
	}
	if a.text != "" {
		content := []any{}
		if done {
			content = []any{map[string]any{"type": "output_text", "text": a.text, "annotations": []any{}, "logprobs": []any{}}}
		}
		items = append(items, map[string]any{"id": a.msgID, "type": "message", "status": status, "role": "assistant", "content": content})
	}
	for i, c := range a.calls {
		text := ""
		if done {
			text = a.callText(c)
		}
		if c.Kind == "custom" {
			items = append(items, map[string]any{"id": a.itemIDs[i], "type": "custom_tool_call", "status": status, "call_id": c.ID, "name": c.Name, "input": text})
		} else {
			it := map[string]any{"id": a.itemIDs[i], "type": "function_call", "status": status, "call_id": c.ID, "name": c.Name, "arguments": text}
			if ns := a.ns[c.Name]; ns != "" {
				it["namespace"] = ns
			}
			items = append(items, it)
		}
	}
	if items == nil {
		items = []map[string]any{}
	}
	return items
}

func (a *answer) responsesJSON() map[string]any {
	return a.responseObject("completed", a.responsesItems(true), a.responsesUsage())
}

func (a *answer) responseObject(status string, output []map[string]any, usage any) map[string]any {
	return map[string]any{
		"id": a.respID, "object": "response", "created_at": created, "status": status,
		"error": nil, "incomplete_details": nil, "model": a.model, "output": output,
		"parallel_tool_calls": true, "tool_choice": "auto", "tools": []any{}, "usage": usage,
	}
}

func (a *answer) streamResponses(o *writer, size int) error {
	o.startStream()
	seq := 0
	ev := func(typ string, fields map[string]any) error {
		fields["type"] = typ
		fields["sequence_number"] = seq
		seq++
		return o.event(typ, fields)
	}
	// stream sends s as events name.delta, a piece each, then name.done with all of s under
	// key; every event holds the fields of at, the done event those of end as well.
	stream := func(name string, at map[string]any, key, s string, end map[string]any) error {
		for _, p := range pieces(s, size) {
			d := maps.Clone(at)
			d["delta"] = p
			if err := ev(name+".delta", d); err != nil {
				return err
			}
		}
		d := maps.Clone(at)
		maps.Copy(d, end)
		d[key] = s
		return ev(name+".done", d)
	}
	pending := a.responseObject("in_progress", []map[string]any{}, nil)
	if err := ev("response.created", map[string]any{"response": pending}); err != nil {
		return err
	}
	if err := ev("response.in_progress", map[string]any{"response": pending}); err != nil {
		return err
	}
	started, done := a.responsesItems(false), a.responsesItems(true)
	for oi := range started {
		id := started[oi]["id"]
		if err := ev("response.output_item.added", map[string]any{"output_index": oi, "item": started[oi]}); err != nil {
			return err
		}
		switch started[oi]["type"] {
		case "message":
			part := map[string]any{"type": "output_text", "text": "", "annotations": []any{}, "logprobs": []any{}}
			if err := ev("response.content_part.added", map[string]any{"item_id": id, "output_index": oi, "content_index": 0, "part": part}); err != nil {
				return err
			}
			if err := stream("response.output_text", map[string]any{"item_id": id, "output_index": oi, "content_index": 0, "logprobs": []any{}}, "text", a.text, nil); err != nil {
				return err
			}
			full := map[string]any{"type": "output_text", "text": a.text, "annotations": []any{}, "logprobs": []any{}}
			if err := ev("response.content_part.done", map[string]any{"item_id": id, "output_index": oi, "content_index": 0, "part": full}); err != nil {
				return err
			}
		case "function_call":
			at := map[string]any{"item_id": id, "output_index": oi}
			if err := stream("response.function_call_arguments", at, "arguments", done[oi]["arguments"].(string), map[string]any{"name": done[oi]["name"]}); err != nil {
				return err
			}
		case "custom_tool_call":
			at := map[string]any{"item_id": id, "output_index": oi}
			if err := stream("response.custom_tool_call_input", at, "input", done[oi]["input"].(string), nil); err != nil {
				return err
			}
		}
		if err := ev("response.output_item.done", map[string]any{"output_index": oi, "item": done[oi]}); err != nil {
			return err
		}
	}
	return ev("response.completed", map[string]any{"response": a.responseObject("completed", done, a.responsesUsage())})
}
