package gateway

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tapebox/tapebox/tape"
)

// The names of the breaker's limits, as meta.ended.limit and /tapebox/status give them.
const (
	LimitCost        = "max_cost"
	LimitSteps       = "max_steps"
	LimitThreadSteps = "max_thread_steps"
	LimitTokens      = "max_tokens"
	LimitRepeat      = "max_repeat"
)

// CostFunc prices a call's usage on a model: the cost in US dollars, and false when the
// model has no known price. The command line passes a price table's.
type CostFunc func(model string, u tape.Usage) (usd float64, known bool)

// Trip says which limit stopped a recording, and with what figure.
type Trip struct {
	Limit  string `json:"limit"`
	Detail string `json:"detail"`
}

// breaker counts what a recording spends and trips when a limit of Config.Limits is
// reached: from then on every model call is refused, in the provider's error shape, and the
// tape ends with reason budget. Its counters are guarded by Gateway.mu; trip is read
// without it, on every call.
type breaker struct {
	limits   tape.Limits
	cost     CostFunc
	tokens   int64
	usd      float64
	unpriced map[string]int64 // tokens of the calls to models without a price, by model
	trip     atomic.Pointer[Trip]
	refused  atomic.Int64 // model calls refused since the trip
	active   atomic.Int64 // model calls let through and not yet recorded
	ending   sync.Once
}

// usageTokens is every token a call was billed for.
func usageTokens(u tape.Usage) int64 {
	return u.InputTokens + u.OutputTokens + u.CacheReadInputTokens + u.CacheCreationInputTokens
}

// callsKey identifies a step's tool calls by name and normalized input (JSON decoded and
// encoded again: key order, spacing and escapes do not count), in a stable order; ok is
// false for a step without tool calls.
func callsKey(calls []tape.ToolCall) (key [sha256.Size]byte, ok bool) {
	if len(calls) == 0 {
		return key, false
	}
	parts := make([]string, len(calls))
	for i, c := range calls {
		in := bytes.TrimSpace(c.Input)
		var v any
		if json.Unmarshal(in, &v) == nil {
			if b, err := json.Marshal(v); err == nil {
				in = b
			}
		}
		parts[i] = c.Name + "\x00" + string(in)
	}
	slices.Sort(parts)
	return sha256.Sum256([]byte(strings.Join(parts, "\x01"))), true
}

// callNames lists a step's tool call names, for a message.
func callNames(calls []tape.ToolCall) string {
	names := make([]string, len(calls))
	for i, c := range calls {
		names[i] = c.Name
	}
	return strings.Join(names, ", ")
}

// observation is what a committed step adds to the breaker's counters, computed before the
// gateway's lock is taken.
type observation struct {
	tokens   int64
	usd      float64
	priced   bool
	model    string
	calls    [sha256.Size]byte
	hasCalls bool
}

func (b *breaker) observe(model string, s *tape.Step) observation {
	o := observation{tokens: usageTokens(s.Response.Usage), model: model}
	if b.cost != nil {
		o.usd, o.priced = b.cost(model, s.Response.Usage)
	}
	if b.limits.MaxRepeat > 0 {
		o.calls, o.hasCalls = callsKey(s.ToolCalls)
	}
	return o
}

// add counts a committed step of th (under Gateway.mu; steps is the run's step count after
// it) and trips the breaker when a limit is reached. retry says the step asked again for a
// turn the thread had answered: answered alike, it repeats no call (the harness runs its
// calls once), so it leaves the repeat count as it is. It returns a line for the log when
// the step's model has no price (the first time only), or "".
func (b *breaker) add(th *thread, steps int, o observation, s *tape.Step, retry bool) (note string) {
	b.tokens += o.tokens
	if o.priced {
		b.usd += o.usd
	} else if b.cost != nil {
		if _, seen := b.unpriced[o.model]; !seen && b.limits.MaxCostUSD > 0 {
			note = fmt.Sprintf("model %q has no price in the price table: --max-cost counts nothing for its calls (--max-tokens still counts them)", o.model)
		}
		b.unpriced[o.model] += o.tokens
	}
	if b.limits.MaxRepeat > 0 {
		switch {
		case retry:
		case !o.hasCalls:
			th.repeats = 0
		case th.seenCalls[o.calls]:
			th.repeats++
		default:
			th.repeats = 0
			if th.seenCalls == nil {
				th.seenCalls = map[[sha256.Size]byte]bool{}
			}
			th.seenCalls[o.calls] = true
		}
	}
	if b.trip.Load() != nil {
		return note
	}
	l := b.limits
	var t *Trip
	switch {
	case l.MaxRepeat > 0 && th.repeats >= l.MaxRepeat:
		t = &Trip{LimitRepeat, fmt.Sprintf("thread %s repeated an earlier step's tool calls (%s) %d times in a row (--max-repeat %d)", th.id, callNames(s.ToolCalls), th.repeats, l.MaxRepeat)}
	case l.MaxThreadSteps > 0 && th.steps >= l.MaxThreadSteps:
		t = &Trip{LimitThreadSteps, fmt.Sprintf("thread %s made %d model calls (--max-thread-steps %d)", th.id, th.steps, l.MaxThreadSteps)}
	case l.MaxSteps > 0 && steps >= l.MaxSteps:
		t = &Trip{LimitSteps, fmt.Sprintf("the run made %d model calls (--max-steps %d)", steps, l.MaxSteps)}
	case l.MaxTokens > 0 && b.tokens >= l.MaxTokens:
		t = &Trip{LimitTokens, fmt.Sprintf("the run used %d tokens after %d model calls (--max-tokens %d)", b.tokens, steps, l.MaxTokens)}
	case l.MaxCostUSD > 0 && b.usd >= l.MaxCostUSD:
		t = &Trip{LimitCost, fmt.Sprintf("the run cost $%.4f after %d model calls (--max-cost %g)", b.usd, steps, l.MaxCostUSD)}
	}
	if t != nil {
		b.trip.Store(t)
	}
	return note
}

