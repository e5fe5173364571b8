package controller

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/tapebox/tapebox/internal/term"
	"github.com/tapebox/tapebox/match"
	"github.com/tapebox/tapebox/tape"
	"github.com/tapebox/tapebox/tape/provider"
	"github.com/tapebox/tapebox/workspace"
)

// simRun is one harness replaying the tape in simulator mode.
type simRun struct {
	s     *Simulator
	name  string
	start time.Time
	ids   *match.Identifiers

	mu      sync.Mutex
	out     *tape.Tape
	w       *tape.Writer
	served  []int                 // per recorded thread: the next step to serve
	written []int                 // per recorded thread: steps in the replay tape
	pending map[[2]int]*tape.Step // steps served ahead of their predecessor's write, by [thread, step]
	done    bool
	reason  tape.EndReason
}

func newSimRun(s *Simulator, name string) (*simRun, error) {
	start := s.opts.Now()
	r := &simRun{s: s, name: name, start: start, ids: match.NewIdentifiers(s.rec),
		served: make([]int, len(s.rec.Threads)), written: make([]int, len(s.rec.Threads))}
	r.out = newReplayTape(s.rec, start, map[string]string{"mode": "simulator", "run": name})
	if out := OutputFor(s.opts.Output, name); out != "" {
		w, err := tape.Create(out, r.out)
		if err != nil {
			return nil, fmt.Errorf("run %s: %w", name, err)
		}
		w.SetFsync(false)
		r.w = w
	}
	s.opts.Logf("run %s: started", name)
	return r, nil
}

// newReplayTape starts a replay tape of rec: its meta with replay_of set, and every thread of
// the recording (same ids and parents), to be filled as they are played.
func newReplayTape(rec *tape.Tape, start time.Time, labels map[string]string) *tape.Tape {
	out := tape.New(rec.Meta.Provider, start)
	m := rec.Meta
	recID := m.TapeID
	out.Meta = tape.Meta{TapeID: out.Meta.TapeID, Harness: m.Harness, HarnessVersion: m.HarnessVersion,
		Provider: m.Provider, Model: m.Model, StartedAt: start.UTC(), Task: m.Task, ReplayOf: &recID, Labels: labels}
	for k, v := range m.Labels {
		if _, ok := out.Meta.Labels[k]; !ok {
			out.Meta.Labels[k] = v
		}
	}
	for _, th := range rec.Threads {
		out.Threads = append(out.Threads, &tape.Thread{ID: th.ID, Parent: th.Parent, Steps: []*tape.Step{}})
	}
	return out
}

func (r *simRun) isDone() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.done
}

func (r *simRun) ms(t time.Time) float64 { return tape.RoundMS(t.Sub(r.start)) }

// divergence is a request the tape cannot answer.
type divergence struct {
	thread string // "" when no thread fits
	step   int
	msg    string
}

func (d *divergence) Error() string {
	if d.thread == "" {
		return d.msg
	}
	return fmt.Sprintf("thread %s step %d: %s", d.thread, d.step, d.msg)
}

// serve answers one model call.
func (r *simRun) serve(w http.ResponseWriter, hr *http.Request, p tape.Provider, body []byte) {
	arrived := r.s.opts.Now()
	if !json.Valid(body) {
		r.s.opts.Logf("run %s: %s: the body is not JSON", r.name, hr.URL.Path)
		writeProviderError(w, p, http.StatusBadRequest, "invalid_request_error", "tapebox simulator: the request body is not JSON")
		return
	}
	in := &tape.Step{Request: tape.Request{Path: tape.RedactURL(hr.URL.RequestURI()), Raw: json.RawMessage(body), Headers: simHeaders(hr.Header)}}
	if err := provider.Normalize(p, in); err != nil {
		r.s.opts.Logf("run %s: %v", r.name, err)
	}
	ti, si, rec, d := r.match(in, body)
	if d != nil {
		r.diverge(w, p, in, ti, arrived, d)
		return
	}
	th := r.s.rec.Threads[ti]
	if rec == nil { // past SimulatorOptions.Until
		r.s.opts.Logf("run %s: thread %s step %d: past the served steps, handed on", r.name, th.ID, si)
		r.s.opts.Beyond(w, hr, body, th.ID, si)
		return
	}
	r.s.opts.Logf("run %s: thread %s step %d", r.name, th.ID, si)
	resp, err := r.write(w, hr, rec, arrived)
	end := r.s.opts.Now()
	if err != nil {
		r.s.opts.Logf("run %s: thread %s step %d: %v", r.name, th.ID, si, err)
	}
	in.Response = resp
	if err := provider.Normalize(p, in); err != nil && resp.Status < 400 {
		r.s.opts.Logf("run %s: %v", r.name, err)
	}
	in.Timing = tape.Timing{RequestAt: r.ms(arrived), FirstByteAt: r.ms(arrived), LastByteAt: r.ms(end)}
	if len(resp.Chunks) > 0 {
		in.Timing.FirstByteAt = r.ms(arrived.Add(msDur(resp.Chunks[0].AtMS)))
	}
	r.record(ti, si, in)
}

