package provider

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/tapebox/tapebox/tape"
)

// anthropic is the Anthropic Messages API (POST /v1/messages). Each part has a fast path
// for what the API and Claude Code send, backed by a slow path with encoding/json.
var anthropic = format{
	request: fastOr(anthropicRequestFast, anthropicRequestSlow),
	body:    fastOr(anthropicBodyFast, anthropicBodySlow),
	stream:  fastOr(anthropicStreamFast, anthropicStreamSlow),
}

// anthropicRequestSlow decodes a request with encoding/json; anthropicRequestFast must
// give the same result whenever it succeeds.
func anthropicRequestSlow(raw []byte) (request, error) {
	m, r, err := requestObject(raw, "messages", "system", "tools")
	if err != nil {
		return request{}, err
	}
	if sys, ok := m["system"]; ok && !isNull(sys) {
		if r.system, err = anthropicSystem(sys); err != nil {
			return request{}, fmt.Errorf("system: %w", err)
		}
	}
	type message struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	}
	if r.messages, err = requestMessages(m, "messages", func(msg message) (tape.Message, error) {
		content, err := contentOf(msg.Content, anthropicBlock)
		return tape.Message{Role: role(msg.Role), Content: content}, err
	}); err != nil {
		return request{}, err
	}
	if r.tools, err = requestTools(m, func(t namedTool) tape.Tool {
		kind := t.Type
		if kind == "" || kind == "custom" {
			kind = "function" // a custom Anthropic tool takes a JSON input schema
		}
		return tape.Tool{Name: cmp.Or(t.Name, t.Type), Description: t.Description, Kind: kind, InputSchema: t.InputSchema}
	}); err != nil {
		return request{}, err
	}
	return r, nil
}

// anthropicSystem returns the system prompt: a string, or the text of its text blocks
// joined with "\n".
func anthropicSystem(raw json.RawMessage) (string, error) {
	if s, ok := jsonString(raw); ok {
		return s, nil
	}
	var blocks []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(raw, &blocks); err != nil {
		return "", err
	}
	var texts []string
	for _, b := range blocks {
		if b.Type == "text" {
			texts = append(texts, b.Text)
		}
	}
	return strings.Join(texts, "\n"), nil
}

// anthropicBlock normalizes a block of a message's or a tool result's content (which is a
// string or a list of these).
func anthropicBlock(typ string, raw json.RawMessage) (tape.Block, error) {
	switch typ {
	case "text":
		return textPart(raw)
	case "thinking":
		var b struct {
			Thinking string `json:"thinking"`
		}
		err := json.Unmarshal(raw, &b)
		return tape.Block{Type: tape.BlockThinking, Text: b.Thinking}, err
	case "redacted_thinking":
		return tape.Block{Type: tape.BlockThinking}, nil
	case "tool_use":
		var b struct {
			ID    string          `json:"id"`
			Name  string          `json:"name"`
			Input json.RawMessage `json:"input"`
		}
		err := json.Unmarshal(raw, &b)
		return tape.Block{Type: tape.BlockToolUse, ID: b.ID, Name: b.Name, Input: objectInput(b.Input)}, err
	case "tool_result":
		var b struct {
			ToolUseID string          `json:"tool_use_id"`
			Content   json.RawMessage `json:"content"`
			IsError   bool            `json:"is_error"`
		}
		if err := json.Unmarshal(raw, &b); err != nil {
			return tape.Block{}, err
		}
		content, err := contentOf(b.Content, anthropicBlock)
		return tape.Block{Type: tape.BlockToolResult, ToolCallID: b.ToolUseID, Content: content, IsError: b.IsError}, err
	case "image":
		return rawBlock(tape.BlockImage, raw), nil
	}
	return rawBlock(tape.BlockOther, raw), nil
}

