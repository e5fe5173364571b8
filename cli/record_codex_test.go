package cli

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/internal/testutil/realharness"
	"github.com/tapebox/tapebox/interop"
	"github.com/tapebox/tapebox/tape"
	"github.com/tapebox/tapebox/testkit"
	"github.com/tapebox/tapebox/testkit/fakeprovider"
)

func TestCodexProviderArgs(t *testing.T) {
	base := "http://127.0.0.1:9"
	got := codexProvider([]string{"/x/codex", "exec", "hi"}, base, false)
	assert.Equal(t, []string{"/x/codex",
		"-c", `model_provider="tapebox"`, "-c", `model_providers.tapebox.name="TapeBox"`,
		"-c", `model_providers.tapebox.base_url="http://127.0.0.1:9/v1"`, "-c", `model_providers.tapebox.wire_api="responses"`,
		"exec", "hi"}, got)
	assert.Contains(t, codexProvider([]string{"codex", "exec"}, base, true), `model_providers.tapebox.env_key="OPENAI_API_KEY"`)
	for _, argv := range [][]string{
		{"claude", "-p", "hi"},
		{"codex", "-c", `model_provider="mine"`, "exec"},
		{"codex", "--oss", "exec"},
		{"/usr/bin/codex-wrapper", "exec"},
	} {
		assert.Equal(t, argv, codexProvider(argv, base, true), "%v is left alone", argv)
	}
}

// The real Codex CLI (harnesses/node_modules), recorded with tapebox record -- codex exec ...
// against the scripted provider, with no config.toml at all: record passes Codex the provider
// with -c overrides, so its model calls go through the gateway (on the port --listen names)
// and into the tape.
func TestRecordRealCodex(t *testing.T) {
	realharness.Need(t, realharness.Codex)
	codex, err := realharness.CodexPath()
	require.NoError(t, err)
	fp := testkit.NewProvider(t, fakeprovider.Script{Threads: []fakeprovider.Thread{{Name: "main", Turns: []fakeprovider.Turn{{Text: "Nothing to do: done."}}}}})
	home := t.TempDir()
	t.Setenv("CODEX_HOME", home)
	t.Setenv("HOME", home)
	t.Setenv("OPENAI_API_KEY", "")
	work := t.TempDir()
	t.Chdir(work)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())

	out := filepath.Join(t.TempDir(), "codex.json")
	var stdout, stderr syncBuffer
	code := RunEnv(t.Context(), []string{"record", "--output", out, "--upstream", fp.URL(), "--listen", addr, "--no-workspace", "--quiet",
		"--", codex, "exec", "--skip-git-repo-check", "say done"}, &Env{Stdin: strings.NewReader(""), Stdout: &stdout, Stderr: &stderr, Getenv: os.Getenv})
	require.Equal(t, 0, code, "stderr:\n%s", stderr.String())
	assert.Contains(t, stderr.String(), "gateway on http://"+addr+",")
	tp, err := tape.LoadFile(out)
	require.NoError(t, err)
	assert.Equal(t, "codex", tp.Meta.Harness)
	require.NotEmpty(t, tp.Threads)
	require.NotEmpty(t, tp.Main().Steps)
	assert.Equal(t, "/v1/responses", tp.Main().Steps[0].Request.Path)
	assert.Equal(t, tape.EndComplete, tp.Meta.Ended.Reason)
	assert.NotEmpty(t, fp.Requests(), "the calls reached the provider through the gateway")
	// The provider Codex ran with, which no request says: its own rollout names it.
	assert.Equal(t, "tapebox", tp.Meta.Labels[interop.LabelCodexModelProvider])
	assert.Equal(t, "tapebox", interop.CodexRolloutProvider(home, interop.CodexThreadID(tp, tp.Main())), "read from the rollout Codex wrote")

	// Configured by hand (no -c overrides, a config.toml naming provider "mine"): only the
	// rollout can tell, and record takes it from there.
	cfg := strings.ReplaceAll(realharness.CodexConfigTOML("http://"+addr+"/v1", ""), "fake", "mine")
	require.Contains(t, cfg, `model_provider = "mine"`)
	require.NoError(t, os.WriteFile(filepath.Join(home, "config.toml"), []byte(cfg), 0o644))
	t.Setenv("FAKE_OPENAI_KEY", "sk-test")
	out = filepath.Join(t.TempDir(), "codex-mine.json")
	stdout, stderr = syncBuffer{}, syncBuffer{}
	code = RunEnv(t.Context(), []string{"record", "--output", out, "--upstream", fp.URL(), "--listen", addr, "--no-workspace", "--quiet", "--no-codex-provider",
		"--", codex, "exec", "--skip-git-repo-check", "say done"}, &Env{Stdin: strings.NewReader(""), Stdout: &stdout, Stderr: &stderr, Getenv: os.Getenv})
	require.Equal(t, 0, code, "stderr:\n%s", stderr.String())
	tp, err = tape.LoadFile(out)
	require.NoError(t, err)
	require.NotEmpty(t, tp.Main().Steps, "the hand-configured provider reached the gateway")
	assert.Equal(t, "mine", tp.Meta.Labels[interop.LabelCodexModelProvider])
}

func TestArgvModelProvider(t *testing.T) {
	for argv, want := range map[string]string{
		"codex exec hi":                           "",
		`codex -c model_provider="mine" exec`:     "mine",
		`codex -c model_provider=mine exec`:       "mine",
		`codex -c model_provider='q' -c x=1 exec`: "q",
		"claude -p hi":                            "",
	} {
		assert.Equal(t, want, argvModelProvider(strings.Fields(argv)), argv)
	}
}
