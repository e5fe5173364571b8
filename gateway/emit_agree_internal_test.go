package gateway

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/tape"
)

// randomNormalizedStep is a step with normalized fields only, as an import makes one: text,
// thinking, tool_use (with or without the step's tool call, function or custom, namespaced
// or not, input empty, {} or an object spaced or not) and raw blocks, in any order.
func randomNormalizedStep(rnd *rand.Rand) *tape.Step {
	s := &tape.Step{}
	s.Response.Usage = tape.Usage{InputTokens: rnd.Int64N(1000), OutputTokens: rnd.Int64N(1000), CacheReadInputTokens: rnd.Int64N(100)}
	s.Response.StopReason = []string{"", "end_turn", "tool_use", "max_tokens"}[rnd.IntN(4)]
	texts := []string{"", "hi", "Hello, wörld 🌍", "a\nb \"q\" <x>", "\u2028"}
	for j := range rnd.IntN(6) {
		switch rnd.IntN(5) {
		case 0:
			s.Response.Content = append(s.Response.Content, tape.Block{Type: tape.BlockText, Text: texts[rnd.IntN(len(texts))]})
		case 1:
			s.Response.Content = append(s.Response.Content, tape.Block{Type: tape.BlockThinking, Text: texts[rnd.IntN(len(texts))]})
		case 2, 3:
			in := []string{"", `{}`, `{"command":"ls -la","n":1.5}`, `{ "a" : [1, 2] }`}[rnd.IntN(4)] // a null input: TestStepAnswerNullInput
			b := tape.Block{Type: tape.BlockToolUse, ID: fmt.Sprintf("call_%d", j), Name: []string{"Bash", "apply_patch", "spawn_agent"}[rnd.IntN(3)]}
			if in != "" {
				b.Input = json.RawMessage(in)
			}
			if rnd.IntN(4) > 0 {
				c := tape.ToolCall{ID: b.ID, Name: b.Name, Input: b.Input}
				if rnd.IntN(3) == 0 {
					c.Kind = "custom"
					c.Input = json.RawMessage(`{"input":"*** Begin Patch\n*** End Patch\n"}`)
					b.Input = c.Input
				}
				if rnd.IntN(3) == 0 {
					c.Namespace = "multi_agent_v1"
				}
				s.ToolCalls = append(s.ToolCalls, c)
			}
			s.Response.Content = append(s.Response.Content, b)
		case 4:
			b := tape.Block{Type: "other"}
			if rnd.IntN(3) > 0 {
				b.Raw = json.RawMessage(`{"type":"web_search_call","id":"ws_1","status":"completed"}`)
			}
			s.Response.Content = append(s.Response.Content, b)
		}
	}
	if rnd.IntN(10) == 0 {
		s.Response.Status = 500
	}
	return s
}

// TestEmittedAgrees: emitted, which builds its answer with tape/provider.StepAnswer, writes
// the same bytes (or fails alike) as the endpoint's own code before it (emittedOld), in
// every wire format, streamed and not, for 4,000 random steps with normalized fields only.
func TestEmittedAgrees(t *testing.T) {
	rnd := rand.New(rand.NewPCG(31, 7))
	for i := range 4000 {
		s := randomNormalizedStep(rnd)
		for _, p := range []tape.Provider{tape.ProviderAnthropic, tape.ProviderOpenAIChat, tape.ProviderOpenAIResponses, tape.ProviderGemini} {
			for _, stream := range []bool{false, true} {
				want, werr := emittedOld(p, "m", "tapebox_main_3", s, stream)
				got, gerr := emitted(p, "m", "tapebox_main_3", s, stream)
				require.Equal(t, werr == nil, gerr == nil, "step %d %s stream=%v: errors %v / %v", i, p, stream, werr, gerr)
				require.Equal(t, want, got, "step %d %s stream=%v", i, p, stream)
			}
		}
	}
}
