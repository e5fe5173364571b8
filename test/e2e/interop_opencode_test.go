package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/internal/testutil/realharness"
	"github.com/tapebox/tapebox/interop"
	"github.com/tapebox/tapebox/tape"
)

// openCodeSessionID matches an OpenCode session id (the task tool's result names the
// subagent's).
var openCodeSessionID = regexp.MustCompile(`ses_[A-Za-z0-9]+`)

// TestInteropOpenCode records real OpenCode (a task subagent among its calls), exports
// both sessions with the real opencode export (OpenCode keeps them in SQLite), imports the
// exports with tapebox import --from opencode, and checks the tape against the recording:
// the subagent a thread linked to its task call, every step's conversation, answer, calls
// and results the recording's; then replays the imported tape locally to the recording's
// end state.
func TestInteropOpenCode(t *testing.T) {
	r := newRig(t)
	c := openCodeCase()
	c.name = c.harness
	needHarness(t, c.harness)
	home := t.TempDir()
	recPath, state := recordRealHome(t, r, c, home)
	rec, err := tape.LoadFile(recPath)
	require.NoError(t, err)
	agent := agentThread(t, rec)
	var sub *tape.Thread
	for _, th := range rec.Threads {
		if th.Parent != nil {
			sub = th
		}
	}
	require.NotNil(t, sub)

	bin, err := realharness.OpenCodePath()
	require.NoError(t, err)
	env := cleanEnv(append([]string{"HOME=" + home}, realharness.OpenCodeEnv...)...)
	list := startProc(t, t.TempDir(), env, bin, "session", "list", "--format", "json")
	require.Equal(t, 0, list.wait(t, time.Minute), list.stderr())
	var sessions []struct {
		ID        string `json:"id"`
		Directory string `json:"directory"`
	}
	require.NoError(t, json.Unmarshal([]byte(list.stdout()), &sessions), list.stdout())
	require.Len(t, sessions, 1, "opencode lists the agent's session (its subagent's is a child)")
	assert.Equal(t, c.cwd, sessions[0].Directory)
	child := openCodeSessionID.FindString(agent.Steps[3].ToolResults[0].Text())
	require.NotEmpty(t, child, "the task result names the subagent's session")
	exports := t.TempDir()
	for i, id := range []string{sessions[0].ID, child} {
		p := startProc(t, t.TempDir(), env, bin, "export", id)
		require.Equal(t, 0, p.wait(t, time.Minute), p.stderr())
		require.NoError(t, os.WriteFile(filepath.Join(exports, []string{"session.json", "subagent.json"}[i]), []byte(p.stdout()), 0o644))
	}

	imported := t.TempDir()
	code, out, errOut := r.run(t, t.TempDir(), cleanEnv(), "import", "--from", "opencode", "--out", imported, exports)
	require.Equal(t, 0, code, "tapebox import --from opencode\n%s%s", out, errOut)
	tapes, err := filepath.Glob(filepath.Join(imported, "*.json"))
	require.NoError(t, err)
	require.Len(t, tapes, 1, "one tape: the subagent's session is its thread")
	code, vout, verr := r.run(t, t.TempDir(), cleanEnv(), "validate", tapes[0])
	require.Equal(t, 0, code, "%s%s", vout, verr)
	imp, err := tape.LoadFile(tapes[0])
	require.NoError(t, err)
	assert.Equal(t, "opencode", imp.Meta.Labels[interop.LabelImportedFrom])
	assert.Equal(t, map[string]string{"session_id": sessions[0].ID}, imp.Meta.Task)
	assert.Equal(t, c.cwd, imp.Meta.Cwd)
	assert.Equal(t, c.version, imp.Meta.HarnessVersion)
	require.Len(t, imp.Threads, 2)
	require.NotNil(t, imp.Threads[1].Parent)
	assert.Equal(t, sub.Parent.ToolCallID, imp.Threads[1].Parent.ToolCallID, "the subagent's thread hangs off the recorded task call")
	for k, pair := range [][2]*tape.Thread{{agent, imp.Threads[0]}, {sub, imp.Threads[1]}} {
		want, got := pair[0], pair[1]
		require.Len(t, got.Steps, len(want.Steps), "thread %d", k)
		for i, ws := range want.Steps {
			gs := got.Steps[i]
			assert.Equal(t, ws.Request.Messages, gs.Request.Messages, "thread %d step %d: the conversation OpenCode sent", k, i)
			assert.Equal(t, ws.Response.Content, gs.Response.Content, "thread %d step %d: the answer", k, i)
			assert.Equal(t, ws.ToolCalls, gs.ToolCalls, "thread %d step %d: the calls", k, i)
			assert.Equal(t, ws.ToolResults, gs.ToolResults, "thread %d step %d: the results", k, i)
			assert.Equal(t, ws.Response.Usage, gs.Response.Usage, "thread %d step %d: the usage", k, i)
			assert.Equal(t, ws.Response.StopReason, gs.Response.StopReason, "thread %d step %d: the stop reason", k, i)
		}
	}

	c.fresh(t)
	repPath := filepath.Join(t.TempDir(), "replay.json")
	code, _, errOut = r.run(t, t.TempDir(), cleanEnv(), "replay", "--tape", tapes[0], "--sandbox", "local:"+c.cwd, "--output", repPath, "--speed", "0")
	require.Equal(t, 0, code, "tapebox replay of the imported tape\n%s", errOut)
	checkSameState(t, state, localState(t, c.cwd), "replay of the imported tape")
}
