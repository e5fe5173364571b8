package codex

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/tapebox/tapebox/internal/grammar"
)

// A seed names one sequence: the same seed, the same files and calls.
func TestGenerateIsPure(t *testing.T) {
	for seed := uint64(1); seed < 50; seed++ {
		a, b := Generate(grammar.New(seed), 40), Generate(grammar.New(seed), 40)
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("seed %d: two sequences", seed)
		}
		if len(a.Calls) != 40 || len(a.Classes) != 40 {
			t.Fatalf("seed %d: %d calls, %d classes", seed, len(a.Calls), len(a.Classes))
		}
		for i, c := range a.Calls {
			if !json.Valid(c.Input) {
				t.Fatalf("seed %d call %d: input not JSON: %s", seed, i, c.Input)
			}
		}
	}
}

// Every tool of the grammar comes up within a few hundred calls.
func TestGenerateCoversTools(t *testing.T) {
	seen := map[string]bool{}
	for seed := uint64(1); seed < 20; seed++ {
		for _, c := range Generate(grammar.New(seed), 40).Calls {
			seen[c.Name] = true
		}
	}
	for _, tool := range []string{"exec_command", "write_stdin", "apply_patch", "shell"} {
		if !seen[tool] {
			t.Errorf("no %s call in 760 calls", tool)
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
