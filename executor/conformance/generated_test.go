package conformance

import (
	"cmp"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/tapebox/tapebox/internal/grammar"
	codexgrammar "github.com/tapebox/tapebox/internal/grammar/codex"
	geminigrammar "github.com/tapebox/tapebox/internal/grammar/gemini"
	pigrammar "github.com/tapebox/tapebox/internal/grammar/pi"
	"github.com/tapebox/tapebox/internal/testutil/realharness"
	"github.com/tapebox/tapebox/tape"
	table "github.com/tapebox/tapebox/tape/harnesses"
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
	genHarness = flag.String("gen.harness", "", "only this harness (codex, pi, gemini-cli)")
	genReport  = flag.String("gen.report", "", "write the tally as JSON to this file (one per version: NAME-VERSION.json)")
	genVersion = flag.String("gen.version", "", "only this version: \"pinned\" or an alias of olderVersions (codex-0.161)")
	genStrict  = flag.Bool("gen.strict", true, "fail on a divergence not of a known class")
	genSeedSet = flag.String("gen.seeds", "", "these seeds (comma-separated) instead of -gen.seed and -gen.seqs")
)

// grammars are the generators of the harnesses that have one.
var grammars = map[string]func(r *rand.Rand, n int) grammar.Sequence{
	realharness.Codex:  codexgrammar.Generate,
	realharness.Pi:     pigrammar.Generate,
	realharness.Gemini: geminigrammar.Generate,
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

// seedList is -gen.seeds, or -gen.seqs seeds from -gen.seed.
func seedList() []uint64 {
	var seeds []uint64
	if *genSeedSet != "" {
		for _, f := range strings.Split(*genSeedSet, ",") {
			var s uint64
			if _, err := fmt.Sscan(strings.TrimSpace(f), &s); err == nil {
				seeds = append(seeds, s)
			}
		}
		return seeds
	}
	for i := range *genSeqs {
		seeds = append(seeds, *genSeed+uint64(i))
	}
	return seeds
}

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
	version string   // the harness version, for classes of older versions
}

