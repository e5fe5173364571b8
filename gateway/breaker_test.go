package gateway_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/gateway"
	"github.com/tapebox/tapebox/prices"
	"github.com/tapebox/tapebox/tape"
	"github.com/tapebox/tapebox/tape/seal"
	"github.com/tapebox/tapebox/testkit/fakeprovider"
	"github.com/tapebox/tapebox/testkit/miniagent"
)

// loopScript is a model stuck in a loop: it asks for the same tool call every turn.
func loopScript(n int) fakeprovider.Script {
	turns := make([]fakeprovider.Turn, n)
	for i := range turns {
		turns[i] = fakeprovider.Turn{Text: "Let me check again.", Calls: []tape.ToolCall{fakeprovider.Call("Bash", map[string]string{"command": "echo still-not-done"})}}
	}
	return fakeprovider.Script{Threads: []fakeprovider.Thread{{Name: "main", Turns: turns}}}
}

// distinctScript asks for a different call every turn, then ends.
func distinctScript(n int) fakeprovider.Script {
	turns := make([]fakeprovider.Turn, n+1)
	for i := range n {
		turns[i] = fakeprovider.Turn{Text: strings.Repeat("thinking out loud ", i+1), Calls: []tape.ToolCall{fakeprovider.Call("Bash", map[string]string{"command": fmt.Sprintf("echo %d", i)})}}
	}
	turns[n] = fakeprovider.Turn{Text: "Done."}
	return fakeprovider.Script{Threads: []fakeprovider.Thread{{Name: "main", Turns: turns}}}
}

// runAgent runs the mini agent through the rig's gateway and returns its error.
func runAgent(t *testing.T, rg *rig, p tape.Provider, stream bool) error {
	t.Helper()
	_, err := miniagent.Run(t.Context(), miniagent.Config{BaseURL: rg.gw.URL, Provider: p, Stream: stream, Model: "fake-model", APIKey: "x", Prompt: "fix the bug", Dir: t.TempDir()})
	return err
}

// finishLikeRecord ends the recording the way tapebox record does, with the outcome.
func finishLikeRecord(t *testing.T, rg *rig) *tape.Tape {
	t.Helper()
	reason, detail := rg.g.Outcome()
	require.NoError(t, rg.g.Finish(reason, detail))
	data, err := os.ReadFile(rg.out)
	require.NoError(t, err)
	tp, err := tape.Unmarshal(data)
	require.NoError(t, err)
	v, err := seal.Verify(bytes.NewReader(data), nil)
	require.NoError(t, err)
	require.Equal(t, tape.DigestsOK, v.State, "%s: %s", v.Pointer, v.Problem)
	return tp
}

// TestBreakerRepeat: a model that asks for the same tool call every turn is stopped by
// --max-repeat 3 in every wire format: the fourth repeat is refused in the provider's own
// error shape, the tape holds every step answered, the last one with its tool results, and
// ends budget.
func TestBreakerRepeat(t *testing.T) {
	for _, p := range []tape.Provider{tape.ProviderAnthropic, tape.ProviderOpenAIChat, tape.ProviderOpenAIResponses} {
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/stream=%v", p, stream), func(t *testing.T) {
				rg := newRig(t, loopScript(30), func(c *gateway.Config) { c.Limits = tape.Limits{MaxRepeat: 3} })
				err := runAgent(t, rg, p, stream)
				require.Error(t, err, "the agent is stopped")
				require.Contains(t, err.Error(), "400")
				require.Contains(t, err.Error(), "max_repeat")
				require.Contains(t, err.Error(), "invalid_request_error")
				if p == tape.ProviderAnthropic {
					require.Contains(t, err.Error(), `"type":"error"`)
				} else {
					require.Contains(t, err.Error(), `"code":"tapebox_budget_exceeded"`)
				}
				require.Len(t, rg.fp.Requests(), 4, "the refused call never reaches the provider")
				trip := rg.g.Tripped()
				require.NotNil(t, trip)
				require.Equal(t, gateway.LimitRepeat, trip.Limit)

				tp := finishLikeRecord(t, rg)
				require.Equal(t, tape.EndBudget, tp.Meta.Ended.Reason)
				require.Equal(t, gateway.LimitRepeat, tp.Meta.Ended.Limit)
				require.Contains(t, tp.Meta.Ended.Detail, "3 times in a row")
				require.Equal(t, &tape.Limits{MaxRepeat: 3}, tp.Meta.Limits)
				steps := tp.Main().Steps
				require.Len(t, steps, 4, "step 0 and three repeats")
				last := steps[3]
				require.Len(t, last.ToolResults, 1, "the refused request still brought the last step its tool results")
				require.Contains(t, last.ToolResults[0].Text(), "still-not-done")
				require.NotNil(t, last.Timing.NextRequestAt)
			})
		}
	}
}

