package fidelity

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tapebox/tapebox/internal/testutil/realharness"
)

var (
	seedsFlag   = flag.Int("fidelity.seeds", 0, "TestScoreboard: sequences per harness version (0 skips it; make fidelity sets it)")
	outFlag     = flag.String("fidelity.out", "", "TestScoreboard: write the scoreboard here (docs/fidelity.md)")
	workersFlag = flag.Int("fidelity.workers", 2, "sequences recorded and replayed side by side")
	keepFlag    = flag.String("fidelity.keep", "", "copy every recording and replay tape into this directory")
	shrinkFlag  = flag.String("fidelity.shrink", "", "TestScoreboard: shrink each unclassified divergence and save it as a regression case in this directory")
	seedFlag    = flag.Uint64("fidelity.first", 1, "TestScoreboard: the first seed")
	onlyFlag    = flag.String("fidelity.only", "", "TestScoreboard: run only the harness versions this comma-separated list names (2.1.332,...)")
	harnessFlag = flag.String("fidelity.harness", "", "run only the harnesses this comma-separated list names (claude-code,codex,pi,gemini-cli,opencode,opencode-gpt)")
	callsFlag   = flag.Int("fidelity.calls", 0, "TestScoreboard: run seeds until each harness version made at least this many calls (instead of -fidelity.seeds)")
	ledgerFlag  = flag.String("fidelity.ledger", "", "TestScoreboard: append each outcome to DIR/HARNESS-VERSION.jsonl; the scoreboard then counts every entry of DIR")
)

// wanted says whether the flags select harness version (every one when they name none).
func wanted(harness, version string) bool {
	if *harnessFlag != "" && !slices.Contains(strings.Split(*harnessFlag, ","), harness) {
		return false
	}
	return *onlyFlag == "" || slices.Contains(strings.Split(*onlyFlag, ","), version)
}

// suite pairs a grammar with the targets it runs against.
type suite struct {
	grammar Grammar
	targets []Target
}

// suites lists every harness's grammar and versions.
func suites() []suite {
	return []suite{{Claude, ClaudeTargets()}, {Codex, CodexTargets()}, {Pi, PiTargets()}, {Gemini, GeminiTargets()}, {OpenCode, OpenCodeTargets()}, {OpenCodeGPT, OpenCodeGPTTargets()}}
}

