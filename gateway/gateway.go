package gateway

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/subtle"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tapebox/tapebox/tape"
	"github.com/tapebox/tapebox/tape/seal"
	"github.com/tapebox/tapebox/workspace"
)

// DefaultUpstreams are the providers' public API hosts, per wire format.
var DefaultUpstreams = func() map[tape.Provider]string {
	m := map[tape.Provider]string{}
	for _, w := range wires {
		m[w.p] = w.upstream
	}
	return m
}()

// DefaultMaxRecordBody is the recording limit of a body when Config.MaxRecordBody is 0
// (32 MiB, Anthropic's own limit on a request).
const DefaultMaxRecordBody = 32 << 20

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
	// Cwd is the agent's working directory, for meta.cwd. When empty, the gateway learns it
	// from the main thread's first request, where the harness names it (provider.Cwd).
	Cwd string
	// Inject makes the gateway hold credentials for the model calls it records (see
	// Injection).
	Inject []Injection
	// SpawningTools overrides the tools taken to start a subagent (default SpawningTools).
	SpawningTools []string
	// Transport reaches the upstream; nil means a clone of http.DefaultTransport without
	// proxy-from-environment.
	Transport http.RoundTripper
	// Logf receives one line per call and per problem, from several goroutines at once; nil
	// discards them.
	Logf func(format string, args ...any)
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// OnEnd is called once when POST /tapebox/end finished the tape.
	OnEnd func()
	// Workspace, when set, is the agent's working directory on this machine: New snapshots it
	// beside the tape (workspace.SnapshotPath) before the first call, and Finish records its
	// end manifest, both in meta.workspace. WorkspaceOptions choose exclusions and the cap.
	Workspace        string
	WorkspaceOptions workspace.Options
	// EndToken, when set, lets a peer that is not on loopback end the recording: its POST
	// /tapebox/end must carry "Authorization: Bearer TOKEN" or "?token=TOKEN". Without it,
	// only loopback peers may end the recording (NewToken makes one).
	EndToken string
	// MaxRecordBody bounds the bodies the gateway records, in bytes: a request, a JSON
	// answer, a stream's events. A longer one is still forwarded whole, as it arrives, and
	// recorded as a tape.Truncation marker with empty normalized fields. 0 means
	// DefaultMaxRecordBody; a negative value, no limit.
	MaxRecordBody int64
	// Limits are the breaker's limits (see Trip): when one is reached, the next model call
	// and every one after it is refused with an error in the provider's shape, and the
	// tape ends with reason budget. They go into meta.limits. Cost prices a call for
	// Limits.MaxCostUSD and the status counters; a model it has no price for counts tokens
	// only (the gateway logs it once).
	Limits tape.Limits
	Cost   CostFunc
	// NoDigests writes the tape without its digest chain (tape.Digest).
	NoDigests bool
	// Signer, when set, signs the tape's root digest (ed25519) with every persisted step.
	Signer ed25519.PrivateKey
}

// Gateway is a recording reverse proxy: an http.Handler that forwards an agent's model
// calls to the provider and records every call into one tape.
//
// Persistence: an answer is recorded and published on disk (tape.Writer.Sync without fsync:
// atomic, and it survives the gateway being killed) before its last byte is forwarded, so a
// client never holds an answer the tape lacks. The fsync that makes the tape survive a
// machine crash runs right after, on a goroutine of the gateway's own, off the client's path.
type Gateway struct {
	cfg       Config
	maxRecord int64 // the recording limit of a body; negative for none
	upstreams map[tape.Provider]*url.URL
	transport http.RoundTripper
	injected  []string // lower-case names of injected headers, redacted like credentials
	logf      func(string, ...any)
	now       func() time.Time
	start     time.Time
	out       *recorder // the tape
	brk       *breaker  // nil without limits or prices
	digests   bool
	hashing   tape.Hashing

	// The syncer publishes changes made outside a call's answer (tool results, meta) and
	// fsyncs what was published.
	kick     chan struct{}
	stop     chan struct{}
	syncDone chan struct{}
	dirty    atomic.Bool

	finishOnce sync.Once
	finishErr  error
	endOnce    sync.Once // OnEnd runs once however often /tapebox/end is posted

	// heavy is held while a request that spilled (recording.deferred) is in memory: to be
	// normalized and attributed (begin), then normalized, encoded and published (commit).
	heavy sync.Mutex

	mu      sync.Mutex
	matcher // the live threads
	metaSet bool
	// mainSeen: meta's model (and, unless given, cwd) came from a request that offers
	// tools, the main thread's first (setMain), or from a fork's prefix (Seed).
	mainSeen bool
	finished bool
	lastErr  string // the last upstream failure, for the end reason
	steps    int
	wsOpts   workspace.Options // the exclusions the start snapshot applied, for the end manifest

	// unsupported is set once a request showed a feature TapeBox records but does not
	// replay (package unsupported): the tape is labelled and the log told once. Set under
	// mu; read without it to skip the search.
	unsupported atomic.Bool
}

