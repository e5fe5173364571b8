package fidelity

import (
	"context"
	"io/fs"
	"math/rand/v2"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/tapebox/tapebox/internal/grammar"
	codexgrammar "github.com/tapebox/tapebox/internal/grammar/codex"
	pigrammar "github.com/tapebox/tapebox/internal/grammar/pi"
	"github.com/tapebox/tapebox/internal/testutil/realharness"
)

// Codex and Pi draw their sequences from the grammars of package internal/grammar
// (internal/grammar/codex, internal/grammar/pi), which the conformance suite shares: each
// sequence is 10 to 30 calls on a workspace of files of every class. A Call's Class is the
// grammar's input classes joined by spaces ("session tty").

// Codex is the grammar of the Codex CLI's tools: exec_command and write_stdin (tty and
// not, sessions whose id the harness makes up), apply_patch (a freeform tool), shell, and
// tools the request does not offer.
var Codex = Grammar{
	Harness:  realharness.Codex,
	Generate: fromGrammar(codexgrammar.Generate),
	Simplify: SimplifyStrings("chars"),
	Classes:  codexClasses,
}

// Pi is the grammar of the pi coding agent's tools: read, bash, edit, write, ls, grep,
// and tools the request does not offer.
var Pi = Grammar{
	Harness:  realharness.Pi,
	Generate: fromGrammar(pigrammar.Generate),
	Simplify: SimplifyStrings("content", "newText"),
	Classes:  piClasses,
}

// fromGrammar adapts a generator of package internal/grammar to Grammar.Generate.
func fromGrammar(gen func(r *rand.Rand, n int) grammar.Sequence) func(r *rand.Rand, cwd string) ([]File, []Call) {
	return func(r *rand.Rand, _ string) ([]File, []Call) {
		s := gen(r, 10+r.IntN(21))
		files := make([]File, 0, len(s.Before))
		for _, f := range s.Before {
			out := File{Path: f.Path, Data: []byte(f.Content), Dir: f.Dir, Link: f.Link}
			if m, err := strconv.ParseUint(f.Mode, 8, 32); err == nil && f.Link == "" {
				out.Mode = fs.FileMode(m)
			}
			files = append(files, out)
		}
		calls := make([]Call, 0, len(s.Calls))
		for i, c := range s.Calls {
			kind := ""
			if c.Kind == "custom" {
				kind = "custom"
			}
			calls = append(calls, Call{Tool: c.Name, Input: c.Input, Class: strings.Join(s.Classes[i], " "), Kind: kind})
		}
		return files, calls
	}
}

// Versions the generator runs: the pinned ones (harnesses/package.json) and an older one
// of each under an npm alias: Codex 0.161 (before apply_patch kept CRLF), Pi 0.67 (older
// edit errors and bash truncation).
const (
	CodexVersion    = "0.171.0"
	CodexOldVersion = "0.161.0"
	CodexOldAlias   = "codex-0.161"
	PiVersion       = "0.73.1"
	PiOldVersion    = "0.67.1"
	PiOldAlias      = "pi-0.67"
)

// PiTools are the tools the generator offers Pi (--tools): its defaults, ls and grep.
var PiTools = pigrammar.Offered

// CodexTargets returns Codex at CodexVersion and CodexOldVersion.
func CodexTargets() []Target {
	return []Target{
		{Harness: realharness.Codex, Version: CodexVersion, Run: withoutCaps(realharness.RunCodex)},
		{Harness: realharness.Codex, Version: CodexOldVersion, Run: withoutCaps(withAlias(realharness.Codex, CodexOldAlias, realharness.RunCodex))},
	}
}

// PiTargets returns Pi at PiVersion and PiOldVersion, each offered PiTools.
func PiTargets() []Target {
	return []Target{
		{Harness: realharness.Pi, Version: PiVersion, Run: withoutCaps(runPi), Declare: true},
		{Harness: realharness.Pi, Version: PiOldVersion, Run: withoutCaps(withAlias(realharness.Pi, PiOldAlias, runPi)), Declare: true},
	}
}