// lock takes a machine-wide lock of the fidelity runs in the directories named name (the
// generated sequences' "targets-HARNESS", the regression cases' "regress-HARNESS"): their
// working directories are fixed absolute paths, so two go test processes must not use them
// at once. The lock is held until the test ends; another harness's runs go on meanwhile.
func lock(t *testing.T, name string) {
	t.Helper()
	// A flock belongs to an open file: a second open of the same lock in this process would
	// wait for the first for ever. The test that took it keeps it.
	heldMu.Lock()
	if held[name] {
		heldMu.Unlock()
		return
	}
	held[name] = true
	heldMu.Unlock()
	t.Cleanup(func() {
		heldMu.Lock()
		delete(held, name)
		heldMu.Unlock()
	})
	f, err := os.OpenFile(filepath.Join(os.TempDir(), "tapebox-fidelity-"+name+".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Minute)
	for syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) != nil {
		if time.Now().After(deadline) {
			f.Close()
			t.Fatal("another go test process held the fidelity lock for 10 minutes")
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Cleanup(func() { f.Close() })
}

// sandboxFlag is the sandbox spec TestScoreboard and TestRegressions replay in; empty is a
// fresh local: sandbox at the sequence's cwd (run.go's Target.Sandbox).
var sandboxFlag = flag.String("fidelity.sandbox", "", "replay in this sandbox spec (docker-image:tapebox/sandbox:bookworm) instead of a local: one")

var (
	heldMu sync.Mutex
	held   = map[string]bool{}
)

// workDir is worker w's working directory for target t.
func workDir(t Target, w int) string {
	return fmt.Sprintf("/tmp/tapebox-fidelity/%s-%s/w%d", t.Harness, t.Version, w)
}

// runSeeds records and replays seeds first..first+n-1 of g against t with workers side by
// side, and hands each outcome to done (on one goroutine at a time). With calls > 0 it
// instead goes on from first until the outcomes hold that many calls.
func runSeeds(ctx context.Context, g Grammar, t Target, first uint64, n, calls, workers int, done func(w int, o *Outcome)) {
	var mu sync.Mutex
	var wg sync.WaitGroup
	next, made := first, 0
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				mu.Lock()
				seed := next
				next++
				enough := made >= calls
				mu.Unlock()
				if (calls > 0 && enough) || (calls <= 0 && seed >= first+uint64(n)) {
					return
				}
				o := Run(ctx, t, NewSequence(g, seed, workDir(t, w)), g.Classes)
				mu.Lock()
				made += len(o.Calls)
				done(w, o)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
}

// TestQuick is the quick seed set of make test: a few sequences per Claude Code version,
// each recorded through the real harness and replayed in a local sandbox. Every divergence
// must belong to a known class.
func TestQuick(t *testing.T) {
	if testing.Short() {
		t.Skip("real harnesses; not in -short")
	}
	for _, s := range suites() {
		for _, target := range s.targets {
			if !wanted(s.grammar.Harness, target.Version) {
				continue
			}
			t.Run(s.grammar.Harness+"-"+target.Version, func(t *testing.T) {
				realharness.Need(t, target.Harness)
				lock(t, "targets-"+target.Harness+"-"+target.Version)
				target.Keep, target.Sandbox = *keepFlag, *sandboxFlag
				var b Board
				// Older versions are slower to start (a node script): fewer sequences.
				n := 2
				if target.Version != s.targets[0].Version {
					n = 1
				}
				runSeeds(t.Context(), s.grammar, target, 1, n, 0, 1, func(_ int, o *Outcome) {
					b.Add(target.Version, o, s.grammar.Classes)
					if o.Err != nil {
						t.Errorf("%v", o.Err)
						return
					}
					for _, d := range o.Unknown() {
						t.Errorf("%s: %s", o.Seq.Name(), d)
					}
				})
				tot := b.Total(s.grammar.Harness, target.Version) // the board keys rows by the grammar (opencode-gpt), not the binary
				if tot.Calls == 0 {
					t.Fatalf("no calls were made")
				}
				t.Logf("%d calls, %d identical; %d sequences, %d end states identical", tot.Calls, tot.Identical, tot.Sequences, tot.EndIdentical)
			})
		}
	}
}

// TestScoreboard is make fidelity: -fidelity.seeds sequences (or -fidelity.calls calls)
// per harness version, the scoreboard written to -fidelity.out. Unclassified divergences
// are shrunk and saved with -fidelity.shrink. It fails when any divergence is
// unclassified. With -fidelity.ledger the outcomes are appended to the ledger and the
// scoreboard counts the whole ledger (runs made in chunks add up); with a ledger and
// neither -fidelity.seeds nor -fidelity.calls it only writes the ledger's scoreboard.
func TestScoreboard(t *testing.T) {
	run := *seedsFlag > 0 || *callsFlag > 0
	if !run && (*ledgerFlag == "" || *outFlag == "") {
		t.Skip("make fidelity runs it (-fidelity.seeds N or -fidelity.calls N; or -fidelity.ledger DIR -fidelity.out FILE to render)")
	}
	var b Board
	start := time.Now()
	executor := executorCommit()
	if run {
		if *ledgerFlag != "" {
			if err := os.MkdirAll(*ledgerFlag, 0o755); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, s := range suites() {
		for _, target := range s.targets {
			if !run || !wanted(s.grammar.Harness, target.Version) {
				continue
			}
			realharness.Need(t, target.Harness)
			lock(t, "targets-"+target.Harness+"-"+target.Version)
			target.Keep, target.Sandbox = *keepFlag, *sandboxFlag
			runSeeds(t.Context(), s.grammar, target, *seedFlag, *seedsFlag, *callsFlag, *workersFlag, func(w int, o *Outcome) {
				b.Add(target.Version, o, s.grammar.Classes)
				if *ledgerFlag != "" {
					e := o.Entry(target.Version)
					e.Executor = executor
					if err := AppendEntry(ledgerFile(s.grammar.Harness, target), e); err != nil {
						t.Error(err)
					}
				}
				if o.Err != nil {
					t.Logf("%s %s: %v", target.Harness, target.Version, o.Err)
				}
				if u := o.Unknown(); len(u) > 0 {
					t.Errorf("%s %s, %s: %d unclassified divergences, first: %s", target.Harness, target.Version, o.Seq.Name(), len(u), u[0])
					if *shrinkFlag != "" {
						shrinkAndSave(t, s.grammar, target, o)
					}
				}
			})
			tot := b.Total(s.grammar.Harness, target.Version) // the board keys rows by the grammar (opencode-gpt), not the binary
			t.Logf("%s %s: %d calls, %d identical; %d sequences, %d end states identical (%v so far)",
				target.Harness, target.Version, tot.Calls, tot.Identical, tot.Sequences, tot.EndIdentical, time.Since(start).Round(time.Second))
		}
	}
	wall := time.Since(start)
	var header string
	if *ledgerFlag != "" {
		var err error
		var n int
		b, n, err = ledgerBoard(*ledgerFlag)
		if err != nil {
			t.Fatal(err)
		}
		header = fmt.Sprintf("Written by `make fidelity` (internal/fidelity, TestScoreboard) from the ledger %s (%d sequences, one JSON line each: "+
			"seed, calls, end state, divergences, the executor's commit; the latest entry of a seed counts). Each sequence is drawn "+
			"from the harness's seeded grammar (Claude Code: internal/fidelity/claude.go; Codex, Pi, Gemini CLI and OpenCode: internal/grammar; opencode-gpt is OpenCode with a GPT model id, which gets apply_patch), recorded "+
			"through the real harness (harnesses/, offline) against the scripted provider and the gateway, then replayed in executor "+
			"mode in a fresh local sandbox at the same path and compared with `tapebox compare`'s comparison: every call and the end "+
			"state. A seed reproduces its sequence: `go test ./internal/fidelity -run TestScoreboard -fidelity.harness H "+
			"-fidelity.only VERSION -fidelity.first SEED -fidelity.seeds 1`. The last column is the time recording and replaying "+
			"took per 1,000 calls, summed over sequences (two to five ran side by side, on a 2-core machine shared with other work; "+
			"Pi is replayed at the harness's pace, so its replays take as long as its recordings). A call the executor copies from the "+
			"recording (counted identical; for Gemini CLI: glob and grep_search calls it cannot reproduce, such as ignore files and "+
			"regular expressions JavaScript, Rust and Go do not read alike, see executor/harness/gemini; calls of tools the request "+
			"did not offer; is_background commands) is marked copied on the tape.",
			"`"+relLedger(*ledgerFlag)+"`", n)
	} else {
		header = fmt.Sprintf("Written by `make fidelity` (internal/fidelity, TestScoreboard): %d generated sequences per harness version "+
			"(seeds from %d), each recorded through the real harness against the scripted provider and the gateway, then replayed in "+
			"executor mode in a fresh %s at the same path and compared with `tapebox compare`'s comparison. Recording and "+
			"replaying took %v of wall time per 1,000 calls with %d sequences side by side (%v in all; %v per 1,000 calls summed over sequences) "+
			"on a 2-core machine shared with other work.",
			*seedsFlag, *seedFlag, sandboxName(), perThousand(wall, &b), *workersFlag, wall.Round(time.Second), b.PerThousand().Round(time.Second))
	}
	md := b.Markdown(header)
	if *outFlag != "" {
		if err := os.WriteFile(*outFlag, []byte(md), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Log("\n" + md)
}

// ledgerFile is the ledger file under -fidelity.ledger of the grammar named harness (the
// target's harness, or a variant of it such as opencode-gpt) at target's version.
func ledgerFile(harness string, t Target) string {
	return filepath.Join(*ledgerFlag, harness+"-"+t.Version+".jsonl")
}

// ledgerBoard counts every ledger file of dir, the latest entry of each harness, version
// and seed, with the classes of this checkout; it returns how many entries counted.
func ledgerBoard(dir string) (Board, int, error) {
	var b Board
	files, err := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	if err != nil {
		return b, 0, err
	}
	classes := map[string][]Class{}
	for _, s := range suites() {
		classes[s.grammar.Harness] = s.grammar.Classes
	}
	type key struct {
		harness, version string
		seed, origin     uint64
	}
	latest := map[key]int{}
	var all []Entry
	for _, f := range files {
		es, err := ReadLedger(f)
		if err != nil {
			return b, 0, err
		}
		for _, e := range es {
			latest[key{e.Harness, e.Version, e.Seed, e.Origin}] = len(all)
			all = append(all, e)
		}
	}
	n := 0
	for i, e := range all {
		if latest[key{e.Harness, e.Version, e.Seed, e.Origin}] == i {
			e.Reclassify(classes[e.Harness])
			b.AddEntry(e, classes[e.Harness])
			n++
		}
	}
	return b, n, nil
}

// relLedger names the ledger directory relative to the repository when it is inside it.
func relLedger(dir string) string {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return dir
	}
	if i := strings.LastIndex(abs, "/docs/"); i >= 0 {
		return abs[i+1:]
	}
	return dir
}

// executorCommit names the checkout the executor was built from: its commit, with
// "+dirty" when the tree has changes (empty when git is not there).
func executorCommit() string {
	out, err := exec.Command("git", "describe", "--always", "--dirty=+dirty", "--abbrev=10").Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

// perThousand is wall time per 1,000 calls over every row of b.
func perThousand(wall time.Duration, b *Board) time.Duration {
	n := 0
	for _, r := range b.Rows() {
		if r.Tool == "all" {
			n += r.Calls
		}
	}
	if n == 0 {
		return 0
	}
	return (wall * 1000 / time.Duration(n)).Round(time.Second)
}

// shrinkAndSave shrinks o's sequence while it still shows an unclassified divergence and
// saves it under -fidelity.shrink.
func shrinkAndSave(t *testing.T, g Grammar, target Target, o *Outcome) {
	t.Helper()
	first := o.Unknown()[0]
	same := func(s *Sequence) bool {
		r := Run(t.Context(), target, s, g.Classes)
		for _, d := range r.Unknown() {
			if d.Field == first.Field && d.Tool == first.Tool {
				return true
			}
		}
		return false
	}
	small := Shrink(t.Context(), g, o.Seq, same)
	small.Note = "unclassified: " + clip(first.String(), 300)
	name := fmt.Sprintf("%s-%s-seed%d.json", target.Harness, target.Version, small.Origin)
	if err := small.Save(filepath.Join(*shrinkFlag, strings.ReplaceAll(name, "/", "-"))); err != nil {
		t.Error(err)
	}
	t.Logf("shrunk %s to %d calls, %d files: %s", o.Seq.Name(), len(small.Calls), len(small.Files), name)
}

// TestRegressions replays every case saved under testdata/ (shrunk divergences, and cases
// written by hand for a fixed cause) through the real harness and the executor: each must
// replay identical, or show only its Known class.
func TestRegressions(t *testing.T) {
	if testing.Short() {
		t.Skip("real harnesses; not in -short")
	}
	files, err := filepath.Glob("testdata/*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no regression cases in testdata/ (%v)", err)
	}
	for _, file := range files {
		seq, err := Load(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range suites() {
			if s.grammar.Harness != seq.Harness {
				continue
			}
			for _, target := range s.targets {
				if (seq.Version != "" && seq.Version != target.Version) || !wanted(s.grammar.Harness, target.Version) {
					continue
				}
				t.Run(strings.TrimSuffix(filepath.Base(file), ".json")+"/"+target.Version, func(t *testing.T) {
					realharness.Need(t, target.Harness)
					lock(t, "regress-"+target.Harness+"-"+target.Version)
					target.Keep, target.Sandbox = *keepFlag, *sandboxFlag
					o := Run(t.Context(), target, seq, s.grammar.Classes)
					if o.Err != nil {
						t.Fatal(o.Err)
					}
					if len(o.Calls) != len(seq.Calls) {
						t.Errorf("the harness made %d calls, the case has %d", len(o.Calls), len(seq.Calls))
					}
					for _, d := range o.Divergences {
						if seq.Known == "" || d.Class != seq.Known {
							t.Errorf("%s", d)
						}
					}
				})
			}
		}
	}
}

// sandboxName words -fidelity.sandbox for the scoreboard's header.
func sandboxName() string {
	if *sandboxFlag == "" {
		return "local sandbox"
	}
	return "`" + *sandboxFlag + "` sandbox"
}
