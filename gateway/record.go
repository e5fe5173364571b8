package gateway

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/tapebox/tapebox/tape"
	"github.com/tapebox/tapebox/tape/provider"
	"github.com/tapebox/tapebox/tape/unsupported"
)

// recording is one model call being recorded.
type recording struct {
	p    tape.Provider
	at   time.Time // when the request arrived
	body *requestBody
	// ready is closed when begin has prepared step and attributed the call; until then only
	// begin touches step and th.
	ready chan struct{}
	step  *tape.Step
	// prep is step with its request encoded already, off the answer's path (nil when the
	// encoding failed: the step is then encoded whole when appended).
	prep *tape.PreparedStep
	// deferred is set for a body that spilled (over spillAt): begin normalizes it to
	// attribute the call, then drops the step's request, and commit normalizes it again from
	// the spill file and encodes the step, both under Gateway.heavy. A large request then
	// waits on disk, not in memory, while its call is in flight, and only one is in memory
	// at a time.
	deferred bool
	// What begin learned of the request, for commit to normalize it again.
	encoding, path string
	form           bool
	th             *thread // nil when the recording was finished before the call arrived
	turns          int     // the turn the request asks for (tape.Request.Turns)
	index          int     // the step's index in its thread, once committed (-1 before)
}

// heavyDone ends a section under Gateway.heavy with a garbage collection, started and
// not waited for. While a large body is normalized, encoded and hashed, several copies of
// it are live (the body, its normalized messages, the encoded request and, for the digest,
// its canonical form: about 290 MB for a 30 MB body), and Go's collector then sets the
// next heap goal at twice that; without a collection here, the next large calls grew the
// heap to that goal before the next one ran (ten concurrent 30 MB bodies: 2.2x the bytes
// in flight; with it, see TestGatewayConcurrentBodiesMemory).
func (g *Gateway) heavyDone() {
	g.heavy.Unlock()
	go runtime.GC()
}

// ms converts a time to milliseconds since the tape's start.
func (g *Gateway) ms(at time.Time) float64 { return tape.RoundMS(at.Sub(g.start)) }

