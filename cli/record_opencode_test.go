package cli

import (
	"bytes"
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

func TestOpenCodeEnv(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	none := func(string) string { return "" }
	env, cleanup, note, err := openCodeEnv("http://127.0.0.1:9", none)
	require.NoError(t, err)
	assert.Empty(t, note)
	require.Len(t, env, 1)
	path, ok := strings.CutPrefix(env[0], "OPENCODE_CONFIG=")
	require.True(t, ok, env[0])
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Contains(t, string(b), `"baseURL": "http://127.0.0.1:9/v1"`)
	assert.Contains(t, string(b), `"anthropic"`)
	assert.Contains(t, string(b), `"openai"`)
	cleanup()
	_, err = os.Stat(filepath.Dir(path))
	assert.True(t, os.IsNotExist(err), "the temporary directory is removed: %v", err)

	// The user's own OPENCODE_CONFIG keeps loading: the provider goes inline.
	userFile := map[string]string{"OPENCODE_CONFIG": "/home/u/my.json"}
	env, cleanup, note, err = openCodeEnv("http://127.0.0.1:9", func(k string) string { return userFile[k] })
	require.NoError(t, err)
	defer cleanup()
	assert.Empty(t, note)
	require.Len(t, env, 1)
	assert.True(t, strings.HasPrefix(env[0], "OPENCODE_CONFIG_CONTENT={"), env[0])
	assert.NotContains(t, env[0], "\n")

	both := map[string]string{"OPENCODE_CONFIG": "/home/u/my.json", "OPENCODE_CONFIG_CONTENT": "{}"}
	env, _, note, err = openCodeEnv("http://127.0.0.1:9", func(k string) string { return both[k] })
	require.NoError(t, err)
	assert.Empty(t, env)
	assert.Contains(t, note, "both set")

	for argv, want := range map[string]bool{"opencode": true, "/x/node_modules/.bin/opencode": true, "/x/bin/opencode.exe": true, "opencode-wrapper": false, "claude": false, "": false} {
		assert.Equal(t, want, isOpenCode(strings.Fields(argv)), "%q", argv)
	}
}

// The real opencode (harnesses/node_modules), recorded with tapebox record -- opencode run
// ... against the scripted provider, with the user's own config in ~/.config/opencode naming
// the built-in anthropic provider: record's temporary config points that provider at the
// gateway, so the model call reaches the tape with the user's key redacted, and the user's
// config file is byte for byte what it was.
func TestRecordRealOpenCode(t *testing.T) {
	realharness.Need(t, realharness.OpenCode)
	bin, err := realharness.OpenCodePath()
	require.NoError(t, err)
	fp := testkit.NewProvider(t, fakeprovider.Script{Threads: []fakeprovider.Thread{{Name: "main", Turns: []fakeprovider.Turn{{Text: "Nothing to do: done."}}}}})
	home := t.TempDir()
	tmp := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("TMPDIR", tmp)
	for _, k := range []string{"XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME", "XDG_STATE_HOME", "OPENCODE_CONFIG", "OPENCODE_CONFIG_CONTENT", "OPENCODE_CONFIG_DIR"} {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
	const key = "sk-ant-api03-PLANTEDopencodeKEY0123456789abcdefABCDEF"
	t.Setenv("ANTHROPIC_API_KEY", key)
	for _, kv := range realharness.OpenCodeEnv {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	userDir := filepath.Join(home, ".config", "opencode")
	require.NoError(t, os.MkdirAll(userDir, 0o755))
	userCfg := []byte("{\n  // mine\n  \"$schema\": \"https://opencode.ai/config.json\",\n  \"model\": \"anthropic/claude-sonnet-4-5\",\n  \"provider\": {\"anthropic\": {\"options\": {\"timeout\": 600000}}},\n}\n")
	userPath := filepath.Join(userDir, "opencode.json")
	require.NoError(t, os.WriteFile(userPath, userCfg, 0o640))
	before, err := os.Stat(userPath)
	require.NoError(t, err)

	work := t.TempDir()
	t.Chdir(work)
	out := filepath.Join(t.TempDir(), "opencode.json")
	var stdout, stderr syncBuffer
	code := RunEnv(t.Context(), []string{"record", "--output", out, "--upstream", fp.URL(), "--no-workspace", "--quiet",
		"--", bin, "run", "say done"}, &Env{Stdin: strings.NewReader(""), Stdout: &stdout, Stderr: &stderr, Getenv: os.Getenv})
	require.Equal(t, 0, code, "stderr:\n%s", stderr.String())
	assert.Contains(t, stdout.String(), "Nothing to do: done.")

	after, err := os.ReadFile(userPath)
	require.NoError(t, err)
	assert.True(t, bytes.Equal(userCfg, after), "the user's config is unchanged:\n%s", after)
	st, err := os.Stat(userPath)
	require.NoError(t, err)
	assert.Equal(t, before.ModTime(), st.ModTime())
	assert.Equal(t, before.Mode(), st.Mode())
	left, err := filepath.Glob(filepath.Join(tmp, "tapebox-opencode-*"))
	require.NoError(t, err)
	assert.Empty(t, left, "the temporary config is removed")

	raw, err := os.ReadFile(out)
	require.NoError(t, err)
	assert.NotContains(t, string(raw), key, "the API key never reaches the tape")
	tp, err := tape.LoadFile(out)
	require.NoError(t, err)
	assert.Equal(t, "opencode", tp.Meta.Harness)
	assert.Equal(t, "1.18.33", tp.Meta.HarnessVersion)
	assert.Equal(t, work, tp.Meta.Cwd)
	assert.Equal(t, tape.EndComplete, tp.Meta.Ended.Reason)
	// The agent's call, and the title of the session, which opencode asks its small model
	// for (the anthropic provider's haiku).
	var models []string
	for _, th := range tp.Threads {
		for _, s := range th.Steps {
			assert.Equal(t, "/v1/messages", s.Request.Path)
			models = append(models, string(s.Request.Params["model"]))
		}
	}
	assert.Contains(t, models, `"claude-sonnet-4-5"`)
	reqs := fp.Requests()
	require.NotEmpty(t, reqs, "the calls reached the provider through the gateway")
	assert.Equal(t, key, reqs[0].Header.Get("X-Api-Key"), "the gateway sends the user's key upstream")
}
