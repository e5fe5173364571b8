package benchmarks

import (
	"encoding/json"
	"testing"

	"github.com/tapebox/tapebox/sandbox"
	"github.com/tapebox/tapebox/tape"
)

// TestBenchReplayFails checks the suite's contract: a replay that fails, or that differs
// from its recording, fails the benchmark and reports no time or metric.
func TestBenchReplayFails(t *testing.T) {
	unknownHarness := noopTape(3)
	unknownHarness.Meta.Harness = "no-such-harness"

	differs := noopTape(1)
	s := differs.Threads[0].Steps[0]
	s.ToolCalls[0] = tape.ToolCall{ID: "toolu_0000", Name: "Bash", Input: json.RawMessage(`{"command":"echo hi"}`)}
	s.ToolResults[0].Content = []tape.Block{{Type: tape.BlockText, Text: "bye"}}

	for _, tt := range []struct {
		name string
		rec  *tape.Tape
	}{{"replay fails", unknownHarness}, {"replay differs", differs}} {
		t.Run(tt.name, func(t *testing.T) {
			res := testing.Benchmark(func(b *testing.B) {
				benchReplay(b, tt.rec, func(b *testing.B) *sandbox.Sandbox { return openLocal(b) })
			})
			if res.N != 0 || len(res.Extra) != 0 {
				t.Errorf("the benchmark reported N=%d and %v, want a failure with nothing reported", res.N, res.Extra)
			}
		})
	}

	ok := testing.Benchmark(func(b *testing.B) {
		benchReplay(b, noopTape(3), func(b *testing.B) *sandbox.Sandbox { return openLocal(b) })
	})
	if ok.N == 0 || ok.Extra["replay-ms/op"] <= 0 || ok.Extra["steps/s"] <= 0 {
		t.Errorf("a good replay reported N=%d and %v", ok.N, ok.Extra)
	}
}