// begin prepares a model call's step from its request, attributes it to a thread and
// records the tool results it carries for the thread's previous step. It runs while the
// request travels upstream.
func (g *Gateway) begin(rec *recording, r *http.Request) {
	defer close(rec.ready)
	rec.index = -1
	// The upstream gets the query as sent; the tape, its credentials redacted.
	step := &tape.Step{Request: tape.Request{Path: tape.RedactURL(r.URL.RequestURI()), Headers: recordHeaders(r.Header, g.injected)}}
	rec.encoding, rec.path, rec.form = r.Header.Get("Content-Encoding"), r.Method+" "+r.URL.Path, isForm(r.Header)
	<-rec.body.decided // the transport reads it meanwhile; commit finishes it if not
	heavy := !rec.body.cut && rec.body.spilled()
	if heavy {
		g.heavy.Lock()
		defer g.heavyDone()
	}
	g.fillRequest(rec, step, true)
	step.Timing.RequestAt = g.ms(rec.at)
	rec.step = step
	if !heavy {
		if prep, err := tape.Prepare(step); err == nil {
			if g.digests {
				prep.HashRequest(g.hashing) // off the answer's path
			}
			rec.prep = prep
		} else {
			g.logf("%s: %v", r.URL.Path, err)
		}
	}
	g.out.prepareSync() // the answer's publish then costs one rename
	var found *unsupported.Finding
	if !g.unsupported.Load() { // outside the lock: it may decode the body
		found = unsupported.Request(step.Request.Raw)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if heavy {
		defer func() { // after attribution, which reads the conversation
			rec.deferred = true
			s := &step.Request
			s.Raw, s.System, s.Messages, s.Tools, s.Params = nil, "", nil, nil, nil
		}()
	}
	if g.finished {
		return
	}
	if !g.metaSet {
		g.metaSet = true
		g.setMeta(r.Header, rec.p, step)
	}
	if !g.mainSeen && len(step.Request.Tools) > 0 {
		g.mainSeen = true
		g.setMain(step)
	}
	rec.turns = step.Request.Turns()
	th, continued := g.attribute(&step.Request)
	th.inFlight++
	g.noteUnsupported(th.id, found)
	rec.th = th
	if !continued || th.last == nil {
		return
	}
	if err := g.out.answered(rec.p, th.index, th.lastIndex, th.last.ToolCalls, &step.Request, step.Timing.RequestAt); err != nil {
		g.logf("thread %s: %v", th.id, err)
		return
	}
	g.dirty.Store(true)
	g.kickSync()
}

// fillRequest sets the raw and normalized request of step from rec's body (decided): a
// truncation marker for a body over the limit, else the body as sent (decoded), or as a
// JSON string when it is not JSON. logs says whether to log what it finds (commit fills a
// deferred request a second time).
func (g *Gateway) fillRequest(rec *recording, step *tape.Step, logs bool) {
	logf := g.logf
	if !logs {
		logf = func(string, ...any) {}
	}
	if rec.body.cut {
		step.Request.Raw = rec.body.truncation(g.maxRecord).Raw() // commit counts what was sent
		logf("%s: a request body over the recording limit of %d bytes, forwarded whole, recorded as a truncation marker", rec.path, g.maxRecord)
		return
	}
	body, err := rec.body.whole()
	if err != nil {
		logf("%s: %v; recording what arrived", rec.path, err)
	}
	decoded, err := decodeBody(body, rec.encoding, g.maxRecord)
	switch {
	case errors.Is(err, errOverLimit):
		step.Request.Raw = tape.Truncation{Bytes: int64(len(body)), Limit: g.maxRecord}.Raw()
		logf("%s: a request body over the recording limit of %d bytes once decoded, recorded as a truncation marker", rec.path, g.maxRecord)
	case err != nil:
		logf("%s: %v; recording the body as received", rec.path, err)
		decoded = body
		fallthrough
	default:
		step.Request.Raw = json.RawMessage(decoded)
	}
	if err := provider.Normalize(rec.p, step); err != nil {
		if !json.Valid(decoded) { // only a body that did not normalize can be other than JSON
			text := string(decoded)
			if rec.form { // query syntax: its credentials are redacted like a query's
				text = tape.RedactQuery(text)
			}
			step.Request.Raw, _ = json.Marshal(text)
		}
		logf("%s: %v", rec.path, err)
	}
}

// commit records a call's answer as a step of its thread and publishes the tape. It is
// called before the answer's last byte is forwarded.
func (g *Gateway) commit(rec *recording, a *answer) {
	rec.body.finish()
	<-rec.ready
	if rec.th == nil {
		return
	}
	s := rec.step
	if rec.deferred {
		// Encoded whole when appended, and published below; one at a time.
		g.heavy.Lock()
		defer g.heavyDone()
		g.fillRequest(rec, s, false)
	}
	if rec.body.cut && rec.body.length < 0 {
		// The length of a body of unknown length is what was forwarded of it by now.
		s.Request.Raw = rec.body.truncation(g.maxRecord).Raw()
		rec.prep = nil
	}
	s.Response.Status = a.status
	s.Response.Headers = recordHeaders(a.header, nil)
	switch {
	case a.cut != nil:
		s.Response.Chunks = nil
		s.Response.Raw = a.cut.Raw()
	case a.stream:
		s.Response.Chunks = a.chunks
		s.Response.Raw = json.RawMessage("null")
	case a.status == 0: // no answer at all
		s.Response.Raw = json.RawMessage("null")
	default:
		s.Response.Raw = rawBody(a.raw)
	}
	if err := normalizeResponse(rec.p, s); err != nil && a.status < 400 && a.complete {
		g.logf("thread %s: %v", rec.th.id, err)
	}
	s.Timing.FirstByteAt = g.ms(a.firstByte)
	s.Timing.LastByteAt = g.ms(a.lastByte)
	var obs observation
	if g.brk != nil {
		obs = g.brk.observe(tape.ParamModel(s), s)
	}

	g.mu.Lock()
	th := rec.th
	th.inFlight--
	if g.finished {
		g.mu.Unlock()
		return
	}
	if th.index < 0 {
		if th.parent == nil && th.id != "main" {
			th.parent = g.claimSpawn(th) // its spawning call may have been recorded since
		}
		i, err := g.out.addThread(th.id, th.parent)
		if err != nil {
			g.mu.Unlock()
			g.logf("thread %s: %v", th.id, err)
			return
		}
		th.index = i
		th.firstText = "" // only a thread not yet in the tape looks for its parent
	}
	var si int
	var err error
	si, err = g.out.append(th.index, s, rec.prep)
	if err != nil {
		g.mu.Unlock()
		g.logf("thread %s: %v", th.id, err)
		return
	}
	rec.index = si
	// The step is encoded: its bodies and conversation need not stay in memory (th.last
	// keeps its tool calls and status; amend sets the whole answer again).
	if err := g.out.release(th.index, si); err != nil {
		g.logf("thread %s: %v", th.id, err)
	}
	th.last, th.lastIndex = s, si
	th.lastOK = a.complete && a.status > 0 && a.status < 400
	retry := rec.turns < th.turns // a turn the thread had answered, asked again
	if th.lastOK {
		th.answered(rec.turns)
	}
	th.steps++
	g.steps++
	var note string
	if g.brk != nil {
		note = g.brk.add(th, g.steps, obs, s, retry)
	}
	g.noteSpawns(th, s)
	switch {
	case len(a.problems) > 0:
		g.lastErr = strings.Join(a.problems, "; ")
	case th.lastOK:
		g.lastErr = ""
	}
	calls := len(s.ToolCalls)
	g.mu.Unlock()
	if note != "" {
		g.logf("%s", note)
	}

	g.publish()
	g.logf("thread %s step %d: %s %d, %d events, %d tool calls, %.0f ms", th.id, si, s.Request.Path, a.status,
		len(a.chunks), calls, a.lastByte.Sub(rec.at).Seconds()*1000)
}

// amend updates a recorded stream with what followed its final event: more events, or a
// broken connection.
func (g *Gateway) amend(rec *recording, a *answer, problems []string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.finished || rec.th == nil || rec.index < 0 {
		return
	}
	last := g.ms(a.lastByte)
	err := g.out.updateAnswer(rec.th.index, rec.index, func(s *tape.Step) {
		s.Response.Chunks, s.Response.Raw = a.chunks, json.RawMessage("null")
		if a.cut != nil {
			s.Response.Raw = a.cut.Raw()
		}
		s.Timing.LastByteAt = last
		if err := normalizeResponse(rec.p, s); err != nil {
			g.logf("thread %s: %v", rec.th.id, err)
		}
	})
	if err != nil {
		g.logf("thread %s: %v", rec.th.id, err)
		return
	}
	if len(problems) > 0 {
		g.lastErr = strings.Join(problems, "; ")
	}
	g.dirty.Store(true)
}

// normalizeResponse fills the normalized fields of s's response and its tool calls, leaving
// its request (normalized by begin) alone: parsing a long request once is enough.
func normalizeResponse(p tape.Provider, s *tape.Step) error {
	calls, err := provider.NormalizeResponse(p, &s.Response)
	s.ToolCalls = calls
	return err
}

// publish makes the tape on disk hold every change so far (atomically; without fsync, which
// the syncer does next).
func (g *Gateway) publish() {
	g.dirty.Store(false) // a change made from now on sets it again
	if err := g.out.sync(); err != nil && !g.isFinished() {
		g.logf("persist tape: %v", err)
	}
}

func (g *Gateway) isFinished() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.finished
}

