package cli

import (
	"context"

	"github.com/tapebox/tapebox/controller"
)

func init() {
	register(&command{name: "compare", summary: "diff a replay against its recording step by step", run: runCompare})
}

func runCompare(ctx context.Context, env *Env, args []string) int {
	fs := newFlagSet(env, "compare", "[--json] RECORDING REPLAY", `
Diffs two tapes step by step: tool calls (after identifier substitution), tool results (with the
harness's volatile fields, such as Codex wall times and chunk ids, ignored), stop reasons, and
whether every thread was played to its end. Exits 0 when the replay is identical, 1 when it did
not reach the end or differs.`)
	asJSON := fs.Bool("json", false, "print the report as JSON")
	if code, done := parse(env, fs, args); done {
		return code
	}
	if fs.NArg() != 2 {
		return usageError(env, fs, "want two tapes: the recording and the replay")
	}
	rec, code := loadValidTape(env, "compare", fs.Arg(0))
	if rec == nil {
		return code
	}
	rep, code := loadValidTape(env, "compare", fs.Arg(1))
	if rep == nil {
		return code
	}
	r := controller.Compare(rec, rep)
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