// NoCaps is the command a harness run by root runs under (realharness.Options.Wrap) so
// that it has the privileges the executor has in the local sandbox, which drops every
// capability (bwrap --cap-drop ALL): a root without CAP_DAC_OVERRIDE cannot write a file
// of mode 0444, and the harness must meet the same refusal, or every write to a read-only
// file of the grammar's workspace differs for a reason that is the test's, not the
// executor's.
var NoCaps = []string{"setpriv", "--bounding-set=-all", "--inh-caps=-all"}

// withoutCaps runs the harness under NoCaps when the test runs as root.
func withoutCaps(run func(context.Context, realharness.Options) (realharness.Result, error)) func(context.Context, realharness.Options) (realharness.Result, error) {
	return func(ctx context.Context, o realharness.Options) (realharness.Result, error) {
		if os.Getuid() == 0 {
			o.Wrap = NoCaps
		}
		return run(ctx, o)
	}
}

func runPi(ctx context.Context, o realharness.Options) (realharness.Result, error) {
	o.Args = append(o.Args, "--tools", strings.Join(PiTools, ","))
	return realharness.RunPi(ctx, o)
}

// withAlias runs the version of harness installed under an npm alias.
func withAlias(harness, alias string, run func(context.Context, realharness.Options) (realharness.Result, error)) func(context.Context, realharness.Options) (realharness.Result, error) {
	return func(ctx context.Context, o realharness.Options) (realharness.Result, error) {
		bin, err := realharness.AliasPath(harness, alias)
		if err != nil {
			return realharness.Result{}, err
		}
		o.Bin = bin
		return run(ctx, o)
	}
}

// hasInput says whether a divergence's call was drawn from an input class containing c.
func hasInput(d Divergence, c string) bool {
	return slices.ContainsFunc(strings.Fields(d.Input), func(k string) bool { return strings.Contains(k, c) })
}

// sameBytes says whether the two sides of a difference hold the same bytes in another
// order (two pipes read as the bytes arrive).
func sameBytes(d Divergence) bool {
	if d.Recorded == d.Replayed || len(d.Recorded) != len(d.Replayed) || d.Recorded == "" {
		return false
	}
	a, b := []byte(d.Recorded), []byte(d.Replayed)
	slices.Sort(a)
	slices.Sort(b)
	return string(a) == string(b)
}

// shellTools are the tools that run a command.
var shellTools = []string{"exec_command", "write_stdin", "shell", "bash"}

// interleaving is the class of both harnesses' two pipes.
var interleaving = Class{Name: "stdout/stderr interleaving", Field: "tool_result",
	Reason: "without a tty Codex and Pi read stdout and stderr from two pipes as they arrive: writes to both within the same " +
		"instant interleave differently from run to run; the same bytes, in another order",
	Match: func(d Divergence) bool {
		return slices.Contains(shellTools, d.Tool) && !hasInput(d, "tty") && sameBytes(d)
	}}

// codexClasses are the divergences of Codex the executor does not reproduce.
var codexClasses = []Class{
	interleaving,
	{Name: "terminal in the harness's home",
		Reason: "a tty command whose workdir is missing runs in HOME (portable-pty), which holds the harness's own state (~/.codex) " +
			"in the recording and nothing in the replay",
		Match: func(d Divergence) bool { return hasInput(d, "tty") && hasInput(d, "odd-workdir") }},
}

// piClasses are the divergences of Pi the executor does not reproduce.
var piClasses = []Class{
	interleaving,
	{Name: "ripgrep's order", Tool: "grep", Field: "tool_result",
		Reason: "Pi's grep lists matches in the order ripgrep's parallel walk finds them, which changes from run to run; the " +
			"executor keeps the recording's order of the lines both have, but under a limit the lines themselves can differ, and " +
			"with context lines of several files the order of the files can",
		Match: func(d Divergence) bool { return hasInput(d, "+limit") || sameBytes(d) }},
	{Name: "Pi before 0.73: the pipe's read sizes", Version: "0.6", Tool: "bash", Field: "tool_result", Text: regexp.MustCompile(`\[Showing `),
		Reason: "Pi up to 0.72 formats the last of the chunks its pipe reads delivered while they held more than 100 KB; the " +
			"executor assumes 64 KiB reads (a fast writer's), which is what the recording shows most of the time, but the reads " +
			"are smaller when the writer or the machine is slow, and the lines shown differ"},
}
