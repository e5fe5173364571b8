package gateway_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/compare"
	"github.com/tapebox/tapebox/gateway"
	"github.com/tapebox/tapebox/internal/testutil/minirec"
	"github.com/tapebox/tapebox/tape"
	"github.com/tapebox/tapebox/testkit/fakeprovider"
	"github.com/tapebox/tapebox/testkit/miniagent"
)

var everyWire = []tape.Provider{tape.ProviderAnthropic, tape.ProviderOpenAIChat, tape.ProviderOpenAIResponses}

// TestRetryOfAnsweredStep: a harness whose SDK sends a call again after the gateway
// answered it (the answer lost on the way: a client-side timeout, a dropped connection)
// retries that step of its thread. The gateway records the retry as the thread's next
// step, not as a new thread without a parent (Pi 0.67.1, issue 29), and the thread goes
// on from the retry's answer: the first answer is superseded, its tool call has no
// result, and the subagent the retry's answer spawned is the main thread's child.
func TestRetryOfAnsweredStep(t *testing.T) {
	for _, p := range everyWire {
		for _, stream := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/stream=%v", p, stream), func(t *testing.T) {
				rec, _, retried := minirec.RecordRetried(t, p, stream)
				require.Equal(t, 1, retried)
				require.Len(t, rec.Threads, 2, "main and the subagent; no thread for the retry")
				main, sub := rec.Threads[0], rec.Threads[1]
				require.Equal(t, "main", main.ID)
				require.Len(t, main.Steps, 5, "four turns, the second one twice")
				var superseded []int
				for i := range main.Steps {
					if main.Superseded(i) {
						superseded = append(superseded, i)
					}
				}
				assert.Equal(t, []int{1}, superseded)
				assert.Equal(t, []int{0, 2, 3, 4}, main.Kept())

				first, retry := main.Steps[1], main.Steps[2]
				assert.Equal(t, first.Request.Messages, retry.Request.Messages, "the same call, sent again")
				require.Len(t, first.ToolCalls, 1)
				assert.Equal(t, "call_ghost_1", first.ToolCalls[0].ID)
				assert.Contains(t, string(first.ToolCalls[0].Input), minirec.Ghost)
				assert.Empty(t, first.ToolResults, "the harness never ran the call it retried")
				assert.NotNil(t, first.Timing.NextRequestAt, "the retry is the thread's next request")
				require.Len(t, retry.ToolCalls, 1)
				assert.Equal(t, "Agent", retry.ToolCalls[0].Name)
				assert.Len(t, retry.ToolResults, 1, "the thread went on from the retry's answer")
				require.Len(t, main.Steps[0].ToolResults, 2, "the retry took nothing from the step before it")

				require.NotNil(t, sub.Parent)
				assert.Equal(t, tape.Parent{ThreadID: "main", ToolCallID: retry.ToolCalls[0].ID}, *sub.Parent)
				assert.Same(t, main, rec.Main())
			})
		}
	}
}

// TestSimulatorServesRetriedTape: simulator mode serves a tape with a retried step as the
// run went: the retry's answer (the one the harness went on from), never the superseded
// one, so the harness spawns the subagent, not the ghost call; a harness that retries that
// call again during the replay gets the same answer again. Both replays compare identical.
func TestSimulatorServesRetriedTape(t *testing.T) {
	for _, p := range everyWire {
		for _, stream := range []bool{true, false} {
			rec, _, _ := minirec.RecordRetried(t, p, stream)
			for _, again := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s/stream=%v/retry=%v", p, stream, again), func(t *testing.T) {
					sim, srv, out := serveSimulator(t, rec, gateway.SimulatorOptions{Logf: t.Logf})
					client := http.DefaultClient
					rt := &minirec.RetryTransport{Trigger: "made one"}
					if again {
						client = &http.Client{Transport: rt}
					}
					dir := t.TempDir()
					final, err := miniagent.Run(t.Context(), miniagent.Config{BaseURL: srv.URL, Provider: p, Stream: stream, Prompt: "do it", Dir: dir, APIKey: "sk-x", Client: client})
					require.NoError(t, err)
					require.Equal(t, "All done.", final)
					<-sim.Finished()
					if again {
						require.Equal(t, 1, rt.Retried)
					}
					assert.NoFileExists(t, filepath.Join(dir, "ghost.txt"))
					two, err := os.ReadFile(filepath.Join(dir, "sub", "two.txt"))
					require.NoError(t, err)
					assert.Equal(t, "two\n", string(two))

					rep, err := tape.LoadFile(out)
					require.NoError(t, err)
					require.Equal(t, tape.EndComplete, rep.Meta.Ended.Reason)
					require.Len(t, rep.Threads, 2)
					assert.Len(t, rep.Threads[0].Steps, 4, "one step per turn served")
					report := compare.Compare(rec, rep)
					assert.True(t, report.Identical, "%+v", report.Differences)
					assert.Equal(t, 6, report.StepsCompared, "the superseded step is set aside")
				})
			}
		}
	}
}

