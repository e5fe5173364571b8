package opencode

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/tapebox/tapebox/internal/grammar"
)

// A seed names one sequence, every tool comes up, and so does an input for each of
// opencode's edit matchers.
func TestGenerate(t *testing.T) {
	seen := map[string]bool{}
	for seed := uint64(1); seed < 60; seed++ {
		a, b := Generate(grammar.New(seed), 40, "/w"), Generate(grammar.New(seed), 40, "/w")
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("seed %d: two sequences", seed)
		}
		for i, c := range a.Calls {
			seen[c.Name] = true
			for _, cl := range a.Classes[i] {
				for _, part := range strings.Split(cl, "+") {
					seen[part] = true
				}
			}
		}
	}
	want := append(append([]string{}, Offered...), "line-trimmed", "block-anchor", "whitespace", "indentation", "escaped",
		"trimmed-boundary", "context-aware", "replaceAll", "not-offered", "timeout", "background-job", "edit-create", "relative")
	for _, w := range want {
		if !seen[w] {
			t.Errorf("no %s call", w)
		}
	}
}

// BenchmarkGenerate draws 40-call sequences: ns/op × 25 is the time per 1,000 calls.
func BenchmarkGenerate(b *testing.B) {
	seed := uint64(0)
	for b.Loop() {
		seed++
		Generate(grammar.New(seed), 40, "/w")
	}
}

// No sequence ends with a background job still to write its file: the last job is waited
// for.
func TestJobsWaitedFor(t *testing.T) {
	for seed := uint64(1); seed < 300; seed++ {
		s := Generate(grammar.New(seed), 30, "/w")
		pending := false
		for _, cs := range s.Classes {
			for _, c := range cs {
				if strings.HasPrefix(c, "background-job") {
					pending = true
				}
				if strings.HasPrefix(c, "background-wait") {
					pending = false
				}
			}
		}
		if pending {
			t.Fatalf("seed %d ends with a job not waited for", seed)
		}
	}
}

// GenerateGPT draws apply_patch in place of edit and write, with every kind of hunk and the
// inputs opencode's parser reads its own way; Generate's sequences are unchanged by it.
func TestGenerateGPT(t *testing.T) {
	seen := map[string]bool{}
	for seed := uint64(1); seed < 80; seed++ {
		a, b := GenerateGPT(grammar.New(seed), 40, "/w"), GenerateGPT(grammar.New(seed), 40, "/w")
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("seed %d: two sequences", seed)
		}
		for i, c := range a.Calls {
			seen[c.Name] = true
			if c.Name == "edit" || c.Name == "write" {
				if !slices.Contains(a.Classes[i], "not-offered") {
					t.Fatalf("seed %d: %s drawn as offered", seed, c.Name)
				}
			}
			for _, cl := range a.Classes[i] {
				for _, part := range strings.Split(cl, "+") {
					seen[part] = true
				}
			}
		}
	}
	want := append(append([]string{}, OfferedGPT...), "add", "add-over-existing", "add-under-file", "empty", "delete-text", "delete-dir",
		"delete-missing", "update-crlf", "update-missing", "update-dir", "move", "context-header", "eof", "fails-halfway", "no-chunks",
		"not-found", "absolute", "empty-patch", "not-a-patch", "no-hunks", "leading-text", "heredoc", "crlf-patch", "no-end", "not-offered")
	for _, w := range want {
		if !seen[w] {
			t.Errorf("no %s call", w)
		}
	}
	// The non-GPT grammar draws no patch as an offered tool.
	for seed := uint64(1); seed < 20; seed++ {
		s := Generate(grammar.New(seed), 40, "/w")
		for i, c := range s.Calls {
			if c.Name == "apply_patch" && !slices.Contains(s.Classes[i], "not-offered") {
				t.Fatalf("seed %d: Generate drew an offered apply_patch", seed)
			}
		}
	}
}
