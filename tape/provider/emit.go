package provider

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"unicode/utf8"

	"github.com/tapebox/tapebox/internal/jsonlex"
	"github.com/tapebox/tapebox/tape"
)

// This file is the emitting half of the wire formats: an answer made into the body or the
// server-sent events a provider would send, the inverse of Normalize. The fake provider of
// package testkit/fakeprovider serves its scripted turns with it, interop's --synthesize
// gives imported steps their raw streams with it, and the gateway's tape mode writes the
// steps recorded without a raw response with it (StepAnswer), so that each wire format is
// spelled out in one place.

// Answer is one model answer to write in a wire format.
type Answer struct {
	// ID is the message (Anthropic), completion (Chat) or response (Responses) id.
	ID    string
	Model string
	// Created is the Unix time OpenAI's created and created_at fields carry.
	Created int64
	// Items are the answer's parts, in order.
	Items []Item
	// Usage gives the token counts. Anthropic's input_tokens is InputTokens, the Responses
	// input_tokens InputTokens plus CacheReadInputTokens (which it counts as cached).
	Usage tape.Usage
	// StopReason is Anthropic's stop_reason or the Gemini API's finishReason; "" derives
	// it: tool_use when the answer calls a tool, else end_turn (Gemini: STOP). The OpenAI
	// formats derive theirs.
	StopReason string
}

// Item is one part of an Answer: a text, a reasoning text, a tool call, or a Responses
// output item given whole.
type Item struct {
	Text string
	// Thinking says Text is the model's reasoning (Anthropic thinking, a Responses
	// reasoning summary); Chat Completions has no place for it and leaves it out.
	Thinking bool
	// Call is a tool call: its ID, Name and Input (JSON; for Kind "custom", a freeform
	// tool, {"input": TEXT}), and for the Responses format its Namespace.
	Call *tape.ToolCall
	// Raw is a Responses output item written as it is (Anthropic and Chat refuse it).
	Raw any
	// ID is the Responses item id of a text (message), reasoning or call item.
	ID string
}

// Event is one server-sent event: its name ("" for none) and its data.
type Event struct{ Name, Data string }

// SSE is the event as it is sent: "event: NAME\ndata: DATA\n\n".
func (e Event) SSE() string {
	s := "data: " + e.Data + "\n\n"
	if e.Name != "" {
		s = "event: " + e.Name + "\n" + s
	}
	return s
}

// StreamOptions shape a stream.
type StreamOptions struct {
	// Piece is the most bytes of text or tool input one delta event carries (cut on
	// character boundaries); 0 sends each part in one delta.
	Piece int
	// IncludeUsage is Chat Completions' stream_options.include_usage: a last chunk with the
	// usage, and "usage": null on the others.
	IncludeUsage bool
}

// Body returns a as the JSON body of a non-streamed answer in provider p's format.
func Body(p tape.Provider, a Answer) ([]byte, error) {
	var v any
	var err error
	switch p {
	case tape.ProviderAnthropic:
		v, err = a.anthropicJSON()
	case tape.ProviderOpenAIChat:
		v, err = a.chatJSON()
	case tape.ProviderOpenAIResponses:
		v = a.responseObject("completed", a.responsesItems(true), a.responsesUsage())
	case tape.ProviderGemini:
		v, err = a.geminiJSON()
	default:
		return nil, fmt.Errorf("emit: provider %q has no wire format", p)
	}
	if err != nil {
		return nil, err
	}
	return jsonlex.Marshal(v)
}

// Stream returns a as the server-sent events of a streamed answer in provider p's format.
func Stream(p tape.Provider, a Answer, o StreamOptions) ([]Event, error) {
	e := &emitter{piece: o.Piece}
	var err error
	switch p {
	case tape.ProviderAnthropic:
		err = a.streamAnthropic(e)
	case tape.ProviderOpenAIChat:
		err = a.streamChat(e, o.IncludeUsage)
	case tape.ProviderOpenAIResponses:
		err = a.streamResponses(e)
	case tape.ProviderGemini:
		err = a.streamGemini(e)
	default:
		return nil, fmt.Errorf("emit: provider %q has no wire format", p)
	}
	if err == nil {
		err = e.err
	}
	return e.events, err
}

