package conformance

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/tapebox/tapebox/internal/grammar"
	codexgrammar "github.com/tapebox/tapebox/internal/grammar/codex"
	pigrammar "github.com/tapebox/tapebox/internal/grammar/pi"
	"github.com/tapebox/tapebox/internal/testutil/realharness"
	"github.com/tapebox/tapebox/tape"
)

// The differential test draws sequences of calls from a harness's grammar (package
// internal/grammar), runs each through the real harness against the fake provider and
// through tapebox-exec, and compares every call and the end state. The quick default (two
// sequences a harness) runs with the other real-harness tests; more seeds:
//
//	TAPEBOX_REQUIRE_HARNESSES=1 go test ./executor/conformance -run TestGenerated \
//	    -gen.seqs 100 -gen.calls 20 -gen.report /tmp/codex.json -gen.harness codex
var (
	genSeqs    = flag.Int("gen.seqs", 2, "generated sequences per harness")
	genCalls   = flag.Int("gen.calls", 12, "calls per generated sequence")
	genSeed    = flag.Uint64("gen.seed", 1, "seed of the first generated sequence")
	genHarness = flag.String("gen.harness", "", "only this harness (codex, pi)")
	genReport  = flag.String("gen.report", "", "write the tally as JSON to this file (one per version: NAME-VERSION.json)")
	genVersion = flag.String("gen.version", "", "only this version: \"pinned\" or an alias of olderVersions (codex-0.161)")
	genStrict  = flag.Bool("gen.strict", true, "fail on a divergence not of a known class")
)

// grammars are the generators of the harnesses that have one.
var grammars = map[string]func(r *rand.Rand, n int) grammar.Sequence{
	realharness.Codex: codexgrammar.Generate,
	realharness.Pi:    pigrammar.Generate,
}

// olderVersions are the older versions of each harness in the version matrix, by their
// npm alias in harnesses/package.json, with the variable that makes realharness run them.
var olderVersions = map[string]struct {
	env     string
	aliases []string
}{
	realharness.Codex: {realharness.EnvCodex, []string{"codex-0.161"}},
	realharness.Pi:    {realharness.EnvPi, []string{"pi-0.67"}},
}

// seqSeed is the seed of the i-th sequence: the PCG stream of grammar.New.
func seqSeed(i int) uint64 { return *genSeed + uint64(i) }

// tally counts calls tried and identical per tool, and end states.
type tally struct {
	Harness     string                `json:"harness"`
	Version     string                `json:"version"`
	Tools       map[string]*toolTally `json:"tools"`
	Sequences   int                   `json:"sequences"`
	EndsSame    int                   `json:"ends_identical"`
	Divergences []divergence          `json:"divergences"`
	GenNanos    int64                 `json:"generator_ns"`
	GenCalls    int                   `json:"generator_calls"`
}

type toolTally struct {
	Tried     int `json:"tried"`
	Identical int `json:"identical"`
}

type divergence struct {
	Seed    uint64   `json:"seed"`
	Step    int      `json:"step"` // -1 for the end state
	Tool    string   `json:"tool"`
	Classes []string `json:"classes"`
	Diff    string   `json:"diff"`
	Known   string   `json:"known,omitempty"`
}

// TestGenerated runs generated sequences through each harness and the executor.
func TestGenerated(t *testing.T) {
	bin := executorBinary(t)
	for _, h := range harnesses {
		gen, ok := grammars[h.name]
		if !ok || (*genHarness != "" && *genHarness != h.name) {
			continue
		}
		versions := append([]string{"pinned"}, olderVersions[h.name].aliases...)
		for _, v := range versions {
			if *genVersion != "" && *genVersion != v {
				continue
			}
			t.Run(h.name+"/"+v, func(t *testing.T) {
				if v != "pinned" {
					p, err := realharness.AliasPath(h.name, v)
					if err != nil {
						t.Fatal(err)
					}
					t.Setenv(olderVersions[h.name].env, p)
				}
				realharness.Need(t, h.name)
				version, err := realharness.Version(t.Context(), h.name)
				if err != nil {
					t.Fatal(err)
				}
				tl := &tally{Harness: h.name, Version: version, Tools: map[string]*toolTally{}}
				for i := range *genSeqs {
					seed := seqSeed(i)
					start := time.Now()
					seq := gen(grammar.New(seed), *genCalls)
					tl.GenNanos += time.Since(start).Nanoseconds()
					tl.GenCalls += len(seq.Calls)
					seq.Seed = seed
					t.Run(fmt.Sprint(seed), func(t *testing.T) { runGenerated(t, bin, h.name, h.run, version, seq, tl) })
				}
				report(t, tl)
			})
		}
	}
}

