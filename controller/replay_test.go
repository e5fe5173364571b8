package controller_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/compare"
	"github.com/tapebox/tapebox/controller"
	"github.com/tapebox/tapebox/executor/harness"
	"github.com/tapebox/tapebox/internal/testutil/minirec"
	"github.com/tapebox/tapebox/sandbox"
	"github.com/tapebox/tapebox/tape"
)

// TestReplayLocalRoundTrip records a run of the mini harness (parallel calls, a subagent, a
// failing command) and replays it in executor mode on the local sandbox.
func TestReplayLocalRoundTrip(t *testing.T) {
	for _, p := range []tape.Provider{tape.ProviderAnthropic, tape.ProviderOpenAIResponses} {
		t.Run(string(p), func(t *testing.T) {
			rec, _ := minirec.Record(t, p, true)
			dir := t.TempDir()
			sb, err := sandbox.Open(t.Context(), "local:"+dir, sandbox.Options{})
			require.NoError(t, err)
			defer os.RemoveAll(harness.DefaultStateDir(sb.Cwd()))
			defer sb.Close(t.Context())
			out := filepath.Join(t.TempDir(), "replay.json")
			res, err := controller.Replay(t.Context(), rec, sb, controller.Options{Cwd: sb.Cwd(), Speed: 0, Output: out, Logf: t.Logf})
			require.NoError(t, err)
			require.Equal(t, 6, res.Steps)
			require.Equal(t, 4, res.ToolCalls, "the Agent call is played by the controller, not the executor")
			rep, err := tape.LoadFile(out)
			require.NoError(t, err)
			require.Equal(t, tape.EndComplete, rep.Meta.Ended.Reason)
			require.Equal(t, rec.Meta.TapeID, *rep.Meta.ReplayOf)
			require.Equal(t, sb.Cwd(), rep.Meta.Cwd, "the replay tape says where the replay ran")
			report := compare.Compare(rec, rep)
			require.True(t, report.Identical, "%+v", report.Differences)
			two, err := os.ReadFile(filepath.Join(dir, "sub", "two.txt"))
			require.NoError(t, err)
			require.Equal(t, "two\n", string(two))
			require.NoDirExists(t, filepath.Join(dir, ".tapebox"), "the executor's state is not in the workspace")
		})
	}
}

// TestCompareFindsDifferences checks that compare reports a changed result and a missing step.
func TestCompareFindsDifferences(t *testing.T) {
	rec, _ := minirec.Record(t, tape.ProviderAnthropic, false)
	again, err := tape.Unmarshal(mustMarshal(t, rec))
	require.NoError(t, err)
	again.Meta.Ended = &tape.Ended{Reason: tape.EndComplete, At: rec.Meta.StartedAt}
	require.True(t, compare.Compare(rec, again).Identical)

	again.Threads[0].Steps[0].ToolResults[0].Content[0].Text = "something else"
	again.Threads[1].Steps = again.Threads[1].Steps[:1]
	r := compare.Compare(rec, again)
	require.False(t, r.Identical)
	require.False(t, r.ReachedEnd)
	fields := map[string]bool{}
	for _, d := range r.Differences {
		fields[d.Field] = true
	}
	require.True(t, fields["tool_result"], "%+v", r.Differences)
	require.True(t, fields["step"], "%+v", r.Differences)
}

func mustMarshal(t *testing.T, tp *tape.Tape) []byte {
	t.Helper()
	b, err := tape.Marshal(tp)
	require.NoError(t, err)
	return b
}

// TestReplayHarnessPace: with HarnessPace a replay waits between turns as long as the
// harness did and goes on after the last response as long as the recording did; without
// it, at the same speed, it waits for neither.
func TestReplayHarnessPace(t *testing.T) {
	rec, _ := minirec.Record(t, tape.ProviderAnthropic, false)
	main := rec.Main()
	require.GreaterOrEqual(t, len(main.Steps), 2)
	// The harness took 300 ms between every two turns, and the recording ended 400 ms
	// after its last response (the model's latency itself stays what was recorded: small).
	const gap, tail = 300.0, 400.0
	shift := 0.0
	for i, st := range main.Steps {
		st.Timing.RequestAt += shift
		st.Timing.FirstByteAt += shift
		st.Timing.LastByteAt += shift
		if i+1 < len(main.Steps) {
			shift += gap
		}
	}
	last := main.Steps[len(main.Steps)-1].Timing.LastByteAt
	rec.Meta.Ended.At = rec.Meta.StartedAt.Add(msDuration(last + tail))
	want := msDuration(gap*float64(len(main.Steps)-1) + tail)
	for _, pace := range []bool{true, false} {
		dir := t.TempDir()
		sb, err := sandbox.Open(t.Context(), "local:"+dir, sandbox.Options{})
		require.NoError(t, err)
		res, err := controller.Replay(t.Context(), rec, sb, controller.Options{Cwd: sb.Cwd(), Speed: 1, HarnessPace: pace, Logf: t.Logf})
		require.NoError(t, err)
		_ = sb.Close(t.Context())
		_ = os.RemoveAll(harness.DefaultStateDir(sb.Cwd()))
		if pace {
			require.GreaterOrEqual(t, res.Wall, want, "paced: the harness's %v between turns and after the last", want)
		} else {
			require.Less(t, res.Wall, want, "not paced: the model's latency alone")
		}
	}
}

func msDuration(ms float64) time.Duration { return time.Duration(ms * float64(time.Millisecond)) }