// emitter collects events; the first value that cannot be encoded is its error.
type emitter struct {
	piece  int
	events []Event
	err    error
}

func (e *emitter) event(name string, data any) {
	if e.err != nil {
		return
	}
	b, err := jsonlex.Marshal(data)
	if err != nil {
		e.err = fmt.Errorf("emit: encode event %s: %w", name, err)
		return
	}
	e.events = append(e.events, Event{Name: name, Data: string(b)})
}

// pieces splits s into the deltas of a stream: chunks of at most e.piece bytes on character
// boundaries (each holds at least one character), or s whole.
func (e *emitter) pieces(s string) []string {
	if e.piece <= 0 {
		if s == "" {
			return nil
		}
		return []string{s}
	}
	var out []string
	for len(s) > 0 {
		end := min(e.piece, len(s))
		for end < len(s) && !utf8.RuneStart(s[end]) {
			end++
		}
		out = append(out, s[:end])
		s = s[end:]
	}
	return out
}

// calls are the answer's tool calls, in order.
func (a *Answer) calls() []tape.ToolCall {
	var out []tape.ToolCall
	for _, it := range a.Items {
		if it.Call != nil {
			out = append(out, *it.Call)
		}
	}
	return out
}

// text is the answer's text parts, joined.
func (a *Answer) text() string {
	var s string
	for _, it := range a.Items {
		if it.Call == nil && it.Raw == nil && !it.Thinking {
			s += it.Text
		}
	}
	return s
}

// CompactInput is a call's input as compact JSON ("{}" when it has none).
func CompactInput(c tape.ToolCall) string {
	if len(c.Input) == 0 {
		return "{}"
	}
	var b bytes.Buffer
	if json.Compact(&b, c.Input) != nil {
		return string(c.Input)
	}
	return b.String()
}

// CallText is a call's arguments as the OpenAI formats carry them: JSON text for a
// function, the raw text for a custom (freeform) tool, whose Input is {"input": TEXT}.
func CallText(c tape.ToolCall) string {
	if c.Kind == "custom" {
		var v struct {
			Input string `json:"input"`
		}
		_ = json.Unmarshal(c.Input, &v)
		return v.Input
	}
	return CompactInput(c)
}

// ---- Anthropic Messages ----

func (a *Answer) anthropicStop() string {
	if a.StopReason != "" {
		return a.StopReason
	}
	if len(a.calls()) > 0 {
		return "tool_use"
	}
	return "end_turn"
}

func (a *Answer) anthropicUsage(output int64) map[string]any {
	return map[string]any{
		"input_tokens": a.Usage.InputTokens, "output_tokens": output,
		"cache_creation_input_tokens": a.Usage.CacheCreationInputTokens, "cache_read_input_tokens": a.Usage.CacheReadInputTokens,
	}
}

func (a *Answer) anthropicJSON() (map[string]any, error) {
	blocks := []map[string]any{}
	for i, it := range a.Items {
		switch {
		case it.Raw != nil:
			return nil, fmt.Errorf("emit: item %d: an Anthropic answer has no raw output items", i)
		case it.Call != nil:
			blocks = append(blocks, map[string]any{"type": "tool_use", "id": it.Call.ID, "name": it.Call.Name, "input": json.RawMessage(CompactInput(*it.Call))})
		case it.Thinking:
			blocks = append(blocks, map[string]any{"type": "thinking", "thinking": it.Text, "signature": ""})
		case it.Text != "":
			blocks = append(blocks, map[string]any{"type": "text", "text": it.Text})
		}
	}
	return map[string]any{
		"id": a.ID, "type": "message", "role": "assistant", "model": a.Model,
		"content": blocks, "stop_reason": a.anthropicStop(), "stop_sequence": nil,
		"usage": a.anthropicUsage(a.Usage.OutputTokens),
	}, nil
}