// TestGenerated runs generated sequences through each harness and the executor.
func TestGenerated(t *testing.T) {
	bin := executorBinary(t)
	ran := 0
	defer func() {
		// A -gen.harness or -gen.version that names nothing would otherwise pass having run
		// nothing ("0.171.0" instead of "pinned").
		if ran == 0 {
			t.Errorf("no harness version matches -gen.harness %q -gen.version %q: versions are \"pinned\" or an alias (codex-0.161, pi-0.67)", *genHarness, *genVersion)
		}
	}()
	type target struct {
		name string
		run  func(context.Context, realharness.Options) (realharness.Result, error)
	}
	var targets []target
	for _, h := range harnesses {
		targets = append(targets, target{h.name, h.run})
	}
	for _, h := range generatedOnly {
		targets = append(targets, target{h.name, h.run})
	}
	for _, h := range targets {
		gen, ok := grammars[h.name]
		if !ok || (*genHarness != "" && *genHarness != h.name) {
			continue
		}
		versions := append([]string{"pinned"}, olderVersions[h.name].aliases...)
		for _, v := range versions {
			if *genVersion != "" && *genVersion != v {
				continue
			}
			ran++
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
				for _, seed := range seedList() {
					start := time.Now()
					seq := gen(grammar.New(seed), *genCalls)
					tl.GenNanos += time.Since(start).Nanoseconds()
					tl.GenCalls += len(seq.Calls)
					seq.Seed = seed
					t.Run(fmt.Sprint(seed), func(t *testing.T) { runGenerated(t, bin, h.name, h.run, version, seq, tl) })
					writeReport(t, tl) // after each sequence: a long run stopped early keeps its tally
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
	o := replay(t, bin, harness, version, fc, true)
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
	d.Known = knownClass(harness, version, d, Step{})
	tl.Divergences = append(tl.Divergences, d)
	if d.Known == "" && *genStrict {
		t.Errorf("seed %d: end state differs from the harness's:\n%s", seq.Seed, o.EndDiff)
	}
}

// knownDivergences are the classes of divergence that are not the executor's to fix, with
// the reason; each is matched on the harness, the call and the difference.
var knownDivergences = []struct {
	Harness, Name, Reason string
	Match                 func(d divergence, s Step) bool
}{
	{realharness.Pi, "Pi before 0.73: the pipe's read sizes",
		"Pi up to 0.72 formats the last of the chunks its pipe reads delivered while they held more than 100 KB; the executor " +
			"assumes 64 KiB reads (a fast writer's), which is what the recording shows most of the time, but the reads are " +
			"smaller when the writer or the machine is slow, and the lines shown differ (seed 1001 showed 4306-6305 of 6305 " +
			"in one run and 13863-15862 of 15862 in the next)",
		func(d divergence, _ Step) bool {
			return d.Tool == "bash" && d.version != "" && !table.Pi.Has(d.version, table.PiBashWholeOutput) && strings.Contains(d.Diff, "[Showing ")
		}},
	{realharness.Codex, "yield race",
		"the grammar's session command was sleep 0.4; seq 1 30000 with yield_time_ms 250, which ends within a few ms of Codex's 150 ms grace " +
			"plus the yield: on a loaded machine it ended inside the yield on one side and outside on the other, and the poll after it " +
			"differed with it (the grammar now sleeps 1 s; the same draws, so the seeds name the same sequences)",
		func(d divergence, _ Step) bool {
			return hasClass(d, "long-output") && (hasClass(d, "session") || hasClass(d, "poll"))
		}},
	{"", "stdout/stderr interleaving",
		"without a tty Codex and Pi read stdout and stderr from two pipes as they arrive: writes to both within the same instant " +
			"(head's error and od's dump, rm's error and echo) interleave differently from run to run; the same bytes, in another order",
		func(d divergence, _ Step) bool {
			shell := slices.Contains([]string{"exec_command", "write_stdin", "shell", "bash"}, d.Tool)
			return shell && d.Step >= 0 && !hasClass(d, "tty") && sameBytes(d.Diff)
		}},
	{realharness.Codex, "terminal in the harness's home",
		"a tty command whose workdir is missing runs in HOME (portable-pty), which holds the harness's own state (~/.codex) in the recording " +
			"and nothing in the replay",
		func(d divergence, _ Step) bool { return hasClass(d, "tty") && hasClass(d, "odd-workdir") }},
	{realharness.Pi, "ripgrep's order",
		"Pi's grep lists matches in the order ripgrep's parallel walk finds them, which changes from run to run; the executor " +
			"keeps the recording's order of the lines both have, but under a limit the lines themselves can differ, and with " +
			"context lines of several files the order of the files can",
		func(d divergence, _ Step) bool {
			return d.Tool == "grep" && (hasClass(d, "+limit") || sameBytes(d.Diff))
		}},
	{realharness.Codex, "workdir /tmp",
		"the grammar's workdir /tmp is shared with every other process on the machine: ls and find there list other runs' " +
			"temporary files, which change between the recording and the replay",
		func(d divergence, _ Step) bool {
			return hasClass(d, "odd-workdir") && !hasClass(d, "tty") && !strings.Contains(d.Diff, "CreateProcess")
		}},
	{"", "background job against the replay's pace",
		"a job started with & in one call writes its file 0.3 s later; the harness runs the next calls after model turns, the replay at once, " +
			"so a call soon after sees the file in the recording and not in the replay (or the end state is taken before the job ends)",
		func(d divergence, _ Step) bool { return strings.Contains(d.Diff, "bg-") }},
}

// hasClass says whether one of a divergence's input classes contains c.
func hasClass(d divergence, c string) bool {
	for _, k := range d.Classes {
		if strings.Contains(k, c) {
			return true
		}
	}
	return false
}

// sameBytes says whether a result difference (textDiff's) is the same bytes in another
// order: equal lengths and an equal excerpt after sorting.
func sameBytes(diff string) bool {
	var lw, lg int
	for _, line := range strings.Split(diff, "\n") {
		if _, err := fmt.Sscanf(strings.TrimSpace(line), "lengths: harness %d, got %d", &lw, &lg); err == nil {
			return lw == lg && lw > 0 && sortedExcerpts(diff)
		}
	}
	return false
}

func sortedExcerpts(diff string) bool {
	var h, g string
	for _, line := range strings.Split(diff, "\n") {
		line = strings.TrimSpace(line)
		if v, ok := strings.CutPrefix(line, "harness: "); ok {
			h = v
		}
		if v, ok := strings.CutPrefix(line, "got:     "); ok {
			g = v
		}
	}
	hb, gb := []byte(h), []byte(g)
	slices.Sort(hb)
	slices.Sort(gb)
	return h != "" && string(hb) == string(gb)
}

func knownClass(harness, version string, d divergence, s Step) string {
	d.version = version
	for _, k := range knownDivergences {
		if (k.Harness == "" || k.Harness == harness) && k.Match(d, s) {
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
	writeReport(t, tl)
}

// writeReport writes the tally to -gen.report's file for its harness version.
func writeReport(t *testing.T, tl *tally) {
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

var genMarkdown = flag.String("gen.markdown", "", "TestGeneratedBoard: write the scoreboard of the -gen.report files as Markdown here")

// TestGeneratedBoard writes the scoreboard of the reports TestGenerated wrote
// (-gen.report PREFIX.json: PREFIX-HARNESS-VERSION.json): per harness, version and tool,
// calls tried and identical, sequences with an identical end state, and every divergence
// with its seed.
func TestGeneratedBoard(t *testing.T) {
	if *genMarkdown == "" || *genReport == "" {
		t.Skip("needs -gen.report and -gen.markdown")
	}
	files, err := filepath.Glob(strings.TrimSuffix(*genReport, ".json") + "-*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no reports %s-*.json: %v", strings.TrimSuffix(*genReport, ".json"), err)
	}
	var tallies []*tally
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var tl tally
		if err := json.Unmarshal(b, &tl); err != nil {
			t.Fatalf("decode %s: %v", f, err)
		}
		for i := range tl.Divergences { // with the classes of this checkout
			tl.Divergences[i].Known = knownClass(tl.Harness, tl.Version, tl.Divergences[i], Step{})
		}
		tallies = append(tallies, &tl)
	}
	slices.SortFunc(tallies, func(a, b *tally) int {
		return cmp.Or(strings.Compare(a.Harness, b.Harness), -table.CompareVersions(a.Version, b.Version))
	})
	if err := os.WriteFile(*genMarkdown, []byte(boardMarkdown(tallies)), 0o644); err != nil {
		t.Fatal(err)
	}
}

// boardMarkdown renders tallies as the scoreboard's Markdown.
func boardMarkdown(tallies []*tally) string {
	var b strings.Builder
	b.WriteString("# Executor fidelity: Codex and Pi\n\n" +
		"Written by `make fidelity-codex-pi` (executor/conformance TestGenerated, then TestGeneratedBoard). " +
		"Each sequence is drawn from a seeded grammar (internal/grammar/codex, internal/grammar/pi), run through the real harness " +
		"against the scripted fake provider, then replayed call by call through `tapebox-exec serve` in a fresh directory at the " +
		"same path, each call with its recorded result beside it as a replay sends it. A call is identical when its result equals " +
		"the harness's byte for byte, the harness table's volatile and identifier fields aside; a result the executor copied from " +
		"the recording counts as not identical. A seed reproduces its sequence: `go test ./executor/conformance -run TestGenerated " +
		"-gen.harness H -gen.version V -gen.seed SEED -gen.seqs 1 -gen.calls 40`.\n\n")
	b.WriteString("| Harness | Version | Tool | Calls tried | Calls identical | % |\n|---|---|---|---:|---:|---:|\n")
	for _, tl := range tallies {
		tools := make([]string, 0, len(tl.Tools))
		for k := range tl.Tools {
			tools = append(tools, k)
		}
		slices.Sort(tools)
		tried, same := 0, 0
		for _, k := range tools {
			tt := tl.Tools[k]
			tried += tt.Tried
			same += tt.Identical
			fmt.Fprintf(&b, "| %s | %s | %s | %d | %d | %s |\n", tl.Harness, tl.Version, k, tt.Tried, tt.Identical, pct(tt.Identical, tt.Tried))
		}
		fmt.Fprintf(&b, "| %s | %s | **all** | **%d** | **%d** | **%s** |\n", tl.Harness, tl.Version, tried, same, pct(same, tried))
	}
	b.WriteString("\n| Harness | Version | Sequences | End states identical | % | Generator per 1,000 calls |\n|---|---|---:|---:|---:|---:|\n")
	for _, tl := range tallies {
		per := time.Duration(0)
		if tl.GenCalls > 0 {
			per = time.Duration(tl.GenNanos * 1000 / int64(tl.GenCalls))
		}
		fmt.Fprintf(&b, "| %s | %s | %d | %d | %s | %v |\n", tl.Harness, tl.Version, tl.Sequences, tl.EndsSame, pct(tl.EndsSame, tl.Sequences), per.Round(time.Microsecond))
	}
	b.WriteString("\nKnown divergence classes (not the executor's to fix):\n\n")
	for _, k := range knownDivergences {
		h := k.Harness
		if h == "" {
			h = "any harness"
		}
		fmt.Fprintf(&b, "- **%s** (%s): %s.\n", k.Name, h, k.Reason)
	}
	b.WriteString("\nDivergences left (seed, step, tool, input classes, what differs):\n\n")
	n := 0
	for _, tl := range tallies {
		for _, d := range tl.Divergences {
			n++
			first := summary(d.Diff)
			known := ""
			if d.Known != "" {
				known = " — known: " + d.Known
			}
			fmt.Fprintf(&b, "- %s %s seed %d step %d `%s` %v: %s%s\n", tl.Harness, tl.Version, d.Seed, d.Step, d.Tool, d.Classes, first, known)
		}
	}
	if n == 0 {
		b.WriteString("- none\n")
	}
	return b.String()
}

// summary is a divergence's difference on one line: where the two results part, or the
// end state's first difference.
func summary(diff string) string {
	var parts []string
	for _, line := range strings.Split(diff, "\n") {
		line = strings.TrimSpace(line)
		for _, p := range []string{"harness: ", "got:     ", "missing: ", "unexpected: "} {
			if v, ok := strings.CutPrefix(line, p); ok {
				if len(v) > 90 {
					v = v[:90] + "…"
				}
				parts = append(parts, strings.TrimSpace(p)+" `"+strings.ReplaceAll(v, "`", "'")+"`")
			}
		}
		if len(parts) >= 2 {
			break
		}
	}
	if len(parts) == 0 {
		first, _, _ := strings.Cut(diff, "\n")
		return first
	}
	return strings.Join(parts, " / ")
}

func pct(a, b int) string {
	if b == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f", 100*float64(a)/float64(b))
}

// TestKnownClasses checks that the known classes take what they name and no more.
func TestKnownClasses(t *testing.T) {
	swapped := textDiff("head: 0000000\nerror reading 'x': Is a directory\n", "head: error reading 'x': Is a directory\n0000000\n")
	other := textDiff("line 1\nline 2\n", "line 1\nline 3\n")
	for _, tt := range []struct {
		d    divergence
		want string
	}{
		{divergence{Step: 3, Tool: "exec_command", Classes: []string{"binary-dump"}, Diff: swapped}, "stdout/stderr interleaving"},
		{divergence{Step: 3, Tool: "exec_command", Classes: []string{"binary-dump", "tty"}, Diff: swapped}, ""},
		{divergence{Step: 3, Tool: "ls", Classes: []string{"cwd"}, Diff: swapped}, ""},
		{divergence{Step: 3, Classes: []string{"cat"}, Diff: other}, ""},
		{divergence{Step: 3, Classes: []string{"session", "long-output"}, Diff: other}, "yield race"},
		{divergence{Step: 3, Classes: []string{"session"}, Diff: other}, ""},
		{divergence{Step: -1, Diff: "  missing: bg-1.txt"}, "background job against the replay's pace"},
		{divergence{Step: -1, Diff: "  missing: notes.txt"}, ""},
	} {
		if got := knownClass(realharness.Codex, "0.171.0", tt.d, Step{}); got != tt.want {
			t.Errorf("%v %q: class %q, want %q", tt.d.Classes, tt.d.Diff, got, tt.want)
		}
	}
}
