package corpus

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"iter"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tapebox/tapebox/dataset"
	"github.com/tapebox/tapebox/replay"
	"github.com/tapebox/tapebox/sandbox"
	"github.com/tapebox/tapebox/schema"
	"github.com/tapebox/tapebox/tape"
	"github.com/tapebox/tapebox/tape/seal"
)

// The verdicts of a done tape.
const (
	VerdictIdentical = "identical"
	VerdictDiffers   = "differs"
)

// Labels Run puts on the sandboxes it creates, so that a run's containers and pods can be
// told apart by tape.
const (
	LabelTape    = "org.tapebox.corpus.tape"
	LabelAttempt = "org.tapebox.corpus.attempt"
)

// Options configure Run.
type Options struct {
	// AllowTampered replays a tape whose digests do not match (seal.Check); without it such a
	// tape fails, naming the changed part.
	AllowTampered bool
	// Corpus is a folder of tapes (*.json, searched recursively) or an exported dataset
	// (dataset.IsDataset), whose tapes are imported once into Journal+".tapes/".
	Corpus string
	// Journal is the SQLite file that records the run; Run resumes from it.
	Journal string
	// OutputDir receives each tape's replay tape, as KEY without .json + ".replay.json".
	OutputDir string
	// Sandbox is the spec every tape gets a fresh sandbox of: docker-image:IMAGE, k8s:...,
	// or the bare "local" / "unsafe-local" (a fresh temporary directory per tape).
	Sandbox string
	// SandboxOptions are the options of every sandbox; Cwd is set per tape (see Cwd).
	SandboxOptions sandbox.Options
	// Cwd, when CwdGiven, is the working directory of every tape; otherwise each tape runs
	// where it was recorded (meta.cwd, when an absolute path), else in a fresh
	// replay.DefaultCwd (replay.Cwd).
	Cwd      string
	CwdGiven bool
	// Jobs is how many tapes replay at once (default 1).
	Jobs int
	// Pool is how many sandboxes are made ready ahead of the replays (0: none): each is
	// made for the tape it will run, and never reused.
	Pool int
	// Speed, CallTimeout and NoWorkspace are the replay's (see controller.Options).
	Speed       float64
	CallTimeout time.Duration
	NoWorkspace bool
	// Env is the executor's environment.
	Env map[string]string
	// Logf receives one line per tape that fails and the run's own messages.
	Logf func(format string, args ...any)
	// Progress, when set, is called whenever a tape starts or ends (from several goroutines).
	Progress func(Progress)
}

// Progress is the run's state when a tape starts or ends. Counts.Running counts the tapes
// being replayed (never more than Jobs) and, without a pool, being made ready by a job;
// Ready counts those a pool makes ready ahead of the replays (never more than Pool).
type Progress struct {
	Counts
	Ready int
	// Finished counts the tapes this run (this process) ended; Elapsed is its age.
	Finished int
	Elapsed  time.Duration
}

// Total is the number of tapes, those made ready ahead included.
func (p Progress) Total() int { return p.Counts.Total() + p.Ready }

// Problem is a tape that failed or whose replay differs from its recording.
type Problem struct {
	Key   string `json:"key"`
	State string `json:"state"`
	// Verdict is "differs" for a done tape, "" for a failed one.
	Verdict string `json:"verdict,omitempty"`
	// Detail is the error of a failed tape, or compare's first difference (Report.First).
	Detail string `json:"detail"`
}

// Summary is what Run did, and the journal's state when it ended.
type Summary struct {
	Corpus  string `json:"corpus"`
	Journal string `json:"journal"`
	Results string `json:"results"`
	// Counts cover the whole journal, earlier runs included.
	Total     int `json:"total"`
	Done      int `json:"done"`
	Failed    int `json:"failed"`
	Queued    int `json:"queued"`
	Identical int `json:"identical"`
	Differs   int `json:"differs"`
	// Added tapes were new to the journal; Finished were ended by this run.
	Added          int     `json:"added"`
	Finished       int     `json:"finished"`
	ElapsedMS      float64 `json:"elapsed_ms"`
	TapesPerMinute float64 `json:"tapes_per_minute"`
	// Problems are the tapes of the journal that failed or differ, in the journal's order.
	Problems []Problem `json:"problems"`
}

