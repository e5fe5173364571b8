package fidelity

import (
	"context"
	"flag"
	"fmt"
	"os"
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
)

// suite pairs a grammar with the targets it runs against.
type suite struct {
	grammar Grammar
	targets []Target
}

// suites lists every harness's grammar and versions. Codex and Pi add theirs here.
func suites() []suite {
	return []suite{{Claude, ClaudeTargets()}}
}

// lock takes a machine-wide lock of the fidelity runs in the directories named name (the
// generated sequences' "targets", the regression cases' "regress"): their working
// directories are fixed absolute paths, so two go test processes must not use them at once.
func lock(t *testing.T, name string) {
	t.Helper()
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

// workDir is worker w's working directory for target t.
func workDir(t Target, w int) string {
	return fmt.Sprintf("/tmp/tapebox-fidelity/%s-%s/w%d", t.Harness, t.Version, w)
}

// runSeeds records and replays seeds first..first+n-1 of g against t with workers side by
// side, and hands each outcome to done (on one goroutine at a time).
func runSeeds(ctx context.Context, g Grammar, t Target, first uint64, n, workers int, done func(w int, o *Outcome)) {
	var mu sync.Mutex
	var wg sync.WaitGroup
	next := first
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				mu.Lock()
				seed := next
				next++
				mu.Unlock()
				if seed >= first+uint64(n) {
					return
				}
				o := Run(ctx, t, NewSequence(g, seed, workDir(t, w)), g.Classes)
				mu.Lock()
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
	realharness.Need(t, realharness.Claude)
	lock(t, "targets")
	for _, s := range suites() {
		for _, target := range s.targets {
			t.Run(target.Harness+"-"+target.Version, func(t *testing.T) {
				target.Keep, target.Sandbox = *keepFlag, *sandboxFlag
				var b Board
				// Older versions are slower to start (a node script): fewer sequences.
				n := 2
				if target.Version != s.targets[0].Version {
					n = 1
				}
				runSeeds(t.Context(), s.grammar, target, 1, n, 1, func(_ int, o *Outcome) {
					b.Add(target.Version, o, s.grammar.Classes)
					if o.Err != nil {
						t.Errorf("%v", o.Err)
						return
					}
					for _, d := range o.Unknown() {
						t.Errorf("%s: %s", o.Seq.Name(), d)
					}
				})
				tot := b.Total(target.Harness, target.Version)
				if tot.Calls == 0 {
					t.Fatalf("no calls were made")
				}
				t.Logf("%d calls, %d identical; %d sequences, %d end states identical", tot.Calls, tot.Identical, tot.Sequences, tot.EndIdentical)
			})
		}
	}
}

// TestScoreboard is make fidelity: -fidelity.seeds sequences per harness version, the
// scoreboard written to -fidelity.out. Unclassified divergences are shrunk and saved with
// -fidelity.shrink. It fails when any divergence is unclassified.
func TestScoreboard(t *testing.T) {
	if *seedsFlag == 0 {
		t.Skip("make fidelity runs it (-fidelity.seeds N)")
	}
	realharness.Need(t, realharness.Claude)
	lock(t, "targets")
	var b Board
	start := time.Now()
	for _, s := range suites() {
		for _, target := range s.targets {
			if *onlyFlag != "" && !slices.Contains(strings.Split(*onlyFlag, ","), target.Version) {
				continue
			}
			target.Keep, target.Sandbox = *keepFlag, *sandboxFlag
			runSeeds(t.Context(), s.grammar, target, *seedFlag, *seedsFlag, *workersFlag, func(w int, o *Outcome) {
				b.Add(target.Version, o, s.grammar.Classes)
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
			tot := b.Total(target.Harness, target.Version)
			t.Logf("%s %s: %d calls, %d identical; %d sequences, %d end states identical (%v so far)",
				target.Harness, target.Version, tot.Calls, tot.Identical, tot.Sequences, tot.EndIdentical, time.Since(start).Round(time.Second))
		}
	}
	wall := time.Since(start)
	header := fmt.Sprintf("Written by `make fidelity` (internal/fidelity, TestScoreboard): %d generated sequences per harness version "+
		"(seeds %d to %d), each recorded through the real harness against the scripted provider and the gateway, then replayed in "+
		"executor mode in a fresh %s at the same path and compared with `tapebox compare`'s comparison. Recording and "+
		"replaying took %v of wall time per 1,000 calls with %d sequences side by side (%v in all; %v per 1,000 calls summed over sequences) "+
		"on a 2-core machine shared with other work.",
		*seedsFlag, *seedFlag, *seedFlag+uint64(*seedsFlag)-1, sandboxName(), perThousand(wall, &b), *workersFlag, wall.Round(time.Second), b.PerThousand().Round(time.Second))
	md := b.Markdown(header)
	if *outFlag != "" {
		if err := os.WriteFile(*outFlag, []byte(md), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Log("\n" + md)
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
	realharness.Need(t, realharness.Claude)
	lock(t, "regress")
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
				if seq.Version != "" && seq.Version != target.Version {
					continue
				}
				t.Run(strings.TrimSuffix(filepath.Base(file), ".json")+"/"+target.Version, func(t *testing.T) {
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
