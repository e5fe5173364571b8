package provider_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/tapebox/tapebox/tape"
	"github.com/tapebox/tapebox/tape/provider"
)

// bigThread is a long conversation whose last answer is large: 40 turns of history with
// sizeable tool results, then an answer with 8 KB of reasoning, 8 KB of text and four
// parallel calls writing 32 KB files each, streamed in small deltas (about 3,000 events).
func bigThread() *gThread {
	th := &gThread{id: "main", system: "You are a coding agent.", prompt: "Refactor the project."}
	for i := range 40 {
		th.turns = append(th.turns, gTurn{
			text: fmt.Sprintf("Step %d: reading the next file.", i),
			calls: []gCall{{id: fmt.Sprintf("call_%03d", i), name: "Read", input: fmt.Sprintf(`{"file_path":"/work/src/file%03d.go"}`, i),
				result: strings.Repeat(fmt.Sprintf("%d\tfunc f%d() int { return %d }\n", i, i, i), 60)}},
		})
	}
	last := gTurn{thinking: strings.Repeat("Consider the call graph before moving code. ", 190), text: strings.Repeat("Moving the helpers into their own package. ", 190)}
	for k := range 4 {
		content := strings.Repeat(fmt.Sprintf("// part %d of the new package\nfunc helper%d() {}\n", k, k), 700)
		last.calls = append(last.calls, gCall{id: fmt.Sprintf("call_big%d", k), name: "Write", input: string(enc(obj{{"file_path", fmt.Sprintf("/work/pkg/h%d.go", k)}, {"content", content}}))})
	}
	th.turns = append(th.turns, last)
	return th
}

// BenchmarkNormalize normalizes the last step of bigThread, request and streamed response,
// in each wire format. The bytes per op are the request body plus the stream.
func BenchmarkNormalize(b *testing.B) {
	th := bigThread()
	i := len(th.turns) - 1
	for _, w := range []wire{anthropicWire{model: "m"}, chatWire{codexWire{model: "m"}}, responsesWire{codexWire{model: "m"}}} {
		s := &tape.Step{Request: tape.Request{Raw: w.request(th, i, true)}}
		size := len(s.Request.Raw)
		for _, ev := range w.events(th, i) {
			s.Response.Chunks = append(s.Response.Chunks, tape.Chunk{Data: ev})
			size += len(ev)
		}
		b.Run(fmt.Sprintf("%s/%d-events", w.provider(), len(s.Response.Chunks)), func(b *testing.B) {
			b.SetBytes(int64(size))
			b.ReportAllocs()
			for b.Loop() {
				if err := provider.Normalize(w.provider(), s); err != nil {
					b.Fatal(err)
				}
			}
			if len(s.ToolCalls) != 4 {
				b.Fatalf("%d tool calls, want 4", len(s.ToolCalls))
			}
		})
	}
}