// match finds the thread and step a request asks for and checks the tool results it
// carries. It marks the step as served; a step past SimulatorOptions.Until comes back with
// a nil rec and a nil d, unserved.
func (r *simRun) match(in *tape.Step, body []byte) (ti, si int, rec *tape.Step, d *divergence) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.done {
		return -1, 0, nil, &divergence{msg: fmt.Sprintf("run %s already ended (%s); start another run with /r/<run>/", r.name, r.reason)}
	}
	turns := provider.AssistantTurns(&in.Request)
	sig := sigOf(&in.Request)
	best, bestScore := -1, -1
	for i, th := range r.s.rec.Threads {
		if len(th.Steps) == 0 || !r.parentServed(th) {
			continue
		}
		// The next step, or the last one again (a retry).
		if turns != r.served[i] && turns != r.served[i]-1 {
			continue
		}
		sc := r.s.keys[i].score(sig)
		if turns == r.served[i]-1 {
			sc -= 1 // prefer a thread waiting for this step over a retry
		}
		if sc > bestScore {
			best, bestScore = i, sc
		}
	}
	if best < 0 || bestScore < 2 {
		return -1, 0, nil, &divergence{msg: fmt.Sprintf("no thread of the tape expects a request with %d model turns and this opening (%q)", turns, term.Excerpt(sig.opening, 120))}
	}
	th := r.s.rec.Threads[best]
	if turns >= len(th.Steps) {
		return best, turns, nil, &divergence{thread: th.ID, step: turns, msg: fmt.Sprintf("the tape's thread has %d steps; the harness asked for one more", len(th.Steps))}
	}
	rec = th.Steps[turns]
	if m := tape.BodyModel(body); m != "" {
		if want := tape.BodyModel(rec.Request.Raw); want != "" && m != want {
			return best, turns, nil, &divergence{thread: th.ID, step: turns, msg: fmt.Sprintf("model %q, the tape has %q", m, want)}
		}
	}
	if turns == 0 {
		r.ids.Learn(match.Site{Thread: th.ID, Step: -1}, r.s.keys[best].system, sig.system)
		r.ids.Learn(match.Site{Thread: th.ID, Step: -1}, r.s.keys[best].opening, sig.opening)
	} else if d := r.checkResults(th, turns, in); d != nil {
		return best, turns, nil, d
	}
	if lim, ok := r.s.opts.Until[th.ID]; ok && turns >= lim {
		return best, turns, nil, nil // the caller hands it on
	}
	r.served[best] = turns + 1
	return best, turns, rec, nil
}

// parentServed says whether th's spawning call was already served in this run.
func (r *simRun) parentServed(th *tape.Thread) bool {
	if th.Parent == nil {
		return true
	}
	ref, _, ok := r.s.rec.ParentCall(th)
	if !ok {
		return true
	}
	pi := r.threadIndex(ref.Thread.ID)
	return pi >= 0 && r.served[pi] > ref.Index
}

func (r *simRun) threadIndex(id string) int {
	for i, th := range r.s.rec.Threads {
		if th.ID == id {
			return i
		}
	}
	return -1
}

// checkResults compares the tool results a request carries for step si-1 with the recorded
// ones, learning identifiers on the way.
func (r *simRun) checkResults(th *tape.Thread, si int, in *tape.Step) *divergence {
	prev := th.Steps[si-1]
	got := provider.RequestResults(r.s.rec.Meta.Provider, &in.Request, prev.ToolCalls) // the request is normalized already
	h := r.s.rec.Meta.Harness
	for _, c := range prev.ToolCalls {
		want, hasWant := prev.ToolResult(c.ID)
		var have *tape.ToolResult
		for i := range got {
			if got[i].ToolCallID == c.ID {
				have = &got[i]
			}
		}
		switch {
		case !hasWant && have == nil:
			continue
		case have == nil:
			return &divergence{thread: th.ID, step: si, msg: fmt.Sprintf("no result for tool call %s (%s); the tape has one", c.ID, c.Name)}
		case !hasWant:
			continue // the recording did not see this result (cut short); accept it
		}
		a, b := match.Mask(h, want.Flat()), match.Mask(h, have.Flat())
		r.ids.Learn(match.Site{Thread: th.ID, Step: si - 1}, a, b)
		if r.ids.Apply(a) != b {
			return &divergence{thread: th.ID, step: si, msg: fmt.Sprintf("tool result of call %s (%s) differs:\n  recorded: %s\n  got:      %s", c.ID, c.Name, term.Excerpt(a, 300), term.Excerpt(b, 300))}
		}
		if want.IsError != have.IsError && r.s.rec.Meta.Provider.MarksErrors() {
			return &divergence{thread: th.ID, step: si, msg: fmt.Sprintf("tool result of call %s (%s): is_error %v, the tape has %v", c.ID, c.Name, have.IsError, want.IsError)}
		}
	}
	return nil
}