// ResultsPath is where the results table of the journal at journal goes: beside it, as
// STEM.results.parquet.
func ResultsPath(journal string) string {
	return strings.TrimSuffix(journal, filepath.Ext(journal)) + ".results.parquet"
}

// Run replays every tape of a corpus that the journal does not have as done or failed,
// Jobs at a time, each in a fresh sandbox, recording each outcome as it comes. A run that is
// killed is resumed by running it again with the same journal: finished tapes are kept,
// interrupted ones are redone from scratch. An unreachable engine (sandbox.ErrNoEngine)
// stops the run, with the tapes it cut off queued again. At the end the results table is
// written beside the journal (ResultsPath).
func Run(ctx context.Context, opts Options) (*Summary, error) {
	start := time.Now()
	if opts.Jobs <= 0 {
		opts.Jobs = 1
	}
	if err := checkSpec(opts.Sandbox); err != nil {
		return nil, err
	}
	dir, err := filepath.Abs(opts.Corpus)
	if err != nil {
		return nil, fmt.Errorf("corpus %s: %w", opts.Corpus, err)
	}
	if fi, err := os.Stat(dir); err != nil {
		return nil, fmt.Errorf("corpus %s: %w", opts.Corpus, err)
	} else if !fi.IsDir() {
		return nil, fmt.Errorf("corpus %s: not a folder (give a folder of tapes or an exported dataset)", opts.Corpus)
	}
	j, err := OpenJournal(ctx, opts.Journal, dir)
	if err != nil {
		return nil, err
	}
	defer j.Close()
	tapesDir := dir
	if dataset.IsDataset(dir) {
		tapesDir = opts.Journal + ".tapes"
		if done, _ := j.Meta(ctx, "imported"); done != "1" {
			os.RemoveAll(tapesDir)
			if _, err := dataset.Import(ctx, dir, dataset.ImportOptions{Out: tapesDir}); err != nil {
				return nil, fmt.Errorf("corpus %s: %w", opts.Corpus, err)
			}
			if err := j.SetMeta(ctx, "imported", "1"); err != nil {
				return nil, fmt.Errorf("corpus %s: %w", opts.Journal, err)
			}
		}
	}
	skip := []string{}
	for _, p := range []string{opts.OutputDir, opts.Journal + ".tapes"} {
		if p != "" {
			if a, err := filepath.Abs(p); err == nil {
				skip = append(skip, a)
			}
		}
	}
	added, err := j.Enqueue(ctx, tapeFiles(tapesDir, skip))
	if err != nil {
		return nil, fmt.Errorf("corpus %s: %w", opts.Corpus, err)
	}
	c, err := j.Counts(ctx)
	if err != nil {
		return nil, err
	}
	if c.Total() == 0 {
		return nil, fmt.Errorf("corpus %s: no tapes (*.json) in it", opts.Corpus)
	}
	r := &runner{opts: opts, j: j, start: start}
	r.queued.Store(int64(c.Queued))
	r.done.Store(int64(c.Done))
	r.failed.Store(int64(c.Failed))
	r.identical.Store(int64(c.Identical))
	r.differs.Store(int64(c.Differs))
	runErr := r.run(ctx)

	results := ResultsPath(opts.Journal)
	// The results are written even after a cut-off run: they hold what is finished.
	werr := dataset.WriteResults(results, j.Results(context.WithoutCancel(ctx)))
	c, cerr := j.Counts(context.WithoutCancel(ctx))
	elapsed := time.Since(start)
	sum := &Summary{Corpus: opts.Corpus, Journal: opts.Journal, Results: results, Total: c.Total(), Done: c.Done,
		Failed: c.Failed, Queued: c.Queued + c.Running, Identical: c.Identical, Differs: c.Differs, Added: added,
		Finished: int(r.finished.Load()), ElapsedMS: tape.RoundMS(elapsed)}
	if elapsed > 0 {
		sum.TapesPerMinute = float64(sum.Finished) / elapsed.Minutes()
	}
	sum.Problems = []Problem{}
	var perr error
	for row, err := range j.Results(context.WithoutCancel(ctx)) {
		if err != nil {
			perr = err
			break
		}
		if row.State == StateFailed || row.Verdict == VerdictDiffers {
			sum.Problems = append(sum.Problems, Problem{Key: row.Key, State: row.State, Verdict: row.Verdict, Detail: row.Error})
		}
	}
	return sum, errors.Join(runErr, werr, cerr, perr)
}

