package cli

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/tapebox/tapebox/fork"
	"github.com/tapebox/tapebox/prices"
	"github.com/tapebox/tapebox/tape"
)

func init() {
	register(&command{name: "fork", summary: "run an agent from step N of a tape onto a live model (another model, another prompt)", run: runFork})
}

// forkFlags are tapebox fork's flags.
type forkFlags struct {
	tapePath, thread, upstream, model, models, systemAppend, output, workdir, verify, pricesPath, sandbox, listen string
	at, jobs                                                                                                      int
	speed                                                                                                         float64
	noWorkspace, asJSON, quiet, inPlace                                                                           bool
	env                                                                                                           listFlag // --env, resolved to NAME=VALUE
}

func runFork(ctx context.Context, env *Env, args []string) int {
	fs := newFlagSet(env, "fork", "--tape run.json --at N [flags] -- CMD ARGS...", `
Runs CMD (the real harness) from step N of a recording onto a live model. The recording's start
snapshot is restored into the working directory (a fresh temporary directory; --workdir DIR names
one, --in-place takes the tape's meta.cwd, where it ran: either must be missing or empty, and
neither a system directory nor a home directory or a hidden one in it), and CMD runs there
against a server on a free loopback port (ANTHROPIC_BASE_URL, OPENAI_BASE_URL,
GOOGLE_GEMINI_BASE_URL, TAPEBOX_GATEWAY_URL set as tapebox record sets them, and a codex, gemini
or opencode CMD set up as record sets it up: Codex's -c provider overrides, Gemini CLI's
temporary GEMINI_CLI_HOME, OpenCode's temporary OPENCODE_CONFIG). CMD runs on this machine with your rights,
not in a sandbox, and the tool calls of the steps before N come from the tape: one warning line
says so. With --sandbox docker-image:IMAGE, CMD runs in a fresh container of IMAGE instead (the
image must hold the harness), which reaches the server on the Docker bridge's address.

That server is the simulator before the fork point and the gateway after it: the steps before N
of the chosen thread, and the steps of other threads that ended before step N was asked for,
are answered from the tape (paced by --speed, default 0: no waiting), the harness running their
tool calls for real; from step N on every call goes to --upstream, with --model and
--system-append applied, and is recorded. N is the step number as inspect prints it (from 0).

The fork tape (--output) is a complete tape: meta.forked_from holds the recording's id, the
fork point, how many steps of each thread were served from the tape, and the overrides. A
harness that stops matching the recording before N ends the fork as diverged, naming the step
and what differed, with no upstream call made.

--models a,b,c runs one fork per model (one after the other, or --jobs at a time, each then in
its own directory), runs --verify in each fork's final workspace, and prints a table: model,
verify verdict, steps, tokens in and out, cost, wall time, fork tape.

Exit codes: CMD's exit code for one fork; 1 when the fork point was not reached or a fork
failed to run; 2 for a usage error.`)
	var f forkFlags
	fs.StringVar(&f.tapePath, "tape", "", "the recording to fork (required)")
	fs.IntVar(&f.at, "at", -1, "the fork point: the first step of --thread that goes upstream, numbered from 0 as inspect prints it (required)")
	fs.StringVar(&f.thread, "thread", "", "the thread of the fork point (default the main thread)")
	fs.StringVar(&f.upstream, "upstream", "", "where the live calls go (a provider's base URL; default the provider's public API)")
	fs.StringVar(&f.model, "model", "", "replace the model field of every live request")
	fs.StringVar(&f.models, "models", "", "comma-separated models: one fork per model, and a table (see --verify)")
	fs.StringVar(&f.systemAppend, "system-append", "", "text appended to the system prompt of every live request")
	fs.StringVar(&f.output, "output", "fork.json", "the fork tape; with --models, <stem>.<model>.json")
	fs.StringVar(&f.workdir, "workdir", "", "where the workspace is restored and CMD runs (missing or empty; no system or home directory); default a fresh temporary directory. With --models, fork i's final workspace is <workdir>.fork-<model>")
	fs.BoolVar(&f.inPlace, "in-place", false, "work in the tape's meta.cwd, where it was recorded (missing or empty), so that a harness's absolute paths match; default a fresh directory")
	fs.StringVar(&f.sandbox, "sandbox", "", "docker-image:IMAGE runs CMD in a fresh container of IMAGE, which must hold the harness: the workspace restored into its --workdir (default meta.cwd), a bridge network to reach the fork on the Docker bridge's address, the end manifest read from it, --verify run in it")
	fs.StringVar(&f.verify, "verify", "", "a shell command run in each fork's final workspace (sh -c); exit 0 passes")
	fs.IntVar(&f.jobs, "jobs", 1, "with --models, how many forks run at once (more than 1: each in <workdir>.fork-<model>, so a harness that names absolute paths may diverge)")
	fs.Float64Var(&f.speed, "speed", 0, "pacing of the served steps: 1 as recorded, 2 twice as fast, 0 no waiting")
	fs.BoolVar(&f.noWorkspace, "no-workspace", false, "do not restore the start snapshot (only create the directory) nor record the fork's workspace")
	pricesFlag(fs, &f.pricesPath, "for each model's cost")
	fs.BoolVar(&f.asJSON, "json", false, "print the result (or the --models table) as JSON on stdout; CMD's stdout then goes to stderr")
	fs.BoolVar(&f.quiet, "quiet", false, "no log line per call")
	allowTampered := allowTamperedFlag(fs)
	fs.StringVar(&f.listen, "listen", "", "address the fork server listens on (default a free loopback port), for a harness configured by hand")
	fs.Var(&f.env, "env", "with --sandbox, a variable for CMD in the container, which gets none of this machine's: NAME=VALUE, or NAME for its value here (an API key); repeatable")
	if code, done := parseCommand(env, fs, args); done {
		return code
	}
	for i, kv := range f.env {
		name, _, hasValue := strings.Cut(kv, "=")
		switch {
		case name == "":
			return usageError(env, fs, "--env %q: want NAME or NAME=VALUE", kv)
		case f.sandbox == "":
			return usageError(env, fs, "--env goes with --sandbox (on this machine CMD gets its environment)")
		case !hasValue:
			v := env.Getenv(name)
			if v == "" {
				return usageError(env, fs, "--env %s: not set on this machine (or empty)", name)
			}
			f.env[i] = name + "=" + v
		}
	}
	argv := fs.Args()
	switch {
	case f.tapePath == "":
		return usageError(env, fs, "--tape is required")
	case f.at < 0:
		return usageError(env, fs, "--at N is required (N from 0, as inspect numbers the steps)")
	case len(argv) == 0:
		return usageError(env, fs, "no command: tapebox fork --tape run.json --at N -- CMD ARGS...")
	case f.models != "" && f.model != "":
		return usageError(env, fs, "--model and --models exclude each other")
	case f.jobs < 1:
		return usageError(env, fs, "--jobs %d: want 1 or more", f.jobs)
	case f.verify != "" && f.models == "":
		return usageError(env, fs, "--verify goes with --models")
	case f.listen != "" && (f.sandbox != "" || f.jobs > 1):
		return usageError(env, fs, "--listen goes with a fork on this machine, one at a time (not with --sandbox or --jobs above 1)")
	}
	if f.listen != "" {
		if _, _, err := net.SplitHostPort(f.listen); err != nil {
			return usageError(env, fs, "--listen %s: %v", f.listen, err)
		}
	}
	table, err := loadPrices(f.pricesPath)
	if err != nil {
		return failf(env, "fork", "%v", err)
	}
	rec, code := loadTapeToAct(env, "fork", f.tapePath, *allowTampered)
	if rec == nil {
		return code
	}
	if _, err := fork.Check(rec, f.thread, f.at); err != nil {
		return failf(env, "fork", "%s: %v", f.tapePath, err)
	}
	if f.inPlace && f.workdir != "" {
		return usageError(env, fs, "--in-place and --workdir exclude each other")
	}
	if f.sandbox == "" {
		dir, _, err := fork.HostWorkdir(f.workdir, f.inPlace, rec)
		if err != nil {
			return failf(env, "fork", "%v", err)
		}
		f.workdir = dir
		fmt.Fprintf(env.Stderr, "tapebox fork: warning: %s, in %s; --sandbox docker-image:IMAGE runs it in a container\n", fork.HostNote, dir)
	}
	if f.models == "" {
		return forkOne(ctx, env, &f, rec, argv, table)
	}
	return forkModels(ctx, env, &f, rec, argv, table)
}