// Tripped returns the limit that stopped the recording, or nil.
func (g *Gateway) Tripped() *Trip {
	if g.brk == nil {
		return nil
	}
	return g.brk.trip.Load()
}

// refuse answers a model call after the breaker tripped: the request still tells the
// thread's last step its tool results, the agent gets an error in its provider's shape
// (HTTP 400, which harnesses do not retry), and the tape is finished with reason budget as
// soon as the calls let through before the trip (another thread's, in flight) are recorded.
func (g *Gateway) refuse(w http.ResponseWriter, r *http.Request, p tape.Provider, t *Trip) {
	g.brk.refused.Add(1)
	body := g.readRequest(r)
	body.finish()
	rec := &recording{p: p, at: g.now(), ready: make(chan struct{}), body: body}
	g.begin(rec, r)
	body.release()
	g.mu.Lock()
	if rec.th != nil {
		rec.th.inFlight--
	}
	g.mu.Unlock()
	g.brk.ending.Do(func() { go g.finishWhenIdle(t) })
	msg := fmt.Sprintf("tapebox gateway: budget exceeded, %s: %s; the recording is stopped and no more model calls are forwarded", t.Limit, t.Detail)
	g.logf("%s %s refused: %s: %s", r.Method, r.URL.Path, t.Limit, t.Detail)
	writeError(w, p, apiError{status: http.StatusBadRequest, typ: "invalid_request_error", code: "tapebox_budget_exceeded", msg: msg})
}

// finishWhenIdle finishes the tape with reason budget once no call let through is still
// to be recorded (or after maxIdleWait: a call that hangs does not hold the tape open).
func (g *Gateway) finishWhenIdle(t *Trip) {
	deadline := time.Now().Add(maxIdleWait)
	for g.brk.active.Load() > 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if err := g.Finish(tape.EndBudget, t.Detail); err != nil {
		g.logf("%v", err)
	}
}

// maxIdleWait bounds how long a tripped breaker waits for calls in flight.
const maxIdleWait = 2 * time.Minute

// Status is what GET /tapebox/status answers: the recording's counters as they are now.
type Status struct {
	Tape     string `json:"tape"`
	Steps    int    `json:"steps"`
	Finished bool   `json:"finished"`
	Tokens   int64  `json:"tokens"`
	// CostUSD sums the calls to priced models; UnpricedModels lists the others, with the
	// tokens their calls used. CostUSD is null without a price table.
	CostUSD        *float64         `json:"cost_usd"`
	UnpricedModels map[string]int64 `json:"unpriced_models,omitempty"`
	Threads        []ThreadStatus   `json:"threads"`
	Limits         *tape.Limits     `json:"limits"`
	Tripped        *Trip            `json:"tripped"`
	Refused        int64            `json:"refused"`
}

// ThreadStatus is one thread's counters.
type ThreadStatus struct {
	ID    string `json:"id"`
	Steps int    `json:"steps"`
	// Repeats is how many of its last steps in a row repeated an earlier step's tool calls.
	Repeats  int `json:"repeats"`
	InFlight int `json:"in_flight"`
}

// Status returns the recording's counters.
func (g *Gateway) Status() Status {
	g.mu.Lock()
	defer g.mu.Unlock()
	st := Status{Tape: g.cfg.Output, Steps: g.steps, Finished: g.finished, Threads: []ThreadStatus{}}
	for _, th := range g.threads {
		st.Threads = append(st.Threads, ThreadStatus{ID: th.id, Steps: th.steps, Repeats: th.repeats, InFlight: th.inFlight})
	}
	if b := g.brk; b != nil {
		st.Tokens = b.tokens
		if b.cost != nil {
			usd := b.usd
			st.CostUSD = &usd
		}
		if len(b.unpriced) > 0 {
			st.UnpricedModels = maps.Clone(b.unpriced)
		}
		if b.limits != (tape.Limits{}) {
			l := b.limits
			st.Limits = &l
		}
		st.Tripped = b.trip.Load()
		st.Refused = b.refused.Load()
	}
	return st
}

func (g *Gateway) serveStatus(w http.ResponseWriter, r *http.Request) {
	if !g.mayEnd(r) {
		http.Error(w, "tapebox gateway: /tapebox/status answers loopback peers, or a request with the gateway's end token (Authorization: Bearer TOKEN or ?token=TOKEN)", http.StatusForbidden)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		http.Error(w, "GET for the recording's counters", http.StatusMethodNotAllowed)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.Encode(g.Status())
}
