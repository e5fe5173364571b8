package provider

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/tapebox/tapebox/tape"
)

// responses is the OpenAI Responses API (POST /v1/responses). Requests have a fast path
// backed by a slow path with encoding/json; stream events are scanned one by one (see
// scanResponsesEvent).
var responses = format{
	request: fastOr(responsesRequestFast, responsesRequestSlow),
	body:    responsesBody,
	stream:  responsesStream,
}

// responsesRequestSlow decodes a request with encoding/json; responsesRequestFast must
// give the same result whenever it succeeds.
func responsesRequestSlow(raw []byte) (request, error) {
	m, r, err := requestObject(raw, "input", "instructions", "tools")
	if err != nil {
		return request{}, err
	}
	// instructions is a string; a stored prompt can make it a list, which stays in raw.
	r.system, _ = jsonString(m["instructions"])
	if input, ok := m["input"]; ok && !isNull(input) {
		if s, ok := jsonString(input); ok {
			r.messages = []tape.Message{{Role: "user", Content: []tape.Block{textBlock(s)}}}
		} else if r.messages, err = requestMessages(m, "input", func(it json.RawMessage) (tape.Message, error) {
			msg, _, err := responsesItem(it)
			return msg, err
		}); err != nil {
			return request{}, err
		}
	}
	if r.tools, err = requestTools(m, func(t namedTool) tape.Tool {
		// built-in tools (web_search, local_shell) have no name
		tool := tape.Tool{Name: cmp.Or(t.Name, t.Type), Description: t.Description, Kind: t.Type}
		if t.Type == "function" {
			tool.InputSchema = t.Parameters
		}
		return tool
	}); err != nil {
		return request{}, err
	}
	return r, nil
}

// responsesItem normalizes one input or output item into a message (see the package doc
// for the roles) and, for a call the client must run, the tool call.
func responsesItem(raw json.RawMessage) (tape.Message, *tape.ToolCall, error) {
	var it struct {
		Type      string          `json:"type"`
		Role      string          `json:"role"`
		Content   json.RawMessage `json:"content"`
		ID        string          `json:"id"`
		CallID    string          `json:"call_id"`
		Name      string          `json:"name"`
		Namespace string          `json:"namespace"`
		Arguments string          `json:"arguments"`
		Input     string          `json:"input"`
		Action    json.RawMessage `json:"action"`
		Output    json.RawMessage `json:"output"`
		Summary   []struct {
			Text string `json:"text"`
		} `json:"summary"`
	}
	typ, err := typeOf(raw)
	if err != nil {
		return tape.Message{}, nil, err
	}
	assistant := func(b tape.Block, kind string) (tape.Message, *tape.ToolCall, error) {
		msg := tape.Message{Role: "assistant", Content: []tape.Block{b}}
		if kind == "" {
			return msg, nil, nil
		}
		c := toolCall(b, kind)
		return msg, &c, nil
	}
	switch {
	case typ == "" || typ == "message":
		if err := json.Unmarshal(raw, &it); err != nil {
			return tape.Message{}, nil, err
		}
		content, err := contentOf(it.Content, responsesPart)
		return tape.Message{Role: role(it.Role), Content: content}, nil, err
	case typ == "function_call":
		if err := json.Unmarshal(raw, &it); err != nil {
			return tape.Message{}, nil, err
		}
		msg, c, err := assistant(tape.Block{Type: tape.BlockToolUse, ID: it.CallID, Name: it.Name, Input: argsInput(it.Arguments)}, "function")
		c.Namespace = it.Namespace
		return msg, c, err
	case typ == "custom_tool_call":
		if err := json.Unmarshal(raw, &it); err != nil {
			return tape.Message{}, nil, err
		}
		return assistant(tape.Block{Type: tape.BlockToolUse, ID: it.CallID, Name: it.Name, Input: customInput(it.Input)}, "custom")
	case typ == "local_shell_call":
		if err := json.Unmarshal(raw, &it); err != nil {
			return tape.Message{}, nil, err
		}
		id := it.CallID
		if id == "" {
			id = it.ID
		}
		return assistant(tape.Block{Type: tape.BlockToolUse, ID: id, Name: "local_shell", Input: objectInput(it.Action)}, "function")
	case typ == "reasoning":
		if err := json.Unmarshal(raw, &it); err != nil {
			return tape.Message{}, nil, err
		}
		texts := make([]string, 0, len(it.Summary))
		for _, s := range it.Summary {
			texts = append(texts, s.Text)
		}
		if len(texts) == 0 {
			// Raw reasoning text, from servers that show it.
			var rc struct {
				Content []struct {
					Text string `json:"text"`
				} `json:"content"`
			}
			if json.Unmarshal(raw, &rc) == nil {
				for _, c := range rc.Content {
					texts = append(texts, c.Text)
				}
			}
		}
		return assistant(tape.Block{Type: tape.BlockThinking, Text: strings.Join(texts, "\n")}, "")
	case strings.HasSuffix(typ, "_output"):
		if err := json.Unmarshal(raw, &it); err != nil {
			return tape.Message{}, nil, err
		}
		id := it.CallID
		if id == "" {
			id = it.ID // local_shell_call_output names its call by id
		}
		content, err := responsesOutput(it.Output)
		b := tape.Block{Type: tape.BlockToolResult, ToolCallID: id, Content: content}
		return tape.Message{Role: "tool", Content: []tape.Block{b}}, nil, err
	}
	return assistant(rawBlock(tape.BlockOther, raw), "")
}