// kickSync asks the syncer to publish pending changes and fsync the tape.
func (g *Gateway) kickSync() {
	select {
	case g.kick <- struct{}{}:
	default: // a sync is pending already; it will see this change too
	}
}

// syncDelay is how long the syncer waits after a kick: the call that kicked it usually
// publishes its answer by then (so the syncer does not contend with it for the Writer), and
// one fsync covers more calls.
const syncDelay = 10 * time.Millisecond

// syncLoop is the syncer: it runs until Finish.
func (g *Gateway) syncLoop() {
	defer close(g.syncDone)
	delay := time.NewTimer(syncDelay)
	delay.Stop()
	for {
		select {
		case <-g.stop:
			return
		case <-g.kick:
		}
		delay.Reset(syncDelay)
		select {
		case <-g.stop:
			return
		case <-delay.C:
		}
		if g.dirty.Load() {
			g.publish()
		}
		if err := fsyncPath(g.cfg.Output); err != nil && !g.isFinished() {
			g.logf("persist tape: %v", err)
		}
	}
}

// fsyncPath makes the file at path and its directory entry durable.
func fsyncPath(path string) error {
	var errs []error
	for _, p := range []string{path, filepath.Dir(path)} {
		f, err := os.Open(p)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if err := f.Sync(); err != nil {
			errs = append(errs, fmt.Errorf("fsync %s: %w", p, err))
		}
		f.Close()
	}
	return errors.Join(errs...)
}

