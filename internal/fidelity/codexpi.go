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
	"time"

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

// PiTargets returns Pi at PiVersion and PiOldVersion, each offered PiTools, replayed at
// the recording's pace: Pi leaves a command's background jobs running, and without the
// pace the replay's later calls and its end state came before a job's file (a fifth of
// the sequences' end states differed). The recording waits for such a job (runPi's
// Linger) and then PiSettle more, so that the replay, which reads its end state as long
// after its last response, meets its own job's file even when the job ran late.
func PiTargets() []Target {
	return []Target{
		{Harness: realharness.Pi, Version: PiVersion, Run: withoutCaps(runPi), Declare: true, Pace: true, Settle: PiSettle},
		{Harness: realharness.Pi, Version: PiOldVersion, Run: withoutCaps(withAlias(realharness.Pi, PiOldAlias, runPi)), Declare: true, Pace: true, Settle: PiSettle},
	}
}

// PiSettle is Target.Settle for Pi: on a machine loaded many times over (a load of 25 on
// 2 cores), a job's 0.3 s sleep and its write came some hundreds of milliseconds later in
// the replay than in the recording.
const PiSettle = time.Second

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
	// Pi runs a command in a session of its own (detached): a job the command left behind
	// outlives Pi as it would in a terminal, for the recording's end state to see (the
	// replay waits for the recording's tail, HarnessPace), and is killed after Linger.
	o.Linger = 2 * time.Second
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

// truncMarker is Codex's mark of the middle of an output it cut.
var truncMarker = regexp.MustCompile(`…[0-9]+ tokens truncated…`)

// sameTruncated says whether two outputs Codex cut differ only in what the cut kept: the
// same header up to the line count, the same count of tokens cut (the same output in
// another order, of which the head and tail kept differ).
func sameTruncated(d Divergence) bool {
	const lines = "\nTotal output lines: "
	i, j := strings.Index(d.Recorded, lines), strings.Index(d.Replayed, lines)
	if i < 0 || i != j || len(d.Recorded) != len(d.Replayed) {
		return false
	}
	eol := strings.IndexByte(d.Recorded[i+1:], '\n')
	if eol < 0 || d.Recorded[:i+1+eol] != d.Replayed[:i+1+eol] {
		return false
	}
	a, b := truncMarker.FindString(d.Recorded), truncMarker.FindString(d.Replayed)
	return a != "" && a == b
}

// shellTools are the tools that run a command.
var shellTools = []string{"exec_command", "write_stdin", "shell", "bash"}

// interleaving is the class of both harnesses' two pipes.
var interleaving = Class{Name: "stdout/stderr interleaving", Field: "tool_result",
	Reason: "without a tty Codex and Pi read stdout and stderr from two pipes as they arrive: writes to both within the same " +
		"instant interleave differently from run to run; the same bytes, in another order (or, in an output Codex cut to its " +
		"token budget, the same count cut from another order)",
	Match: func(d Divergence) bool {
		return slices.Contains(shellTools, d.Tool) && !hasInput(d, "tty") && (sameBytes(d) || sameTruncated(d))
	}}

// backgroundRace is the class of a call that lists a background job's file a moment
// after the job started.
var backgroundRace = Class{Name: "background job against the harness's pace", Text: regexp.MustCompile(`bg-[0-9]+\.txt`),
	Reason: "a job started with & writes its file 0.3 s later; a call one or two turns after it sees the file or not by some tens " +
		"of milliseconds of the harness's time between turns, which the replay reproduces only on average (HarnessPace: the " +
		"gaps, not where in each gap the harness ran the tool)"}

var (
	sessionRunning = regexp.MustCompile(`(?m)^Process running with session ID [0-9]+$`)
	sessionExited  = regexp.MustCompile(`(?m)^Process exited with code -?[0-9]+$`)
)

// sessionYield is the class of a session whose command ends close to its yield.
var sessionYield = Class{Name: "a session's end against its yield on a loaded machine", Tool: "exec_command", Field: "tool_result",
	Reason: "exec_command answers when its yield runs out (Codex waits 150 ms for an early exit, then yield_time_ms, at least 250 ms): " +
		"whether a command due to end soon after (sleep 0.5; cat; echo closed, about 100 ms after) is still running then or has " +
		"exited depends on when each process got the CPU, in the recording and in the replay alike, on a machine loaded many " +
		"times over; the later write_stdin calls to the session then find it gone on one side only",
	Match: func(d Divergence) bool {
		return hasInput(d, "session") && (sessionRunning.MatchString(d.Recorded) && sessionExited.MatchString(d.Replayed) ||
			sessionExited.MatchString(d.Recorded) && sessionRunning.MatchString(d.Replayed))
	},
	Follow: func(d Divergence) bool {
		const gone = "write_stdin failed: Unknown process id"
		return d.Tool == "write_stdin" && strings.Contains(d.Recorded, gone) != strings.Contains(d.Replayed, gone)
	}}

// codexClasses are the divergences of Codex the executor does not reproduce.
var codexClasses = []Class{
	interleaving,
	backgroundRace,
	sessionYield,
	{Name: "terminal in the harness's home",
		Reason: "a tty command whose workdir is missing runs in HOME (portable-pty), which holds the harness's own state (~/.codex) " +
			"in the recording and nothing in the replay",
		Match: func(d Divergence) bool { return hasInput(d, "tty") && hasInput(d, "odd-workdir") }},
}

// piClasses are the divergences of Pi the executor does not reproduce.
var piClasses = []Class{
	interleaving,
	backgroundRace,
	{Name: "ripgrep's order", Tool: "grep", Field: "tool_result",
		Reason: "Pi's grep lists matches in the order ripgrep's parallel walk finds them, which changes from run to run; the " +
			"executor keeps the recording's order of the lines both have, but under a limit the lines themselves can differ, and " +
			"with context lines of several files the order of the files can",
		Match: func(d Divergence) bool {
			limited := hasInput(d, "+limit") || strings.Contains(d.Recorded, "matches limit reached")
			return limited || sameBytes(d)
		}},
	{Name: "Pi's timeout fired late", Tool: "bash", Field: "tool_result",
		Reason: "on a loaded machine Pi's timer killed the command (echo before; sleep 3; echo never, timeout 1) only after it had " +
			"printed its last line; the executor's fired at the timeout",
		Match: func(d Divergence) bool {
			const to = "Command timed out after"
			return strings.Contains(d.Recorded, to) && strings.Contains(d.Replayed, to) && len(d.Recorded) > len(d.Replayed)
		}},
	{Name: "Pi before 0.73: the pipe's read sizes", Version: "0.6", Tool: "bash", Field: "tool_result", Text: regexp.MustCompile(`\[Showing `),
		Reason: "Pi up to 0.72 formats the last of the chunks its pipe reads delivered while they held more than 100 KB; the " +
			"executor assumes 64 KiB reads (a fast writer's), which is what the recording shows most of the time, but the reads " +
			"are smaller when the writer or the machine is slow, and the lines shown differ"},
}