// responsesPart normalizes a part of a message item's content (which is a string or a
// list of these).
func responsesPart(typ string, raw json.RawMessage) (tape.Block, error) {
	switch typ {
	case "input_text", "output_text", "text":
		return textPart(raw)
	case "input_image":
		return rawBlock(tape.BlockImage, raw), nil
	}
	return rawBlock(tape.BlockOther, raw), nil
}

// responsesOutput normalizes a call output: a string, a list of parts, or an object
// (a computer screenshot).
func responsesOutput(raw json.RawMessage) ([]tape.Block, error) {
	if len(raw) > 0 && raw[0] == '{' {
		return []tape.Block{rawBlock(tape.BlockOther, raw)}, nil
	}
	return contentOf(raw, responsesPart)
}

type responsesObject struct {
	Status string            `json:"status"`
	Output []json.RawMessage `json:"output"`
	Usage  *struct {
		InputTokens        int64 `json:"input_tokens"`
		OutputTokens       int64 `json:"output_tokens"`
		InputTokensDetails struct {
			CachedTokens int64 `json:"cached_tokens"`
		} `json:"input_tokens_details"`
		OutputTokensDetails struct {
			ReasoningTokens int64 `json:"reasoning_tokens"`
		} `json:"output_tokens_details"`
	} `json:"usage"`
	IncompleteDetails *struct {
		Reason string `json:"reason"`
	} `json:"incomplete_details"`
}

// reply normalizes the output items; the status and usage are the response's.
func (r *responsesObject) reply(output []json.RawMessage) (reply, error) {
	var rep reply
	for i, raw := range output {
		msg, call, err := responsesItem(raw)
		if err != nil {
			return reply{}, fmt.Errorf("output[%d]: %w", i, err)
		}
		rep.content = append(rep.content, msg.Content...)
		if call != nil {
			rep.calls = append(rep.calls, *call)
		}
	}
	if r == nil {
		return rep, nil
	}
	rep.stop = r.Status
	if r.Status == "incomplete" && r.IncompleteDetails != nil && r.IncompleteDetails.Reason != "" {
		rep.stop = r.IncompleteDetails.Reason
	}
	if u := r.Usage; u != nil {
		rep.usage = openAIUsage(u.InputTokens, u.InputTokensDetails.CachedTokens, u.OutputTokens, u.OutputTokensDetails.ReasoningTokens)
	}
	return rep, nil
}

func responsesBody(raw []byte) (reply, error) {
	var r responsesObject
	if err := json.Unmarshal(raw, &r); err != nil {
		return reply{}, err
	}
	return r.reply(r.Output)
}

// responsesItemState is an output item being streamed: the item from
// response.output_item.added, the deltas that followed, and the finished item from
// response.output_item.done once it arrives.
type responsesItemState struct {
	added     map[string]json.RawMessage
	done      json.RawMessage
	parts     map[int]json.RawMessage // content_part.added, by content index
	text      map[int]*strings.Builder
	summary   map[int]*strings.Builder
	reasoning map[int]*strings.Builder
	input     *strings.Builder // function call arguments or custom tool call input
}

func appendAt(m map[int]*strings.Builder, i int, s string) {
	sb := m[i]
	if sb == nil {
		sb = &strings.Builder{}
		m[i] = sb
	}
	sb.WriteString(s)
}

