package gateway

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/tapebox/tapebox/tape"
	"github.com/tapebox/tapebox/workspace"
)

// ForkConfig configures the endpoint's fork mode (NewFork).
type ForkConfig struct {
	// Recording is the tape to fork (required).
	Recording *tape.Tape
	// Thread is the thread of the fork point ("" means the main thread's id) and At the
	// step, numbered from 0 as inspect prints it: steps 0..At-1 of Thread are served from
	// the recording, step At goes upstream.
	Thread string
	At     int
	// Upstream receives the live calls (a provider's root URL; "" means the provider's
	// public API). Transport reaches it; nil means the gateway's default.
	Upstream  string
	Transport http.RoundTripper
	// Rewrite, when set, changes the body of every live model call (a fork's overrides: the
	// model, the system prompt) before it goes upstream and into the tape; a body with a
	// Content-Encoding is sent as it is. Overrides says what it changes, for
	// meta.forked_from.overrides.
	Rewrite func(p tape.Provider, body []byte) ([]byte, error)
	// RewritePath, when set, changes the path of every live model call (a Gemini API
	// call names its model there, a fork's model override changes it) before it goes
	// upstream and into the tape.
	RewritePath func(p tape.Provider, path string) (string, error)
	Overrides   map[string]string
	// Output is the fork tape's path (required).
	Output string
	// Speed paces the served steps as SimulatorOptions.Speed does (0: none).
	Speed float64
	// Workspace, when set, is the directory the harness works in, the recording's start
	// snapshot already restored there: the fork tape snapshots it (so that the fork tape
	// replays on its own) and records its end manifest.
	Workspace string
	// Cwd, when set, is the directory the harness works in: the fork tape's meta.cwd, and,
	// when it is not the recording's meta.cwd, an identifier of it from the start
	// (SimulatorOptions.Cwd).
	Cwd string
	// Logf receives one line per call and per problem; nil discards them.
	Logf func(format string, args ...any)
}

// Fork is the endpoint's fork mode, go-vcr's "replay with new episodes": the tape upstream
// (Simulator) before the fork point and the live one (Gateway) from it on, an http.Handler
// a harness points its provider base URL at. Until a request asks for a step past the
// served prefix, every request is answered from the recording (checked against it); that
// request and every one after it go to the upstream and are recorded. The live recording
// starts with the steps served, so the fork tape is complete.
type Fork struct {
	cfg    ForkConfig
	thread *tape.Thread
	until  map[string]int
	sim    *Simulator
	gw     *Gateway
	start  time.Time

	mu      sync.Mutex
	live    bool
	ready   chan struct{} // closed once the gateway holds the prefix
	liveErr error
	reached time.Time // when the first live request arrived
	first   time.Time // when the first model call arrived
	serving int       // requests the simulator is serving
	idle    *sync.Cond
	served  map[string]int
}

// CheckFork says whether the fork point exists in rec: an error naming the thread or the step
// when it does not.
func CheckFork(rec *tape.Tape, thread string, at int) (*tape.Thread, error) {
	if rec.Main() == nil {
		return nil, errors.New("the tape has no main thread")
	}
	if thread == "" {
		thread = rec.Main().ID
	}
	th := rec.Thread(thread)
	if th == nil {
		var ids []string
		for _, t := range rec.Threads {
			ids = append(ids, t.ID)
		}
		return nil, fmt.Errorf("thread %q: no such thread in tape %s (threads: %v)", thread, rec.Meta.TapeID, ids)
	}
	if at < 0 || at >= len(th.Steps) {
		return nil, fmt.Errorf("step %d: thread %s has %d steps (0 to %d, as inspect numbers them)", at, th.ID, len(th.Steps), len(th.Steps)-1)
	}
	return th, nil
}

// ForkPrefix returns, per thread id, how many steps a fork at step at of th serves from the
// recording: at for th; for every other thread, its steps whose answer ended before step
// at of th was asked for (in the recording's timeline).
func ForkPrefix(rec *tape.Tape, th *tape.Thread, at int) map[string]int {
	cut := th.Steps[at].Timing.RequestAt
	until := map[string]int{}
	for _, t := range rec.Threads {
		if t == th {
			until[t.ID] = at
			continue
		}
		n := 0
		for n < len(t.Steps) && t.Steps[n].Timing.LastByteAt <= cut {
			n++
		}
		until[t.ID] = n
	}
	return until
}

