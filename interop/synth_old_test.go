package interop

import (
	"fmt"

	"github.com/tapebox/tapebox/tape"
	"github.com/tapebox/tapebox/tape/provider"
)

// synthAnswerOld is synthAnswer before tape/provider.StepAnswer, kept as the reference
// TestSynthAnswerAgrees compares with: synthAnswer was a step's normalized answer as the provider would have streamed it, with
// ids drawn from the tape, thread and step, so that synthesizing twice writes the same bytes.
func synthAnswerOld(tp *tape.Tape, th *tape.Thread, i int, s *tape.Step) (provider.Answer, error) {
	seed := func(kind string, j int) string {
		return hexFrom(24, tp.Meta.TapeID, th.ID, fmt.Sprint(i), kind, fmt.Sprint(j))
	}
	a := provider.Answer{Model: tape.StepModel(&tp.Meta, s), Usage: s.Response.Usage, StopReason: s.Response.StopReason}
	if tp.Meta.Provider == tape.ProviderAnthropic {
		a.ID = "msg_" + hexFrom(24, tp.Meta.TapeID, th.ID, fmt.Sprint(i))
	} else {
		a.ID = "resp_" + seed("resp", 0)
	}
	calls := callsByID(s)
	for j, b := range s.Response.Content {
		switch b.Type {
		case tape.BlockText:
			a.Items = append(a.Items, provider.Item{Text: b.Text, ID: "msg_" + seed("msg", j)})
		case tape.BlockThinking:
			a.Items = append(a.Items, provider.Item{Text: b.Text, Thinking: true, ID: "rs_" + seed("rs", j)})
		case tape.BlockToolUse:
			c, ok := calls[b.ID]
			if !ok {
				c = tape.ToolCall{ID: b.ID, Name: b.Name, Input: b.Input}
			}
			c.ID, c.Name, c.Input = b.ID, b.Name, input(b.Input)
			id := "fc_" + seed("fc", j)
			if c.Kind == "custom" {
				id = "ctc_" + seed("ctc", j)
			}
			a.Items = append(a.Items, provider.Item{Call: &c, ID: id})
		default:
			if len(b.Raw) == 0 || tp.Meta.Provider != tape.ProviderOpenAIResponses {
				return a, fmt.Errorf("content block %d of type %q cannot be synthesized", j, b.Type)
			}
			a.Items = append(a.Items, provider.Item{Raw: b.Raw})
		}
	}
	return a, nil
}