// TestBreakerRepeatNormalizesInput: the same call with its input's keys in another order
// and other spacing is a repeat; a call with another input is not.
func TestBreakerRepeatNormalizesInput(t *testing.T) {
	inputs := []string{`{"command":"ls","timeout":5}`, `{"timeout":5, "command":"ls"}`, `{ "command" : "ls" , "timeout" : 5 }`, `{"command":"ls -a","timeout":5}`, `{"timeout":5,"command":"ls -a"}`}
	turns := make([]fakeprovider.Turn, len(inputs)+1)
	for i, in := range inputs {
		turns[i] = fakeprovider.Turn{Calls: []tape.ToolCall{fakeprovider.Call("Bash", json.RawMessage(in))}}
	}
	turns[len(inputs)] = fakeprovider.Turn{Text: "Done."}
	rg := newRig(t, fakeprovider.Script{Threads: []fakeprovider.Thread{{Name: "main", Turns: turns}}}, func(c *gateway.Config) { c.Limits = tape.Limits{MaxRepeat: 3} })
	require.NoError(t, runAgent(t, rg, tape.ProviderAnthropic, false), "two repeats, a new call, one repeat: never three in a row")
	st := rg.g.Status()
	require.Nil(t, st.Tripped)
	require.Equal(t, 0, st.Threads[0].Repeats, "the final answer has no tool calls")

	rg = newRig(t, fakeprovider.Script{Threads: []fakeprovider.Thread{{Name: "main", Turns: turns}}}, func(c *gateway.Config) { c.Limits = tape.Limits{MaxRepeat: 2} })
	require.Error(t, runAgent(t, rg, tape.ProviderAnthropic, false))
	tp := finishLikeRecord(t, rg)
	require.Len(t, tp.Main().Steps, 3, "steps 1 and 2 repeat step 0 in key order and spacing")
	require.Equal(t, gateway.LimitRepeat, tp.Meta.Ended.Limit)
}

// pricedTable prices fake-model like a real model, from a price file's bytes.
func pricedTable(t *testing.T) gateway.CostFunc {
	t.Helper()
	table, err := prices.Parse("prices.json", []byte(`{"date":"2026-11-30","models":{"fake-model":{"input":3000,"output":15000,"cache_read":300,"cache_write":3750}}}`))
	require.NoError(t, err)
	return func(model string, u tape.Usage) (float64, bool) {
		p, ok := table.Lookup(model)
		if !ok {
			return 0, false
		}
		return p.Cost(u), true
	}
}