// noteUnsupported labels the tape (unsupported.Label) and logs once, at the first request
// that shows a feature TapeBox records but does not replay (f, from unsupported.Request;
// nil for none): Codex's multi_agent_v2. The call is recorded as any other: the user's run
// goes on. Called with g.mu held.
func (g *Gateway) noteUnsupported(thread string, f *unsupported.Finding) {
	if f == nil || g.unsupported.Load() {
		return
	}
	g.unsupported.Store(true)
	what := fmt.Sprintf("%s (thread %s)", f, thread)
	g.logf("%s: recorded, but replay and fork will refuse this tape: %s (see %s)", what, unsupported.Why, unsupported.Docs)
	if err := g.out.updateMeta(func(m *tape.Meta) { m.Labels[unsupported.Label] = what }); err != nil {
		g.logf("meta: %v", err)
	}
	g.dirty.Store(true)
}

// setMeta fills what the first call tells of the run. The first call is the main thread's
// first request (it opens the first thread, which is main), the one place a harness is sure
// to name its own working directory: a subagent's may name another; when it is a side
// request without tools, setMain corrects the model and cwd at the agent's first call.
func (g *Gateway) setMeta(h http.Header, p tape.Provider, step *tape.Step) {
	harness, version := detectHarness(h)
	model := tape.StepModel(nil, step) // a Gemini call names its model in the path only
	err := g.out.updateMeta(func(m *tape.Meta) {
		m.Provider = p
		m.Model = model
		if m.Harness == "" {
			m.Harness, m.HarnessVersion = harness, version
		}
	})
	if err == nil && g.cfg.Cwd == "" {
		err = g.out.learnCwd(&step.Request)
	}
	if err != nil {
		g.logf("meta: %v", err)
	}
	g.dirty.Store(true)
}

// setMain makes meta's model that of the first request that offers tools, and learns
// meta.cwd from it when it is not known yet: the agent's first call. A harness may send a
// side request without tools before it, with another model (OpenCode asks its small model
// for the session's title; Gemini CLI's router asks which model to use), which setMeta
// took them from. A run whose requests never offer tools keeps the first request's model.
// Called with g.mu held.
func (g *Gateway) setMain(step *tape.Step) {
	model := tape.StepModel(nil, step)
	err := g.out.updateMeta(func(m *tape.Meta) {
		if model != "" {
			m.Model = model
		}
	})
	if err == nil && g.cfg.Cwd == "" {
		err = g.out.learnCwd(&step.Request)
	}
	if err != nil {
		g.logf("meta: %v", err)
	}
	g.dirty.Store(true)
}

