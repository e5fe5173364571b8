package gateway

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/tapebox/tapebox/tape"
	"github.com/tapebox/tapebox/tape/provider"
)

// DefaultUpstreams are the providers' public API hosts, per wire format.
var DefaultUpstreams = map[tape.Provider]string{
	tape.ProviderAnthropic:       "https://api.anthropic.com",
	tape.ProviderOpenAIChat:      "https://api.openai.com",
	tape.ProviderOpenAIResponses: "https://api.openai.com",
}

// MaxRequestBody bounds a request body the gateway reads (256 MiB).
const MaxRequestBody = 256 << 20

// Config configures a Gateway.
type Config struct {
	// Output is the tape's path (required).
	Output string
	// Upstream, when set, receives every call whatever its wire format (e.g. a local server).
	Upstream string
	// Upstreams overrides the upstream per wire format.
	Upstreams map[tape.Provider]string
	// Task and Labels go into the tape's meta.
	Task, Labels map[string]string
	// Harness and HarnessVersion name the agent; detected from the traffic when empty.
	Harness, HarnessVersion string
	// Inject makes the gateway hold credentials (see Injection).
	Inject []Injection
	// SpawningTools overrides the tools taken to start a subagent (default SpawningTools).
	SpawningTools []string
	// Transport reaches the upstream; nil means a clone of http.DefaultTransport without
	// proxy-from-environment.
	Transport http.RoundTripper
	// Logf receives one line per call and per problem; nil discards them.
	Logf func(format string, args ...any)
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// OnEnd is called once when POST /tapebox/end finished the tape.
	OnEnd func()
}

// Gateway is a recording reverse proxy: an http.Handler that forwards an agent's model
// calls to the provider and records every call into one tape, persisted after each call.
type Gateway struct {
	cfg       Config
	upstreams map[tape.Provider]*url.URL
	transport http.RoundTripper
	spawning  []string
	logf      func(string, ...any)
	now       func() time.Time
	start     time.Time

	mu       sync.Mutex
	w        *tape.Writer
	threads  []*thread
	spawns   []spawn
	metaSet  bool
	finished bool
	lastErr  string // the last upstream failure, for the end reason
	steps    int
}

// New creates the tape at cfg.Output and returns a Gateway recording into it.
func New(cfg Config) (*Gateway, error) {
	if cfg.Output == "" {
		return nil, errors.New("gateway: an output path is required")
	}
	g := &Gateway{cfg: cfg, upstreams: map[tape.Provider]*url.URL{}, logf: cfg.Logf, now: cfg.Now, spawning: cfg.SpawningTools}
	if g.logf == nil {
		g.logf = func(string, ...any) {}
	}
	if g.now == nil {
		g.now = time.Now
	}
	if g.spawning == nil {
		g.spawning = SpawningTools
	}
	for p, def := range DefaultUpstreams {
		raw := def
		if cfg.Upstream != "" {
			raw = cfg.Upstream
		}
		if u, ok := cfg.Upstreams[p]; ok {
			raw = u
		}
		u, err := url.Parse(raw)
		if err != nil || u.Scheme == "" || u.Host == "" {
			return nil, fmt.Errorf("gateway: upstream %q for %s: want an absolute http(s) URL", raw, p)
		}
		g.upstreams[p] = u
	}
	g.transport = cfg.Transport
	if g.transport == nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.Proxy = nil
		t.DisableCompression = true // pass bodies through as they are
		t.MaxIdleConnsPerHost = 64
		g.transport = t
	}
	g.start = g.now()
	tp := tape.New("", g.start)
	tp.Meta.Harness = cfg.Harness
	tp.Meta.HarnessVersion = cfg.HarnessVersion
	for k, v := range cfg.Task {
		tp.Meta.Task[k] = v
	}
	for k, v := range cfg.Labels {
		tp.Meta.Labels[k] = v
	}
	w, err := tape.Create(cfg.Output, tp)
	if err != nil {
		return nil, fmt.Errorf("gateway: %w", err)
	}
	g.w = w
	return g, nil
}

// Path returns the tape's path.
func (g *Gateway) Path() string { return g.cfg.Output }

// Steps returns how many model calls were recorded.
func (g *Gateway) Steps() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.steps
}

// Finish ends the recording: meta says how and when, the tape is persisted a last time.
// Later calls are proxied but not recorded. Finish is idempotent.
func (g *Gateway) Finish(reason tape.EndReason, detail string) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.finished {
		return nil
	}
	g.finished = true
	if reason == tape.EndComplete && g.lastErr != "" {
		reason, detail = tape.EndUpstreamError, g.lastErr
	}
	return g.w.Finish(reason, g.now(), detail)
}

var labelPrefix = regexp.MustCompile(`^/r/[^/]+`)

