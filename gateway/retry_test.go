package gateway_test

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/compare"
	"github.com/tapebox/tapebox/gateway"
	"github.com/tapebox/tapebox/internal/testutil/minirec"
	"github.com/tapebox/tapebox/tape"
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