func (a *Answer) streamAnthropic(e *emitter) error {
	msg := map[string]any{
		"id": a.ID, "type": "message", "role": "assistant", "model": a.Model,
		"content": []any{}, "stop_reason": nil, "stop_sequence": nil, "usage": a.anthropicUsage(1),
	}
	e.event("message_start", map[string]any{"type": "message_start", "message": msg})
	e.event("ping", map[string]any{"type": "ping"})
	index := 0
	block := func(start map[string]any, deltaType, field string, parts []string) {
		e.event("content_block_start", map[string]any{"type": "content_block_start", "index": index, "content_block": start})
		for _, p := range parts {
			d := map[string]any{"type": "content_block_delta", "index": index, "delta": map[string]any{"type": deltaType, field: p}}
			e.event("content_block_delta", d)
		}
		e.event("content_block_stop", map[string]any{"type": "content_block_stop", "index": index})
		index++
	}
	for i, it := range a.Items {
		switch {
		case it.Raw != nil:
			return fmt.Errorf("emit: item %d: an Anthropic answer has no raw output items", i)
		case it.Call != nil:
			start := map[string]any{"type": "tool_use", "id": it.Call.ID, "name": it.Call.Name, "input": map[string]any{}}
			// The API opens every tool input with an empty partial_json.
			block(start, "input_json_delta", "partial_json", append([]string{""}, e.pieces(CompactInput(*it.Call))...))
		case it.Thinking:
			block(map[string]any{"type": "thinking", "thinking": "", "signature": ""}, "thinking_delta", "thinking", e.pieces(it.Text))
		case it.Text != "":
			block(map[string]any{"type": "text", "text": ""}, "text_delta", "text", e.pieces(it.Text))
		}
	}
	e.event("message_delta", map[string]any{
		"type":  "message_delta",
		"delta": map[string]any{"stop_reason": a.anthropicStop(), "stop_sequence": nil},
		"usage": map[string]any{"output_tokens": a.Usage.OutputTokens},
	})
	e.event("message_stop", map[string]any{"type": "message_stop"})
	return nil
}

// ---- OpenAI Chat Completions ----

func (a *Answer) chatFinish() string {
	if len(a.calls()) > 0 {
		return "tool_calls"
	}
	return "stop"
}

func (a *Answer) chatUsage() map[string]any {
	in, out := a.Usage.InputTokens, a.Usage.OutputTokens
	return map[string]any{"prompt_tokens": in, "completion_tokens": out, "total_tokens": in + out}
}

func emitChatCall(i int, c tape.ToolCall, args string) map[string]any {
	if c.Kind == "custom" {
		return map[string]any{"index": i, "id": c.ID, "type": "custom", "custom": map[string]any{"name": c.Name, "input": args}}
	}
	return map[string]any{"index": i, "id": c.ID, "type": "function", "function": map[string]any{"name": c.Name, "arguments": args}}
}

func (a *Answer) chatRaw() error {
	for i, it := range a.Items {
		if it.Raw != nil {
			return fmt.Errorf("emit: item %d: a Chat Completions answer has no raw output items", i)
		}
	}
	return nil
}

func (a *Answer) chatJSON() (map[string]any, error) {
	if err := a.chatRaw(); err != nil {
		return nil, err
	}
	msg := map[string]any{"role": "assistant", "content": nil, "refusal": nil}
	if t := a.text(); t != "" {
		msg["content"] = t
	}
	if calls := a.calls(); len(calls) > 0 {
		var out []map[string]any
		for i, c := range calls {
			tc := emitChatCall(i, c, CallText(c))
			delete(tc, "index")
			out = append(out, tc)
		}
		msg["tool_calls"] = out
	}
	return map[string]any{
		"id": a.ID, "object": "chat.completion", "created": a.Created, "model": a.Model,
		"choices": []any{map[string]any{"index": 0, "message": msg, "logprobs": nil, "finish_reason": a.chatFinish()}},
		"usage":   a.chatUsage(),
	}, nil
}