// checkSpec refuses sandboxes that a corpus cannot use: each tape needs a fresh one.
func checkSpec(spec string) error {
	if spec == "local" || spec == "unsafe-local" {
		return nil
	}
	s, err := sandbox.ParseSpec(spec)
	if err != nil {
		return err
	}
	switch s.Scheme {
	case sandbox.SchemeDockerImage, sandbox.SchemeK8s:
		return nil
	}
	return fmt.Errorf("%w %q: a corpus replays each tape in a fresh sandbox: use docker-image:IMAGE, k8s:NAMESPACE?image=IMAGE, or local (a fresh directory per tape)", sandbox.ErrBadSpec, spec)
}

// tapeFiles walks dir for *.json files (not *.replay.json, not under skip or hidden
// folders), yielding each as its slash-separated path relative to dir and its full path.
func tapeFiles(dir string, skip []string) iter.Seq2[[2]string, error] {
	return func(yield func([2]string, error) bool) {
		err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				for _, s := range skip {
					if p == s {
						return filepath.SkipDir
					}
				}
				if p != dir && strings.HasPrefix(d.Name(), ".") {
					return filepath.SkipDir
				}
				return nil
			}
			if !d.Type().IsRegular() || !strings.HasSuffix(d.Name(), ".json") || strings.HasSuffix(d.Name(), ".replay.json") {
				return nil
			}
			rel, err := filepath.Rel(dir, p)
			if err != nil {
				return err
			}
			if !yield([2]string{filepath.ToSlash(rel), p}, nil) {
				return filepath.SkipAll
			}
			return nil
		})
		if err != nil {
			yield([2]string{}, fmt.Errorf("list tapes in %s: %w", dir, err))
		}
	}
}

type runner struct {
	opts  Options
	j     *Journal
	start time.Time

	// running counts the tapes being replayed (at most Jobs) and, without a pool, being
	// prepared by a job; ready those a pool prepares ahead or holds ready.
	queued, ready, running, done, failed, identical, differs, finished atomic.Int64

	closing sync.WaitGroup
	stop    context.CancelCauseFunc
}

// prepared is a claimed tape with its sandbox open, ready to replay.
type prepared struct {
	e     Entry
	rec   *tape.Tape
	rp    *replay.Replay
	ready time.Duration
	row   dataset.ResultRow
	count *atomic.Int64 // where the tape is counted: runner.ready or runner.running
	taken chan struct{} // closed once a job took the tape from the pool and counts it running
}

func (r *runner) logf(format string, args ...any) {
	if r.opts.Logf != nil {
		r.opts.Logf(format, args...)
	}
}

func (r *runner) progress() {
	if r.opts.Progress == nil {
		return
	}
	r.opts.Progress(Progress{Counts: Counts{Queued: int(r.queued.Load()), Running: int(r.running.Load()),
		Done: int(r.done.Load()), Failed: int(r.failed.Load()), Identical: int(r.identical.Load()),
		Differs: int(r.differs.Load())}, Ready: int(r.ready.Load()), Finished: int(r.finished.Load()), Elapsed: time.Since(r.start)})
}

func (r *runner) run(ctx context.Context) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	r.stop = cancel
	r.progress()
	var wg sync.WaitGroup
	if r.opts.Pool <= 0 {
		r.prepareEach(ctx, cancel, r.opts.Jobs, &wg, func(p *prepared) bool {
			r.replay(ctx, p)
			return true
		})
		wg.Wait()
	} else {
		ready := make(chan *prepared)
		var preps sync.WaitGroup
		r.prepareEach(ctx, cancel, r.opts.Pool, &preps, func(p *prepared) bool {
			p.taken = make(chan struct{})
			select {
			case ready <- p:
				// The next claim waits for the job to count this tape as running, so that
				// the pool never shows more ready than Pool.
				<-p.taken
				return true
			case <-ctx.Done():
				r.abandon(ctx, p)
				return false
			}
		})
		go func() { preps.Wait(); close(ready) }()
		for range r.opts.Jobs {
			wg.Go(func() {
				for p := range ready {
					// A job takes the tape from the pool: it runs now.
					r.ready.Add(-1)
					r.running.Add(1)
					p.count = &r.running
					close(p.taken)
					r.replay(ctx, p)
				}
			})
		}
		wg.Wait()
	}
	r.closing.Wait()
	if err := context.Cause(ctx); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return ctx.Err()
}

