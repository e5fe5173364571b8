package gateway

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/tapebox/tapebox/tape"
)

// BenchmarkBreakerStep is the breaker's own work per recorded step, the part that adds to
// a call (the rest of BenchmarkGuardOverhead is noise on a shared machine): pricing the
// usage, keying three tool calls by name and normalized input, counting and checking every
// limit.
func BenchmarkBreakerStep(b *testing.B) {
	cost := func(string, tape.Usage) (float64, bool) { return 0.001, true }
	brk := &breaker{limits: tape.Limits{MaxCostUSD: 1e9, MaxSteps: 1 << 30, MaxThreadSteps: 1 << 30, MaxTokens: 1 << 60, MaxRepeat: 1 << 30}, cost: cost, unpriced: map[string]int64{}}
	th := &thread{id: "main"}
	steps := make([]*tape.Step, 16)
	for i := range steps {
		s := &tape.Step{Response: tape.Response{Usage: tape.Usage{InputTokens: 1200, OutputTokens: 300, CacheReadInputTokens: 40000}}}
		for j := range 3 {
			s.ToolCalls = append(s.ToolCalls, tape.ToolCall{ID: fmt.Sprint(j), Name: "Bash",
				Input: json.RawMessage(fmt.Sprintf(`{"command":"grep -rn pattern%d src/ | head -50","description":"Search the sources for pattern %d","timeout":120000}`, i, j))})
		}
		steps[i] = s
	}
	n := 0
	for b.Loop() {
		s := steps[n%len(steps)]
		o := brk.observe("claude-sonnet-4-5", s)
		th.steps++
		n++
		brk.add(th, n, o, s, false)
	}
	if brk.trip.Load() != nil {
		b.Fatal("tripped")
	}
}
