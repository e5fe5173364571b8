package interop

import (
	"fmt"

	"github.com/tapebox/tapebox/tape"
	"github.com/tapebox/tapebox/tape/provider"
)

// Synthesize gives every step of an imported tape a raw response: a server-sent event
// stream made from its normalized content, in its provider's wire format (Anthropic
// Messages events, OpenAI Responses events, or the Gemini API's streamGenerateContent
// chunks), which is what the harnesses ask for. A
// simulator can then serve the tape to the real harness. The tape records it in
// meta.labels (LabelForm = FormSynthesized); timing stays zero, so a replay is unpaced.
func Synthesize(tp *tape.Tape) error {
	if tp.Meta.Labels[LabelForm] != FormNormalized {
		return fmt.Errorf("synthesize: tape %s is not an imported tape with normalized steps only (meta.labels %s=%q)", tp.Meta.TapeID, LabelForm, tp.Meta.Labels[LabelForm])
	}
	switch tp.Meta.Provider {
	case tape.ProviderAnthropic, tape.ProviderOpenAIResponses, tape.ProviderGemini:
	default:
		what := fmt.Sprintf("provider %q", tp.Meta.Provider)
		if api := tp.Meta.Labels[LabelHarnessAPI]; api != "" {
			what = fmt.Sprintf("no known provider (%s: %s)", LabelHarnessAPI, api)
		}
		return fmt.Errorf("synthesize: tape %s: %s is not supported: it writes Anthropic Messages, OpenAI Responses and Gemini API streams", tp.Meta.TapeID, what)
	}
	for _, th := range tp.Threads {
		for i, s := range th.Steps {
			a, err := synthAnswer(tp, th, i, s)
			if err == nil {
				var events []provider.Event
				if events, err = provider.Stream(tp.Meta.Provider, a, provider.StreamOptions{}); err == nil {
					s.Response.Chunks = make([]tape.Chunk, 0, len(events))
					for _, e := range events {
						s.Response.Chunks = append(s.Response.Chunks, tape.Chunk{Data: e.SSE()})
					}
				}
			}
			if err != nil {
				return fmt.Errorf("synthesize: tape %s thread %s step %d: %w", tp.Meta.TapeID, th.ID, i, err)
			}
			s.Response.Headers = tape.Headers{"content-type": "text/event-stream"}
			s.Request.Stream = true
		}
	}
	tp.Meta.Labels[LabelForm] = FormSynthesized
	return nil
}

// synthAnswer is a step's normalized answer as the provider would have streamed it
// (provider.StepAnswer), with ids drawn from the tape, thread and step, so that
// synthesizing twice writes the same bytes.
func synthAnswer(tp *tape.Tape, th *tape.Thread, i int, s *tape.Step) (provider.Answer, error) {
	a, err := provider.StepAnswer(tp.Meta.Provider, s, func(kind string, j int) string {
		return kind + "_" + hexFrom(24, tp.Meta.TapeID, th.ID, fmt.Sprint(i), kind, fmt.Sprint(j))
	})
	a.Model = tape.StepModel(&tp.Meta, s)
	if tp.Meta.Provider == tape.ProviderAnthropic {
		a.ID = "msg_" + hexFrom(24, tp.Meta.TapeID, th.ID, fmt.Sprint(i))
	} else {
		a.ID = "resp_" + hexFrom(24, tp.Meta.TapeID, th.ID, fmt.Sprint(i), "resp", "0")
	}
	return a, err
}