// NewFork prepares the fork mode. The fork tape is created at cfg.Output at once.
func NewFork(cfg ForkConfig) (*Fork, error) {
	if cfg.Recording == nil {
		return nil, errors.New("fork: no recording")
	}
	th, err := CheckFork(cfg.Recording, cfg.Thread, cfg.At)
	if err != nil {
		return nil, fmt.Errorf("fork: %w", err)
	}
	cfg.Thread = th.ID
	if cfg.Logf == nil {
		cfg.Logf = func(string, ...any) {}
	}
	s := &Fork{cfg: cfg, thread: th, until: ForkPrefix(cfg.Recording, th, cfg.At), ready: make(chan struct{}), start: time.Now()}
	s.idle = sync.NewCond(&s.mu)
	s.sim, err = NewSimulator(cfg.Recording, SimulatorOptions{
		Speed: cfg.Speed, Logf: func(f string, a ...any) { cfg.Logf("tape: "+f, a...) },
		Until: s.until, Beyond: s.beyond, Cwd: cfg.Cwd,
	})
	if err != nil {
		return nil, fmt.Errorf("fork: %w", err)
	}
	gcfg := Config{Output: cfg.Output, Upstream: cfg.Upstream, Transport: cfg.Transport,
		Task: cfg.Recording.Meta.Task, Labels: map[string]string{"mode": ModeFork.String()},
		Harness: cfg.Recording.Meta.Harness, HarnessVersion: cfg.Recording.Meta.HarnessVersion, Cwd: cfg.Cwd,
		Logf: func(f string, a ...any) { cfg.Logf("live: "+f, a...) }}
	if cfg.Workspace != "" {
		gcfg.Workspace = cfg.Workspace
		if w := cfg.Recording.Meta.Workspace; w != nil {
			gcfg.WorkspaceOptions = workspace.Recorded(w)
		}
	}
	if s.gw, err = New(gcfg); err != nil {
		return nil, fmt.Errorf("fork: %w", err)
	}
	if err := s.gw.SetForkedFrom(s.forkedFrom(nil)); err != nil {
		s.gw.Close(context.Background())
		return nil, fmt.Errorf("fork: %w", err)
	}
	return s, nil
}

func (s *Fork) forkedFrom(served map[string]int) *tape.ForkedFrom {
	if served == nil {
		served = map[string]int{}
	}
	overrides := s.cfg.Overrides
	if overrides == nil {
		overrides = map[string]string{}
	}
	return &tape.ForkedFrom{TapeID: s.cfg.Recording.Meta.TapeID, Thread: s.cfg.Thread, Step: s.cfg.At,
		Served: served, Overrides: overrides}
}

// ServeHTTP answers one request of the harness.
func (s *Fork) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	if _, _, isModel, _ := route(r); isModel && r.Method == http.MethodPost && s.first.IsZero() {
		s.first = time.Now()
	}
	live := s.live
	if !live {
		s.serving++
	}
	s.mu.Unlock()
	if !live {
		s.sim.ServeHTTP(w, r)
		s.mu.Lock()
		s.serving--
		s.mu.Unlock()
		s.idle.Broadcast()
		return
	}
	<-s.ready
	s.forward(w, r)
}

// beyond is the simulator's hand-off: the first request past the prefix makes the server
// live.
func (s *Fork) beyond(w http.ResponseWriter, r *http.Request, body []byte, thread string, step int) {
	s.mu.Lock()
	s.serving-- // handed on: no longer the simulator's
	first := !s.live
	if first {
		s.live = true
		s.reached = time.Now()
		// Steps the simulator is still serving (a parallel thread's) belong in the prefix:
		// seed once they are recorded.
		for s.serving > 0 {
			s.idle.Wait()
		}
	}
	s.mu.Unlock()
	s.idle.Broadcast()
	defer func() {
		s.mu.Lock()
		s.serving++ // ServeHTTP counts it down
		s.mu.Unlock()
	}()
	if first {
		s.liveErr = s.seed()
		close(s.ready)
		if thread != s.cfg.Thread || step != s.cfg.At {
			s.cfg.Logf("fork: thread %s step %d asked for upstream before thread %s step %d: the timelines part there", thread, step, s.cfg.Thread, s.cfg.At)
		}
		s.cfg.Logf("fork: thread %s step %d: going live", thread, step)
	}
	<-s.ready
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	s.forward(w, r)
}

// seed hands the steps served so far to the gateway, at the fork point.
func (s *Fork) seed() error {
	prefix := s.sim.RunCopy("default")
	if prefix == nil {
		prefix = &tape.Tape{Meta: s.cfg.Recording.Meta}
		prefix.Meta.StartedAt = s.gw.Start()
	}
	served, err := s.handOver(prefix)
	s.mu.Lock()
	s.served = served
	s.mu.Unlock()
	return err
}

