package cli

import (
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/internal/testutil/realharness"
	"github.com/tapebox/tapebox/tape"
	"github.com/tapebox/tapebox/testkit"
	"github.com/tapebox/tapebox/testkit/fakeprovider"
)

// The real Gemini CLI (harnesses/node_modules), recorded with tapebox record -- gemini -p ...
// against the scripted provider, with no settings of its own: record points
// GOOGLE_GEMINI_BASE_URL at the gateway and gives the CLI a temporary home whose settings
// select the API key, leaving the user's ~/.gemini as it was. The planted API key reaches
// the provider and neither the tape nor record's output.
func TestRecordRealGemini(t *testing.T) {
	realharness.Need(t, realharness.Gemini)
	gemini, err := realharness.GeminiPath()
	require.NoError(t, err)
	fp := testkit.NewProvider(t, fakeprovider.Script{Threads: []fakeprovider.Thread{{Name: "main", Turns: []fakeprovider.Turn{
		{Calls: []tape.ToolCall{{Name: "run_shell_command", Input: json.RawMessage(`{"command":"echo hi > out.txt"}`)}}},
		{Text: "Wrote out.txt: done."},
	}}}})
	home := t.TempDir()
	userSettings := filepath.Join(home, ".gemini", "settings.json")
	require.NoError(t, os.MkdirAll(filepath.Dir(userSettings), 0o755))
	const mine = `{"ui":{"theme":"mine"},"privacy":{"usageStatisticsEnabled":false}}`
	require.NoError(t, os.WriteFile(userSettings, []byte(mine), 0o644))
	t.Setenv("HOME", home)
	t.Setenv("GEMINI_CLI_HOME", "")
	const key = "AIzaSyTESTRECORDGEMINI-22222222222"
	t.Setenv("GEMINI_API_KEY", key)
	t.Setenv("GEMINI_CLI_TRUST_WORKSPACE", "true")
	t.Setenv("GEMINI_CLI_NO_RELAUNCH", "true")
	work := t.TempDir()
	t.Chdir(work)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())

	before, _ := filepath.Glob(filepath.Join(os.TempDir(), "tapebox-gemini-home-*"))
	out := filepath.Join(t.TempDir(), "gemini.json")
	var stdout, stderr syncBuffer
	code := RunEnv(t.Context(), []string{"record", "--output", out, "--upstream", fp.URL(), "--listen", addr, "--no-workspace",
		"--", gemini, "--yolo", "-o", "json", "-m", "gemini-2.5-pro", "-p", "write hi to out.txt"}, &Env{Stdin: strings.NewReader(""), Stdout: &stdout, Stderr: &stderr, Getenv: os.Getenv})
	require.Equal(t, 0, code, "stderr:\n%s", stderr.String())
	b, err := os.ReadFile(filepath.Join(work, "out.txt"))
	require.NoError(t, err)
	assert.Equal(t, "hi\n", string(b))
	data, err := os.ReadFile(out)
	require.NoError(t, err)
	assert.NotContains(t, string(data), key)
	assert.NotContains(t, stderr.String()+stdout.String(), key)
	tp, err := tape.Unmarshal(data)
	require.NoError(t, err)
	assert.Equal(t, "gemini-cli", tp.Meta.Harness)
	assert.Equal(t, "0.61.0", tp.Meta.HarnessVersion)
	assert.Equal(t, tape.ProviderGemini, tp.Meta.Provider)
	assert.Equal(t, "gemini-2.5-pro", tp.Meta.Model)
	assert.Equal(t, tape.EndComplete, tp.Meta.Ended.Reason)
	steps := tp.Main().Steps
	require.Len(t, steps, 2)
	assert.Equal(t, "/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse", steps[0].Request.Path)
	assert.Equal(t, tape.Redacted, steps[0].Request.Headers["x-goog-api-key"])
	require.Len(t, steps[0].ToolResults, 1)
	assert.Contains(t, steps[0].ToolResults[0].Text(), "Output: (empty)")
	for _, r := range fp.Requests() {
		assert.Equal(t, key, r.Header.Get("X-Goog-Api-Key"), "the provider gets the key")
	}
	got, err := os.ReadFile(userSettings)
	require.NoError(t, err)
	assert.Equal(t, mine, string(got), "the user's settings are left as they were")
	after, _ := filepath.Glob(filepath.Join(os.TempDir(), "tapebox-gemini-home-*"))
	assert.ElementsMatch(t, before, after, "record removes the temporary Gemini home")
}