// asCase turns a generated sequence into a conformance case.
func asCase(seq grammar.Sequence) Case {
	c := Case{Name: fmt.Sprintf("gen-%d", seq.Seed), Before: []File{}}
	for _, f := range seq.Before {
		c.Before = append(c.Before, File{Path: f.Path, Mode: f.Mode, Dir: f.Dir, Link: f.Link, Content: f.Content})
	}
	calls := seq.Calls
	c.Calls = func(string) []tape.ToolCall { return calls }
	return c
}

func runGenerated(t *testing.T, bin, harness string, run func(context.Context, realharness.Options) (realharness.Result, error), version string, seq grammar.Sequence, tl *tally) {
	c := asCase(seq)
	fc := capture(t, harness, run, &c)
	o := replay(t, bin, harness, version, fc)
	tl.Sequences++
	for i, s := range o.Steps {
		tool := fc.Steps[i].Call.Name
		tt := tl.Tools[tool]
		if tt == nil {
			tt = &toolTally{}
			tl.Tools[tool] = tt
		}
		tt.Tried++
		if s.Diff == "" {
			tt.Identical++
			continue
		}
		d := divergence{Seed: seq.Seed, Step: i, Tool: tool, Classes: seq.Classes[i], Diff: s.Diff}
		d.Known = knownClass(harness, version, d, fc.Steps[i])
		tl.Divergences = append(tl.Divergences, d)
		if d.Known == "" && *genStrict {
			t.Errorf("seed %d step %d (%s %v): %s\ninput: %s", seq.Seed, i, tool, d.Classes, s.Diff, realharness.Excerpt(string(fc.Steps[i].Call.Input), 600))
		} else {
			t.Logf("seed %d step %d (%s %v): known divergence %q", seq.Seed, i, tool, d.Classes, d.Known)
		}
	}
	if o.EndDiff == "" {
		tl.EndsSame++
		return
	}
	d := divergence{Seed: seq.Seed, Step: -1, Tool: "end state", Diff: o.EndDiff}
	tl.Divergences = append(tl.Divergences, d)
	if *genStrict {
		t.Errorf("seed %d: end state differs from the harness's:\n%s", seq.Seed, o.EndDiff)
	}
}

// knownDivergences are the classes of divergence that are not the executor's to fix, with
// the reason; each is matched on the harness, the call and the difference.
var knownDivergences = []struct {
	Harness, Name, Reason string
	Match                 func(d divergence, s Step) bool
}{}

func knownClass(harness, version string, d divergence, s Step) string {
	for _, k := range knownDivergences {
		if k.Harness == harness && k.Match(d, s) {
			return k.Name
		}
	}
	return ""
}

// report logs the tally and writes it with -gen.report.
func report(t *testing.T, tl *tally) {
	tools := make([]string, 0, len(tl.Tools))
	for k := range tl.Tools {
		tools = append(tools, k)
	}
	sort.Strings(tools)
	var b strings.Builder
	tried, same := 0, 0
	for _, k := range tools {
		tt := tl.Tools[k]
		tried += tt.Tried
		same += tt.Identical
		fmt.Fprintf(&b, "\n\t%-14s %5d tried %5d identical", k, tt.Tried, tt.Identical)
	}
	perK := time.Duration(0)
	if tl.GenCalls > 0 {
		perK = time.Duration(tl.GenNanos * 1000 / int64(tl.GenCalls))
	}
	t.Logf("%s %s: %d of %d calls identical, %d of %d end states; generator %v per 1,000 calls%s",
		tl.Harness, tl.Version, same, tried, tl.EndsSame, tl.Sequences, perK, b.String())
	classes := map[string]int{}
	for _, d := range tl.Divergences {
		for _, c := range d.Classes {
			classes[d.Tool+"/"+c]++
		}
	}
	keys := make([]string, 0, len(classes))
	for k := range classes {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		t.Logf("divergent class %s: %d", k, classes[k])
	}
	if *genReport == "" {
		return
	}
	path := strings.TrimSuffix(*genReport, ".json") + "-" + tl.Harness + "-" + tl.Version + ".json"
	bs, err := json.MarshalIndent(tl, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, bs, 0o644); err != nil {
		t.Fatal(err)
	}
}
