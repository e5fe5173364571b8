package provider_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/tape"
	"github.com/tapebox/tapebox/tape/provider"
)

// stepItemID names a StepAnswer item by its kind and block.
func stepItemID(kind string, j int) string { return fmt.Sprintf("%s_%d", kind, j) }

// TestStepAnswer: a step's normalized fields become an answer that each wire format writes
// and reads back as the same content: texts, thinking (where the format has it) and tool
// calls with their ids, names, kinds and inputs; an empty or null input is {}; item ids
// name the block's kind; stop_reason goes to Anthropic only; a raw block to Responses only.
func TestStepAnswer(t *testing.T) {
	s := &tape.Step{}
	s.Response.StopReason = "max_tokens"
	s.Response.Usage = tape.Usage{InputTokens: 12, OutputTokens: 34}
	s.Response.Content = []tape.Block{
		{Type: tape.BlockThinking, Text: "hm"},
		{Type: tape.BlockText, Text: "Hello, wörld 🌍"},
		{Type: tape.BlockToolUse, ID: "call_a", Name: "Bash", Input: json.RawMessage(`{ "command" : "ls" }`)},
		{Type: tape.BlockToolUse, ID: "call_b", Name: "Read", Input: json.RawMessage(`null`)},
		{Type: tape.BlockToolUse, ID: "call_c", Name: "apply_patch", Input: json.RawMessage(`{"input":"*** Begin Patch\n"}`)},
	}
	s.ToolCalls = []tape.ToolCall{{ID: "call_c", Name: "apply_patch", Kind: "custom", Input: json.RawMessage(`{"input":"*** Begin Patch\n"}`)}}
	for _, p := range []tape.Provider{tape.ProviderAnthropic, tape.ProviderOpenAIChat, tape.ProviderOpenAIResponses, tape.ProviderGemini} {
		t.Run(string(p), func(t *testing.T) {
			a, err := provider.StepAnswer(p, s, stepItemID)
			require.NoError(t, err)
			var ids []string
			for _, it := range a.Items {
				ids = append(ids, it.ID)
			}
			require.Equal(t, []string{"rs_0", "msg_1", "fc_2", "fc_3", "ctc_4"}, ids)
			require.Equal(t, `{}`, string(a.Items[3].Call.Input), "a null input")
			require.Equal(t, "custom", a.Items[4].Call.Kind)
			if p == tape.ProviderAnthropic {
				require.Equal(t, "max_tokens", a.StopReason)
			} else {
				require.Empty(t, a.StopReason)
			}
			a.ID, a.Model = "x_1", "m"
			if p == tape.ProviderGemini {
				// The Gemini API has no custom tools and no call ids: the calls' names and
				// inputs come back.
				a.Items = a.Items[:4]
			}
			body, err := provider.Body(p, a)
			require.NoError(t, err)
			events, err := provider.Stream(p, a, provider.StreamOptions{Piece: 3})
			require.NoError(t, err)
			var chunks []tape.Chunk
			for _, e := range events {
				chunks = append(chunks, tape.Chunk{Data: e.SSE()})
			}
			for _, r := range []tape.Response{{Status: 200, Raw: body}, {Status: 200, Chunks: chunks}} {
				back := &tape.Step{Response: r}
				var err error
				back.ToolCalls, err = provider.NormalizeResponse(p, &back.Response)
				require.NoError(t, err)
				var text, thinking []string
				for _, b := range back.Response.Content {
					switch b.Type {
					case tape.BlockText:
						text = append(text, b.Text)
					case tape.BlockThinking:
						thinking = append(thinking, b.Text)
					}
				}
				require.Equal(t, "Hello, wörld 🌍", strings.Join(text, ""))
				if p != tape.ProviderOpenAIChat {
					require.Equal(t, "hm", strings.Join(thinking, ""))
				}
				var calls []string
				for _, c := range back.ToolCalls {
					id := c.ID
					if p == tape.ProviderGemini {
						id = "-"
					}
					calls = append(calls, id+" "+c.Name+" "+provider.CompactInput(c)+" "+c.Kind)
				}
				want := []string{`call_a Bash {"command":"ls"} function`, `call_b Read {} function`, `call_c apply_patch {"input":"*** Begin Patch\n"} custom`}
				switch p {
				case tape.ProviderAnthropic: // no freeform tools: the input object goes as it is
					want[2] = strings.Replace(want[2], "custom", "function", 1)
				case tape.ProviderGemini:
					want = want[:2]
					for i := range want {
						want[i] = "-" + want[i][6:]
					}
				}
				require.Equal(t, want, calls)
				if p != tape.ProviderOpenAIChat || r.Chunks == nil { // a Chat stream has usage on request only
					require.Equal(t, int64(34), back.Response.Usage.OutputTokens)
				}
			}
		})
	}
	raw := &tape.Step{}
	raw.Response.Content = []tape.Block{{Type: "other", Raw: json.RawMessage(`{"type":"web_search_call","id":"ws_1"}`)}}
	a, err := provider.StepAnswer(tape.ProviderOpenAIResponses, raw, stepItemID)
	require.NoError(t, err)
	require.Len(t, a.Items, 1)
	for _, p := range []tape.Provider{tape.ProviderAnthropic, tape.ProviderOpenAIChat, tape.ProviderGemini} {
		_, err := provider.StepAnswer(p, raw, stepItemID)
		require.ErrorContains(t, err, `content block 0 of type "other" has no wire form in `+string(p))
	}
}
