package gateway

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
	out     *tape.Tape // the replay tape, which tape records
	tape    *recorder
	threads matcher               // the recorded threads: which step each serves next
	written []int                 // per recorded thread: steps in the replay tape
	pending map[[2]int]*tape.Step // steps served ahead of their predecessor's write, by [thread, step]
	done    bool
	reason  tape.EndReason
}

func newSimRun(s *Simulator, name string) (*simRun, error) {
	start := s.opts.Now()
	r := &simRun{s: s, name: name, start: start, ids: match.NewIdentifiers(s.rec),
		threads: matcher{threads: recordedThreads(s.rec, s.sigs)}, written: make([]int, len(s.rec.Threads))}
	if cwd := s.rec.Meta.Cwd; s.opts.Cwd != "" && cwd != "" && cwd != "/" && s.opts.Cwd != cwd {
		r.ids.Pin(cwd, s.opts.Cwd, "the working directory (meta.cwd), where the harness works now")
	}
	r.out = tape.ReplayOf(s.rec, start, map[string]string{"mode": ModeTape.String(), "run": name})
	rt, err := newRecorder(OutputFor(s.opts.Output, name), r.out)
	if err != nil {
		return nil, fmt.Errorf("run %s: %w", name, err)
	}
	r.tape = rt
	s.opts.Logf("run %s: started", name)
	return r, nil
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
		writeError(w, p, simError(http.StatusBadRequest, "invalid_request_error", "tapebox simulator: the request body is not JSON"))
		return
	}
	in := &tape.Step{Request: tape.Request{Path: tape.RedactURL(hr.URL.RequestURI()), Raw: json.RawMessage(body), Headers: simHeaders(hr.Header)}}
	if err := provider.Normalize(p, in); err != nil {
		r.s.opts.Logf("run %s: %v", r.name, err)
	}
	ti, turn, si, rec, d := r.match(in, body)
	if d != nil {
		r.diverge(w, p, in, ti, turn, arrived, d)
		return
	}
	th := r.s.rec.Threads[ti]
	if rec == nil { // past SimulatorOptions.Until
		r.s.opts.Logf("run %s: thread %s step %d: past the served steps, handed on", r.name, th.ID, si)
		r.s.opts.Beyond(w, hr, body, th.ID, si)
		return
	}
	r.s.opts.Logf("run %s: thread %s step %d", r.name, th.ID, si)
	resp, err := r.write(w, hr, in, rec, fmt.Sprintf("tapebox_%s_%d", th.ID, si), arrived)
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
		in.Timing.FirstByteAt = r.ms(arrived.Add(time.Duration(resp.Chunks[0].AtMS * float64(time.Millisecond))))
	}
	r.record(ti, turn, in)
}

// match finds the thread and turn a request asks for, and the recorded step that answers
// it (si: the last attempt at that turn, tape.Thread.Kept; a superseded attempt, which
// the harness never went on from, is not served), and checks the tool results it carries.
// It marks the turn as served; a step past SimulatorOptions.Until comes back with a nil
// rec and a nil d, unserved. The replay tape holds one step per turn served: a harness
// that asks for a turn again (its retry) gets the same answer, which stands for the first.
func (r *simRun) match(in *tape.Step, body []byte) (ti, turn, si int, rec *tape.Step, d *divergence) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.done {
		return -1, 0, 0, nil, &divergence{msg: fmt.Sprintf("run %s already ended (%s); start another run with /r/<run>/", r.name, r.reason)}
	}
	turn = provider.AssistantTurns(&in.Request)
	sig := sigOf(&in.Request)
	t, _ := r.threads.find(&in.Request, turn, sig)
	if t == nil {
		return -1, turn, 0, nil, &divergence{msg: fmt.Sprintf("no thread of the tape expects a request with %d model turns and this opening (%q)", turn, term.Excerpt(sig.opening, 120))}
	}
	best := t.index
	th := r.s.rec.Threads[best]
	si = t.step(turn)
	if turn >= len(t.kept) {
		return best, turn, si, nil, &divergence{thread: th.ID, step: si, msg: fmt.Sprintf("the tape's thread answers %d turns; the harness asked for one more", len(t.kept))}
	}
	rec = th.Steps[si]
	if m := tape.BodyModel(body); m != "" {
		if want := tape.BodyModel(rec.Request.Raw); want != "" && m != want {
			return best, turn, si, nil, &divergence{thread: th.ID, step: si, msg: fmt.Sprintf("model %q, the tape has %q", m, want)}
		}
	}
	if turn == 0 {
		r.ids.Learn(match.Site{Thread: th.ID, Step: -1}, t.sig.system, sig.system)
		r.ids.Learn(match.Site{Thread: th.ID, Step: -1}, t.sig.opening, sig.opening)
	} else if d := r.checkResults(th, t.kept[turn-1], si, in); d != nil {
		return best, turn, si, nil, d
	}
	if lim, ok := r.s.opts.Until[th.ID]; ok && si >= lim {
		return best, turn, si, nil, nil // the caller hands it on
	}
	t.serve(turn)
	return best, turn, si, rec, nil
}