// item returns the finished item: as output_item.done gave it, or rebuilt from what
// arrived when the stream was cut before it.
func (st *responsesItemState) item() json.RawMessage {
	if st.done != nil {
		return st.done
	}
	m := maps.Clone(st.added)
	typ, _ := jsonString(m["type"])
	texts := func(field, partType string, acc map[int]*strings.Builder, parts map[int]json.RawMessage) {
		idx := slices.Sorted(maps.Keys(acc))
		for i := range parts {
			if acc[i] == nil {
				idx = append(idx, i)
			}
		}
		slices.Sort(idx)
		var list []json.RawMessage
		for _, i := range idx {
			p := map[string]json.RawMessage{"type": marshal(partType)}
			if raw, ok := parts[i]; ok {
				_ = json.Unmarshal(raw, &p)
			}
			if sb := acc[i]; sb != nil {
				p["text"] = marshal(sb.String())
			}
			list = append(list, marshal(p))
		}
		if len(list) > 0 {
			m[field] = marshal(list)
		}
	}
	switch typ {
	case "message":
		texts("content", "output_text", st.text, st.parts)
	case "reasoning":
		texts("summary", "summary_text", st.summary, nil)
		texts("content", "reasoning_text", st.reasoning, nil)
	case "function_call":
		if st.input != nil {
			m["arguments"] = marshal(st.input.String())
		}
	case "custom_tool_call":
		if st.input != nil {
			m["input"] = marshal(st.input.String())
		}
	}
	return marshal(m)
}

// responsesEvent is a stream event, its parts left raw.
type responsesEvent struct {
	eventType
	OutputIndex  int             `json:"output_index"`
	ContentIndex int             `json:"content_index"`
	SummaryIndex int             `json:"summary_index"`
	Item         json.RawMessage `json:"item"`
	Part         json.RawMessage `json:"part"`
	Delta        json.RawMessage `json:"delta"`
	Response     json.RawMessage `json:"response"`
}

var responsesEventFields = []string{"type", "output_index", "content_index", "summary_index", "item", "part", "delta", "response"}

// scanResponsesEvent decodes an event's data as json.Unmarshal into a responsesEvent does,
// in one pass; errSlow when it is not a plain object of plain fields, and the event is then
// decoded with encoding/json.
func scanResponsesEvent(data string) (responsesEvent, error) {
	var e responsesEvent
	if err := scanStruct([]byte(data), responsesEventFields, &e.Type, &e.OutputIndex, &e.ContentIndex, &e.SummaryIndex, &e.Item, &e.Part, &e.Delta, &e.Response); err != nil {
		return responsesEvent{}, err
	}
	return e, nil
}

func responsesStream(events []event) (reply, error) {
	items := map[int]*responsesItemState{}
	var final *responsesObject
	for e, err := range eventsOf(events, scanResponsesEvent) {
		if err != nil {
			return reply{}, err
		}
		st := items[e.OutputIndex]
		delta, _ := jsonString(e.Delta)
		switch e.Type {
		case "response.output_item.added":
			var added map[string]json.RawMessage
			if err := json.Unmarshal(e.Item, &added); err != nil || added == nil {
				return reply{}, fmt.Errorf("%s %d: item is not an object", e.Type, e.OutputIndex)
			}
			items[e.OutputIndex] = &responsesItemState{
				added:     added,
				parts:     map[int]json.RawMessage{},
				text:      map[int]*strings.Builder{},
				summary:   map[int]*strings.Builder{},
				reasoning: map[int]*strings.Builder{},
			}
		case "response.output_item.done":
			if st != nil && !isNull(e.Item) {
				st.done = e.Item
			}
		case "response.content_part.added":
			if st != nil {
				st.parts[e.ContentIndex] = e.Part
			}
		case "response.output_text.delta":
			if st != nil {
				appendAt(st.text, e.ContentIndex, delta)
			}
		case "response.reasoning_summary_text.delta":
			if st != nil {
				appendAt(st.summary, e.SummaryIndex, delta)
			}
		case "response.reasoning_text.delta":
			if st != nil {
				appendAt(st.reasoning, e.ContentIndex, delta)
			}
		case "response.function_call_arguments.delta", "response.custom_tool_call_input.delta":
			if st != nil {
				if st.input == nil {
					st.input = &strings.Builder{}
				}
				st.input.WriteString(delta)
			}
		case "response.completed", "response.incomplete", "response.failed", "response.cancelled":
			final = &responsesObject{}
			if err := json.Unmarshal(e.Response, final); err != nil {
				return reply{}, fmt.Errorf("%s: %w", e.Type, err)
			}
		}
		// response.created, response.in_progress, *.done events whose content the
		// output_item.done event repeats, error and unknown events add nothing.
	}
	if final != nil && len(final.Output) > 0 {
		return final.reply(final.Output)
	}
	output := make([]json.RawMessage, 0, len(items))
	for _, st := range inOrder(items) {
		output = append(output, st.item())
	}
	return final.reply(output)
}