// prepareEach starts n goroutines on wg, each taking tapes prepared by next and handing them
// to use, until the run is over or use returns false.
func (r *runner) prepareEach(ctx context.Context, stop context.CancelCauseFunc, n int, wg *sync.WaitGroup, use func(*prepared) bool) {
	for range n {
		wg.Go(func() {
			for {
				p, ok := r.next(ctx, stop)
				if !ok {
					return
				}
				if p != nil && !use(p) {
					return
				}
			}
		})
	}
}

// next claims a tape and prepares it. ok is false when the run is over (nothing queued, or
// cut off); p is nil when the tape failed before its replay (it is recorded).
func (r *runner) next(ctx context.Context, stop context.CancelCauseFunc) (p *prepared, ok bool) {
	if ctx.Err() != nil {
		return nil, false
	}
	e, ok, err := r.j.Claim(ctx)
	if err != nil {
		if ctx.Err() == nil {
			stop(err)
		}
		return nil, false
	}
	if !ok {
		return nil, false
	}
	count := &r.running
	if r.opts.Pool > 0 {
		count = &r.ready
	}
	r.queued.Add(-1)
	count.Add(1)
	r.progress()
	p, err = r.prepare(ctx, e)
	switch {
	case err == nil:
		p.count = count
		return p, true
	case ctx.Err() != nil:
		r.requeue(ctx, e.Key, count)
		return nil, false
	case errors.Is(err, sandbox.ErrNoEngine):
		r.requeue(ctx, e.Key, count)
		stop(fmt.Errorf("corpus replay stopped (run it again to resume): %w", err))
		return nil, false
	}
	row := dataset.ResultRow{Key: e.Key, State: StateFailed, Error: err.Error(), Attempts: int64(e.Attempt)}
	if p != nil {
		row.TapeID = p.row.TapeID
	}
	r.finish(ctx, row, count)
	return nil, true
}

// prepare loads and checks the tape, and opens its sandbox (replay.Open). On an error after
// the tape was read, p carries its id.
func (r *runner) prepare(ctx context.Context, e Entry) (*prepared, error) {
	p := &prepared{e: e, row: dataset.ResultRow{Key: e.Key, Attempts: int64(e.Attempt)}}
	rec, err := loadTape(e.Path, r.opts.AllowTampered)
	if err != nil {
		return nil, err
	}
	p.rec = rec
	p.row.TapeID = rec.Meta.TapeID
	sopts := r.opts.SandboxOptions
	sopts.Labels = map[string]string{LabelTape: e.Key, LabelAttempt: strconv.Itoa(e.Attempt)}
	for k, v := range r.opts.SandboxOptions.Labels {
		sopts.Labels[k] = v
	}
	rp, err := replay.Open(ctx, rec, r.opts.Sandbox, replay.Options{TapePath: e.Path, Sandbox: sopts, Cwd: r.opts.Cwd,
		CwdSet: r.opts.CwdGiven, Env: r.opts.Env, Speed: r.opts.Speed, Output: r.output(e.Key), CallTimeout: r.opts.CallTimeout,
		NoWorkspace: r.opts.NoWorkspace, Compare: true})
	if err != nil {
		return p, fmt.Errorf("tape %s: %w", e.Key, err)
	}
	p.rp, p.ready = rp, rp.Setup()
	return p, nil
}

// output is where the replay tape of the tape at key goes: "" without OutputDir.
func (r *runner) output(key string) string {
	if r.opts.OutputDir == "" {
		return ""
	}
	return filepath.Join(r.opts.OutputDir, filepath.FromSlash(strings.TrimSuffix(key, ".json")+".replay.json"))
}