func (a *Answer) streamChat(e *emitter, usage bool) error {
	if err := a.chatRaw(); err != nil {
		return err
	}
	chunk := func(delta map[string]any, finish any) {
		c := map[string]any{
			"id": a.ID, "object": "chat.completion.chunk", "created": a.Created, "model": a.Model,
			"choices": []any{map[string]any{"index": 0, "delta": delta, "logprobs": nil, "finish_reason": finish}},
		}
		if usage {
			c["usage"] = nil
		}
		e.event("", c)
	}
	chunk(map[string]any{"role": "assistant", "content": "", "refusal": nil}, nil)
	for _, p := range e.pieces(a.text()) {
		chunk(map[string]any{"content": p}, nil)
	}
	for i, c := range a.calls() {
		chunk(map[string]any{"tool_calls": []any{emitChatCall(i, c, "")}}, nil)
		for _, p := range e.pieces(CallText(c)) {
			var d map[string]any
			if c.Kind == "custom" {
				d = map[string]any{"index": i, "custom": map[string]any{"input": p}}
			} else {
				d = map[string]any{"index": i, "function": map[string]any{"arguments": p}}
			}
			chunk(map[string]any{"tool_calls": []any{d}}, nil)
		}
	}
	chunk(map[string]any{}, a.chatFinish())
	if usage {
		e.event("", map[string]any{
			"id": a.ID, "object": "chat.completion.chunk", "created": a.Created, "model": a.Model,
			"choices": []any{}, "usage": a.chatUsage(),
		})
	}
	e.events = append(e.events, Event{Data: "[DONE]"})
	return nil
}

// ---- OpenAI Responses ----

func (a *Answer) responsesUsage() map[string]any {
	u := a.Usage
	in := u.InputTokens + u.CacheReadInputTokens
	return map[string]any{
		"input_tokens": in, "input_tokens_details": map[string]any{"cached_tokens": u.CacheReadInputTokens},
		"output_tokens": u.OutputTokens, "output_tokens_details": map[string]any{"reasoning_tokens": u.ReasoningTokens},
		"total_tokens": in + u.OutputTokens,
	}
}

// responsesItems returns the output items, complete (done) or as first announced.
func (a *Answer) responsesItems(done bool) []any {
	status := "in_progress"
	if done {
		status = "completed"
	}
	items := []any{}
	for _, it := range a.Items {
		switch {
		case it.Raw != nil:
			if m, ok := it.Raw.(map[string]any); ok {
				items = append(items, maps.Clone(m))
			} else {
				items = append(items, it.Raw)
			}
		case it.Call != nil:
			c := *it.Call
			text := ""
			if done {
				text = CallText(c)
			}
			if c.Kind == "custom" {
				items = append(items, map[string]any{"id": it.ID, "type": "custom_tool_call", "status": status, "call_id": c.ID, "name": c.Name, "input": text})
				continue
			}
			m := map[string]any{"id": it.ID, "type": "function_call", "status": status, "call_id": c.ID, "name": c.Name, "arguments": text}
			if c.Namespace != "" {
				m["namespace"] = c.Namespace
			}
			items = append(items, m)
		case it.Thinking:
			summary := []any{}
			if done {
				summary = []any{map[string]any{"type": "summary_text", "text": it.Text}}
			}
			items = append(items, map[string]any{"id": it.ID, "type": "reasoning", "summary": summary})
		case it.Text != "":
			content := []any{}
			if done {
				content = []any{map[string]any{"type": "output_text", "text": it.Text, "annotations": []any{}, "logprobs": []any{}}}
			}
			items = append(items, map[string]any{"id": it.ID, "type": "message", "status": status, "role": "assistant", "content": content})
		}
	}
	return items
}

func (a *Answer) responseObject(status string, output []any, usage any) map[string]any {
	return map[string]any{
		"id": a.ID, "object": "response", "created_at": a.Created, "status": status,
		"error": nil, "incomplete_details": nil, "model": a.Model, "output": output,
		"parallel_tool_calls": true, "tool_choice": "auto", "tools": []any{}, "usage": usage,
	}
}

