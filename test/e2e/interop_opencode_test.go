package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/internal/testutil/realharness"
	"github.com/tapebox/tapebox/interop"
	"github.com/tapebox/tapebox/tape"
	"github.com/tapebox/tapebox/testkit/fakeprovider"
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
	// --from auto (the default) tells the exports, beside a file that is not one.
	require.NoError(t, os.WriteFile(filepath.Join(exports, "notes.json"), []byte(`{"info":{"id":"chat_1"},"messages":[{"role":"user","content":"hi"}]}`), 0o644))
	auto := t.TempDir()
	code, out, errOut = r.run(t, t.TempDir(), cleanEnv(), "import", "--out", auto, exports)
	require.Equal(t, 0, code, "tapebox import (auto)\n%s%s", out, errOut)
	autoTapes, err := filepath.Glob(filepath.Join(auto, "*.json"))
	require.NoError(t, err)
	require.Equal(t, []string{filepath.Base(tapes[0])}, []string{filepath.Base(autoTapes[0])}, "auto imports the one tape --from opencode does")
	require.Len(t, autoTapes, 1)
	a, err := os.ReadFile(autoTapes[0])
	require.NoError(t, err)
	b, err := os.ReadFile(tapes[0])
	require.NoError(t, err)
	require.Equal(t, string(b), string(a), "auto's tape is --from opencode's")
	code, out, errOut = r.run(t, t.TempDir(), cleanEnv(), "import", "--out", t.TempDir(), filepath.Join(exports, "notes.json"))
	require.Equal(t, 1, code, "a file that is no export, named\n%s%s", out, errOut)
	require.Contains(t, errOut, filepath.Join(exports, "notes.json")+":1: not a session file of a format auto knows (tried Claude Code, Codex, Gemini CLI, Pi and STS by the first line, OpenCode by the whole file)")

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

	t.Run("export-resume", func(t *testing.T) { resumeOpenCode(t, r, c, rec, recPath, agent) })
}

// resumeOpenCode exports the recording --to opencode, loads the files into a fresh home's
// database with the real opencode import (in the recording's directory), and continues
// the agent's session with opencode run --session against a fake provider: the request it
// sends must carry every recorded call of the agent's thread and every result.
func resumeOpenCode(t *testing.T, r *rig, c realCase, rec *tape.Tape, recPath string, agent *tape.Thread) {
	export := t.TempDir()
	code, out, errOut := r.run(t, t.TempDir(), cleanEnv(), "export", "--to", "opencode", "--out", export, recPath)
	require.Equal(t, 0, code, "tapebox export --to opencode\n%s%s", out, errOut)
	files, err := filepath.Glob(filepath.Join(export, "*.json"))
	require.NoError(t, err)
	require.Len(t, files, 2, "the agent's session and its subagent's")
	srv := fakeprovider.New(fakeprovider.Script{Threads: []fakeprovider.Thread{{Name: "main", Turns: []fakeprovider.Turn{
		{Text: "resumed fine"}, {Text: "resumed fine"}, {Text: "resumed fine"}}}}})
	require.NoError(t, srv.Start())
	t.Cleanup(func() { srv.Close() })
	bin, err := realharness.OpenCodePath()
	require.NoError(t, err)
	home := t.TempDir()
	env := cleanEnv(append([]string{"HOME=" + home, "ANTHROPIC_API_KEY=sk-test", c.baseURL(srv.URL())}, realharness.OpenCodeEnv...)...)
	c.fresh(t)
	for _, f := range files {
		p := startProc(t, c.cwd, env, bin, "import", f)
		require.Equal(t, 0, p.wait(t, 2*time.Minute), p.stdout()+p.stderr())
		require.Contains(t, p.stdout(), "Imported session: ")
	}
	session := interop.OpenCodeSessionID(rec, agent)
	h := startProc(t, c.cwd, env, bin, "run", "--session", session, "--model", "anthropic/claude-sonnet-4-5", "[rh-resume] and now, one more thing")
	code = h.wait(t, 3*time.Minute)
	var resumed *fakeprovider.Request
	for _, q := range srv.Requests() {
		if q.Endpoint == fakeprovider.EndpointMessages && strings.Contains(string(q.Body), "[rh-resume]") {
			resumed = &q
			break
		}
	}
	if code != 0 || resumed == nil {
		dumpRequests(t, srv)
		t.Fatalf("opencode run --session %s from the export: exit %d, a request with the new prompt: %v\n%s", session, code, resumed != nil, tail(h.stdout()+h.stderr(), 3000))
	}
	sent := sentResults(t, tape.ProviderAnthropic, resumed.Body)
	body := string(resumed.Body)
	n := 0
	for _, st := range agent.Steps {
		for _, call := range st.ToolCalls {
			require.Contains(t, body, `"`+call.ID+`"`, "the resumed request lacks the recorded call %s %s", call.Name, call.ID)
			n++
		}
		for _, res := range st.ToolResults {
			got, ok := sent[res.ToolCallID]
			require.True(t, ok, "the resumed request lacks the result of %s", res.ToolCallID)
			require.Equal(t, res.Text(), got.Result.Text(), "result of %s in the resumed request", res.ToolCallID)
		}
	}
	t.Logf("opencode resumed from the export: its request carried the %d recorded tool calls of the agent and their results", n)
}
