package gateway

import (
	"fmt"

	"github.com/tapebox/tapebox/tape"
	"github.com/tapebox/tapebox/tape/provider"
)

// recorder writes one run's tape step by step: the endpoint's one step recorder, for the
// calls the gateway forwards live, the calls a simulator run serves from a tape, and a
// fork's both (Seed hands the served steps on to the live recording). It writes through a
// tape.Writer, which keeps the file on disk a complete tape after every Sync; for a run
// without an output (a simulator run without Output, a fork's served prefix) it changes
// the tape in memory instead. Its caller serializes the calls.
type recorder struct {
	w *tape.Writer // nil: in memory
	t *tape.Tape
}

// newRecorder starts recording t at path, or in memory when path is "". The tape on disk
// is published without fsync; the caller fsyncs when it must (fsyncPath).
func newRecorder(path string, t *tape.Tape, opts ...tape.Option) (*recorder, error) {
	if path == "" {
		return &recorder{t: t}, nil
	}
	w, err := tape.Create(path, t, opts...)
	if err != nil {
		return nil, err
	}
	w.SetFsync(false)
	return &recorder{w: w, t: w.Tape()}, nil
}

// addThread opens a thread and returns its index.
func (r *recorder) addThread(id string, parent *tape.Parent) (int, error) {
	if r.w != nil {
		return r.w.AddThread(id, parent)
	}
	r.t.Threads = append(r.t.Threads, &tape.Thread{ID: id, Parent: parent, Steps: []*tape.Step{}})
	return len(r.t.Threads) - 1, nil
}

// append adds a step to thread ti, from prep when the request is encoded already (nil:
// from s), and returns its index.
func (r *recorder) append(ti int, s *tape.Step, prep *tape.PreparedStep) (int, error) {
	switch {
	case r.w == nil:
		th := r.t.Threads[ti]
		th.Steps = append(th.Steps, s)
		return len(th.Steps) - 1, nil
	case prep != nil:
		return r.w.AppendPrepared(ti, prep)
	}
	return r.w.AppendStep(ti, s)
}

// release drops a written step's bodies and conversation from memory (tape.Writer.Release);
// in memory, it keeps them.
func (r *recorder) release(ti, si int) error {
	if r.w == nil {
		return nil
	}
	return r.w.Release(ti, si)
}

// answered gives step si of thread ti what the thread's next request tells of it: the
// results it carries for the step's tool calls in wire format p (provider.RequestResults;
// kept as they were when it carries none)
// and when it came (ms since the start).
func (r *recorder) answered(p tape.Provider, ti, si int, calls []tape.ToolCall, next *tape.Request, at float64) error {
	results := provider.RequestResults(p, next, calls)
	fn := func(rs *[]tape.ToolResult, timing *tape.Timing) {
		if results != nil {
			*rs = results
		}
		timing.NextRequestAt = &at
	}
	if r.w != nil {
		return r.w.UpdateStepEnd(ti, si, fn)
	}
	if err := r.check(ti, si); err != nil {
		return err
	}
	s := r.t.Threads[ti].Steps[si]
	fn(&s.ToolResults, &s.Timing)
	return nil
}

// updateStep changes a written step, request and all.
func (r *recorder) updateStep(ti, si int, fn func(*tape.Step)) error {
	if r.w != nil {
		return r.w.UpdateStep(ti, si, fn)
	}
	if err := r.check(ti, si); err != nil {
		return err
	}
	fn(r.t.Threads[ti].Steps[si])
	return nil
}

// updateAnswer changes what follows a written step's request (more of a stream).
func (r *recorder) updateAnswer(ti, si int, fn func(*tape.Step)) error {
	if r.w != nil {
		return r.w.UpdateStepAnswer(ti, si, fn)
	}
	return r.updateStep(ti, si, fn)
}

// updateMeta changes the tape's meta.
func (r *recorder) updateMeta(fn func(*tape.Meta)) error {
	if r.w != nil {
		return r.w.UpdateMeta(fn)
	}
	fn(&r.t.Meta)
	return nil
}

// learnCwd sets meta.cwd, unless set, to the working directory a main thread's first
// request names (provider.Cwd), where the harness says it works.
func (r *recorder) learnCwd(req *tape.Request) error {
	cwd := provider.Cwd(req)
	if cwd == "" {
		return nil
	}
	return r.updateMeta(func(m *tape.Meta) {
		if m.Cwd == "" {
			m.Cwd = cwd
		}
	})
}

// prepareSync readies the next Sync (tape.Writer.PrepareSync).
func (r *recorder) prepareSync() {
	if r.w != nil {
		r.w.PrepareSync()
	}
}

// sync publishes every change so far on disk, atomically.
func (r *recorder) sync() error {
	if r.w == nil {
		return nil
	}
	return r.w.Sync()
}

// end records how the run ended (meta.ended) and, on disk, publishes the tape a last time
// and closes it.
func (r *recorder) end(e tape.Ended) error {
	if r.w != nil {
		return r.w.End(e)
	}
	e.At = e.At.UTC()
	r.t.Meta.Ended = &e
	return nil
}

func (r *recorder) check(ti, si int) error {
	if ti < 0 || ti >= len(r.t.Threads) || si < 0 || si >= len(r.t.Threads[ti].Steps) {
		return fmt.Errorf("update step: no step %d in thread %d", si, ti)
	}
	return nil
}
