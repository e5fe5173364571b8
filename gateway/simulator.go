package gateway

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tapebox/tapebox/tape"
)

// SimulatorOptions configure simulator mode.
type SimulatorOptions struct {
	// Speed scales the recorded latency: 1 as recorded, 2 twice as fast, 0 none.
	Speed float64
	// Output is the replay tape of run "default"; run R's goes to <stem>.R.json beside it.
	// "" writes no tapes.
	Output string
	// Logf receives one line per request and per problem; nil discards them.
	Logf func(format string, args ...any)
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Workspace, when set, is the directory the harness works in, on this machine: a run
	// that completes records its end manifest (with the recording's exclusions and
	// WorkspaceExclude) into its replay tape, for compare's end-state check. Restore the
	// start snapshot there first (RestoreSnapshot).
	Workspace        string
	WorkspaceExclude []string
	// Cwd, when set and not the recording's meta.cwd, is the directory the harness works
	// in: every run knows meta.cwd as an identifier of it from the start
	// (match.Identifiers.Pin), so that tool results naming paths under it match the
	// recording's, and the calls served name paths under Cwd.
	Cwd string
	// Until, when set, bounds the steps served per thread id: a request for step Until[id]
	// or later of thread id is checked as any other (its thread found, the tool results it
	// carries compared with the recording's) and then handed to Beyond instead of being
	// served or recorded. Threads Until does not name are served whole. A fork uses it to
	// send the requests past its fork point upstream.
	Until map[string]int
	// Beyond receives the requests past Until, their body already read; required with Until.
	Beyond func(w http.ResponseWriter, r *http.Request, body []byte, thread string, step int)
}

// Simulator serves a tape's recorded responses on the providers' own paths, so that a real
// harness replays without a model. It is an http.Handler. Each run (a harness replaying the
// tape: /r/<run>/v1/..., or "default" for a plain /v1/...) has its own cursor, identifiers and
// replay tape, so several harnesses can replay the same tape at once.
//
// For each model call it finds the thread (by system prompt, tools and opening messages,
// among the threads whose parent call was already served) and the step (by the number of
// model turns the request already holds: the recorded step the thread went on from at that
// turn, never an attempt the harness retried; tape.Thread.Kept), checks that the tool results it carries match the
// recording (volatile fields masked, identifiers learned), and serves the recorded raw
// response, chunk by chunk with the recorded timing scaled by Speed, identifiers
// substituted. A request that does not match gets an error in the provider's own shape that
// names the thread and step, and ends that run as diverged.
type Simulator struct {
	rec   *tape.Tape
	opts  SimulatorOptions
	sigs  []threadSig // per recorded thread, its first request's
	model map[string]bool

	lastRequest atomic.Int64 // unix nanoseconds of the latest request

	mu       sync.Mutex
	runs     map[string]*simRun
	finished chan struct{} // closed when every started run has finished
	closed   bool
}

// NewSimulator prepares a simulator for rec.
func NewSimulator(rec *tape.Tape, opts SimulatorOptions) (*Simulator, error) {
	if rec.Main() == nil {
		return nil, errors.New("simulator: the tape has no main thread")
	}
	if opts.Speed < 0 {
		return nil, fmt.Errorf("simulator: speed %v: must be 0 or more", opts.Speed)
	}
	if opts.Logf == nil {
		opts.Logf = func(string, ...any) {}
	}
	if opts.Until != nil && opts.Beyond == nil {
		return nil, errors.New("simulator: Until needs a Beyond handler")
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	s := &Simulator{rec: rec, opts: opts, runs: map[string]*simRun{}, finished: make(chan struct{}), model: map[string]bool{}}
	s.sigs = recordedSigs(rec)
	for _, th := range rec.Threads {
		for _, st := range th.Steps {
			if m := tape.BodyModel(st.Request.Raw); m != "" {
				s.model[m] = true
			}
		}
	}
	if rec.Meta.Model != "" {
		s.model[rec.Meta.Model] = true
	}
	return s, nil
}

// Idle returns how long it has been since the latest request (since the start when none came).
func (s *Simulator) Idle() time.Duration {
	last := s.lastRequest.Load()
	if last == 0 {
		return 0
	}
	return s.opts.Now().Sub(time.Unix(0, last))
}

// Finished is closed once at least one run started and every started run has finished.
func (s *Simulator) Finished() <-chan struct{} { return s.finished }

// Close ends every run still going as cut and writes its tape.
func (s *Simulator) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	var errs []error
	for _, r := range s.runs {
		errs = append(errs, r.end(tape.EndCut, "simulator stopped"))
	}
	return errors.Join(errs...)
}

// Runs returns the names of the runs seen so far.
func (s *Simulator) Runs() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for n := range s.runs {
		out = append(out, n)
	}
	return out
}

// RunTape returns a run's replay tape so far (nil for an unknown run). Do not change it.
func (s *Simulator) RunTape(name string) *tape.Tape {
	var out *tape.Tape
	s.withRun(name, func(r *simRun) { out = r.out })
	return out
}

// withRun calls f with the run named name locked, if there is one.
func (s *Simulator) withRun(name string, f func(r *simRun)) {
	s.mu.Lock()
	r := s.runs[name]
	s.mu.Unlock()
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	f(r)
}