func (f *forkFlags) options(env *Env, rec *tape.Tape, argv []string, model, output, workdir string, stdout io.Writer, logPrefix string) fork.Options {
	logf := func(format string, args ...any) {
		if !f.quiet {
			fmt.Fprintf(env.Stderr, "tapebox fork: %s%s\n", logPrefix, fmt.Sprintf(format, args...))
		}
	}
	return fork.Options{
		Config: fork.Config{Recording: rec, Thread: f.thread, At: f.at, Upstream: f.upstream,
			Overrides: fork.Overrides{Model: model, SystemAppend: f.systemAppend}, Output: output, Speed: f.speed, Logf: logf},
		TapePath: f.tapePath, Workdir: workdir, NoWorkspace: f.noWorkspace, Command: argv, Env: f.env, Sandbox: f.sandbox, Listen: f.listen,
		Stdin: env.Stdin, Stdout: stdout, Stderr: env.Stderr,
		Prepare: func(base string) ([]string, []string, func(), error) {
			argv, extra, cleanup, note, err := harnessLaunch(argv, base, env.Getenv, launchOptions{})
			if note != "" {
				logf("%s", note)
			}
			return argv, extra, cleanup, err
		},
	}
}

// forkSummary is what fork --json prints for one fork.
type forkSummary struct {
	Tape           string         `json:"tape"`
	Ended          string         `json:"ended"`
	Detail         string         `json:"detail,omitempty"`
	ExitCode       int            `json:"exit_code"`
	Reached        bool           `json:"reached"`
	Served         map[string]int `json:"served"`
	ServedSteps    int            `json:"served_steps"`
	LiveSteps      int            `json:"live_steps"`
	ToForkMS       float64        `json:"to_fork_ms"`
	RecordedToFork float64        `json:"recorded_to_fork_ms"`
	// From the harness's first model call (its start-up left out).
	FirstToForkMS         float64 `json:"first_call_to_fork_ms"`
	RecordedFirstToForkMS float64 `json:"recorded_first_call_to_fork_ms"`
	WallMS                float64 `json:"wall_ms"`
	Workdir               string  `json:"workdir"`
}

