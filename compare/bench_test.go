package compare

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/tapebox/tapebox/internal/testutil/tapegen"
	"github.com/tapebox/tapebox/tape"
)

// BenchmarkCompareManyIDs compares a tool result of 4000 lines, each an id-shaped token
// that differs between the runs (random names, hashes, a hex dump): ids that nothing uses
// again (every token is looked up as evidence and turned down), ids that a later call uses
// (all learned), and paths holding them that a later call reads (learned with the ids
// inside them).
func BenchmarkCompareManyIDs(b *testing.B) {
	rng := rand.New(rand.NewPCG(5, 6))
	lines := func(n int, format func(string) string) string {
		var s strings.Builder
		for range n {
			s.WriteString(format(hex16(rng)))
			s.WriteString("\n")
		}
		return s.String()
	}
	id := func(s string) string { return s }
	path := func(s string) string { return "/tmp/" + s + "/x" }
	for _, bc := range []struct {
		name   string
		format func(string) string
		used   bool
	}{{"unused ids", id, false}, {"ids used again", id, true}, {"paths used again", path, true}} {
		b.Run(bc.name, func(b *testing.B) {
			a, c := lines(4000, bc.format), lines(4000, bc.format)
			input := func(s string) string {
				if !bc.used {
					return `{"command":"echo next"}`
				}
				return `{"command":"cat ` + strings.ReplaceAll(s, "\n", " ") + `"}`
			}
			rec := tapegen.Pair("claude-code", a, input(a))
			rep := tapegen.ReplayOf(b, rec, c, input(c))
			b.ReportAllocs()
			for b.Loop() {
				Compare(rec, rep)
			}
		})
	}
}

func hex16(rng *rand.Rand) string {
	const digits = "0123456789abcdef"
	b := make([]byte, 16)
	for i := range b {
		b[i] = digits[rng.IntN(16)]
	}
	return string(b)
}

// BenchmarkCompareDeepThreads compares a tape of 2000 threads, each the subagent of the one
// before (a tape is anyone's): finding which threads a replay plays walks each chain once.
func BenchmarkCompareDeepThreads(b *testing.B) {
	rec := tapegen.Pair("claude-code", "ok")
	for i := range 2000 {
		parent := "main"
		if i > 0 {
			parent = fmt.Sprint("t", i-1)
		}
		rec.Threads = append(rec.Threads, &tape.Thread{ID: fmt.Sprint("t", i), Parent: &tape.Parent{ThreadID: parent, ToolCallID: "c"},
			Steps: []*tape.Step{{Response: tape.Response{StopReason: "end_turn"}}}})
	}
	b.ReportAllocs()
	for b.Loop() {
		Compare(rec, rec)
	}
}
