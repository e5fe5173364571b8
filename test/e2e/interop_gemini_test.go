package e2e

import (
	"os"
	"path/filepath"
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

// TestInteropGeminiCLI records real Gemini CLI (its home kept: GEMINI_CLI_HOME, so that its
// own session file stays), then: imports that session file and checks the tape makes the
// recorded calls with the recorded results and replays locally to the recording's end
// state; imports it with --synthesize and serves it to Gemini CLI in simulator mode; and
// exports the recording --to gemini-cli, puts the export in a fresh home and resumes it
// with the real gemini --resume against a fake provider, whose request must carry every
// recorded call and result.
func TestInteropGeminiCLI(t *testing.T) {
	r := newRig(t)
	c := geminiCase()
	c.name = c.harness
	needHarness(t, c.harness)
	home := t.TempDir()
	command := c.command
	c.command = func(t *testing.T, h string) ([]string, []string) {
		argv, env := command(t, h)
		return argv, append(env, "GEMINI_CLI_HOME="+h)
	}
	recPath, state := recordRealHome(t, r, c, home)
	rec, err := tape.LoadFile(recPath)
	require.NoError(t, err)
	harnessDir := filepath.Join(home, ".gemini", "tmp")
	chats, err := filepath.Glob(filepath.Join(harnessDir, "*", "chats", "session-*.jsonl"))
	require.NoError(t, err)
	require.Len(t, chats, 1, "Gemini CLI wrote its session file")

	t.Run("import-replay", func(t *testing.T) {
		imported := t.TempDir()
		code, out, errOut := r.run(t, t.TempDir(), cleanEnv(), "import", "--out", imported, harnessDir)
		require.Equal(t, 0, code, "tapebox import (auto)\n%s%s", out, errOut)
		tapes, err := filepath.Glob(filepath.Join(imported, "*.json"))
		require.NoError(t, err)
		require.Len(t, tapes, 1, "one session, one tape")
		code, vout, verr := r.run(t, t.TempDir(), cleanEnv(), "validate", tapes[0])
		require.Equal(t, 0, code, "%s%s", vout, verr)
		imp, err := tape.LoadFile(tapes[0])
		require.NoError(t, err)
		assert.Equal(t, "gemini-cli", imp.Meta.Labels[interop.LabelImportedFrom])
		assert.Equal(t, c.cwd, imp.Meta.Cwd)
		require.Equal(t, callsOf(rec), callsOf(imp), "the imported tape makes the recorded tool calls")
		for i, st := range rec.Main().Steps {
			is := imp.Main().Steps[i]
			for j, call := range st.ToolCalls {
				assert.JSONEq(t, string(call.Input), string(is.ToolCalls[j].Input), "step %d call %d input", i, j)
				want, _ := st.ToolResult(call.ID)
				got, ok := is.ToolResult(is.ToolCalls[j].ID)
				require.True(t, ok, "step %d: the imported tape has the result of %s", i, call.Name)
				assert.Equal(t, want.Text(), got.Text(), "step %d: result of %s", i, call.Name)
				assert.Equal(t, want.IsError, got.IsError, "step %d: is_error of %s", i, call.Name)
			}
			assert.Equal(t, st.Response.Usage, is.Response.Usage, "step %d usage", i)
		}
		c.fresh(t)
		repPath := filepath.Join(t.TempDir(), "replay.json")
		code, _, errOut = r.run(t, t.TempDir(), cleanEnv(), "replay", "--tape", tapes[0], "--sandbox", "local:"+c.cwd, "--output", repPath, "--speed", "0")
		require.Equal(t, 0, code, "tapebox replay of the imported tape\n%s", errOut)
		checkSameState(t, state, localState(t, c.cwd), "replay of the imported tape")
	})
	t.Run("import-simulator", func(t *testing.T) { importSimulator(t, r, c, "gemini-cli", harnessDir, state) })
	t.Run("export-resume", func(t *testing.T) {
		export := t.TempDir()
		code, out, errOut := r.run(t, t.TempDir(), cleanEnv(), "export", "--to", "gemini-cli", "--out", export, recPath)
		require.Equal(t, 0, code, "tapebox export --to gemini-cli\n%s%s", out, errOut)
		// The export reads back as the recording: the same calls and results.
		back, err := interop.Import(interop.GeminiCLI, export)
		require.NoError(t, err)
		require.Equal(t, callsOf(rec), callsOf(back[0]))
		resumeGemini(t, c, rec, export)
	})
}

// resumeGemini puts a Gemini CLI export under a fresh home's .gemini/tmp and runs
// gemini --resume on it with a new prompt against a fake provider: the request it sends
// must carry the recorded main thread, every call (by the tape's id) and every result.
func resumeGemini(t *testing.T, c realCase, rec *tape.Tape, export string) {
	t.Helper()
	const next = "[rh-resume] and now, one more thing"
	srv := fakeprovider.New(fakeprovider.Script{Threads: []fakeprovider.Thread{{Name: "main", Turns: []fakeprovider.Turn{
		{Text: "resumed fine"}, {Text: "resumed fine"}, {Text: "resumed fine"}}}}})
	require.NoError(t, srv.Start())
	t.Cleanup(func() { srv.Close() })
	home := t.TempDir()
	gem := filepath.Join(home, ".gemini")
	require.NoError(t, os.MkdirAll(gem, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(gem, "settings.json"), []byte(realharness.GeminiSettingsJSON), 0o644))
	copyTree(t, export, filepath.Join(gem, "tmp"))
	bin, err := realharness.GeminiPath()
	require.NoError(t, err)
	c.fresh(t)
	h := startProc(t, c.cwd, cleanEnv("HOME="+home, "GEMINI_CLI_HOME="+home, "GEMINI_API_KEY=sk-test", "GEMINI_CLI_TRUST_WORKSPACE=true",
		"GEMINI_CLI_NO_RELAUNCH=true", "GOOGLE_GEMINI_BASE_URL="+srv.URL()),
		bin, "--yolo", "--output-format", "json", "-m", "gemini-2.5-pro", "--resume", interop.GeminiSessionID(rec), "-p", next)
	code := h.wait(t, 3*time.Minute)
	var resumed *fakeprovider.Request
	for _, q := range srv.Requests() {
		if q.Endpoint == fakeprovider.EndpointGemini && strings.Contains(string(q.Body), "[rh-resume]") {
			resumed = &q
			break
		}
	}
	if code != 0 || resumed == nil {
		dumpRequests(t, srv)
		t.Fatalf("gemini --resume from the export: exit %d, a request with the new prompt: %v\n%s", code, resumed != nil, tail(h.stdout()+h.stderr(), 3000))
	}
	sent := sentResults(t, tape.ProviderGemini, resumed.Body)
	body := string(resumed.Body)
	n := 0
	for _, st := range rec.Main().Steps {
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
	require.Contains(t, body, "[rh-gemini] Keep notes, fail once, and count the lines.", "the resumed request carries the original prompt")
	t.Logf("gemini resumed from the export: its request carried the %d recorded tool calls and their results, then %q", n, next)
}