// TestBreakerCost: --max-cost trips on the step whose cost takes the run to the limit, at
// the table's prices, and not before: the calibration run gives each step's cost.
func TestBreakerCost(t *testing.T) {
	cost := pricedTable(t)
	calib := newRig(t, distinctScript(8), func(c *gateway.Config) { c.Cost = cost })
	require.NoError(t, runAgent(t, calib, tape.ProviderAnthropic, true))
	tp := finishLikeRecord(t, calib)
	require.Len(t, tp.Main().Steps, 9)
	var cum []float64
	var total float64
	for _, s := range tp.Main().Steps {
		usd, ok := cost("fake-model", s.Response.Usage)
		require.True(t, ok)
		require.Greater(t, usd, 0.0)
		total += usd
		cum = append(cum, total)
	}
	st := calib.g.Status()
	require.NotNil(t, st.CostUSD)
	require.InDelta(t, total, *st.CostUSD, 1e-9, "the status counts what the steps cost")

	for _, trip := range []int{1, 3, 5} { // the step (from 0) whose cost reaches the limit
		t.Run(fmt.Sprintf("trips-at-step-%d", trip), func(t *testing.T) {
			limit := (cum[trip-1] + cum[trip]) / 2
			rg := newRig(t, distinctScript(8), func(c *gateway.Config) { c.Cost = cost; c.Limits = tape.Limits{MaxCostUSD: limit} })
			err := runAgent(t, rg, tape.ProviderAnthropic, true)
			require.ErrorContains(t, err, "max_cost")
			got := finishLikeRecord(t, rg)
			require.Len(t, got.Main().Steps, trip+1, "steps 0..%d are answered (limit $%.4f, spent $%.4f by then)", trip, limit, cum[trip])
			require.Equal(t, tape.EndBudget, got.Meta.Ended.Reason)
			require.Equal(t, gateway.LimitCost, got.Meta.Ended.Limit)
			require.Contains(t, got.Meta.Ended.Detail, fmt.Sprintf("$%.4f after %d model calls", cum[trip], trip+1))
			require.Len(t, rg.fp.Requests(), trip+1)
		})
	}
}

// TestBreakerUnpricedModel: a model without a price counts no cost, so --max-cost does not
// stop it, the gateway says so once, and --max-tokens still does.
func TestBreakerUnpricedModel(t *testing.T) {
	cost := func(string, tape.Usage) (float64, bool) { return 0, false }
	var logged []string
	rg := newRig(t, distinctScript(6), func(c *gateway.Config) {
		c.Cost = cost
		c.Limits = tape.Limits{MaxCostUSD: 0.0001}
		c.Logf = func(f string, a ...any) { logged = append(logged, fmt.Sprintf(f, a...)) }
	})
	require.NoError(t, runAgent(t, rg, tape.ProviderOpenAIChat, false))
	var notes int
	for _, l := range logged {
		if strings.Contains(l, `model "fake-model" has no price`) {
			notes++
		}
	}
	require.Equal(t, 1, notes, "said once: %q", logged)
	st := rg.g.Status()
	require.Equal(t, 0.0, *st.CostUSD)
	require.Positive(t, st.UnpricedModels["fake-model"])
	require.Equal(t, st.Tokens, st.UnpricedModels["fake-model"])

	rg = newRig(t, distinctScript(6), func(c *gateway.Config) {
		c.Cost = cost
		c.Limits = tape.Limits{MaxCostUSD: 0.0001, MaxTokens: st.Tokens / 2}
	})
	require.ErrorContains(t, runAgent(t, rg, tape.ProviderOpenAIChat, false), "max_tokens")
	require.Equal(t, gateway.LimitTokens, finishLikeRecord(t, rg).Meta.Ended.Limit)
}

// TestBreakerSteps: --max-steps allows N calls in all, --max-thread-steps N in one thread.
func TestBreakerSteps(t *testing.T) {
	for _, c := range []struct {
		limits tape.Limits
		name   string
	}{
		{tape.Limits{MaxSteps: 3}, gateway.LimitSteps},
		{tape.Limits{MaxThreadSteps: 3}, gateway.LimitThreadSteps},
	} {
		t.Run(c.name, func(t *testing.T) {
			rg := newRig(t, distinctScript(8), func(cfg *gateway.Config) { cfg.Limits = c.limits })
			require.ErrorContains(t, runAgent(t, rg, tape.ProviderOpenAIResponses, true), c.name)
			tp := finishLikeRecord(t, rg)
			require.Len(t, tp.Main().Steps, 3)
			require.Equal(t, c.name, tp.Meta.Ended.Limit)
			// Later calls are refused too, and recorded no more.
			rep := rg.do(t, call{body: []byte(`{"model":"fake-model","max_tokens":5,"messages":[{"role":"user","content":"again"}]}`)})
			require.Equal(t, http.StatusBadRequest, rep.status)
			require.Contains(t, string(rep.body), c.name)
			require.Len(t, finishLikeRecord(t, rg).Main().Steps, 3)
		})
	}
	// Reaching a limit on the run's last call refuses nothing: the run is complete.
	rg := newRig(t, distinctScript(2), func(cfg *gateway.Config) { cfg.Limits = tape.Limits{MaxSteps: 3} })
	require.NoError(t, runAgent(t, rg, tape.ProviderAnthropic, false))
	require.NotNil(t, rg.g.Tripped())
	require.Equal(t, tape.EndComplete, finishLikeRecord(t, rg).Meta.Ended.Reason)
}