var (
	claudeUA = regexp.MustCompile(`claude-cli/([0-9][^\s]*)`)
	codexUA  = regexp.MustCompile(`codex[_a-z]*/([0-9][^\s]*)`)
	// Gemini CLI: "GeminiCLI/0.61.0/gemini-2.5-pro (linux; x64)", "GeminiCLI-tui/0.61.0/...".
	geminiUA = regexp.MustCompile(`GeminiCLI(?:-[a-z]+)?/([0-9][^\s/]*)`)
	// OpenCode sends "opencode/VERSION" (the AI SDK may add its own after it).
	opencodeUA = regexp.MustCompile(`(?:^|\s)opencode/([0-9][^\s/]*)`)
)

// detectHarness names the agent from its headers.
func detectHarness(h http.Header) (name, version string) {
	ua := h.Get("User-Agent")
	if m := claudeUA.FindStringSubmatch(ua); m != nil {
		return "claude-code", m[1]
	}
	if m := codexUA.FindStringSubmatch(ua); m != nil || strings.HasPrefix(h.Get("Originator"), "codex") {
		if m != nil {
			return "codex", m[1]
		}
		return "codex", ""
	}
	if m := opencodeUA.FindStringSubmatch(ua); m != nil {
		return "opencode", m[1]
	}
	if h.Get("X-Claude-Code-Session-Id") != "" {
		return "claude-code", ""
	}
	if m := geminiUA.FindStringSubmatch(ua); m != nil {
		return "gemini-cli", m[1]
	}
	return "", ""
}

// errOverLimit: a body decoded is over the recording limit.
var errOverLimit = errors.New("over the recording limit once decoded")

// decodeBody undoes a body's Content-Encoding (gzip, zstd) for recording, up to limit bytes
// of output (errOverLimit past them; a negative limit: none).
func decodeBody(body []byte, encoding string, limit int64) ([]byte, error) {
	enc := strings.ToLower(strings.TrimSpace(encoding))
	var zr io.Reader
	switch enc {
	case "", "identity":
		return body, nil
	case "gzip", "x-gzip":
		gz, err := gzip.NewReader(bytes.NewReader(body))
		if err != nil {
			return nil, fmt.Errorf("decode gzip body: %w", err)
		}
		zr = gz
	case "zstd":
		opts := []zstd.DOption{zstd.WithDecoderConcurrency(1)}
		if limit >= 0 {
			opts = append(opts, zstd.WithDecoderMaxMemory(uint64(limit)+1))
		}
		zd, err := zstd.NewReader(bytes.NewReader(body), opts...)
		if err != nil {
			return nil, fmt.Errorf("decode zstd body: %w", err)
		}
		defer zd.Close()
		zr = zd
	default:
		return nil, fmt.Errorf("unknown content encoding %q", encoding)
	}
	if limit >= 0 {
		zr = io.LimitReader(zr, limit+1)
	}
	out, err := io.ReadAll(zr)
	switch {
	case errors.Is(err, zstd.ErrDecoderSizeExceeded), errors.Is(err, zstd.ErrWindowSizeExceeded), err == nil && limit >= 0 && int64(len(out)) > limit:
		return nil, errOverLimit
	case err != nil:
		return nil, fmt.Errorf("decode %s body: %w", enc, err)
	}
	return out, nil
}

// isForm says whether a request's body is a URL-encoded form.
func isForm(h http.Header) bool {
	ct, _, err := mime.ParseMediaType(h.Get("Content-Type"))
	return err == nil && ct == "application/x-www-form-urlencoded"
}

// rawBody stores a response body, which the step owns from then on: JSON as it is,
// anything else as a JSON string.
func rawBody(b []byte) json.RawMessage {
	if len(bytes.TrimSpace(b)) > 0 && json.Valid(b) {
		return json.RawMessage(b)
	}
	s, _ := json.Marshal(string(b))
	return s
}

// jsonField reads a string field of a JSON object ("" when absent).
func jsonField(raw json.RawMessage, key string) string {
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return ""
	}
	var s string
	if json.Unmarshal(m[key], &s) != nil {
		return ""
	}
	return s
}
