package controller

import (
	"math/rand/v2"
	"strings"
	"testing"
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
			rec := pairTape("claude-code", a, input(a))
			rep := replayOf(b, rec, c, input(c))
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