func summarize(r *fork.Result) forkSummary {
	served := r.Served
	if served == nil {
		served = map[string]int{}
	}
	return forkSummary{Tape: r.Output, Ended: string(r.Ended), Detail: r.Detail, ExitCode: r.ExitCode, Reached: r.Reached,
		Served: served, ServedSteps: r.ServedSteps(), LiveSteps: r.Live, ToForkMS: tape.RoundMS(r.ToFork),
		RecordedToFork: tape.RoundMS(r.RecordedToFork), FirstToForkMS: tape.RoundMS(r.FirstToFork),
		RecordedFirstToForkMS: tape.RoundMS(r.RecordedFirstToFork), WallMS: tape.RoundMS(r.Wall), Workdir: r.Workdir}
}

func forkOne(ctx context.Context, env *Env, f *forkFlags, rec *tape.Tape, argv []string, table *prices.Table) int {
	stdout := env.Stdout
	if f.asJSON {
		stdout = env.Stderr
	}
	opts := f.options(env, rec, argv, f.model, f.output, f.workdir, stdout, "")
	where := f.workdir
	if f.sandbox != "" {
		where = "a container of " + strings.TrimPrefix(f.sandbox, "docker-image:")
	}
	fmt.Fprintf(env.Stderr, "tapebox fork: %s at thread %s step %d, in %s, into %s\n", f.tapePath, threadName(rec, f.thread), f.at, where, f.output)
	res, err := fork.Run(ctx, opts)
	if res == nil {
		return failf(env, "fork", "%v", err)
	}
	fmt.Fprintf(env.Stderr, "tapebox fork: %s served from the tape (upstream requests saved), %d live; step %d reached after %v (the recording: %v); fork tape %s ended %s\n",
		plural(res.ServedSteps(), "step"), res.Live, f.at, res.ToFork.Round(time.Millisecond), res.RecordedToFork.Round(time.Millisecond), res.Output, endedText(string(res.Ended), res.Detail))
	if f.asJSON {
		writeJSON(env.Stdout, summarize(res))
	}
	if err != nil {
		return failf(env, "fork", "%v", err)
	}
	return res.ExitCode
}

func threadName(rec *tape.Tape, thread string) string {
	if thread == "" {
		return rec.Main().ID
	}
	return thread
}