// TestStatus: GET /tapebox/status gives the counters as JSON while the run goes on.
func TestStatus(t *testing.T) {
	rg := newRig(t, loopScript(30), func(c *gateway.Config) {
		c.Limits = tape.Limits{MaxRepeat: 5, MaxSteps: 100}
		c.Cost = pricedTable(t)
	})
	get := func() (int, gateway.Status) {
		resp, err := http.Get(rg.gw.URL + "/tapebox/status")
		require.NoError(t, err)
		defer resp.Body.Close()
		var st gateway.Status
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		if resp.StatusCode == http.StatusOK {
			require.NoError(t, json.Unmarshal(b, &st), "%s", b)
		}
		return resp.StatusCode, st
	}
	code, st := get()
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, 0, st.Steps)
	require.Nil(t, st.Tripped)
	require.Equal(t, &tape.Limits{MaxRepeat: 5, MaxSteps: 100}, st.Limits)

	require.ErrorContains(t, runAgent(t, rg, tape.ProviderAnthropic, false), "max_repeat")
	require.Eventually(t, func() bool { _, st := get(); return st.Finished }, time.Minute, 10*time.Millisecond, "the breaker finishes the tape")
	code, st = get()
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, 6, st.Steps)
	require.True(t, st.Finished)
	require.Equal(t, int64(1), st.Refused)
	require.Equal(t, gateway.LimitRepeat, st.Tripped.Limit)
	require.Len(t, st.Threads, 1)
	require.Equal(t, 5, st.Threads[0].Repeats)
	require.Positive(t, st.Tokens)
	require.Positive(t, *st.CostUSD)

	resp, err := http.Post(rg.gw.URL+"/tapebox/status", "application/json", nil)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode)
}

// TestBreakerWaitsForCallsInFlight: a call let through before the trip (another thread's,
// slow upstream) is still recorded after a later call is refused; the tape ends budget only
// once it is in.
func TestBreakerWaitsForCallsInFlight(t *testing.T) {
	// The slow call is upstream (upstream closed) until the test lets it answer (release):
	// however slow the machine, it is in flight while the trip and the refusal happen.
	upstream, release := make(chan struct{}), make(chan struct{})
	script := fakeprovider.Script{Threads: []fakeprovider.Thread{
		{Name: "slow", Marker: "SLOW-TASK", Turns: []fakeprovider.Turn{{Dynamic: func(*fakeprovider.Request) fakeprovider.Turn {
			close(upstream)
			<-release
			return fakeprovider.Turn{Text: "slow answer"}
		}}}},
		{Name: "fast", Marker: "FAST-TASK", Turns: []fakeprovider.Turn{{Text: "fast answer"}, {Text: "never"}}},
	}}
	rg := newRig(t, script, func(c *gateway.Config) { c.Limits = tape.Limits{MaxSteps: 1} })
	letGo := sync.OnceFunc(func() { close(release) })
	t.Cleanup(letGo) // before the rig's cleanup, which waits for the upstream's handlers
	body := func(task string) []byte {
		return []byte(`{"model":"fake-model","max_tokens":50,"messages":[{"role":"user","content":"` + task + `"}]}`)
	}
	slow := make(chan reply, 1)
	go func() { slow <- rg.do(t, call{body: body("SLOW-TASK")}) }()
	select {
	case <-upstream:
	case <-time.After(time.Minute):
		t.Fatal("the slow call did not reach the upstream within a minute")
	}
	fast := rg.do(t, call{body: body("FAST-TASK")})
	require.Equal(t, http.StatusOK, fast.status)
	require.NotNil(t, rg.g.Tripped(), "one step: --max-steps 1 is reached")
	refused := rg.do(t, call{body: body("FAST-TASK again")})
	require.Equal(t, http.StatusBadRequest, refused.status)
	require.Nil(t, rg.load(t).Meta.Ended, "not finished while the slow call is in flight")
	letGo()
	got := <-slow
	require.Equal(t, http.StatusOK, got.status)
	require.Contains(t, string(got.body), "slow answer")
	require.Eventually(t, func() bool { return rg.load(t).Meta.Ended != nil }, time.Minute, 10*time.Millisecond)
	tp := rg.load(t)
	require.Equal(t, tape.EndBudget, tp.Meta.Ended.Reason)
	var steps int
	for _, th := range tp.Threads {
		steps += len(th.Steps)
	}
	require.Equal(t, 2, steps, "the slow call's answer is in the tape")
}