// write serves a recorded response, paced, with identifiers substituted, and returns what
// was served.
func (r *simRun) write(w http.ResponseWriter, hr *http.Request, rec *tape.Step, arrived time.Time) (tape.Response, error) {
	src := rec.Response
	served := tape.Response{Status: src.Status, Headers: tape.Headers{}}
	if served.Status == 0 {
		served.Status = http.StatusOK
	}
	stream := len(src.Chunks) > 0
	raw := bytes.TrimSpace(src.Raw)
	if !stream && (len(raw) == 0 || string(raw) == "null") {
		writeProviderError(w, r.s.rec.Meta.Provider, http.StatusInternalServerError, "api_error", "tapebox simulator: the tape has no raw response for this step")
		served.Status = http.StatusInternalServerError
		return served, fmt.Errorf("the tape has no raw response")
	}
	ct := src.Headers["content-type"]
	if ct == "" {
		ct = "application/json"
		if stream {
			ct = "text/event-stream"
		}
	}
	w.Header().Set("Content-Type", ct)
	served.Headers["content-type"] = ct
	if rid := src.Headers["request-id"]; rid != "" {
		w.Header().Set("Request-Id", rid)
	}
	speed := r.s.opts.Speed
	wait := func(atMS float64) error {
		if speed == 0 {
			return nil
		}
		d := time.Until(arrived.Add(time.Duration(atMS / speed * float64(time.Millisecond))))
		if d <= 0 {
			return nil
		}
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
			return nil
		case <-hr.Context().Done():
			return hr.Context().Err()
		}
	}
	rc := http.NewResponseController(w)
	if !stream {
		if err := wait(rec.Timing.LastByteAt - rec.Timing.RequestAt); err != nil {
			return served, fmt.Errorf("client went away: %w", err)
		}
		body := string(r.ids.ApplyJSON(raw))
		served.Raw = json.RawMessage(body)
		if !json.Valid(served.Raw) {
			served.Raw, _ = json.Marshal(body)
		}
		w.WriteHeader(served.Status)
		_, err := w.Write([]byte(body))
		return served, err
	}
	if err := wait(rec.Timing.FirstByteAt - rec.Timing.RequestAt); err != nil {
		return served, fmt.Errorf("client went away: %w", err)
	}
	w.WriteHeader(served.Status)
	served.Raw = json.RawMessage("null")
	datas := substituteStream(r.ids, src.Chunks)
	for i, c := range src.Chunks {
		if err := wait(c.AtMS); err != nil {
			return served, fmt.Errorf("client went away mid-stream: %w", err)
		}
		data := datas[i]
		if _, err := w.Write([]byte(data)); err != nil {
			return served, fmt.Errorf("client went away mid-stream: %w", err)
		}
		served.Chunks = append(served.Chunks, tape.Chunk{AtMS: r.ms(r.s.opts.Now()) - r.ms(arrived), Data: data})
		if speed != 0 {
			if err := rc.Flush(); err != nil {
				return served, err
			}
		}
	}
	return served, rc.Flush()
}

// record writes the served step into the run's tape, after giving the thread's previous
// step its tool results, and ends the run when every thread has been played.
func (r *simRun) record(ti, si int, in *tape.Step) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.done {
		return
	}
	switch {
	case si < r.written[ti]: // a retry of a step already written
		r.prevResults(ti, si, in)
		r.update(ti, si, func(s *tape.Step) { *s = *in })
	case si > r.written[ti]:
		// The harness had the previous answer and asked for this step before the previous
		// step's handler wrote it: keep it until the steps before it are written.
		if r.pending == nil {
			r.pending = map[[2]int]*tape.Step{}
		}
		r.pending[[2]int{ti, si}] = in
		return
	default:
		for next := in; next != nil; {
			r.prevResults(ti, r.written[ti], next)
			r.append(ti, next)
			key := [2]int{ti, r.written[ti]}
			next = r.pending[key]
			delete(r.pending, key)
		}
	}
	r.sync()
	if r.complete() {
		r.finish(tape.EndComplete, "")
	}
}

// prevResults stores the tool results a request carries into the previous step.
func (r *simRun) prevResults(ti, si int, in *tape.Step) {
	if si == 0 || si-1 >= r.written[ti] {
		return
	}
	th := r.s.rec.Threads[ti]
	results := provider.RequestResults(r.s.rec.Meta.Provider, &in.Request, th.Steps[si-1].ToolCalls)
	next := in.Timing.RequestAt
	r.update(ti, si-1, func(s *tape.Step) {
		if results != nil {
			s.ToolResults = results
		}
		s.Timing.NextRequestAt = &next
	})
}

