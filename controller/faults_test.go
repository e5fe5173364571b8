package controller_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/compare"
	"github.com/tapebox/tapebox/controller"
	"github.com/tapebox/tapebox/executor/harness"
	"github.com/tapebox/tapebox/sandbox"
	"github.com/tapebox/tapebox/tape"
)

// bashTape is a claude-code tape whose main thread runs one Bash command per step, with the
// given recorded outputs.
func bashTape(cmds, outputs []string) *tape.Tape {
	tp := tape.New(tape.ProviderAnthropic, time.Unix(0, 0))
	tp.Meta.Harness = "claude-code"
	th := &tape.Thread{ID: "main"}
	for i, c := range cmds {
		id := fmt.Sprintf("toolu_%02d", i)
		in, _ := json.Marshal(map[string]string{"command": c})
		th.Steps = append(th.Steps, &tape.Step{
			Response:    tape.Response{Status: 200, StopReason: "tool_use"},
			ToolCalls:   []tape.ToolCall{{ID: id, Name: "Bash", Input: in}},
			ToolResults: []tape.ToolResult{{ToolCallID: id, Content: []tape.Block{{Type: tape.BlockText, Text: outputs[i]}}}},
		})
	}
	th.Steps = append(th.Steps, &tape.Step{Response: tape.Response{Status: 200, StopReason: "end_turn",
		Content: []tape.Block{{Type: tape.BlockText, Text: "done"}}}})
	tp.Threads = []*tape.Thread{th}
	return tp
}

// requireRestartedIdentical: the replay restarted the executor once, and the tape it wrote
// to out compares identical with rec.
func requireRestartedIdentical(t *testing.T, rec *tape.Tape, res *controller.Result, out string) {
	t.Helper()
	require.Equal(t, 1, res.Restarts)
	rep, err := tape.LoadFile(out)
	require.NoError(t, err)
	r := compare.Compare(rec, rep)
	require.True(t, r.Identical, "%+v", r.Differences)
}

func localSandbox(t *testing.T) *sandbox.Sandbox {
	t.Helper()
	sb, err := sandbox.Open(t.Context(), "local:"+t.TempDir(), sandbox.Options{})
	require.NoError(t, err)
	// The executor's state is outside the working directory; it goes after the sandbox.
	t.Cleanup(func() { os.RemoveAll(harness.DefaultStateDir(sb.Cwd())) })
	t.Cleanup(func() { sb.Close(t.Context()) })
	return sb
}

// TestReplayRestartsDeadExecutor kills the executor from inside a tool call: the controller
// restarts the session, runs the call again, and a background task started before the death
// is still answered for.
func TestReplayRestartsDeadExecutor(t *testing.T) {
	rec := bashTape(
		[]string{
			"echo started > bg.txt",
			// Kill the topmost tapebox-exec ancestor: the serving executor (a foreground
			// command may run under a wrapper process of the executor's own).
			`if [ ! -f .killed ]; then touch .killed; p=$PPID; top=; while [ "$p" -gt 1 ]; do case "$(cat /proc/$p/comm)" in tapebox-exec*) top=$p;; esac; p=$(cut -d' ' -f4 /proc/$p/stat); done; kill -9 $top; fi; echo alive`,
			"cat bg.txt",
		},
		[]string{"(Bash completed with no output)", "alive", "started"},
	)
	sb := localSandbox(t)
	out := filepath.Join(t.TempDir(), "replay.json")
	res, err := controller.Replay(t.Context(), rec, sb, controller.Options{Cwd: sb.Cwd(), Output: out, Logf: t.Logf})
	require.NoError(t, err)
	requireRestartedIdentical(t, rec, res, out)
	// The command the executor died in left its task behind, but not in the workspace.
	entries, err := os.ReadDir(sb.Cwd())
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	require.Equal(t, []string{".killed", "bg.txt"}, names)
}

// TestReplayCallTimeout: a call that hangs gets an error result after the per-call timeout
// and the replay goes on. The timeout applies to every call, so it leaves "echo next" room
// on a loaded machine (300 ms did not, in make test beside other packages).
func TestReplayCallTimeout(t *testing.T) {
	rec := bashTape([]string{"sleep 30", "echo next"}, []string{"(Bash completed with no output)", "next"})
	sb := localSandbox(t)
	out := filepath.Join(t.TempDir(), "replay.json")
	_, err := controller.Replay(t.Context(), rec, sb, controller.Options{Cwd: sb.Cwd(), Output: out, CallTimeout: 2 * time.Second})
	require.NoError(t, err)
	rep, err := tape.LoadFile(out)
	require.NoError(t, err)
	first := rep.Main().Steps[0].ToolResults[0]
	require.True(t, first.IsError)
	require.Contains(t, first.Text(), "timed out after 2s")
	require.Equal(t, "next", rep.Main().Steps[1].ToolResults[0].Text())
	r := compare.Compare(rec, rep)
	require.False(t, r.Identical)
	require.True(t, r.ReachedEnd)
}

// TestReplayUnknownHarness: the executor refuses the hello; the error says so and the replay
// tape written so far is valid and says it ended in error.
func TestReplayUnknownHarness(t *testing.T) {
	rec := bashTape([]string{"true"}, []string{"(Bash completed with no output)"})
	rec.Meta.Harness = "no-such-harness"
	sb := localSandbox(t)
	out := filepath.Join(t.TempDir(), "replay.json")
	_, err := controller.Replay(t.Context(), rec, sb, controller.Options{Cwd: sb.Cwd(), Output: out})
	require.Error(t, err)
	require.Contains(t, err.Error(), "no-such-harness")
	rep, err := tape.LoadFile(out)
	require.NoError(t, err)
	require.Equal(t, tape.EndError, rep.Meta.Ended.Reason)
}

// TestReplayExecutorGone: a sandbox whose executor cannot start fails with the reason.
func TestReplayExecutorGone(t *testing.T) {
	rec := bashTape([]string{"true"}, []string{"(Bash completed with no output)"})
	missing := filepath.Join(t.TempDir(), "tapebox-exec-missing")
	require.NoFileExists(t, missing)
	sb, err := sandbox.Open(t.Context(), "local:"+t.TempDir(), sandbox.Options{ExecutorPath: missing})
	if err == nil {
		defer sb.Close(t.Context())
		_, err = controller.Replay(t.Context(), rec, sb, controller.Options{Cwd: sb.Cwd()})
	}
	require.Error(t, err)
	require.Contains(t, err.Error(), "tapebox-exec-missing")
	_ = os.Remove(missing)
}