// loadTape reads a tape and checks it against the schema and, unless allowTampered, its
// digests (seal.Check); the error names the file and each problem's JSON pointer.
func loadTape(file string, allowTampered bool) (*tape.Tape, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	if err := schema.Validate(data); err != nil {
		var ve *schema.ValidationError
		if errors.As(err, &ve) {
			var b strings.Builder
			for i, p := range ve.Problems {
				if i == 3 {
					fmt.Fprintf(&b, "; and %d more", len(ve.Problems)-3)
					break
				}
				if i > 0 {
					b.WriteString("; ")
				}
				fmt.Fprintf(&b, "%s: %s", p.Pointer, p.Message)
			}
			return nil, fmt.Errorf("%s is not a valid tape (%d problems): %s", file, len(ve.Problems), b.String())
		}
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	t, err := tape.Unmarshal(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	if err := seal.Check(t, data); err != nil && !allowTampered {
		return nil, fmt.Errorf("%s: %w (--allow-tampered replays it anyway)", file, err)
	}
	return t, nil
}

// replay plays a prepared tape, compares it with the recording and records the outcome.
func (r *runner) replay(ctx context.Context, p *prepared) {
	if ctx.Err() != nil {
		r.abandon(ctx, p)
		return
	}
	res, err := p.rp.Play(ctx)
	r.release(p)
	if ctx.Err() != nil {
		r.requeue(ctx, p.e.Key, p.count)
		return
	}
	if errors.Is(err, sandbox.ErrNoEngine) {
		// The engine or API server went away: not the tape's fault. It is queued again and
		// the run stops, to be resumed once the engine is back.
		r.requeue(ctx, p.e.Key, p.count)
		r.stop(fmt.Errorf("corpus replay stopped (run it again to resume): tape %s: %w", p.e.Key, err))
		return
	}
	row := p.row
	row.ReadyMS = tape.RoundMS(p.ready)
	row.Steps, row.Restarts = int64(res.Steps), int64(res.Restarts)
	row.WallMS, row.ToolMS = tape.RoundMS(res.Wall), tape.RoundMS(res.ToolTime)
	if res.Tape != nil {
		row.Output = r.output(p.e.Key)
	}
	switch {
	case err != nil:
		row.State, row.Error = StateFailed, fmt.Sprintf("tape %s: %v", p.e.Key, err)
	case res.Tape == nil:
		row.State, row.Error = StateFailed, fmt.Sprintf("tape %s: the replay produced no tape", p.e.Key)
	default:
		row.State, row.Verdict = StateDone, VerdictIdentical
		if !res.Identical() {
			// The first difference goes into the error column: the summary names it.
			row.Verdict, row.Error = VerdictDiffers, res.Report.First()
		}
	}
	r.finish(ctx, row, p.count)
}

// release closes a tape's sandbox in the background (container removal is off the critical
// path); Run waits for every close before it returns.
func (r *runner) release(p *prepared) {
	if p.rp == nil {
		return
	}
	r.closing.Go(func() {
		cctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		if err := p.rp.Close(cctx); err != nil {
			r.logf("tape %s: %v", p.e.Key, err)
		}
	})
}

// abandon closes a prepared tape's sandbox unused and queues the tape again.
func (r *runner) abandon(ctx context.Context, p *prepared) {
	r.release(p)
	r.requeue(ctx, p.e.Key, p.count)
}

// requeue queues a claimed tape again; count is where it was counted.
func (r *runner) requeue(ctx context.Context, key string, count *atomic.Int64) {
	if err := r.j.Requeue(context.WithoutCancel(ctx), key); err != nil {
		r.logf("%v", err)
	}
	count.Add(-1)
	r.queued.Add(1)
	r.progress()
}

// finish records a claimed tape's outcome; count is where it was counted.
func (r *runner) finish(ctx context.Context, row dataset.ResultRow, count *atomic.Int64) {
	if err := r.j.Finish(context.WithoutCancel(ctx), row); err != nil {
		r.logf("%v", err)
	}
	count.Add(-1)
	r.finished.Add(1)
	if row.State == StateDone {
		r.done.Add(1)
		if row.Verdict == VerdictIdentical {
			r.identical.Add(1)
		} else {
			r.differs.Add(1)
		}
	} else {
		r.failed.Add(1)
		r.logf("%s", row.Error)
	}
	if row.Verdict == VerdictDiffers {
		r.logf("tape %s differs: %s", row.Key, row.Error)
	}
	r.progress()
}