func (r *simRun) append(ti int, s *tape.Step) {
	r.written[ti]++
	if r.written[ti] == 1 && r.s.rec.Threads[ti].Parent == nil {
		// The replay tape says where this run's harness worked, as the gateway learns it.
		if cwd := provider.Cwd(&s.Request); cwd != "" {
			r.setCwd(cwd)
		}
	}
	if r.w == nil {
		r.out.Threads[ti].Steps = append(r.out.Threads[ti].Steps, s)
		return
	}
	if _, err := r.w.AppendStep(ti, s); err != nil {
		r.s.opts.Logf("run %s: %v", r.name, err)
	}
}

func (r *simRun) setCwd(cwd string) {
	if r.w == nil {
		r.out.Meta.Cwd = cwd
		return
	}
	if err := r.w.UpdateMeta(func(m *tape.Meta) { m.Cwd = cwd }); err != nil {
		r.s.opts.Logf("run %s: %v", r.name, err)
	}
}

func (r *simRun) update(ti, si int, fn func(*tape.Step)) {
	if r.w == nil {
		fn(r.out.Threads[ti].Steps[si])
		return
	}
	if err := r.w.UpdateStep(ti, si, fn); err != nil {
		r.s.opts.Logf("run %s: %v", r.name, err)
	}
}

func (r *simRun) sync() {
	if r.w != nil {
		if err := r.w.Sync(); err != nil {
			r.s.opts.Logf("run %s: %v", r.name, err)
		}
	}
}

// complete says whether every thread reachable from the main thread was fully served.
func (r *simRun) complete() bool {
	reach := r.s.rec.Reachable()
	for i, th := range r.s.rec.Threads {
		if reach[th] && r.written[i] < len(th.Steps) {
			return false
		}
	}
	return true
}

// diverge answers a request the tape cannot answer, records it and ends the run.
func (r *simRun) diverge(w http.ResponseWriter, p tape.Provider, in *tape.Step, ti int, arrived time.Time, d *divergence) {
	msg := "tapebox simulator: run " + r.name + " diverged from the tape: " + d.Error()
	r.s.opts.Logf("%s", msg)
	writeProviderError(w, p, http.StatusBadRequest, "invalid_request_error", msg)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.done {
		return
	}
	if ti >= 0 {
		errBody, _ := json.Marshal(map[string]any{"type": "error", "error": map[string]string{"type": "invalid_request_error", "message": msg}})
		in.Response = tape.Response{Status: http.StatusBadRequest, Raw: errBody}
		in.ToolCalls = nil
		in.Timing = tape.Timing{RequestAt: r.ms(arrived), FirstByteAt: r.ms(arrived), LastByteAt: r.ms(arrived)}
		r.prevResults(ti, d.step, in)
		if d.step >= r.written[ti] {
			r.append(ti, in)
		}
	}
	r.finish(tape.EndDiverged, d.Error())
}

// end finishes the run if it is still going (used by Close).
func (r *simRun) end(reason tape.EndReason, detail string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.done {
		return nil
	}
	return r.finish(reason, detail)
}

func (r *simRun) finish(reason tape.EndReason, detail string) error {
	r.done = true
	r.reason = reason
	r.s.opts.Logf("run %s: ended %s %s", r.name, reason, strings.TrimSpace(detail))
	if reason == tape.EndComplete {
		r.recordEndState()
	}
	var err error
	if r.w != nil {
		err = r.w.Finish(reason, r.s.opts.Now(), detail)
	} else {
		r.out.Meta.Ended = &tape.Ended{Reason: reason, At: r.s.opts.Now().UTC(), Detail: detail}
	}
	go r.s.runFinished()
	return err
}

// recordEndState reads the harness's workspace into the replay tape when the simulator knows
// where it is and the recording carries a workspace.
func (r *simRun) recordEndState() {
	w, dir := r.s.rec.Meta.Workspace, r.s.opts.Workspace
	if w == nil || dir == "" {
		return
	}
	m, err := workspace.ManifestDir(context.Background(), dir, endOptions(w, r.s.opts.WorkspaceExclude))
	if err != nil {
		r.s.opts.Logf("run %s: workspace end manifest: %v", r.name, err)
		return
	}
	if err := setEndWorkspace(r.out, r.w, w, m); err != nil {
		r.s.opts.Logf("run %s: workspace end manifest: %v", r.name, err)
	}
}

// simHeaders records a harness's request headers with credentials redacted.
func simHeaders(h http.Header) tape.Headers { return tape.RedactHeaders(h) }