func (a *Answer) streamResponses(e *emitter) error {
	seq := 0
	ev := func(typ string, fields map[string]any) {
		fields["type"] = typ
		fields["sequence_number"] = seq
		seq++
		e.event(typ, fields)
	}
	// stream sends s as events name.delta, a piece each, then name.done with all of s under
	// key; every event holds the fields of at, the done event those of end as well.
	stream := func(name string, at map[string]any, key, s string, end map[string]any) {
		for _, p := range e.pieces(s) {
			d := maps.Clone(at)
			d["delta"] = p
			ev(name+".delta", d)
		}
		d := maps.Clone(at)
		maps.Copy(d, end)
		d[key] = s
		ev(name+".done", d)
	}
	pending := a.responseObject("in_progress", []any{}, nil)
	ev("response.created", map[string]any{"response": pending})
	ev("response.in_progress", map[string]any{"response": pending})
	started, done := a.responsesItems(false), a.responsesItems(true)
	// The items of a list the Items made (raw items and parts with nothing to write drop
	// out): it runs alongside started and done.
	var parts []Item
	for _, it := range a.Items {
		if it.Raw != nil || it.Call != nil || it.Thinking || it.Text != "" {
			parts = append(parts, it)
		}
	}
	for oi := range started {
		it := parts[oi]
		ev("response.output_item.added", map[string]any{"output_index": oi, "item": started[oi]})
		at := map[string]any{"item_id": it.ID, "output_index": oi}
		switch {
		case it.Raw != nil, it.Thinking:
		case it.Call != nil && it.Call.Kind == "custom":
			stream("response.custom_tool_call_input", at, "input", CallText(*it.Call), nil)
		case it.Call != nil:
			stream("response.function_call_arguments", at, "arguments", CallText(*it.Call), map[string]any{"name": it.Call.Name})
		default:
			part := map[string]any{"type": "output_text", "text": "", "annotations": []any{}, "logprobs": []any{}}
			ev("response.content_part.added", map[string]any{"item_id": it.ID, "output_index": oi, "content_index": 0, "part": part})
			stream("response.output_text", map[string]any{"item_id": it.ID, "output_index": oi, "content_index": 0, "logprobs": []any{}}, "text", it.Text, nil)
			full := map[string]any{"type": "output_text", "text": it.Text, "annotations": []any{}, "logprobs": []any{}}
			ev("response.content_part.done", map[string]any{"item_id": it.ID, "output_index": oi, "content_index": 0, "part": full})
		}
		ev("response.output_item.done", map[string]any{"output_index": oi, "item": done[oi]})
	}
	ev("response.completed", map[string]any{"response": a.responseObject("completed", done, a.responsesUsage())})
	return nil
}

// ---- A step's normalized fields ----

// StepAnswer is the answer a step's normalized fields describe, for a step recorded or
// imported without its raw response: its content blocks as Items, in order, and its usage;
// its stop_reason for an Anthropic answer only (the OpenAI formats derive theirs, and the
// Gemini API's finishReason is not the normalized one). A tool_use block is the step's
// tool call of its id (its kind and namespace), with the block's id, name and input (an
// empty or null input is {}); a block of another type goes out as a raw Responses output
// item (its Raw), in that format only. itemID(kind, j) is the item id of content block j,
// kind being "msg" (a text), "rs" (a thinking block), "fc" (a function call) or "ctc" (a
// custom tool call). The answer's ID and Model are the caller's.
func StepAnswer(p tape.Provider, s *tape.Step, itemID func(kind string, j int) string) (Answer, error) {
	a := Answer{Usage: s.Response.Usage}
	if p == tape.ProviderAnthropic {
		a.StopReason = s.Response.StopReason
	}
	calls := make(map[string]tape.ToolCall, len(s.ToolCalls))
	for _, c := range s.ToolCalls {
		calls[c.ID] = c
	}
	for j, b := range s.Response.Content {
		switch b.Type {
		case tape.BlockText:
			a.Items = append(a.Items, Item{Text: b.Text, ID: itemID("msg", j)})
		case tape.BlockThinking:
			a.Items = append(a.Items, Item{Text: b.Text, Thinking: true, ID: itemID("rs", j)})
		case tape.BlockToolUse:
			c := calls[b.ID]
			c.ID, c.Name, c.Input = b.ID, b.Name, b.Input
			if len(c.Input) == 0 || string(c.Input) == "null" {
				c.Input = json.RawMessage("{}")
			}
			kind := "fc"
			if c.Kind == "custom" {
				kind = "ctc"
			}
			a.Items = append(a.Items, Item{Call: &c, ID: itemID(kind, j)})
		default:
			if len(b.Raw) == 0 || p != tape.ProviderOpenAIResponses {
				return a, fmt.Errorf("content block %d of type %q has no wire form in %s", j, b.Type, p)
			}
			a.Items = append(a.Items, Item{Raw: b.Raw})
		}
	}
	return a, nil
}