// modelRow is one line of the --models table.
type modelRow struct {
	Model     string   `json:"model"`
	Verify    string   `json:"verify"` // pass, fail, none, or not run (the fork failed)
	Steps     int      `json:"steps"`
	Live      int      `json:"live_steps"`
	TokensIn  int64    `json:"tokens_in"`
	TokensOut int64    `json:"tokens_out"`
	USD       *float64 `json:"usd"`
	WallMS    float64  `json:"wall_ms"`
	Tape      string   `json:"tape"`
	Workspace string   `json:"workspace,omitempty"` // the final workspace (none with --sandbox)
	Ended     string   `json:"ended"`
	Error     string   `json:"error,omitempty"`
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

func forkModels(ctx context.Context, env *Env, f *forkFlags, rec *tape.Tape, argv []string, table *prices.Table) int {
	var models []string
	for _, m := range strings.Split(f.models, ",") {
		if m = strings.TrimSpace(m); m != "" {
			models = append(models, m)
		}
	}
	if len(models) == 0 {
		return failf(env, "fork", "--models %q names no model", f.models)
	}
	rows := make([]modelRow, len(models))
	ext := filepath.Ext(f.output)
	stem := strings.TrimSuffix(f.output, ext)
	var mu sync.Mutex // one fork at a time when --jobs 1
	sem := make(chan struct{}, f.jobs)
	var wg sync.WaitGroup
	for i, m := range models {
		name := unsafeName.ReplaceAllString(m, "_")
		final := f.workdir + ".fork-" + name
		row := &rows[i]
		*row = modelRow{Model: m, Verify: "not run", Tape: stem + "." + name + ".json", Workspace: final}
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			dir := final
			switch {
			case f.sandbox != "":
				dir, row.Workspace = f.workdir, "" // in the container, removed with it
			case f.jobs == 1:
				mu.Lock()
				defer mu.Unlock()
				dir = f.workdir // where the recording ran: the harness's absolute paths match
			}
			if err := os.RemoveAll(final); err != nil && f.sandbox == "" { // a previous run's
				row.Error = err.Error()
				return
			}
			opts := f.options(env, rec, argv, m, row.Tape, dir, env.Stderr, m+": ")
			opts.Verify = f.verify
			res, err := fork.Run(ctx, opts)
			if res != nil {
				row.WallMS = tape.RoundMS(res.Wall)
				row.Ended = string(res.Ended)
				row.Live = res.Live
				if res.Verify != "" {
					row.Verify = res.Verify
					if res.Verify == "fail" {
						fmt.Fprintf(env.Stderr, "tapebox fork: %s: verify failed:\n%s", m, res.VerifyOutput)
					}
				} else if err == nil {
					row.Verify = "none"
				}
			}
			if f.sandbox == "" && dir != final {
				if rerr := os.Rename(dir, final); rerr != nil && row.Error == "" {
					row.Error = rerr.Error()
				}
			}
			if err != nil {
				row.Error = err.Error()
				return
			}
			if ft, err := tape.LoadFile(row.Tape); err == nil {
				c := table.Tape(ft)
				row.Steps = ft.Totals().Steps
				row.TokensIn, row.TokensOut, row.USD = c.Usage.InputTokens, c.Usage.OutputTokens, c.USD
			}
		})
	}
	wg.Wait()
	code := ExitOK
	for _, r := range rows {
		if r.Error != "" {
			code = ExitFailure
			fmt.Fprintf(env.Stderr, "tapebox fork: %s: %s\n", r.Model, r.Error)
		}
	}
	if f.asJSON {
		writeJSON(env.Stdout, rows)
		return code
	}
	tw := tabwriter.NewWriter(env.Stdout, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "MODEL\tVERIFY\tSTEPS\tTOKENS IN\tTOKENS OUT\tCOST\tWALL\tFORK TAPE")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%s\t%s\t%s\n", r.Model, r.Verify, r.Steps, r.TokensIn, r.TokensOut, prices.Format(r.USD),
			(time.Duration(r.WallMS * float64(time.Millisecond))).Round(time.Millisecond), r.Tape)
	}
	tw.Flush()
	return code
}

// endedText is how a tape ended as compare and inspect print it: "complete", or "cut:
// simulator stopped" with the detail.
func endedText(reason, detail string) string {
	if detail == "" {
		return reason
	}
	return reason + ": " + detail
}
