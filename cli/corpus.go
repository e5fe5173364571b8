package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/tapebox/tapebox/corpus"
	"github.com/tapebox/tapebox/internal/term"
	"github.com/tapebox/tapebox/sandbox"
)

// corpusFlags are replay's flags for corpus mode.
type corpusFlags struct {
	dir, journal, outputDir string
	jobs, pool              int
}

func (c *corpusFlags) add(fs *flag.FlagSet) {
	fs.StringVar(&c.dir, "corpus", "", "corpus mode: replay every tape of this folder (or exported dataset)")
	fs.StringVar(&c.journal, "journal", "", "corpus mode: the SQLite journal that makes the run resumable (required with --corpus)")
	fs.StringVar(&c.outputDir, "output-dir", "", "corpus mode: write each replay tape here (KEY.replay.json)")
	fs.IntVar(&c.jobs, "jobs", 1, "corpus mode: tapes replayed at once")
	fs.IntVar(&c.pool, "pool", 0, "corpus mode: sandboxes made ready ahead of the replays (0: none)")
}

func runCorpus(ctx context.Context, env *Env, fs *flag.FlagSet, f *replayFlags) int {
	c := &f.corpus
	switch {
	case c.dir == "":
		return usageError(env, fs, "--jobs, --journal, --pool and --output-dir go with --corpus DIR")
	case c.journal == "":
		return usageError(env, fs, "--corpus needs --journal FILE (the run's record, to resume it)")
	case f.tapePath != "" || f.output != "" || f.listen != "":
		return usageError(env, fs, "--corpus replays many tapes: it goes with neither --tape, --output nor --listen (use --output-dir)")
	case f.sandboxSpec == "":
		return usageError(env, fs, "--corpus needs --sandbox SPEC (docker-image:IMAGE, k8s:NAMESPACE?image=IMAGE or local)")
	case c.jobs < 1 || c.pool < 0:
		return usageError(env, fs, "--jobs must be 1 or more and --pool 0 or more")
	case f.speed < 0:
		return usageError(env, fs, "--speed must be 0 or more")
	}
	logf := f.logger(env)
	mem, err := f.memoryLimit()
	if err != nil {
		return failf(env, "replay", "%v", err)
	}
	transport, err := sandbox.ParseTransport(f.transport)
	if err != nil {
		return failf(env, "replay", "--exec-transport: %v", err)
	}
	var warnOnce sync.Map
	sopts := sandbox.Options{InstallExecutor: f.install, Env: f.env, Network: f.network, User: f.user,
		ReadOnlyRoot: f.readOnly, Runtime: f.runtime, CapAdd: f.capAdd, Transport: transport,
		// The same warning for every tape is printed once.
		Warnf: func(format string, args ...any) {
			msg := fmt.Sprintf(format, args...)
			if _, seen := warnOnce.LoadOrStore(msg, true); !seen {
				fmt.Fprintf(env.Stderr, "tapebox replay: %s\n", msg)
			}
		}}
	if f.sandboxSpec != "local" && f.sandboxSpec != "unsafe-local" {
		sopts.Memory, sopts.CPUs, sopts.PidsLimit = cliLimit(mem), cliLimit(f.cpus), cliLimit(f.pids)
	}
	prog := newStatusLine(env.Stderr, f.quiet, 200*time.Millisecond) // the bar of corpusBar
	opts := corpus.Options{Corpus: c.dir, Journal: c.journal, OutputDir: c.outputDir, Sandbox: f.sandboxSpec,
		SandboxOptions: sopts, Cwd: f.cwd, CwdGiven: f.cwdGiven, Jobs: c.jobs, Pool: c.pool, Speed: f.speed,
		CallTimeout: f.callTimeout, NoWorkspace: f.noWorkspace, Env: f.env, AllowTampered: flagBool(fs, "allow-tampered"),
		Logf: func(format string, args ...any) {
			prog.clear()
			logf(format, args...)
		}}
	if prog != nil {
		opts.Progress = func(pr corpus.Progress) { prog.draw(corpusBar(pr, 30), pr.Queued+pr.Running+pr.Ready == 0) }
	}
	sum, err := corpus.Run(ctx, opts)
	prog.clear()
	if sum == nil {
		return failf(env, "replay", "%v", err)
	}
	if f.json {
		writeJSON(env.Stdout, struct {
			*corpus.Summary
			Error string `json:"error,omitempty"`
		}{sum, errString(err)})
	} else {
		fmt.Fprintf(env.Stdout, "corpus %s: %d tapes: %d done (%d identical, %d differ), %d failed, %d queued\n",
			sum.Corpus, sum.Total, sum.Done, sum.Identical, sum.Differs, sum.Failed, sum.Queued)
		fmt.Fprintf(env.Stdout, "this run: %d tapes in %v (%.1f tapes/min)\n", sum.Finished,
			time.Duration(sum.ElapsedMS*float64(time.Millisecond)).Round(time.Millisecond), sum.TapesPerMinute)
		fmt.Fprintf(env.Stdout, "journal %s, results %s\n", sum.Journal, sum.Results)
		writeProblems(env.Stdout, sum.Problems)
	}
	switch {
	case err != nil:
		return failf(env, "replay", "%v", err)
	case sum.Failed > 0:
		return failf(env, "replay", "%d of %d tapes failed (see the error column of %s)", sum.Failed, sum.Total, sum.Results)
	case sum.Differs > 0:
		return failf(env, "replay", "%d of %d replays differ from their recording", sum.Differs, sum.Total)
	}
	return ExitOK
}

// writeProblems names each tape that differs or failed, with its first difference or its
// error (the journal's error column), one line each.
func writeProblems(w io.Writer, problems []corpus.Problem) {
	for _, p := range problems {
		what := p.State
		if p.Verdict != "" {
			what = p.Verdict
		}
		fmt.Fprintf(w, "  %-7s %s: %s\n", what, term.Printable(p.Key), term.Excerpt(p.Detail, 300))
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// corpusBar renders one progress line of width cells for the bar.
func corpusBar(pr corpus.Progress, width int) string {
	total := pr.Total()
	ended := pr.Done + pr.Failed
	filled := 0
	if total > 0 {
		filled = ended * width / total
	}
	rate, eta := "-", "-"
	if min := pr.Elapsed.Minutes(); pr.Finished > 0 && min > 0 {
		perMin := float64(pr.Finished) / min
		rate = fmt.Sprintf("%.1f/min", perMin)
		left := time.Duration(float64(pr.Queued+pr.Running+pr.Ready) / perMin * float64(time.Minute))
		eta = left.Round(time.Second).String()
	}
	ready := ""
	if pr.Ready > 0 {
		ready = fmt.Sprintf(", %d ready", pr.Ready)
	}
	return fmt.Sprintf("[%s%s] %d/%d done, %d failed, %d running%s, %s, ETA %s",
		strings.Repeat("#", filled), strings.Repeat("-", width-filled), pr.Done, total, pr.Failed, pr.Running, ready, rate, eta)
}
