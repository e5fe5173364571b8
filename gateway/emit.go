package gateway

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/tapebox/tapebox/tape"
	"github.com/tapebox/tapebox/tape/provider"
)

// idPrefix starts the id of an answer in each wire format.
var idPrefix = map[tape.Provider]string{tape.ProviderAnthropic: "msg_", tape.ProviderOpenAIChat: "chatcmpl-", tape.ProviderOpenAIResponses: "resp_"}

// emitted is the raw response of a recorded step that has only its normalized fields (a
// tape imported from a harness's session file and not synthesized, say): its content, tool
// calls and usage written in p's wire format by tape/provider's emitters (StepAnswer, then
// Body or Stream), as a stream when the request asks for one (stream), else as a JSON
// body. The tool call ids are the recorded ones, so that the tool results the harness
// sends next match the recording; the other ids are drawn from id, which names the step.
func emitted(p tape.Provider, model, id string, s *tape.Step, stream bool) (tape.Response, error) {
	if s.Response.Status >= 400 {
		return tape.Response{}, fmt.Errorf("the step's answer is an error (status %d) without its body", s.Response.Status)
	}
	a, err := provider.StepAnswer(p, s, func(kind string, j int) string {
		if kind == "ctc" {
			kind = "fc" // the endpoint has named every call item fc_, a custom tool's too
		}
		return fmt.Sprintf("%s_%s_%d", kind, id, j)
	})
	if err != nil {
		return tape.Response{}, err
	}
	a.ID, a.Model = idPrefix[p]+id, model
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