// anthropicUsage is a usage object; nil counts were absent, which matters when a stream's
// message_delta updates the counts of message_start.
type anthropicUsage struct {
	InputTokens              *int64 `json:"input_tokens"`
	OutputTokens             *int64 `json:"output_tokens"`
	CacheCreationInputTokens *int64 `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     *int64 `json:"cache_read_input_tokens"`
}

func (u *anthropicUsage) update(v anthropicUsage) {
	for _, p := range []struct{ dst, src **int64 }{
		{&u.InputTokens, &v.InputTokens},
		{&u.OutputTokens, &v.OutputTokens},
		{&u.CacheCreationInputTokens, &v.CacheCreationInputTokens},
		{&u.CacheReadInputTokens, &v.CacheReadInputTokens},
	} {
		if *p.src != nil {
			*p.dst = *p.src
		}
	}
}

func (u anthropicUsage) tape() tape.Usage {
	n := func(p *int64) int64 {
		if p == nil {
			return 0
		}
		return *p
	}
	return tape.Usage{
		InputTokens:              n(u.InputTokens),
		OutputTokens:             n(u.OutputTokens),
		CacheReadInputTokens:     n(u.CacheReadInputTokens),
		CacheCreationInputTokens: n(u.CacheCreationInputTokens),
	}
}

var anthropicBodyFields = []string{"content", "stop_reason", "usage"}

// anthropicBodyFast reads a response body in one pass, its blocks as the request's fast
// path reads them; it gives up with errSlow on anything unusual, and anthropicBodySlow,
// which must give the same reply whenever this succeeds, decides.
func anthropicBodyFast(raw []byte) (reply, error) {
	var (
		rep      reply
		usageRaw []byte
	)
	d := newScanner(trimJSON(raw))
	err := fastFields(d, anthropicBodyFields, func(field int) error {
		switch field {
		case 0:
			if d.peek() == 'n' {
				return d.literal("null")
			}
			return fastArray(d, func() error {
				b, err := anthropicBlockFast(d)
				if err != nil {
					return err
				}
				rep.add(b)
				return nil
			})
		case 1:
			return fastString(d, &rep.stop)
		}
		var err error
		usageRaw, err = d.raw()
		return err
	})
	if err != nil {
		return reply{}, err
	}
	if err := d.end(); err != nil {
		return reply{}, err
	}
	if usageRaw != nil {
		var u anthropicUsage
		if json.Unmarshal(usageRaw, &u) != nil {
			return reply{}, errSlow
		}
		rep.usage = u.tape()
	}
	return rep, nil
}

// anthropicBodySlow normalizes a response body with encoding/json.
func anthropicBodySlow(raw []byte) (reply, error) {
	var msg struct {
		Content    []json.RawMessage `json:"content"`
		StopReason *string           `json:"stop_reason"`
		Usage      anthropicUsage    `json:"usage"`
	}
	if err := json.Unmarshal(raw, &msg); err != nil {
		return reply{}, err
	}
	rep, err := anthropicReply(msg.Content)
	if err != nil {
		return reply{}, err
	}
	if msg.StopReason != nil {
		rep.stop = *msg.StopReason
	}
	rep.usage = msg.Usage.tape()
	return rep, nil
}

// add appends an Anthropic content block to the reply, and the function call it makes
// when it is a tool_use block.
func (r *reply) add(b tape.Block) {
	r.content = append(r.content, b)
	if b.Type == tape.BlockToolUse {
		r.calls = append(r.calls, toolCall(b, "function"))
	}
}

// anthropicMessage is what a stream says of the message as a whole, in its message_start
// and message_delta events.
type anthropicMessage struct {
	usage anthropicUsage
	stop  string
}

// event applies a message_start or message_delta event.
func (m *anthropicMessage) event(e anthropicEvent) error {
	if e.Type == "message_start" {
		var msg struct {
			Usage anthropicUsage `json:"usage"`
		}
		if err := json.Unmarshal(e.Message, &msg); err != nil {
			return fmt.Errorf("message_start: %w", err)
		}
		m.usage.update(msg.Usage)
		return nil
	}
	var d struct {
		StopReason *string `json:"stop_reason"`
	}
	if err := json.Unmarshal(e.Delta, &d); err != nil {
		return fmt.Errorf("message_delta: %w", err)
	}
	if d.StopReason != nil {
		m.stop = *d.StopReason
	}
	if !isNull(e.Usage) {
		var u anthropicUsage
		if err := json.Unmarshal(e.Usage, &u); err != nil {
			return fmt.Errorf("message_delta usage: %w", err)
		}
		m.usage.update(u)
	}
	return nil
}

// reply returns rep with the message's stop reason and usage.
func (m *anthropicMessage) reply(rep reply) reply {
	rep.stop = m.stop
	rep.usage = m.usage.tape()
	return rep
}

// anthropicReply normalizes a response's content blocks and finds its tool calls.
func anthropicReply(blocks []json.RawMessage) (reply, error) {
	var rep reply
	for i, raw := range blocks {
		b, err := blockOf(raw, anthropicBlock)
		if err != nil {
			return reply{}, fmt.Errorf("content[%d]: %w", i, err)
		}
		rep.add(b)
	}
	return rep, nil
}

// anthropicBlockState is a content block being streamed: the block from
// content_block_start and the deltas that followed.
type anthropicBlockState struct {
	start map[string]json.RawMessage
	text  map[string]*strings.Builder // by field: text, thinking, signature
	input *strings.Builder            // input_json_delta
}

func (b *anthropicBlockState) appendTo(field, s string) {
	sb := b.text[field]
	if sb == nil {
		sb = &strings.Builder{}
		if prev, ok := jsonString(b.start[field]); ok {
			sb.WriteString(prev)
		}
		b.text[field] = sb
	}
	sb.WriteString(s)
}

// block returns the finished block in the shape a JSON body has.
func (b *anthropicBlockState) block() json.RawMessage {
	for f, sb := range b.text {
		b.start[f] = marshal(sb.String())
	}
	if b.input != nil {
		b.start["input"] = argsInput(b.input.String())
	}
	return marshal(b.start)
}

// anthropicEvent is a stream event, its parts left raw.
type anthropicEvent struct {
	eventType
	Index        int             `json:"index"`
	Message      json.RawMessage `json:"message"`
	ContentBlock json.RawMessage `json:"content_block"`
	Delta        json.RawMessage `json:"delta"`
	Usage        json.RawMessage `json:"usage"`
}

// anthropicDelta is a content_block_delta's delta.
type anthropicDelta struct {
	Type        string `json:"type"`
	Text        string `json:"text"`
	Thinking    string `json:"thinking"`
	Signature   string `json:"signature"`
	PartialJSON string `json:"partial_json"`
}

// anthropicFastBlock is a text, thinking or tool_use block being streamed.
type anthropicFastBlock struct {
	typ      string
	id, name string
	text     strings.Builder // text or thinking
	input    *strings.Builder
	start    json.RawMessage // a tool_use block's input from content_block_start
}

// anthropicStreamFast normalizes a stream building its blocks directly (the slow path
// encodes each block back to JSON and decodes it again), for the blocks the API streams
// (text, thinking, tool_use with only the API's fields). It gives up with errSlow on
// anything else or anything that fails to decode, and anthropicStreamSlow, which must give
// the same reply whenever this succeeds, decides.
func anthropicStreamFast(events []event) (reply, error) {
	var (
		blocks = map[int]*anthropicFastBlock{}
		msg    anthropicMessage
	)
	for e, err := range eventsOf(events, scanAnthropicEvent) {
		if err != nil {
			return reply{}, err
		}
		switch e.Type {
		case "message_start", "message_delta":
			if msg.event(e) != nil {
				return reply{}, errSlow
			}
		case "content_block_start":
			b, err := anthropicFastStart(e.ContentBlock)
			if err != nil {
				return reply{}, err
			}
			blocks[e.Index] = b
		case "content_block_delta":
			b := blocks[e.Index]
			if b == nil {
				continue
			}
			d, err := scanAnthropicDelta(e.Delta)
			if err != nil {
				return reply{}, errSlow
			}
			switch {
			case d.Type == "text_delta" && b.typ == "text":
				b.text.WriteString(d.Text)
			case d.Type == "thinking_delta" && b.typ == "thinking":
				b.text.WriteString(d.Thinking)
			case d.Type == "input_json_delta":
				if b.input == nil {
					b.input = &strings.Builder{}
				}
				b.input.WriteString(d.PartialJSON)
			}
			// Other deltas add fields the block's type does not keep.
		}
	}
	var rep reply
	for _, b := range inOrder(blocks) {
		var nb tape.Block
		switch b.typ {
		case "text":
			nb = textBlock(b.text.String())
		case "thinking":
			nb = tape.Block{Type: tape.BlockThinking, Text: b.text.String()}
		case "tool_use":
			nb = tape.Block{Type: tape.BlockToolUse, ID: b.id, Name: b.name}
			if b.input != nil {
				nb.Input = argsInput(b.input.String())
			} else {
				nb.Input = objectInput(b.start)
			}
		}
		rep.add(nb)
	}
	return msg.reply(rep), nil
}

var (
	anthropicEventFields = []string{"type", "index", "message", "content_block", "delta", "usage"}
	anthropicDeltaFields = []string{"type", "text", "thinking", "signature", "partial_json"}
)

// scanAnthropicEvent decodes an event's data as json.Unmarshal into an anthropicEvent does,
// in one pass; errSlow when it is not a plain object of plain fields.
func scanAnthropicEvent(data string) (anthropicEvent, error) {
	var e anthropicEvent
	if err := scanStruct([]byte(data), anthropicEventFields, &e.Type, &e.Index, &e.Message, &e.ContentBlock, &e.Delta, &e.Usage); err != nil {
		return anthropicEvent{}, err
	}
	return e, nil
}

// scanAnthropicDelta decodes a content_block_delta's delta as json.Unmarshal does, in one
// pass; errSlow when it is not a plain object of plain fields (or null).
func scanAnthropicDelta(raw []byte) (anthropicDelta, error) {
	var d anthropicDelta
	if err := scanStruct(raw, anthropicDeltaFields, &d.Type, &d.Text, &d.Thinking, &d.Signature, &d.PartialJSON); err != nil {
		return anthropicDelta{}, err
	}
	return d, nil
}

// anthropicFastStart reads a content_block_start's block: a text, thinking or tool_use
// block with only the fields the API sends.
func anthropicFastStart(raw json.RawMessage) (*anthropicFastBlock, error) {
	var start map[string]json.RawMessage
	if json.Unmarshal(raw, &start) != nil || start == nil {
		return nil, errSlow
	}
	str := func(key string) (string, bool) {
		v, ok := start[key]
		if !ok {
			return "", true
		}
		return jsonString(v)
	}
	typ, ok := str("type")
	if !ok {
		return nil, errSlow
	}
	b := &anthropicFastBlock{typ: typ}
	var allowed []string
	switch typ {
	case "text":
		allowed = []string{"type", "text"}
		t, ok := str("text")
		if !ok {
			return nil, errSlow
		}
		b.text.WriteString(t)
	case "thinking":
		allowed = []string{"type", "thinking", "signature"}
		t, ok := str("thinking")
		if _, sok := str("signature"); !ok || !sok {
			return nil, errSlow
		}
		b.text.WriteString(t)
	case "tool_use":
		allowed = []string{"type", "id", "name", "input"}
		if b.id, ok = str("id"); !ok {
			return nil, errSlow
		}
		if b.name, ok = str("name"); !ok {
			return nil, errSlow
		}
		if in, ok := start["input"]; ok {
			if t := trimJSON(in); len(t) == 0 || (t[0] != '{' && string(t) != "null") {
				return nil, errSlow // the slow path keeps its compact form
			}
			b.start = in
		}
	default:
		return nil, errSlow
	}
	for k := range start {
		if !slices.Contains(allowed, k) {
			return nil, errSlow
		}
	}
	return b, nil
}

// anthropicStreamSlow normalizes a stream with encoding/json, event by event and block by
// block.
func anthropicStreamSlow(events []event) (reply, error) {
	var (
		blocks = map[int]*anthropicBlockState{}
		msg    anthropicMessage
	)
	for e, err := range eventsOf[anthropicEvent](events, nil) {
		if err != nil {
			return reply{}, err
		}
		switch e.Type {
		case "message_start", "message_delta":
			if err := msg.event(e); err != nil {
				return reply{}, err
			}
		case "content_block_start":
			var start map[string]json.RawMessage
			if err := json.Unmarshal(e.ContentBlock, &start); err != nil || start == nil {
				return reply{}, fmt.Errorf("content_block_start %d: content_block is not an object", e.Index)
			}
			blocks[e.Index] = &anthropicBlockState{start: start, text: map[string]*strings.Builder{}}
		case "content_block_delta":
			b := blocks[e.Index]
			if b == nil {
				continue // a delta for a block that never started: nothing to add it to
			}
			var d anthropicDelta
			if err := json.Unmarshal(e.Delta, &d); err != nil {
				return reply{}, fmt.Errorf("content_block_delta %d: %w", e.Index, err)
			}
			switch d.Type {
			case "text_delta":
				b.appendTo("text", d.Text)
			case "thinking_delta":
				b.appendTo("thinking", d.Thinking)
			case "signature_delta":
				b.appendTo("signature", d.Signature)
			case "input_json_delta":
				if b.input == nil {
					b.input = &strings.Builder{}
				}
				b.input.WriteString(d.PartialJSON)
			}
		}
		// content_block_stop, message_stop, ping, error and unknown events add nothing.
	}
	states := inOrder(blocks)
	raws := make([]json.RawMessage, len(states))
	for i, b := range states {
		raws[i] = b.block()
	}
	rep, err := anthropicReply(raws)
	if err != nil {
		return reply{}, err
	}
	return msg.reply(rep), nil
}