// TestDigestsOverRedactedTape: credentials are redacted before the step is hashed, so the
// tape on disk, which holds none of them, verifies; and a tape written with NoDigests has
// none.
func TestDigestsOverRedactedTape(t *testing.T) {
	script := fakeprovider.Script{Threads: []fakeprovider.Thread{{Name: "main", Turns: []fakeprovider.Turn{{Text: "hi"}}}}}
	for _, noDigests := range []bool{false, true} {
		rg := newRig(t, script, func(c *gateway.Config) { c.NoDigests = noDigests })
		rep := rg.do(t, call{body: []byte(`{"model":"fake-model","max_tokens":5,"messages":[{"role":"user","content":"hello"}]}`)})
		require.Equal(t, http.StatusOK, rep.status)
		require.NoError(t, rg.g.Finish(tape.EndComplete, ""))
		data, err := os.ReadFile(rg.out)
		require.NoError(t, err)
		require.Contains(t, string(data), `"x-api-key":"[redacted]"`)
		require.NotContains(t, string(data), apiKey)
		v, err := seal.Verify(bytes.NewReader(data), nil)
		require.NoError(t, err)
		if noDigests {
			require.Equal(t, tape.DigestsNone, v.State)
			continue
		}
		require.Equal(t, tape.DigestsOK, v.State, "%s: %s", v.Pointer, v.Problem)
		require.Equal(t, 1, v.Steps)
	}
}

// TestStatusPolicy: /tapebox/status answers a peer beyond loopback only with the end token,
// as /tapebox/end does.
func TestStatusPolicy(t *testing.T) {
	rg := newRig(t, loopScript(1), func(c *gateway.Config) { c.EndToken = "tok-123" })
	for _, c := range []struct {
		remote, auth, query string
		want                int
	}{
		{"127.0.0.1:5000", "", "", http.StatusOK},
		{"[::1]:5000", "", "", http.StatusOK},
		{"10.1.2.3:5000", "", "", http.StatusForbidden},
		{"10.1.2.3:5000", "Bearer wrong", "", http.StatusForbidden},
		{"10.1.2.3:5000", "Bearer tok-123", "", http.StatusOK},
		{"10.1.2.3:5000", "", "?token=tok-123", http.StatusOK},
	} {
		req := httptest.NewRequest(http.MethodGet, "/tapebox/status"+c.query, nil)
		req.RemoteAddr = c.remote
		if c.auth != "" {
			req.Header.Set("Authorization", c.auth)
		}
		rec := httptest.NewRecorder()
		rg.g.ServeHTTP(rec, req)
		require.Equal(t, c.want, rec.Code, "%+v: %s", c, rec.Body)
		if c.want == http.StatusOK {
			require.Contains(t, rec.Body.String(), `"tape":`)
		}
	}
}