// upstreamPath strips a /r/<label> prefix.
func upstreamPath(p string) string { return labelPrefix.ReplaceAllString(p, "") }

// ServeHTTP proxies one request, recording it when it is a model call.
func (g *Gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if upstreamPath(r.URL.Path) == "/tapebox/end" {
		g.serveEnd(w, r)
		return
	}
	p, isModelCall := provider.Detect(r.URL.Path)
	if !isModelCall || r.Method != http.MethodPost {
		if !isModelCall {
			p = guessProvider(r)
		}
		g.proxy(w, r, p, nil, nil)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, MaxRequestBody+1))
	if err != nil {
		http.Error(w, "tapebox gateway: read request body: "+err.Error(), http.StatusBadRequest)
		return
	}
	if len(body) > MaxRequestBody {
		http.Error(w, fmt.Sprintf("tapebox gateway: request body over %d bytes", MaxRequestBody), http.StatusRequestEntityTooLarge)
		return
	}
	rec := g.begin(r, p, body)
	g.proxy(w, r, p, body, rec)
}

func (g *Gateway) serveEnd(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, "POST to end the recording", http.StatusMethodNotAllowed)
		return
	}
	if err := g.Finish(tape.EndComplete, "POST /tapebox/end"); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"ok":true,"tape":%q,"steps":%d}`+"\n", g.cfg.Output, g.Steps())
	if g.cfg.OnEnd != nil {
		go g.cfg.OnEnd()
	}
}

// guessProvider picks an upstream for a path that is not a model call.
func guessProvider(r *http.Request) tape.Provider {
	if r.Header.Get("x-api-key") != "" || r.Header.Get("anthropic-version") != "" || strings.Contains(r.URL.Path, "/messages") {
		return tape.ProviderAnthropic
	}
	return tape.ProviderOpenAIChat
}

// recording is one model call being recorded.
type recording struct {
	th   *thread
	step *tape.Step
	p    tape.Provider
	at   time.Time
}

// begin attributes a model call to a thread, records the tool results it carries for the
// thread's previous step, and prepares its step.
func (g *Gateway) begin(r *http.Request, p tape.Provider, body []byte) *recording {
	at := g.now()
	decoded, err := decodeBody(body, r.Header.Get("Content-Encoding"))
	if err != nil {
		g.logf("%s %s: %v; recording the body as received", r.Method, r.URL.Path, err)
		decoded = body
	}
	step := &tape.Step{Request: tape.Request{Path: r.URL.RequestURI(), Headers: recordHeaders(r.Header, g.injectedNames())}}
	if json.Valid(decoded) {
		step.Request.Raw = json.RawMessage(decoded)
	} else {
		step.Request.Raw, _ = json.Marshal(string(decoded))
	}
	if err := provider.Normalize(p, step); err != nil {
		g.logf("%s: %v", r.URL.Path, err)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.finished {
		return nil
	}
	if !g.metaSet {
		g.metaSet = true
		g.setMeta(r, p, step)
	}
	th, continued := g.attribute(&step.Request)
	th.inFlight++
	if continued && th.last != nil {
		results, err := provider.ToolResults(p, step.Request.Raw, th.last.ToolCalls)
		if err != nil {
			g.logf("thread %s: tool results: %v", th.id, err)
		}
		next := g.w.Tape().MS(at)
		if err := g.w.UpdateStep(th.index, th.lastIndex, func(s *tape.Step) {
			if results != nil {
				s.ToolResults = results
			}
			s.Timing.NextRequestAt = &next
		}); err != nil {
			g.logf("thread %s: %v", th.id, err)
		} else if err := g.w.Sync(); err != nil {
			g.logf("persist tape: %v", err)
		}
	}
	step.Timing.RequestAt = g.w.Tape().MS(at)
	return &recording{th: th, step: step, p: p, at: at}
}

// setMeta fills what the first call tells of the run.
func (g *Gateway) setMeta(r *http.Request, p tape.Provider, step *tape.Step) {
	harness, version := detectHarness(r.Header)
	model := provider.Model(step.Request.Raw)
	err := g.w.UpdateMeta(func(m *tape.Meta) {
		m.Provider = p
		m.Model = model
		if m.Harness == "" {
			m.Harness, m.HarnessVersion = harness, version
		}
	})
	if err != nil {
		g.logf("meta: %v", err)
	}
}

var (
	claudeUA = regexp.MustCompile(`claude-cli/([0-9][^\s]*)`)
	codexUA  = regexp.MustCompile(`codex[_a-z]*/([0-9][^\s]*)`)
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
	if h.Get("X-Claude-Code-Session-Id") != "" {
		return "claude-code", ""
	}
	return "", ""
}

func (g *Gateway) injectedNames() []string {
	var out []string
	for _, inj := range g.cfg.Inject {
		out = append(out, strings.ToLower(inj.Name))
	}
	return out
}

// decodeBody undoes a request's Content-Encoding (gzip, zstd) for recording.
func decodeBody(body []byte, encoding string) ([]byte, error) {
	switch strings.ToLower(strings.TrimSpace(encoding)) {
	case "", "identity":
		return body, nil
	case "gzip", "x-gzip":
		zr, err := gzip.NewReader(bytes.NewReader(body))
		if err != nil {
			return nil, fmt.Errorf("decode gzip body: %w", err)
		}
		out, err := io.ReadAll(io.LimitReader(zr, MaxRequestBody))
		if err != nil {
			return nil, fmt.Errorf("decode gzip body: %w", err)
		}
		return out, nil
	case "zstd":
		zr, err := zstd.NewReader(bytes.NewReader(body), zstd.WithDecoderMaxMemory(MaxRequestBody))
		if err != nil {
			return nil, fmt.Errorf("decode zstd body: %w", err)
		}
		defer zr.Close()
		out, err := io.ReadAll(zr)
		if err != nil {
			return nil, fmt.Errorf("decode zstd body: %w", err)
		}
		return out, nil
	}
	return nil, fmt.Errorf("unknown content encoding %q", encoding)
}

// proxy forwards r upstream and copies the answer back, streaming it as it arrives. When
// rec is set, the exchange is recorded as a step.
func (g *Gateway) proxy(w http.ResponseWriter, r *http.Request, p tape.Provider, body []byte, rec *recording) {
	up := *g.upstreams[p]
	up.Path = strings.TrimSuffix(up.Path, "/") + upstreamPath(r.URL.Path)
	up.RawPath = ""
	up.RawQuery = r.URL.RawQuery
	var rd io.Reader = r.Body
	if body != nil {
		rd = bytes.NewReader(body)
	}
	out, err := http.NewRequestWithContext(r.Context(), r.Method, up.String(), rd)
	if err != nil {
		g.fail(w, rec, http.StatusBadGateway, fmt.Sprintf("build upstream request: %v", err))
		return
	}
	if body != nil {
		out.ContentLength = int64(len(body))
	} else {
		out.ContentLength = r.ContentLength
	}
	g.copyRequestHeaders(out.Header, r.Header, up.Host)
	resp, err := g.transport.RoundTrip(out)
	if err != nil {
		g.fail(w, rec, http.StatusBadGateway, fmt.Sprintf("upstream %s: %v", up.Host, err))
		return
	}
	defer resp.Body.Close()
	for k, vs := range resp.Header {
		if isHop(k) {
			continue
		}
		w.Header()[k] = vs
	}
	w.WriteHeader(resp.StatusCode)
	rc := http.NewResponseController(w)
	stream := strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream")
	if rec != nil {
		rec.step.Response.Status = resp.StatusCode
		rec.step.Response.Headers = recordHeaders(resp.Header, nil)
	}
	var (
		split     provider.EventSplitter
		chunks    []tape.Chunk
		full      bytes.Buffer
		firstByte time.Time
		readErr   error
		writeErr  error
	)
	buf := make([]byte, 32<<10)
	for {
		n, err := resp.Body.Read(buf)
		if n > 0 {
			now := g.now()
			if firstByte.IsZero() {
				firstByte = now
			}
			if writeErr == nil {
				if _, writeErr = w.Write(buf[:n]); writeErr == nil && stream {
					writeErr = rc.Flush()
				}
			}
			if rec != nil {
				if stream {
					at := tape.RoundMS(now.Sub(rec.at))
					for _, ev := range split.Write(buf[:n]) {
						chunks = append(chunks, tape.Chunk{AtMS: at, Data: ev})
					}
				} else {
					full.Write(buf[:n])
				}
			}
		}
		if err != nil {
			if err != io.EOF {
				readErr = err
			}
			break
		}
		if writeErr != nil && rec == nil {
			break
		}
	}
	if !stream && rec == nil && writeErr == nil {
		rc.Flush()
	}
	if rec == nil {
		return
	}
	end := g.now()
	if firstByte.IsZero() {
		firstByte = end
	}
	if stream {
		if rest := split.Flush(); rest != "" {
			chunks = append(chunks, tape.Chunk{AtMS: tape.RoundMS(end.Sub(rec.at)), Data: rest})
		}
		rec.step.Response.Chunks = chunks
		rec.step.Response.Raw = json.RawMessage("null")
	} else {
		rec.step.Response.Raw = rawBody(full.Bytes())
	}
	var upstreamProblems []string
	if readErr != nil && r.Context().Err() == nil {
		upstreamProblems = append(upstreamProblems, fmt.Sprintf("upstream stream broke: %v", readErr))
	}
	if resp.StatusCode >= 500 {
		upstreamProblems = append(upstreamProblems, fmt.Sprintf("upstream answered %d", resp.StatusCode))
	}
	if writeErr != nil || r.Context().Err() != nil {
		g.logf("%s: the client went away mid-response; recording what arrived", r.URL.Path)
	}
	g.finishStep(rec, firstByte, end, upstreamProblems)
}

// rawBody stores a response body: JSON as it is, anything else as a JSON string.
func rawBody(b []byte) json.RawMessage {
	if len(bytes.TrimSpace(b)) > 0 && json.Valid(b) {
		return json.RawMessage(bytes.Clone(b))
	}
	s, _ := json.Marshal(string(b))
	return s
}

func isHop(name string) bool {
	for _, h := range hopHeaders {
		if strings.EqualFold(h, name) {
			return true
		}
	}
	return false
}

func (g *Gateway) copyRequestHeaders(dst, src http.Header, host string) {
	var inject []Injection
	for _, inj := range g.cfg.Inject {
		if inj.matches(host) {
			inject = append(inject, inj)
		}
	}
	for k, vs := range src {
		if isHop(k) || strings.EqualFold(k, "Host") {
			continue
		}
		if len(inject) > 0 && IsCredential(k) {
			continue // the gateway holds this host's credentials
		}
		dst[k] = vs
	}
	for _, inj := range inject {
		dst.Set(inj.Name, inj.Value)
	}
}

// fail answers a request the gateway could not forward, in a provider-like error shape,
// and records it.
func (g *Gateway) fail(w http.ResponseWriter, rec *recording, status int, msg string) {
	g.logf("%s", msg)
	body, _ := json.Marshal(map[string]any{
		"type":  "error",
		"error": map[string]string{"type": "api_error", "message": "tapebox gateway: " + msg},
	})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(body)
	if rec == nil {
		return
	}
	rec.step.Response.Status = status
	rec.step.Response.Raw = body
	now := g.now()
	g.finishStep(rec, now, now, []string{msg})
}

// finishStep normalizes the response and persists the step. upstreamProblems says what went
// wrong upstream, if anything: the last such problem decides whether a run that ends now
// ended in an upstream error.
func (g *Gateway) finishStep(rec *recording, firstByte, end time.Time, upstreamProblems []string) {
	if err := provider.Normalize(rec.p, rec.step); err != nil && rec.step.Response.Status < 400 {
		g.logf("thread %s: %v", rec.th.id, err)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	th := rec.th
	th.inFlight--
	if g.finished {
		return
	}
	tp := g.w.Tape()
	rec.step.Timing.FirstByteAt = tp.MS(firstByte)
	rec.step.Timing.LastByteAt = tp.MS(end)
	if th.index < 0 {
		i, err := g.w.AddThread(th.id, th.parent)
		if err != nil {
			g.logf("thread %s: %v", th.id, err)
			return
		}
		th.index = i
	}
	si, err := g.w.AppendStep(th.index, rec.step)
	if err != nil {
		g.logf("thread %s: %v", th.id, err)
		return
	}
	th.last, th.lastIndex = rec.step, si
	th.steps++
	g.steps++
	g.noteSpawns(th, rec.step)
	if len(upstreamProblems) > 0 {
		g.lastErr = strings.Join(upstreamProblems, "; ")
	} else if rec.step.Response.Status < 400 {
		g.lastErr = ""
	}
	if err := g.w.Sync(); err != nil {
		g.logf("persist tape: %v", err)
	}
	g.logf("thread %s step %d: %s %d, %d tool calls, %.0f ms", th.id, si, rec.step.Request.Path, rec.step.Response.Status,
		len(rec.step.ToolCalls), rec.step.Timing.LastByteAt-rec.step.Timing.RequestAt)
}

// Close finishes the tape as cut if nothing finished it before.
func (g *Gateway) Close(ctx context.Context) error {
	return g.Finish(tape.EndCut, "gateway closed")
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

// Outcome says how the run looks now: complete when the main thread's last call was
// answered with a final message (no tool calls), upstream_error when the last call failed
// upstream, cut otherwise. Use it to finish a recording stopped by a signal or an exiting
// agent.
func (g *Gateway) Outcome() (tape.EndReason, string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.lastErr != "" {
		return tape.EndUpstreamError, g.lastErr
	}
	for _, th := range g.threads {
		if th.parent != nil || th.last == nil {
			continue
		}
		if len(th.last.ToolCalls) == 0 && th.last.Response.Status < 400 && th.inFlight == 0 {
			return tape.EndComplete, ""
		}
		return tape.EndCut, fmt.Sprintf("thread %s stopped after step %d, waiting for %d tool results", th.id, th.lastIndex, len(th.last.ToolCalls))
	}
	return tape.EndCut, "no model call was answered"
}