// New creates the tape at cfg.Output and returns a Gateway recording into it. Close (or
// Finish) releases it.
func New(cfg Config) (*Gateway, error) {
	if cfg.Output == "" {
		return nil, errors.New("gateway: an output path is required")
	}
	g := &Gateway{cfg: cfg, upstreams: map[tape.Provider]*url.URL{}, logf: cfg.Logf, now: cfg.Now, matcher: matcher{spawning: cfg.SpawningTools}, maxRecord: cfg.MaxRecordBody}
	if g.maxRecord == 0 {
		g.maxRecord = DefaultMaxRecordBody
	}
	if g.logf == nil {
		g.logf = func(string, ...any) {}
	}
	if g.now == nil {
		g.now = time.Now
	}
	if g.spawning == nil {
		g.spawning = SpawningTools
	}
	for _, inj := range cfg.Inject {
		g.injected = append(g.injected, strings.ToLower(inj.Name))
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
	var ws *tape.Workspace
	if cfg.Workspace != "" {
		var err error
		if ws, g.wsOpts, err = snapshotStart(context.Background(), &cfg); err != nil {
			return nil, err
		}
	}
	if cfg.Limits != (tape.Limits{}) || cfg.Cost != nil {
		g.brk = &breaker{limits: cfg.Limits, cost: cfg.Cost, unpriced: map[string]int64{}}
	}
	g.start = g.now()
	tp := tape.New("", g.start)
	if cfg.Limits != (tape.Limits{}) {
		l := cfg.Limits
		tp.Meta.Limits = &l
	}
	tp.Meta.Workspace = ws
	tp.Meta.Harness = cfg.Harness
	tp.Meta.HarnessVersion = cfg.HarnessVersion
	tp.Meta.Cwd = cfg.Cwd
	for k, v := range cfg.Task {
		tp.Meta.Task[k] = v
	}
	for k, v := range cfg.Labels {
		tp.Meta.Labels[k] = v
	}
	var opts []tape.Option
	if cfg.Signer != nil || !cfg.NoDigests {
		g.hashing = seal.Hashing(cfg.Signer)
		opts = append(opts, tape.WithDigests(g.hashing))
	}
	g.digests = len(opts) > 0
	out, err := newRecorder(cfg.Output, tp, opts...) // without fsync: the syncer fsyncs, off the client's path
	if err != nil {
		return nil, fmt.Errorf("gateway: %w", err)
	}
	g.out = out
	g.kick = make(chan struct{}, 1)
	g.stop = make(chan struct{})
	g.syncDone = make(chan struct{})
	go g.syncLoop()
	return g, nil
}

// Path returns the tape's path.
func (g *Gateway) Path() string { return g.cfg.Output }

// View calls fn with the tape recorded so far, under the writer's lock; fn must not change
// it nor keep it.
func (g *Gateway) View(fn func(*tape.Tape)) {
	if g.out.w != nil {
		g.out.w.View(fn)
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	fn(g.out.t)
}

// SetLabel sets meta.labels[key] of the recording; the tape file has it from the next
// persist on (Finish's at the latest). For what the recorder learns beside the requests,
// such as the model provider the harness was configured with.
func (g *Gateway) SetLabel(key, value string) error {
	return g.updateMeta("label "+key, nil, func(m *tape.Meta) { m.Labels[key] = value })
}

// Steps returns how many model calls were recorded.
func (g *Gateway) Steps() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.steps
}

// Finish ends the recording: meta says how and when, and the tape is persisted a last time
// (fsynced). An EndComplete after an upstream failure that nothing answered since becomes
// EndUpstreamError. Later calls are proxied but not recorded. Finish is idempotent: later
// calls return the first call's result.
func (g *Gateway) Finish(reason tape.EndReason, detail string) error {
	g.finishOnce.Do(func() {
		g.mu.Lock()
		g.finished = true
		if reason == tape.EndComplete && g.lastErr != "" {
			reason, detail = tape.EndUpstreamError, g.lastErr
		}
		g.mu.Unlock()
		close(g.stop)
		<-g.syncDone
		if g.cfg.Workspace != "" {
			if err := g.recordEnd(context.Background()); err != nil {
				g.logf("%v", err)
			}
		}
		end := tape.Ended{Reason: reason, At: g.now(), Detail: detail}
		if t := g.Tripped(); reason == tape.EndBudget && t != nil {
			end.Limit = t.Limit
		}
		if err := g.out.end(end); err != nil {
			g.finishErr = fmt.Errorf("gateway: finish tape: %w", err)
			return
		}
		if err := fsyncPath(g.cfg.Output); err != nil {
			g.finishErr = fmt.Errorf("gateway: finish tape: %w", err)
		}
	})
	return g.finishErr
}

// Close finishes the tape as cut if nothing finished it before.
func (g *Gateway) Close(ctx context.Context) error {
	return g.Finish(tape.EndCut, "gateway closed")
}

// Outcome says how the run looks now: upstream_error when the last call that failed
// upstream (a network error, a broken stream, 429 or 5xx) was not followed by a good
// answer; complete when the main thread's last call got a complete answer with no tool
// calls and nothing of it is in flight; cut otherwise, with the reason. Use it to finish a
// recording stopped by a signal or an exiting agent.
func (g *Gateway) Outcome() (tape.EndReason, string) {
	if t := g.Tripped(); t != nil && g.brk.refused.Load() > 0 {
		return tape.EndBudget, t.Detail
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.lastErr != "" {
		return tape.EndUpstreamError, g.lastErr
	}
	for _, th := range g.threads {
		if th.parent != nil || th.last == nil {
			continue
		}
		switch {
		case th.inFlight > 0:
			return tape.EndCut, fmt.Sprintf("thread %s stopped with %d call(s) in flight", th.id, th.inFlight)
		case !th.lastOK:
			return tape.EndCut, fmt.Sprintf("thread %s stopped after step %d, which got no complete answer (status %d)", th.id, th.lastIndex, th.last.Response.Status)
		case len(th.last.ToolCalls) > 0:
			return tape.EndCut, fmt.Sprintf("thread %s stopped after step %d, waiting for %d tool results", th.id, th.lastIndex, len(th.last.ToolCalls))
		}
		return tape.EndComplete, ""
	}
	return tape.EndCut, "no model call was answered"
}

var labelPrefix = regexp.MustCompile(`^/r/[^/]+`)

// upstreamPath strips a /r/<label> prefix.
func upstreamPath(p string) string {
	if !strings.HasPrefix(p, "/r/") {
		return p
	}
	return labelPrefix.ReplaceAllString(p, "")
}

// ServeHTTP proxies one request, recording it when it is a model call.
func (g *Gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch upstreamPath(r.URL.Path) {
	case "/tapebox/end":
		g.serveEnd(w, r)
		return
	case "/tapebox/status":
		g.serveStatus(w, r)
		return
	}
	fwd, p, isModelCall, ambiguous := route(r)
	if ambiguous && r.Method == http.MethodPost {
		refuseAmbiguous(w, r, p, fwd, "tapebox gateway", g.logf)
		return
	}
	if isModelCall && r.Method == http.MethodPost && g.brk != nil {
		if t := g.brk.trip.Load(); t != nil {
			g.refuse(w, r, p, t)
			return
		}
		// Counted until its answer is recorded: the breaker finishes the tape only once
		// every call it let through is in it.
		g.brk.active.Add(1)
		defer g.brk.active.Add(-1)
	}
	if !isModelCall || r.Method != http.MethodPost {
		if !isModelCall {
			p = guessProvider(r)
		}
		g.proxy(w, r, p, fwd, nil, nil)
		return
	}
	at := g.now()
	body := g.readRequest(r)
	defer body.release()
	rec := &recording{p: p, at: at, ready: make(chan struct{}), body: body}
	// Attribution parses the request; it runs while the request travels upstream, and the
	// answer waits for it only before it is recorded.
	go g.begin(rec, r)
	defer func() { <-rec.ready }() // begin reads r, which must not outlive this call
	g.proxy(w, r, p, fwd, body, rec)
}

func (g *Gateway) serveEnd(w http.ResponseWriter, r *http.Request) {
	if !g.mayEnd(r) {
		g.logf("POST /tapebox/end from %s refused: not loopback, and without the end token", r.RemoteAddr)
		http.Error(w, "tapebox gateway: /tapebox/end answers loopback peers, or a request with the gateway's end token (Authorization: Bearer TOKEN or ?token=TOKEN)", http.StatusForbidden)
		return
	}
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
		g.endOnce.Do(func() { go g.cfg.OnEnd() })
	}
}

// mayEnd says whether r may end the recording: it comes from loopback, or carries the end
// token. The peer is the TCP peer: no forwarding header is trusted.
func (g *Gateway) mayEnd(r *http.Request) bool {
	if isLoopback(r.RemoteAddr) {
		return true
	}
	if g.cfg.EndToken == "" {
		return false
	}
	want := []byte(g.cfg.EndToken)
	if tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok && subtle.ConstantTimeCompare([]byte(tok), want) == 1 {
		return true
	}
	return subtle.ConstantTimeCompare([]byte(r.URL.Query().Get("token")), want) == 1
}

// isLoopback says whether a peer's address (host:port) is a loopback address.
func isLoopback(remoteAddr string) bool {
	host, _, err := net.SplitHostPort(remoteAddr)
	if err != nil {
		return false
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.Unmap().IsLoopback()
}

// NewToken returns a fresh random token (128 bits or more) for Config.EndToken.
func NewToken() string { return rand.Text() }

// guessProvider picks an upstream for a path that is not a model call.
func guessProvider(r *http.Request) tape.Provider {
	if r.Header.Get("x-goog-api-key") != "" || strings.Contains(r.URL.Path, "/models/") {
		return tape.ProviderGemini
	}
	if r.Header.Get("x-api-key") != "" || r.Header.Get("anthropic-version") != "" || strings.Contains(r.URL.Path, "/messages") {
		return tape.ProviderAnthropic
	}
	return tape.ProviderOpenAIChat
}
