package interop

import (
	"fmt"

	"github.com/tapebox/tapebox/internal/jsonlex"
	"github.com/tapebox/tapebox/tape"
)

// Synthesize gives every step of an imported tape a raw response: a server-sent event
// stream made from its normalized content, in its provider's wire format (Anthropic
// Messages events, or OpenAI Responses events), which is what both harnesses ask for. A
// simulator can then serve the tape to the real harness. The tape records it in
// meta.labels (LabelForm = FormSynthesized); timing stays zero, so a replay is unpaced.
func Synthesize(tp *tape.Tape) error {
	if tp.Meta.Labels[LabelForm] != FormNormalized {
		return fmt.Errorf("synthesize: tape %s is not an imported tape with normalized steps only (meta.labels %s=%q)", tp.Meta.TapeID, LabelForm, tp.Meta.Labels[LabelForm])
	}
	for _, th := range tp.Threads {
		for i, s := range th.Steps {
			var events [][2]any
			var err error
			switch tp.Meta.Provider {
			case tape.ProviderAnthropic:
				events, err = anthropicEvents(tp, th, i, s)
			case tape.ProviderOpenAIResponses:
				events, err = responsesEvents(tp, th, i, s)
			default:
				what := fmt.Sprintf("provider %q", tp.Meta.Provider)
				if api := tp.Meta.Labels[LabelHarnessAPI]; api != "" {
					what = fmt.Sprintf("no known provider (%s: %s)", LabelHarnessAPI, api)
				}
				return fmt.Errorf("synthesize: tape %s: %s is not supported: it writes Anthropic Messages and OpenAI Responses streams", tp.Meta.TapeID, what)
			}
			if err != nil {
				return fmt.Errorf("synthesize: tape %s thread %s step %d: %w", tp.Meta.TapeID, th.ID, i, err)
			}
			s.Response.Chunks = make([]tape.Chunk, 0, len(events))
			for _, e := range events {
				data, err := jsonlex.Marshal(e[1])
				if err != nil {
					return err
				}
				s.Response.Chunks = append(s.Response.Chunks, tape.Chunk{Data: "event: " + e[0].(string) + "\ndata: " + string(data) + "\n\n"})
			}
			s.Response.Headers = tape.Headers{"content-type": "text/event-stream"}
			s.Request.Stream = true
		}
	}
	tp.Meta.Labels[LabelForm] = FormSynthesized
	return nil
}

func anthropicEvents(tp *tape.Tape, th *tape.Thread, i int, s *tape.Step) ([][2]any, error) {
	u := s.Response.Usage
	id := "msg_" + hexFrom(24, tp.Meta.TapeID, th.ID, fmt.Sprint(i))
	ev := [][2]any{{"message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": id, "type": "message", "role": "assistant", "model": tape.StepModel(&tp.Meta, s), "content": []any{}, "stop_reason": nil, "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": u.InputTokens, "cache_creation_input_tokens": u.CacheCreationInputTokens, "cache_read_input_tokens": u.CacheReadInputTokens, "output_tokens": 1}}}}}
	for j, b := range s.Response.Content {
		var start, delta map[string]any
		switch b.Type {
		case tape.BlockText:
			start = map[string]any{"type": "text", "text": ""}
			delta = map[string]any{"type": "text_delta", "text": b.Text}
		case tape.BlockThinking:
			start = map[string]any{"type": "thinking", "thinking": "", "signature": ""}
			delta = map[string]any{"type": "thinking_delta", "thinking": b.Text}
		case tape.BlockToolUse:
			start = map[string]any{"type": "tool_use", "id": b.ID, "name": b.Name, "input": map[string]any{}}
			delta = map[string]any{"type": "input_json_delta", "partial_json": string(input(b.Input))}
		default:
			return nil, fmt.Errorf("content block %d of type %q cannot be synthesized", j, b.Type)
		}
		ev = append(ev, [2]any{"content_block_start", map[string]any{"type": "content_block_start", "index": j, "content_block": start}},
			[2]any{"content_block_delta", map[string]any{"type": "content_block_delta", "index": j, "delta": delta}},
			[2]any{"content_block_stop", map[string]any{"type": "content_block_stop", "index": j}})
	}
	ev = append(ev, [2]any{"message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": s.Response.StopReason, "stop_sequence": nil},
		"usage": map[string]any{"output_tokens": u.OutputTokens}}},
		[2]any{"message_stop", map[string]any{"type": "message_stop"}})
	return ev, nil
}

func responsesEvents(tp *tape.Tape, th *tape.Thread, i int, s *tape.Step) ([][2]any, error) {
	u := s.Response.Usage
	seed := func(kind string, j int) string {
		return hexFrom(24, tp.Meta.TapeID, th.ID, fmt.Sprint(i), kind, fmt.Sprint(j))
	}
	calls := callsByID(s)
	var items []any
	for j, b := range s.Response.Content {
		switch b.Type {
		case tape.BlockText:
			items = append(items, map[string]any{"type": "message", "id": "msg_" + seed("msg", j), "role": "assistant", "status": "completed",
				"content": []any{map[string]any{"type": "output_text", "text": b.Text, "annotations": []any{}}}})
		case tape.BlockThinking:
			items = append(items, map[string]any{"type": "reasoning", "id": "rs_" + seed("rs", j), "summary": []any{map[string]any{"type": "summary_text", "text": b.Text}}})
		case tape.BlockToolUse:
			it := cxCallItem(b, calls[b.ID])
			if it["type"] == "custom_tool_call" {
				it["id"] = "ctc_" + seed("ctc", j)
			} else {
				it["id"] = "fc_" + seed("fc", j)
			}
			items = append(items, it)
		default:
			if len(b.Raw) == 0 {
				return nil, fmt.Errorf("content block %d of type %q cannot be synthesized", j, b.Type)
			}
			items = append(items, b.Raw)
		}
	}
	id := "resp_" + seed("resp", 0)
	model := tape.StepModel(&tp.Meta, s)
	ev := [][2]any{{"response.created", map[string]any{"type": "response.created", "response": map[string]any{"id": id, "object": "response", "status": "in_progress", "model": model, "output": []any{}}}}}
	for j, it := range items {
		ev = append(ev, [2]any{"response.output_item.added", map[string]any{"type": "response.output_item.added", "output_index": j, "item": it}},
			[2]any{"response.output_item.done", map[string]any{"type": "response.output_item.done", "output_index": j, "item": it}})
	}
	if items == nil {
		items = []any{}
	}
	ev = append(ev, [2]any{"response.completed", map[string]any{"type": "response.completed", "response": map[string]any{
		"id": id, "object": "response", "status": "completed", "model": model, "output": items,
		"usage": map[string]any{"input_tokens": u.InputTokens + u.CacheReadInputTokens, "input_tokens_details": map[string]any{"cached_tokens": u.CacheReadInputTokens},
			"output_tokens": u.OutputTokens, "output_tokens_details": map[string]any{"reasoning_tokens": u.ReasoningTokens},
			"total_tokens": u.InputTokens + u.CacheReadInputTokens + u.OutputTokens}}}})
	return ev, nil
}