// statusRetry re-sends a call answered 429 or 5xx once, as the providers' SDKs do.
type statusRetry struct{ retried atomic.Int32 }

func (s *statusRetry) RoundTrip(req *http.Request) (*http.Response, error) {
	body, err := io.ReadAll(req.Body)
	if err != nil {
		return nil, err
	}
	req.Body = io.NopCloser(bytes.NewReader(body))
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil || resp.StatusCode != http.StatusTooManyRequests && resp.StatusCode < 500 {
		return resp, err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	s.retried.Add(1)
	again := req.Clone(req.Context())
	again.Body = io.NopCloser(bytes.NewReader(body))
	return http.DefaultTransport.RoundTrip(again)
}

// TestSimulatorServesFailedAttempt: a tape recorded before retries of answered steps were
// a rule, the shape it always had: a call answered 429, then its retry, on one thread. The
// simulator serves the answer the thread went on from, not the 429 (it served the 429 to
// every attempt before, so the replay diverged), and executor mode's tape compares alike.
func TestSimulatorServesFailedAttempt(t *testing.T) {
	for _, p := range everyWire {
		t.Run(string(p), func(t *testing.T) {
			script := minirec.Script()
			script.Threads[0].Turns[2].Fault = &fakeprovider.Fault{Status: http.StatusTooManyRequests, RetryAfter: "0"}
			sr := &statusRetry{}
			rec, _ := minirec.RecordWith(t, script, p, true, &http.Client{Transport: sr})
			require.EqualValues(t, 1, sr.retried.Load())
			main := rec.Threads[0]
			require.Len(t, main.Steps, 5)
			require.Equal(t, http.StatusTooManyRequests, main.Steps[2].Response.Status)
			require.True(t, main.Superseded(2))
			require.Equal(t, []int{0, 1, 3, 4}, main.Kept())

			sim, srv, out := serveSimulator(t, rec, gateway.SimulatorOptions{Logf: t.Logf})
			final, err := miniagent.Run(t.Context(), miniagent.Config{BaseURL: srv.URL, Provider: p, Stream: true, Prompt: "do it", Dir: t.TempDir(), APIKey: "sk-x"})
			require.NoError(t, err)
			require.Equal(t, "All done.", final)
			<-sim.Finished()
			rep, err := tape.LoadFile(out)
			require.NoError(t, err)
			report := compare.Compare(rec, rep)
			assert.True(t, report.Identical, "%+v", report.Differences)
		})
	}
}

// TestRetryWhileInFlight: a call sent again while the gateway still waits for the first
// answer (a client-side timeout shorter than the model's) is a second attempt at the same
// turn: both are steps of one thread, and the thread expects the next turn once, not two
// turns on, so the next call continues it.
func TestRetryWhileInFlight(t *testing.T) {
	for _, stream := range []bool{true, false} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			rg := newRig(t, oneTurn(&fakeprovider.Fault{FirstByte: 300 * time.Millisecond}), nil)
			slow := make(chan reply, 1)
			go func() { slow <- rg.do(t, call{body: taskRequest(stream)}) }()
			require.Eventually(t, func() bool { return len(rg.up.requests()) == 1 }, 10*time.Second, 5*time.Millisecond)
			fast := rg.do(t, call{body: taskRequest(stream)})
			require.Equal(t, http.StatusOK, fast.status)
			require.Equal(t, http.StatusOK, (<-slow).status)
			next := anthropicRequest(stream, userText("do the task"), systemEntry("# Environment\nPrimary working directory: /work"),
				map[string]any{"role": "assistant", "content": []map[string]any{{"type": "text", "text": answerText}}},
				userText("and then?"))
			require.Equal(t, http.StatusOK, rg.do(t, call{body: next}).status)
			require.NoError(t, rg.g.Finish(tape.EndComplete, ""))
			tp := rg.load(t)
			require.Len(t, tp.Threads, 1, "the repeated call and the next one continue the thread")
			main := tp.Threads[0]
			require.Len(t, main.Steps, 3)
			assert.True(t, main.Superseded(0))
			assert.Equal(t, []int{1, 2}, main.Kept())
			assert.Equal(t, "Second answer.", tape.BlocksText(main.Steps[2].Response.Content))
		})
	}
}

