package cli

import (
	"context"
	"fmt"
	"maps"
	"os"
	"runtime/debug"
	"strings"

	"github.com/tapebox/tapebox/compare"
	"github.com/tapebox/tapebox/fork"
	"github.com/tapebox/tapebox/tape"
)

func init() {
	register(&command{name: "compare", summary: "diff a replay against its recording step by step", run: runCompare})
}

func runCompare(ctx context.Context, env *Env, args []string) int {
	fs := newFlagSet(env, "compare", "[--json] RECORDING REPLAY", `
Diffs two tapes step by step: tool calls (after identifier substitution), tool results (with the
harness's volatile fields, such as Codex wall times and chunk ids, ignored), stop reasons, and
whether every thread was played to its end. Exits 0 when the replay is identical, 1 when it did
not reach the end or differs. It reads the normalized fields only, not the raw bodies and
streams, so large tapes take little memory.

When REPLAY is a fork of RECORDING (tapebox fork: meta.forked_from names it), compare reports
the fork point, the common prefix and the first step where the timelines part, then each
side's models, steps, tool calls, tokens, cost (from the price table; unknown for a model it
lacks) and end state, and the end-state differences; it exits 0 (a fork is meant to differ).`)
	asJSON := fs.Bool("json", false, "print the report as JSON")
	var pricesFile string
	pricesFlag(fs, &pricesFile, "for a fork's costs")
	if code, done := parse(env, fs, args); done {
		return code
	}
	if fs.NArg() != 2 {
		return usageError(env, fs, "want two tapes: the recording and the replay")
	}
	defer limitMemory(env)()
	rec, code := loadValidSummary(env, "compare", fs.Arg(0))
	if rec == nil {
		return code
	}
	rep, code := loadValidSummary(env, "compare", fs.Arg(1))
	if rep == nil {
		return code
	}
	if fork.IsForkOf(rec, rep) { // given the other way round
		rec, rep = rep, rec
	}
	if fork.IsForkOf(rep, rec) {
		table, err := loadPrices(pricesFile)
		if err != nil {
			return failf(env, "compare", "%v", err)
		}
		c := fork.Compare(rec, rep, table)
		if *asJSON {
			writeJSON(env.Stdout, c)
		} else {
			c.WriteText(env.Stdout)
		}
		return ExitOK
	}
	if why := unrelated(rec, rep); len(why) > 0 {
		fmt.Fprintf(env.Stderr, "tapebox compare: warning: %s and %s look like runs of different things (%s); %s is not a replay of %s (meta.replay_of)\n",
			fs.Arg(0), fs.Arg(1), strings.Join(why, "; "), fs.Arg(1), fs.Arg(0))
	}
	r := compare.Compare(rec, rep)
	if *asJSON {
		writeJSON(env.Stdout, r)
	} else {
		r.WriteText(env.Stdout)
	}
	if !r.Identical {
		return ExitFailure
	}
	return ExitOK
}

// loadValidSummary reads a tape without its bodies (tape.StripBodies, which checks that the
// whole file is JSON) and checks the rest against the schema as loadValidTape does, printing
// every problem: what it holds is what compare reads.
func loadValidSummary(env *Env, verb, path string) (*tape.Tape, int) {
	f, err := os.Open(path)
	if err != nil {
		return nil, failf(env, verb, "%v", err)
	}
	defer f.Close()
	data, err := tape.StripBodies(f)
	if err != nil {
		return nil, failf(env, verb, "%s: %v", path, err)
	}
	return decodeValidTape(env, verb, path, data)
}

// summaryMemoryLimit is the soft memory limit (runtime/debug.SetMemoryLimit) inspect and
// compare run under. What they hold is the tapes' normalized fields, but decoding them and
// comparing tool results make garbage, which the collector would otherwise let grow to the
// size of what is live before it runs: with the limit it runs sooner as the heap nears 192
// MiB. It is a target, not a cap: a larger live set still loads, at the cost of more
// collections.
const summaryMemoryLimit = 192 << 20

// limitMemory sets summaryMemoryLimit unless GOMEMLIMIT chooses a limit, and returns what
// restores the previous one.
func limitMemory(env *Env) (restore func()) {
	if env.Getenv("GOMEMLIMIT") != "" {
		return func() {}
	}
	prev := debug.SetMemoryLimit(summaryMemoryLimit)
	return func() { debug.SetMemoryLimit(prev) }
}

// unrelated says how two tapes that are not a recording and its replay (rep's
// meta.replay_of does not name rec, nor the other way round) differ in what they ran: the
// harness, the task, the opening prompt of the main thread. Nothing when they agree.
func unrelated(rec, rep *tape.Tape) []string {
	replayOf := func(a, b *tape.Tape) bool { return a.Meta.ReplayOf != nil && *a.Meta.ReplayOf == b.Meta.TapeID }
	if replayOf(rep, rec) || replayOf(rec, rep) {
		return nil
	}
	var why []string
	if a, b := rec.Meta.Harness, rep.Meta.Harness; a != "" && b != "" && a != b {
		why = append(why, "harness "+a+" vs "+b)
	}
	if a, b := rec.Meta.Task, rep.Meta.Task; len(a) > 0 && len(b) > 0 && !maps.Equal(a, b) {
		why = append(why, "another task")
	}
	if a, b := openingPrompt(rec), openingPrompt(rep); a != "" && b != "" && a != b {
		why = append(why, "another opening prompt")
	}
	return why
}

// openingPrompt is the text of the first user message of the main thread's first request.
func openingPrompt(tp *tape.Tape) string {
	m := tp.Main()
	if m == nil || len(m.Steps) == 0 {
		return ""
	}
	for _, msg := range m.Steps[0].Request.Messages {
		if msg.Role != "user" {
			continue
		}
		var b strings.Builder
		for _, bl := range msg.Content {
			b.WriteString(bl.Text)
		}
		return b.String()
	}
	return ""
}
