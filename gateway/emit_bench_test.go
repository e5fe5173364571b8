package gateway

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/tapebox/tapebox/tape"
)

// BenchmarkEmitted writes a step recorded without its raw response (thinking, a text and
// three tool calls) in each wire format, as a stream and as a body: the tape mode's answer
// to such a step.
func BenchmarkEmitted(b *testing.B) {
	s := &tape.Step{}
	s.Response.Usage = tape.Usage{InputTokens: 1200, OutputTokens: 340}
	s.Response.StopReason = "tool_use"
	s.Response.Content = []tape.Block{
		{Type: tape.BlockThinking, Text: strings.Repeat("Let me look at the files first. ", 20)},
		{Type: tape.BlockText, Text: strings.Repeat("I will list the directory and read the README. ", 10)},
	}
	for i, in := range []string{`{"command":"ls -la"}`, `{"file_path":"/work/README.md"}`, `{"pattern":"func main","path":"."}`} {
		id := "call_" + string(rune('a'+i))
		s.Response.Content = append(s.Response.Content, tape.Block{Type: tape.BlockToolUse, ID: id, Name: "Bash", Input: json.RawMessage(in)})
		s.ToolCalls = append(s.ToolCalls, tape.ToolCall{ID: id, Name: "Bash", Input: json.RawMessage(in)})
	}
	for _, p := range []tape.Provider{tape.ProviderAnthropic, tape.ProviderOpenAIChat, tape.ProviderOpenAIResponses, tape.ProviderGemini} {
		for _, stream := range []bool{false, true} {
			name := string(p) + "/body"
			if stream {
				name = string(p) + "/stream"
			}
			b.Run(name, func(b *testing.B) {
				for b.Loop() {
					if _, err := emitted(p, "m", "tapebox_main_3", s, stream); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