// TestRetryAnyCall: whichever model call of the mini agent's run its SDK sends twice (the
// main thread's or the subagent's, the first one, the one whose answer spawns the
// subagent, the last one), the tape has the same two threads, exactly that step
// superseded, the subagent's parent the spawning call the thread went on from, and the
// simulator replays it identically. The model answers a retry alike (same call ids), so a
// superseded spawning call must not stay pending for a child to claim.
func TestRetryAnyCall(t *testing.T) {
	for _, p := range everyWire {
		for _, stream := range []bool{true, false} {
			for nth := 1; nth <= 6; nth++ {
				t.Run(fmt.Sprintf("%s/stream=%v/call=%d", p, stream, nth), func(t *testing.T) {
					rt := &minirec.RetryTransport{Nth: nth}
					rec, _ := minirec.RecordWith(t, minirec.Script(), p, stream, &http.Client{Transport: rt})
					require.Equal(t, 1, rt.Retried)
					require.Len(t, rec.Threads, 2)
					total := 0
					for _, th := range rec.Threads {
						for i := range th.Steps {
							if th.Superseded(i) {
								total++
								assert.Empty(t, th.Steps[i].ToolResults, "thread %s step %d", th.ID, i)
							}
						}
					}
					require.Equal(t, 1, total, "one step superseded")
					main, sub := rec.Threads[0], rec.Threads[1]
					assert.Len(t, main.Kept(), 4)
					assert.Len(t, sub.Kept(), 2)
					ref, _, ok := rec.ParentCall(sub)
					require.True(t, ok)
					assert.False(t, main.Superseded(ref.Index), "the child's parent call is in the answer the thread went on from")

					sim, srv, out := serveSimulator(t, rec, gateway.SimulatorOptions{})
					_, err := miniagent.Run(t.Context(), miniagent.Config{BaseURL: srv.URL, Provider: p, Stream: stream, Prompt: "do it", Dir: t.TempDir(), APIKey: "sk-x"})
					require.NoError(t, err)
					<-sim.Finished()
					rep, err := tape.LoadFile(out)
					require.NoError(t, err)
					report := compare.Compare(rec, rep)
					assert.True(t, report.Identical, "%+v", report.Differences)
				})
			}
		}
	}
}

// TestBreakerRetryIsNoRepeat: a retried call the model answers alike does not count as a
// repeat of its tool calls for --max-repeat (the harness runs them once); the same calls
// asked for at the next turn do.
func TestBreakerRetryIsNoRepeat(t *testing.T) {
	script := fakeprovider.Script{Threads: []fakeprovider.Thread{{Name: "main", Turns: []fakeprovider.Turn{
		{Calls: []tape.ToolCall{fakeprovider.Call("Bash", map[string]string{"command": "ls"})}},
		{Text: "Done."},
	}}}}
	rg := newRig(t, script, func(c *gateway.Config) { c.Limits = tape.Limits{MaxRepeat: 1} })
	for range 2 {
		require.Equal(t, http.StatusOK, rg.do(t, call{body: taskRequest(false)}).status)
	}
	st := rg.g.Status()
	require.Nil(t, st.Tripped, "a retry answered alike")
	require.Equal(t, 0, st.Threads[0].Repeats)
	require.Len(t, st.Threads, 1)

	loop := fakeprovider.Script{Threads: []fakeprovider.Thread{{Name: "main", Turns: []fakeprovider.Turn{
		{Calls: []tape.ToolCall{fakeprovider.Call("Bash", map[string]string{"command": "ls"})}},
		{Calls: []tape.ToolCall{fakeprovider.Call("Bash", map[string]string{"command": "ls"})}},
		{Text: "Done."},
	}}}}
	rg = newRig(t, loop, func(c *gateway.Config) { c.Limits = tape.Limits{MaxRepeat: 1} })
	require.Error(t, runAgent(t, rg, tape.ProviderAnthropic, false))
	require.NotNil(t, rg.g.Status().Tripped, "the same call at the next turn is a repeat")
}