// handOver writes the steps the tape run served (prefix) into the fork tape (Seed), which
// continues their threads live, and records meta.forked_from with the steps served per
// thread, which it returns.
func (s *Fork) handOver(prefix *tape.Tape) (map[string]int, error) {
	served := map[string]int{}
	for _, th := range prefix.Threads {
		if len(th.Steps) > 0 {
			served[th.ID] = len(th.Steps)
		}
	}
	if prefix.Meta.Provider == "" {
		prefix.Meta.Provider = s.cfg.Recording.Meta.Provider
	}
	return served, errors.Join(s.gw.Seed(prefix), s.gw.SetForkedFrom(s.forkedFrom(served)))
}

// forward sends a live request through the gateway, the overrides applied to model calls
// (which the gateway routes again, as it routes every request).
func (s *Fork) forward(w http.ResponseWriter, r *http.Request) {
	_, p, isModel, _ := route(r)
	if s.liveErr != nil && isModel {
		writeError(w, p, apiError{status: http.StatusInternalServerError, typ: "api_error", msg: "tapebox fork: " + s.liveErr.Error()})
		return
	}
	if isModel && r.Method == http.MethodPost {
		body, err := io.ReadAll(io.LimitReader(r.Body, 256<<20))
		if err != nil {
			writeError(w, p, apiError{status: http.StatusBadRequest, typ: "invalid_request_error", msg: "tapebox fork: read body: " + err.Error()})
			return
		}
		if r.Header.Get("Content-Encoding") == "" && s.cfg.Rewrite != nil {
			if body, err = s.cfg.Rewrite(p, body); err != nil {
				writeError(w, p, apiError{status: http.StatusBadRequest, typ: "invalid_request_error", msg: "tapebox fork: " + err.Error()})
				return
			}
		}
		if s.cfg.RewritePath != nil {
			path, err := s.cfg.RewritePath(p, r.URL.Path)
			if err != nil {
				writeError(w, p, apiError{status: http.StatusBadRequest, typ: "invalid_request_error", msg: "tapebox fork: " + err.Error()})
				return
			}
			if path != r.URL.Path {
				u := *r.URL
				u.Path, u.RawPath = path, ""
				r.URL = &u
			}
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
		r.Header.Del("Content-Length")
	}
	s.gw.ServeHTTP(w, r)
}

// Live says whether the fork point was reached, and when.
func (s *Fork) Live() (bool, time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.live, s.reached
}

// SetWorkspace records the fork tape's meta.workspace (taken elsewhere than on this
// machine: in a container), for a server made without Config.Workspace.
func (s *Fork) SetWorkspace(w *tape.Workspace) error { return s.gw.SetWorkspace(w) }

// FirstCall returns when the harness's first model call arrived (zero before it).
func (s *Fork) FirstCall() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.first
}

// Finish ends the fork tape. Before the fork point the tape holds the steps served and
// ends as the simulator's run did (diverged, naming the step and what differed) or cut;
// after it, as a recording ends (complete, cut, upstream_error), cmdFailed saying the
// harness exited non-zero. It returns the end reason and detail.
func (s *Fork) Finish(cmdFailed string) (tape.EndReason, string, error) {
	live, _ := s.Live()
	var reason tape.EndReason
	var detail string
	if !live {
		run := s.sim.RunCopy("default")
		reason, detail = tape.EndCut, fmt.Sprintf("the harness stopped before thread %s step %d", s.cfg.Thread, s.cfg.At)
		if run == nil {
			detail = "the harness made no model call"
		} else if e := run.Meta.Ended; e != nil && e.Reason != tape.EndComplete {
			reason, detail = e.Reason, e.Detail
		}
		s.sim.Close()
		if run != nil {
			if _, err := s.handOver(run); err != nil {
				s.cfg.Logf("fork: %v", err)
			}
		}
	} else {
		s.sim.Close()
		reason, detail = s.gw.Outcome()
		if cmdFailed != "" && reason == tape.EndComplete {
			reason, detail = tape.EndCut, cmdFailed
		}
	}
	if err := s.gw.Finish(reason, detail); err != nil {
		return reason, detail, err
	}
	return reason, detail, nil
}

// Diverged is closed when the harness's requests stopped matching the recording before
// the fork point (the simulator answered it with an error and ended its run).
func (s *Fork) Diverged() <-chan struct{} { return s.sim.Finished() }

// Served returns, per thread, the steps served from the recording (nil before the fork
// point was reached).
func (s *Fork) Served() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.served
}
