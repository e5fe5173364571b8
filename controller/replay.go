package controller

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/tapebox/tapebox/executor/protocol"
	"github.com/tapebox/tapebox/match"
	"github.com/tapebox/tapebox/tape"
	"github.com/tapebox/tapebox/tape/harnesses"
)

// Options configure a replay in executor mode.
type Options struct {
	// Cwd is the working directory in the sandbox (the harness's cwd at recording time,
	// meta.cwd, when the sandbox allows); the replay tape's meta.cwd.
	Cwd string
	// Env is passed to the executor's hello.
	Env map[string]string
	// Speed scales the recorded model latency: 1 reproduces it, 2 halves it, 0 removes it.
	Speed float64
	// HarnessPace, with a Speed above 0, paces the harness's time too: each step's request
	// waits until as long has passed since the previous response as the recording shows
	// (the tool calls and the harness's own work between turns), and the end state is read
	// as long after the last response as the recording's was (capped at MaxTail). A
	// command left running in the background then meets the calls after it, and the end,
	// at the time it met them in the recording.
	HarnessPace bool
	// Output is where the replay tape is written after every step; "" writes none.
	Output string
	// CallTimeout bounds each tool call; a call that takes longer gets an error result and
	// the replay goes on. Zero means 10 minutes.
	CallTimeout time.Duration
	// MaxRestarts bounds how often a dead executor session is restarted. Zero means 3.
	MaxRestarts int
	// Fsync makes the replay tape durable after every step (slower). A replay can be run
	// again, so by default each step is published atomically but not fsynced.
	Fsync bool
	// Logf receives progress and problems; nil discards them.
	Logf func(format string, args ...any)
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Snapshot is the recording's start snapshot (SnapshotFor), restored into the sandbox's
	// working directory before step 1. A tape that names one needs it, unless NoWorkspace.
	Snapshot string
	// NoWorkspace starts from the sandbox as it is and takes no end manifest.
	NoWorkspace bool
	// WorkspaceExclude adds exclusions to the end manifest (the replay's own files, when it
	// writes them into the working directory).
	WorkspaceExclude []string
	// Progress, when set, is told when each step and each tool call starts (from several
	// goroutines when calls run in parallel).
	Progress func(Progress)
}

// Progress is where a replay is: steps started of the steps the tape holds, and the thread
// and tool at work.
type Progress struct {
	Done, Total int
	Thread      string
	// Tool is the tool call just started; "" when a step (a model call) starts.
	Tool string
}

func (p *player) progress(thread, tool string) {
	if p.opts.Progress == nil {
		return
	}
	p.mu.Lock()
	pr := Progress{Done: p.steps, Total: p.total, Thread: thread, Tool: tool}
	p.mu.Unlock()
	p.opts.Progress(pr)
}

// Result is what a replay did.
type Result struct {
	// Tape is the replay tape (also at Options.Output when set).
	Tape *tape.Tape
	// Steps played, tool calls run in the sandbox, executor restarts.
	Steps, ToolCalls, Restarts int
	// Wall is the whole replay; ToolTime sums tool execution as the executor measured it;
	// ToolPath is the tool time on the critical path (see ToolPath); ModelTime sums the paced
	// model latency. Wall - ToolPath - ModelTime is the controller's own overhead.
	Wall, ToolTime, ToolPath, ModelTime time.Duration
	// Identifiers learned.
	Identifiers map[string]string
	// RestoreTime is the start snapshot's restore; ManifestTime the end manifest's reading.
	RestoreTime, ManifestTime time.Duration
	// FirstResult is when the first tool call's result came back from the sandbox (by
	// Options.Now); zero when no call ran.
	FirstResult time.Time
}

// IncompleteError says which thread and step a replay could not play, and why.
type IncompleteError struct {
	Thread string
	Step   int
	Err    error
}

func (e *IncompleteError) Error() string {
	return fmt.Sprintf("replay stopped at thread %q step %d: %v", e.Thread, e.Step, e.Err)
}