// checkResults compares the tool results a request for step si carries for step prevSi
// (the step the thread went on from at the turn before) with the recorded ones, learning
// identifiers on the way.
func (r *simRun) checkResults(th *tape.Thread, prevSi, si int, in *tape.Step) *divergence {
	prev := th.Steps[prevSi]
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
		r.ids.Learn(match.Site{Thread: th.ID, Step: prevSi}, a, b)
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
// was served. A step recorded without its raw response (normalized fields only) is written
// in the wire format by the emitters (emitted), as a stream when in asks for one.
func (r *simRun) write(w http.ResponseWriter, hr *http.Request, in, rec *tape.Step, ref string, arrived time.Time) (tape.Response, error) {
	src := rec.Response
	if raw := bytes.TrimSpace(src.Raw); len(src.Chunks) == 0 && (len(raw) == 0 || string(raw) == "null") {
		p := r.s.rec.Meta.Provider
		var err error
		if src, err = emitted(p, tape.StepModel(&r.s.rec.Meta, rec), ref, rec, in.Request.Stream); err != nil {
			writeError(w, p, simError(http.StatusInternalServerError, "api_error", "tapebox simulator: the tape has no raw response for this step, and its normalized fields cannot be written in the wire format: "+err.Error()))
			return tape.Response{Status: http.StatusInternalServerError, Headers: tape.Headers{}}, fmt.Errorf("the tape has no raw response: %w", err)
		}
	}
	served := tape.Response{Status: src.Status, Headers: tape.Headers{}}
	if served.Status == 0 {
		served.Status = http.StatusOK
	}
	stream := len(src.Chunks) > 0
	raw := bytes.TrimSpace(src.Raw)
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
	datas := substituteStream(r.s.rec.Meta.Provider, r.ids, src.Chunks)
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

// record writes the step served for turn si of thread ti into the run's tape (at index si:
// one step per turn), after giving the thread's previous step its tool results, and ends
// the run when every thread has been played.
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

// prevResults stores the tool results a request for turn si carries into the previous
// step (the previous turn's), for the calls of the step the recording went on from there.
func (r *simRun) prevResults(ti, si int, in *tape.Step) {
	if si == 0 || si-1 >= r.written[ti] {
		return
	}
	t := r.threads.threads[ti]
	calls := t.rec.Steps[t.step(si-1)].ToolCalls
	r.logErr(r.tape.answered(r.s.rec.Meta.Provider, ti, si-1, calls, &in.Request, in.Timing.RequestAt))
}

func (r *simRun) append(ti int, s *tape.Step) {
	r.written[ti]++
	if r.written[ti] == 1 && r.s.rec.Threads[ti].Parent == nil {
		// The replay tape says where this run's harness worked, as the gateway learns it.
		r.logErr(r.tape.learnCwd(&s.Request))
	}
	_, err := r.tape.append(ti, s, nil)
	r.logErr(err)
}

func (r *simRun) update(ti, si int, fn func(*tape.Step)) {
	r.logErr(r.tape.updateStep(ti, si, fn))
}

func (r *simRun) sync() { r.logErr(r.tape.sync()) }

// logErr logs a failure to record.
func (r *simRun) logErr(err error) {
	if err != nil {
		r.s.opts.Logf("run %s: %v", r.name, err)
	}
}

// complete says whether every thread reachable from the main thread was fully served.
func (r *simRun) complete() bool {
	reach := r.s.rec.Reachable()
	for i, th := range r.s.rec.Threads {
		if reach[th] && r.written[i] < len(r.threads.threads[i].kept) {
			return false
		}
	}
	return true
}

// diverge answers a request for turn of thread ti (-1: none) the tape cannot answer,
// records it and ends the run.
func (r *simRun) diverge(w http.ResponseWriter, p tape.Provider, in *tape.Step, ti, turn int, arrived time.Time, d *divergence) {
	msg := "tapebox simulator: run " + r.name + " diverged from the tape: " + d.Error()
	r.s.opts.Logf("%s", msg)
	errBody := writeError(w, p, simError(http.StatusBadRequest, "invalid_request_error", msg))
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.done {
		return
	}
	if ti >= 0 {
		in.Response = tape.Response{Status: http.StatusBadRequest, Raw: errBody}
		in.ToolCalls = nil
		in.Timing = tape.Timing{RequestAt: r.ms(arrived), FirstByteAt: r.ms(arrived), LastByteAt: r.ms(arrived)}
		r.prevResults(ti, turn, in)
		if turn >= r.written[ti] {
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
	err := r.tape.end(tape.Ended{Reason: reason, At: r.s.opts.Now(), Detail: detail})
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
	m, err := workspace.ManifestDir(context.Background(), dir, workspace.Recorded(w, r.s.opts.WorkspaceExclude...))
	if err != nil {
		r.s.opts.Logf("run %s: workspace end manifest: %v", r.name, err)
		return
	}
	if err := setReplayEnd(r.tape, w, m); err != nil {
		r.s.opts.Logf("run %s: workspace end manifest: %v", r.name, err)
	}
}

// simHeaders records a harness's request headers with credentials redacted.
func simHeaders(h http.Header) tape.Headers { return tape.RedactHeaders(h) }
