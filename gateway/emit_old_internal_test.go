package gateway

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/tapebox/tapebox/tape"
	"github.com/tapebox/tapebox/tape/provider"
)

// emittedOld is the endpoint's own step-to-answer code before tape/provider.StepAnswer, kept as
// the reference TestEmittedAgrees compares with. emitted was the raw response of a recorded step that has only its normalized fields (a
// tape imported from a harness's session file and not synthesized, say): its content, tool
// calls and usage written in p's wire format by tape/provider's emitters, as a stream when
// the request asks for one (stream), else as a JSON body. The tool call ids are the
// recorded ones, so that the tool results the harness sends next match the recording; the
// other ids are drawn from id, which names the step.
func emittedOld(p tape.Provider, model, id string, s *tape.Step, stream bool) (tape.Response, error) {
	if s.Response.Status >= 400 {
		return tape.Response{}, fmt.Errorf("the step's answer is an error (status %d) without its body", s.Response.Status)
	}
	a := provider.Answer{ID: idPrefix[p] + id, Model: model, Usage: s.Response.Usage}
	if p == tape.ProviderAnthropic {
		a.StopReason = s.Response.StopReason // the OpenAI formats derive theirs
	}
	calls := map[string]tape.ToolCall{}
	for _, c := range s.ToolCalls {
		calls[c.ID] = c
	}
	for j, b := range s.Response.Content {
		item := fmt.Sprintf("%s_%d", id, j)
		switch b.Type {
		case tape.BlockText:
			a.Items = append(a.Items, provider.Item{Text: b.Text, ID: "msg_" + item})
		case tape.BlockThinking:
			a.Items = append(a.Items, provider.Item{Text: b.Text, Thinking: true, ID: "rs_" + item})
		case tape.BlockToolUse:
			c, ok := calls[b.ID]
			if !ok {
				c = tape.ToolCall{ID: b.ID, Name: b.Name, Input: b.Input}
			}
			a.Items = append(a.Items, provider.Item{Call: &c, ID: "fc_" + item})
		default:
			if len(b.Raw) == 0 || p != tape.ProviderOpenAIResponses {
				return tape.Response{}, fmt.Errorf("content block %d of type %q has no wire form", j, b.Type)
			}
			a.Items = append(a.Items, provider.Item{Raw: b.Raw})
		}
	}
	if len(a.Items) == 0 {
		return tape.Response{}, errors.New("the step has neither a raw response nor content")
	}
	out := tape.Response{Status: http.StatusOK, Headers: tape.Headers{}}
	if !stream {
		body, err := provider.Body(p, a)
		if err != nil {
			return tape.Response{}, err
		}
		out.Headers["content-type"] = "application/json"
		out.Raw = json.RawMessage(body)
		return out, nil
	}
	events, err := provider.Stream(p, a, provider.StreamOptions{})
	if err != nil {
		return tape.Response{}, err
	}
	out.Headers["content-type"] = "text/event-stream"
	for _, e := range events {
		out.Chunks = append(out.Chunks, tape.Chunk{Data: e.SSE()})
	}
	return out, nil
}