func (e *IncompleteError) Unwrap() error { return e.Err }

// Replay plays rec in executor mode: the controller plays the model (the recorded responses,
// paced by Speed) and drives tapebox-exec in sb to run every tool call. It returns the
// replay's result, and an *IncompleteError when some thread could not be played to its end
// (the replay tape written so far stays valid and says so).
func Replay(ctx context.Context, rec *tape.Tape, sb Sandbox, opts Options) (*Result, error) {
	if opts.Logf == nil {
		opts.Logf = func(string, ...any) {}
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.CallTimeout == 0 {
		opts.CallTimeout = 10 * time.Minute
	}
	if opts.MaxRestarts == 0 {
		opts.MaxRestarts = 3
	}
	if opts.Speed < 0 {
		return nil, fmt.Errorf("replay: speed %v: must be 0 or more", opts.Speed)
	}
	main := rec.Main()
	if main == nil {
		return nil, errors.New("replay: the tape has no main thread")
	}
	p := &player{rec: rec, sb: sb, opts: opts, ids: match.NewIdentifiers(rec), start: opts.Now(), total: rec.Totals().Steps}
	p.hello = protocol.Hello{Harness: rec.Meta.Harness, Cwd: opts.Cwd, Env: opts.Env, HarnessVersion: rec.Meta.HarnessVersion}
	if w := harnesses.VersionWarning(rec.Meta.Harness, rec.Meta.HarnessVersion); w != "" {
		opts.Logf("warning: %s", w)
	}
	if h, ok := harnesses.Lookup(rec.Meta.Harness); ok {
		p.ending = h.EndingTools
	}
	if p.hello.Env == nil {
		p.hello.Env = map[string]string{}
	}
	if err := p.openOutput(); err != nil {
		return nil, err
	}
	if err := p.restoreWorkspace(ctx); err != nil {
		p.finish(tape.EndError, err.Error())
		return nil, fmt.Errorf("replay: %w", err)
	}
	s, err := startSessionRetrying(ctx, sb, p.hello, opts.Logf)
	if err != nil {
		p.finish(tape.EndError, err.Error())
		return nil, fmt.Errorf("replay: %w", err)
	}
	p.sess = s
	p.policy = s.hello.Policy
	opts.Logf("executor %s (protocol %d, harness %s, %s): parallel tool calls %v, spawning tools %v",
		s.hello.Version, s.hello.Protocol, s.hello.Harness, s.hello.Platform, p.policy.ParallelToolCalls, p.policy.SpawningTools)

	err = p.playThread(ctx, main)
	if err == nil {
		err = p.paceTail(ctx, main)
	}
	// A replay that ends says bye and gives the executor 5 seconds to exit; one that was
	// stopped (Ctrl-C) does not wait for the calls in flight: closing the sandbox ends them.
	closeCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	if ctx.Err() != nil {
		cancel()
	}
	p.currentSession().close(closeCtx)
	cancel()
	if err == nil {
		p.recordEndState(ctx)
	}
	res := &Result{RestoreTime: p.restoreTime, ManifestTime: p.manifestTime, Steps: p.steps, ToolCalls: p.calls, Restarts: p.restarts, Wall: opts.Now().Sub(p.start),
		ToolTime: p.toolTime, ToolPath: ToolPath(p.out), ModelTime: p.modelTime, Identifiers: p.ids.Map(), FirstResult: p.firstResult}
	if err != nil {
		reason := tape.EndError
		if errors.Is(err, context.Canceled) {
			reason = tape.EndCut
		}
		p.finish(reason, err.Error())
		res.Tape = p.out
		return res, err
	}
	if werr := p.finish(tape.EndComplete, ""); werr != nil {
		return res, werr
	}
	res.Tape = p.out
	return res, nil
}

type player struct {
	rec    *tape.Tape
	sb     Sandbox
	opts   Options
	ids    *match.Identifiers
	hello  protocol.Hello
	policy protocol.Policy
	start  time.Time
	// ending are the harness's tools whose call ends its thread (harnesses.Harness.EndingTools).
	ending []string

	out     *tape.Tape
	w       *tape.Writer
	threadI map[string]int // replay thread index by id

	mu        sync.Mutex
	sess      *session
	restarts  int
	steps     int
	calls     int
	toolTime  time.Duration
	modelTime time.Duration

	restoreTime, manifestTime time.Duration
	total                     int       // steps the tape holds, for Progress
	firstResult               time.Time // when the first call's result came back
}

// openOutput prepares the replay tape (see tape.ReplayOf).
func (p *player) openOutput() error {
	p.out = tape.ReplayOf(p.rec, p.start, map[string]string{"mode": "executor"})
	p.out.Meta.Cwd = p.opts.Cwd // where this replay ran, which may differ from the recording's
	p.threadI = map[string]int{}
	for i, th := range p.rec.Threads {
		p.threadI[th.ID] = i
	}
	if p.opts.Output == "" {
		return nil
	}
	w, err := tape.Create(p.opts.Output, p.out)
	if err != nil {
		return fmt.Errorf("replay: %w", err)
	}
	w.SetFsync(p.opts.Fsync)
	p.w = w
	return nil
}

func (p *player) finish(reason tape.EndReason, detail string) error {
	now := p.opts.Now()
	if p.w == nil {
		p.out.Meta.Ended = &tape.Ended{Reason: reason, At: now.UTC(), Detail: detail}
		return nil
	}
	return p.w.Finish(reason, now, detail)
}

func (p *player) ms(t time.Time) float64 { return tape.RoundMS(t.Sub(p.start)) }

// pace sleeps for a scaled duration and returns when it ends.
func (p *player) pace(ctx context.Context, d time.Duration) error {
	if p.opts.Speed == 0 || d <= 0 {
		return nil
	}
	t := time.NewTimer(time.Duration(float64(d) / p.opts.Speed))
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// MaxTail bounds the wait HarnessPace adds after the last response.
const MaxTail = 10 * time.Second

// paceSince sleeps until d, scaled, has passed since from.
func (p *player) paceSince(ctx context.Context, from time.Time, d time.Duration) error {
	if p.opts.Speed == 0 || d <= 0 || from.IsZero() {
		return nil
	}
	// pace scales what it is given; what is left of d is d less the time since from, unscaled.
	return p.pace(ctx, d-time.Duration(float64(p.opts.Now().Sub(from))*p.opts.Speed))
}

// paceTail, with HarnessPace, waits after the main thread's last response as long as the
// recording went on after it (the harness's last tool calls and its exit), so that the end
// state is read when the recording's was.
func (p *player) paceTail(ctx context.Context, main *tape.Thread) error {
	if !p.opts.HarnessPace || p.opts.Speed == 0 || len(main.Steps) == 0 || p.rec.Meta.Ended == nil {
		return nil
	}
	end := tape.RoundMS(p.rec.Meta.Ended.At.Sub(p.rec.Meta.StartedAt))
	tail := min(msDur(end-main.Steps[len(main.Steps)-1].Timing.LastByteAt), MaxTail)
	if tail <= 0 {
		return nil
	}
	p.opts.Logf("pace: the recording went on %v after its last response", tail.Round(time.Millisecond))
	return p.pace(ctx, tail)
}

func msDur(ms float64) time.Duration { return time.Duration(ms * float64(time.Millisecond)) }

// playThread plays every step of th in order.
func (p *player) playThread(ctx context.Context, th *tape.Thread) error {
	ti := p.threadI[th.ID]
	var lastAt time.Time // when the previous step's response ended, in this replay
	for si, st := range th.Steps {
		if err := ctx.Err(); err != nil {
			return &IncompleteError{Thread: th.ID, Step: si, Err: err}
		}
		p.progress(th.ID, "")
		// The harness's time since the previous response (its tool calls and its own work).
		if si > 0 && p.opts.HarnessPace {
			prev := th.Steps[si-1].Timing
			if err := p.paceSince(ctx, lastAt, msDur(st.Timing.RequestAt-prev.LastByteAt)); err != nil {
				return &IncompleteError{Thread: th.ID, Step: si, Err: err}
			}
		}
		reqAt := p.opts.Now()
		if si > 0 {
			next := p.ms(reqAt)
			p.updateStep(ti, si-1, func(s *tape.Step) { s.Timing.NextRequestAt = &next })
		}
		// The model's latency: request to first byte, first byte to last byte.
		if err := p.pace(ctx, msDur(st.Timing.FirstByteAt-st.Timing.RequestAt)); err != nil {
			return &IncompleteError{Thread: th.ID, Step: si, Err: err}
		}
		firstAt := p.opts.Now()
		if err := p.pace(ctx, msDur(st.Timing.LastByteAt-st.Timing.FirstByteAt)); err != nil {
			return &IncompleteError{Thread: th.ID, Step: si, Err: err}
		}
		lastAt = p.opts.Now()
		p.mu.Lock()
		p.modelTime += lastAt.Sub(reqAt)
		p.mu.Unlock()

		calls := make([]tape.ToolCall, len(st.ToolCalls))
		for i, c := range st.ToolCalls {
			c.Input = p.ids.ApplyJSON(c.Input)
			calls[i] = c
		}
		step := &tape.Step{
			Request:   st.Request,
			Response:  st.Response,
			ToolCalls: calls,
			Timing:    tape.Timing{RequestAt: p.ms(reqAt), FirstByteAt: p.ms(firstAt), LastByteAt: p.ms(lastAt)},
		}
		if err := p.appendStep(ti, step); err != nil {
			return &IncompleteError{Thread: th.ID, Step: si, Err: err}
		}
		if th.Superseded(si) {
			// A retried step (tape.Thread.Superseded): the harness went on from the retry's
			// answer and never ran these calls, so neither does the replay.
			if len(calls) > 0 {
				p.opts.Logf("thread %s step %d: retried by the harness, its %d tool calls not run", th.ID, si, len(calls))
			}
		} else {
			results, err := p.runCalls(ctx, th, si, st, calls)
			if err != nil {
				return &IncompleteError{Thread: th.ID, Step: si, Err: err}
			}
			p.updateStep(ti, si, func(s *tape.Step) { s.ToolResults = results })
		}
		if err := p.sync(); err != nil {
			return &IncompleteError{Thread: th.ID, Step: si, Err: err}
		}
	}
	return nil
}

func (p *player) appendStep(ti int, s *tape.Step) error {
	p.mu.Lock()
	p.steps++
	p.mu.Unlock()
	if p.w == nil {
		p.mu.Lock()
		defer p.mu.Unlock()
		p.out.Threads[ti].Steps = append(p.out.Threads[ti].Steps, s)
		return nil
	}
	_, err := p.w.AppendStep(ti, s)
	return err
}

func (p *player) updateStep(ti, si int, fn func(*tape.Step)) {
	if p.w == nil {
		p.mu.Lock()
		defer p.mu.Unlock()
		fn(p.out.Threads[ti].Steps[si])
		return
	}
	if err := p.w.UpdateStep(ti, si, fn); err != nil {
		p.opts.Logf("update replay tape: %v", err)
	}
}

func (p *player) sync() error {
	if p.w == nil {
		return nil
	}
	return p.w.Sync()
}

// runCalls runs the tool calls of one step: concurrently when the harness runs a response's
// calls in parallel, else in order. Spawning calls play their child thread.
//
// A step that ended its thread (endedBy) writes no result where the recording holds none:
// its ending call is not sent to the executor, its other calls run for their effects on the
// workspace.
func (p *player) runCalls(ctx context.Context, th *tape.Thread, si int, st *tape.Step, calls []tape.ToolCall) ([]tape.ToolResult, error) {
	results := make([]tape.ToolResult, len(calls))
	errs := make([]error, len(calls))
	ended := p.endedBy(st)
	run := func(i int) {
		if ended[calls[i].ID] {
			return
		}
		results[i], errs[i] = p.runCall(ctx, th, si, st, calls[i])
	}
	if p.policy.ParallelToolCalls && len(calls) > 1 {
		var wg sync.WaitGroup
		for i := range calls {
			wg.Go(func() { run(i) })
		}
		wg.Wait()
	} else {
		for i := range calls {
			run(i)
			if errs[i] != nil {
				break
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if len(ended) > 0 {
		kept := results[:0]
		for i, r := range results {
			if _, ok := st.ToolResult(calls[i].ID); ok {
				kept = append(kept, r)
			}
		}
		results = kept
	}
	return results, nil
}

// endedBy returns the calls of step st, by id, of the harness's ending tools whose results
// the recording does not hold: the harness ended the thread on them and sent the model no
// result of that answer. Nil when there are none (a recording whose ending call failed,
// and so got its error back, ended nothing).
func (p *player) endedBy(st *tape.Step) map[string]bool {
	var ended map[string]bool
	for _, c := range st.ToolCalls {
		if !slices.Contains(p.ending, c.Name) {
			continue
		}
		if _, ok := st.ToolResult(c.ID); ok {
			continue
		}
		if ended == nil {
			ended = map[string]bool{}
		}
		ended[c.ID] = true
	}
	return ended
}

func (p *player) runCall(ctx context.Context, th *tape.Thread, si int, st *tape.Step, c tape.ToolCall) (tape.ToolResult, error) {
	recorded, hasRecorded := st.ToolResult(c.ID)
	if slices.Contains(p.policy.SpawningTools, c.Name) {
		return p.playChild(ctx, th, c, recorded, hasRecorded)
	}
	p.progress(th.ID, c.Name)
	var rp *tape.ToolResult
	if hasRecorded {
		r := recorded
		rp = &r
	}
	res, err := p.callWithRestart(ctx, c, rp, !offered(st, c))
	if err != nil {
		return tape.ToolResult{}, err
	}
	res.ToolCallID = c.ID
	if hasRecorded {
		h := p.rec.Meta.Harness
		p.ids.Learn(match.Site{Thread: th.ID, Step: si}, match.Mask(h, recorded.Flat()), match.Mask(h, res.Flat()))
	}
	return res, nil
}

// offered says whether the request of step st offered the tool of call c: its tool list
// names it, or the list is empty (a request that offered no tools at all, or whose body the
// recorder did not keep, tells nothing), or the call is of a deferred namespace's tool
// (Codex's multi_agent_v1 spawn_agent and wait_agent), which the harness loads outside the
// request's list.
func offered(st *tape.Step, c tape.ToolCall) bool {
	if len(st.Request.Tools) == 0 || c.Namespace != "" {
		return true
	}
	for _, t := range st.Request.Tools {
		if t.Name == c.Name {
			return true
		}
	}
	return false
}

// playChild plays the thread spawned by call c and returns the spawning call's result: the
// recorded one (which wraps the child's final text the way the harness does), or the child's
// final text when the recording has none.
func (p *player) playChild(ctx context.Context, parent *tape.Thread, c tape.ToolCall, recorded tape.ToolResult, hasRecorded bool) (tape.ToolResult, error) {
	child := p.rec.ChildOf(parent.ID, c.ID)
	if child == nil {
		p.opts.Logf("thread %s: spawning call %s (%s) has no child thread in the tape; replaying its recorded result", parent.ID, c.ID, c.Name)
		if !hasRecorded {
			return tape.ToolResult{ToolCallID: c.ID, IsError: true, Content: []tape.Block{{Type: tape.BlockText,
				Text: fmt.Sprintf("tapebox: spawning call %s (%s) has neither a child thread nor a recorded result", c.ID, c.Name)}}}, nil
		}
		return recorded, nil
	}
	if err := p.playThread(ctx, child); err != nil {
		return tape.ToolResult{}, err
	}
	if hasRecorded {
		return recorded, nil
	}
	final := ""
	if n := len(child.Steps); n > 0 {
		final = child.Steps[n-1].Response.Text()
	}
	return tape.ToolResult{ToolCallID: c.ID, Content: []tape.Block{{Type: tape.BlockText, Text: final}}}, nil
}

func (p *player) currentSession() *session {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.sess
}

// callWithRestart runs a call, restarting a dead executor session (background tasks live on
// the sandbox's disk, so a new session still answers for them). A call that times out gets
// an error result.
func (p *player) callWithRestart(ctx context.Context, c tape.ToolCall, recorded *tape.ToolResult, notOffered bool) (tape.ToolResult, error) {
	for {
		s := p.currentSession()
		cctx, cancel := context.WithTimeout(ctx, p.opts.CallTimeout)
		res, err := s.call(cctx, c, recorded, notOffered)
		cancel()
		var ee *ExecutorError
		switch {
		case err == nil:
			p.mu.Lock()
			if p.calls == 0 {
				p.firstResult = p.opts.Now()
			}
			p.calls++
			if res.DurationMS != nil {
				p.toolTime += msDur(*res.DurationMS)
			}
			p.mu.Unlock()
			return res, nil
		case errors.As(err, &ee):
			return errorResult(c, "tapebox: the executor could not run this call: "+ee.Message), nil
		case errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil:
			p.opts.Logf("tool call %s (%s) timed out after %v", c.ID, c.Name, p.opts.CallTimeout)
			return errorResult(c, fmt.Sprintf("tapebox: tool call timed out after %v", p.opts.CallTimeout)), nil
		case errors.Is(err, errSessionDied):
			if rerr := p.restart(ctx, s, err); rerr != nil {
				return tape.ToolResult{}, rerr
			}
		default:
			return tape.ToolResult{}, err
		}
	}
}

func errorResult(c tape.ToolCall, msg string) tape.ToolResult {
	return tape.ToolResult{ToolCallID: c.ID, IsError: true, Content: []tape.Block{{Type: tape.BlockText, Text: msg}}}
}

// restart replaces a dead session (once, however many calls noticed it).
func (p *player) restart(ctx context.Context, dead *session, cause error) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.sess != dead {
		return nil // another call restarted it already
	}
	if p.restarts >= p.opts.MaxRestarts {
		return fmt.Errorf("executor session died %d times, giving up: %w", p.restarts+1, cause)
	}
	p.restarts++
	p.opts.Logf("executor session died (%v); restarting it (%d/%d)", cause, p.restarts, p.opts.MaxRestarts)
	dead.conn.Close()
	s, err := startSession(ctx, p.sb, p.hello, p.opts.Logf)
	if err != nil {
		return fmt.Errorf("the executor session died (%v) and could not be restarted: %w; is the sandbox still running?", cause, err)
	}
	p.sess = s
	return nil
}

// ToolPath returns the tool time on a replay's critical path: for every step of every thread,
// the longest of its tool calls that ran in the sandbox (the calls of one response run
// concurrently). Spawning calls are left out: their child threads' steps count instead.
// Result.ToolTime, a sum over calls, counts parallel calls each.
func ToolPath(replay *tape.Tape) time.Duration {
	if replay == nil {
		return 0
	}
	var total float64
	for _, th := range replay.Threads {
		for _, st := range th.Steps {
			longest := 0.0
			for _, r := range st.ToolResults {
				if r.DurationMS != nil && *r.DurationMS > longest && replay.ChildOf(th.ID, r.ToolCallID) == nil {
					longest = *r.DurationMS
				}
			}
			total += longest
		}
	}
	return msDur(total)
}