// RunCopy returns a copy of a run's replay tape so far, safe to use while the run goes on
// (nil for an unknown run): its meta and threads, each step copied.
func (s *Simulator) RunCopy(name string) *tape.Tape {
	var out *tape.Tape
	s.withRun(name, func(r *simRun) {
		out = &tape.Tape{Version: r.out.Version, Meta: r.out.Meta}
		if r.out.Meta.Ended != nil {
			e := *r.out.Meta.Ended
			out.Meta.Ended = &e
		}
		for _, th := range r.out.Threads {
			c := &tape.Thread{ID: th.ID, Parent: th.Parent, Steps: make([]*tape.Step, len(th.Steps))}
			for i, st := range th.Steps {
				cp := *st
				c.Steps[i] = &cp
			}
			out.Threads = append(out.Threads, c)
		}
	})
	return out
}

var (
	runPrefix = regexp.MustCompile(`^/r/([^/]*)/`)
	safeRun   = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)
)

// OutputFor returns where run name's replay tape goes given the default output path.
func OutputFor(output, name string) string {
	if output == "" || name == "default" {
		return output
	}
	ext := filepath.Ext(output)
	return strings.TrimSuffix(output, ext) + "." + name + ".json"
}

// ServeHTTP answers one request of a harness. It routes as every mode does (route): a
// model call is a POST to a wire's model path as sent, after the /r/RUN prefix; a POST
// whose path reads as one only once decoded or normalized is refused (refuseAmbiguous).
func (s *Simulator) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.lastRequest.Store(s.opts.Now().UnixNano())
	path, p, isModel, ambiguous := route(r)
	run := "default"
	if m := runPrefix.FindStringSubmatch(r.URL.EscapedPath()); m != nil {
		run = m[1]
		if !safeRun.MatchString(run) {
			s.opts.Logf("run %q: not a safe file name", run)
			writeError(w, p, simError(http.StatusBadRequest, "invalid_request_error",
				fmt.Sprintf("tapebox simulator: run id %q is not a safe file name (letters, digits, '.', '_', '-'; at most 128)", run)))
			return
		}
	}
	switch {
	case r.Method == http.MethodGet && strings.HasSuffix(path, "/v1/responses"):
		// Codex tries a WebSocket first; 426 makes it fall back to SSE.
		writeError(w, tape.ProviderOpenAIResponses, apiError{status: http.StatusUpgradeRequired, typ: "invalid_request_error", msg: "tapebox simulator: use HTTP streaming"})
		return
	case isModel && r.Method == http.MethodPost:
	case ambiguous && r.Method == http.MethodPost:
		refuseAmbiguous(w, r, p, path, "tapebox simulator", s.opts.Logf)
		return
	case r.Method == http.MethodGet && strings.HasSuffix(path, "/v1/models"):
		s.serveModels(w, path)
		return
	case r.Method == http.MethodPost && strings.HasSuffix(path, "/v1/messages/count_tokens"):
		s.serveCountTokens(w, r)
		return
	default:
		if p == "" {
			p = s.rec.Meta.Provider
		}
		s.opts.Logf("run %s: %s %s: not a path the tape has", run, r.Method, r.URL.Path)
		writeError(w, p, simError(http.StatusNotFound, "not_found_error", fmt.Sprintf("tapebox simulator: %s %s is not a path this tape recorded", r.Method, path)))
		return
	}
	if p != s.rec.Meta.Provider {
		writeError(w, p, simError(http.StatusNotFound, "not_found_error",
			fmt.Sprintf("tapebox simulator: the tape was recorded with %s, not %s", s.rec.Meta.Provider, p)))
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 256<<20))
	if err != nil {
		writeError(w, p, simError(http.StatusBadRequest, "invalid_request_error", "tapebox simulator: read body: "+err.Error()))
		return
	}
	rn, err := s.run(run)
	if err != nil {
		writeError(w, p, simError(http.StatusServiceUnavailable, "api_error", "tapebox simulator: "+err.Error()))
		return
	}
	rn.serve(w, r, p, body)
}

func (s *Simulator) run(name string) (*simRun, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, errors.New("the simulator is shutting down")
	}
	if r, ok := s.runs[name]; ok {
		return r, nil
	}
	r, err := newSimRun(s, name)
	if err != nil {
		return nil, err
	}
	s.runs[name] = r
	return r, nil
}

// runFinished closes Finished when every run has finished.
func (s *Simulator) runFinished() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range s.runs {
		if !r.isDone() {
			return
		}
	}
	select {
	case <-s.finished:
	default:
		close(s.finished)
	}
}

func (s *Simulator) serveModels(w http.ResponseWriter, path string) {
	var data []map[string]any
	for m := range s.model {
		data = append(data, map[string]any{"id": m, "type": "model", "object": "model", "display_name": m, "owned_by": "tapebox", "created_at": s.rec.Meta.StartedAt.Format(time.RFC3339)})
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"object": "list", "data": data, "has_more": false})
}

func (s *Simulator) serveCountTokens(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 256<<20))
	if !json.Valid(body) {
		writeError(w, tape.ProviderAnthropic, simError(http.StatusBadRequest, "invalid_request_error", "tapebox simulator: the body is not JSON"))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"input_tokens":%d}`+"\n", max(1, len(body)/4))
}

// simError is an error of the simulator, with OpenAI's code tapebox_<typ>.
func simError(status int, typ, msg string) apiError {
	return apiError{status: status, typ: typ, code: "tapebox_" + typ, msg: msg}
}
