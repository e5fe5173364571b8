package replay_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/compare"
	"github.com/tapebox/tapebox/executor/harness"
	"github.com/tapebox/tapebox/internal/testutil/minirec"
	"github.com/tapebox/tapebox/replay"
	"github.com/tapebox/tapebox/tape"
)

// TestReplayRetriedStep: executor mode replays a tape whose harness retried an answered
// call (tape.Thread.Superseded) to an identical end, and runs no call of the superseded
// answer, which the harness never ran: no ghost.txt. The replay tape keeps the superseded
// step as recorded, its call without a result. Planted: a replay that ran the ghost call
// differs.
func TestReplayRetriedStep(t *testing.T) {
	for _, p := range []tape.Provider{tape.ProviderAnthropic, tape.ProviderOpenAIChat, tape.ProviderOpenAIResponses} {
		for _, stream := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/stream=%v", p, stream), func(t *testing.T) {
				rec, path, _ := minirec.RecordRetried(t, p, stream)
				dir := t.TempDir()
				defer os.RemoveAll(harness.DefaultStateDir(dir))
				res, err := replay.Run(t.Context(), rec, "local:"+dir, replay.Options{TapePath: path, Compare: true, Logf: t.Logf})
				require.NoError(t, err)
				require.True(t, res.Report.Identical, "%+v", res.Report.Differences)
				assert.Equal(t, 6, res.Report.StepsCompared)
				assert.Equal(t, 4, res.ToolCalls, "the two Bash calls, cat, and the subagent's: not the ghost")
				assert.NoFileExists(t, filepath.Join(dir, "ghost.txt"))
				two, err := os.ReadFile(filepath.Join(dir, "sub", "two.txt"))
				require.NoError(t, err)
				assert.Equal(t, "two\n", string(two))

				main := res.Tape.Threads[0]
				require.Len(t, main.Steps, 5)
				require.True(t, main.Superseded(1))
				require.Len(t, main.Steps[1].ToolCalls, 1)
				assert.Empty(t, main.Steps[1].ToolResults)

				// A replay that ran the superseded step's call differs.
				ran, err := tape.Unmarshal(mustMarshal(t, res.Tape))
				require.NoError(t, err)
				ran.Threads[0].Steps[1].ToolResults = []tape.ToolResult{{ToolCallID: "call_ghost_1", Content: []tape.Block{{Type: tape.BlockText, Text: "(Bash completed with no output)"}}}}
				report := compare.Compare(rec, ran)
				require.False(t, report.Identical)
				require.Len(t, report.Differences, 1)
				assert.Equal(t, compare.Difference{Thread: "main", Step: 1, Field: "tool_result", CallID: "call_ghost_1",
					Recorded: "missing: the harness retried this step and never ran its calls", Replayed: "present"}, report.Differences[0])

				// Setting the superseded step aside does not blind compare to the rest: the
				// retry's step and the one after it are paired with their own.
				again, err := tape.Unmarshal(mustMarshal(t, res.Tape))
				require.NoError(t, err)
				again.Threads[0].Steps[3].ToolResults[0].Content[0].Text = "planted"
				report = compare.Compare(rec, again)
				require.False(t, report.Identical)
				require.Len(t, report.Differences, 1)
				assert.Equal(t, 3, report.Differences[0].Step)
				again.Threads[0].Steps = slices.Delete(again.Threads[0].Steps, 1, 2) // no retry in this run
				again.Threads[0].Steps[2].ToolResults[0].Content[0].Text = main.Steps[3].ToolResults[0].Content[0].Text
				report = compare.Compare(rec, again)
				assert.True(t, report.Identical, "a run that did not retry is the same run: %+v", report.Differences)
			})
		}
	}
}

func mustMarshal(t *testing.T, tp *tape.Tape) []byte {
	t.Helper()
	b, err := tape.Marshal(tp)
	require.NoError(t, err)
	return b
}
