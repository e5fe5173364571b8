package pi

import (
	"reflect"
	"testing"

	"github.com/tapebox/tapebox/internal/grammar"
)

// A seed names one sequence, and every tool comes up.
func TestGenerate(t *testing.T) {
	seen := map[string]bool{}
	for seed := uint64(1); seed < 30; seed++ {
		a, b := Generate(grammar.New(seed), 40), Generate(grammar.New(seed), 40)
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("seed %d: two sequences", seed)
		}
		for _, c := range a.Calls {
			seen[c.Name] = true
		}
	}
	for _, tool := range append(Offered, "find") {
		if !seen[tool] {
			t.Errorf("no %s call", tool)
		}
	}
}

// BenchmarkGenerate draws 40-call sequences: ns/op × 25 is the time per 1,000 calls.
func BenchmarkGenerate(b *testing.B) {
	seed := uint64(0)
	for b.Loop() {
		seed++
		Generate(grammar.New(seed), 40)
	}
}
