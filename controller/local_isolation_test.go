package controller_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/controller"
	"github.com/tapebox/tapebox/internal/testutil/sandboxtest"
	"github.com/tapebox/tapebox/sandbox"
	"github.com/tapebox/tapebox/tape"
)

// plantedSecrets are host variables a hostile tape would like to read.
var plantedSecrets = map[string]string{
	"SECRET_TOKEN":      "tbx-planted-secret-9c8b7a",
	"ANTHROPIC_API_KEY": "sk-ant-api03-tbx-planted-0123456789",
}

// hostileHost plants secrets in the environment and a private key in a temporary HOME, and
// listens on a loopback port; it returns the host directory, HOME, the port and a function
// that stops the listener and returns the connections it accepted.
func hostileHost(t *testing.T) (host, home string, port int, stop func() []string) {
	t.Helper()
	for k, v := range plantedSecrets {
		t.Setenv(k, v)
	}
	host = t.TempDir()
	home = filepath.Join(host, "home")
	require.NoError(t, os.MkdirAll(filepath.Join(home, ".ssh"), 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(home, ".ssh", "id_ed25519"), []byte("PRIVATE KEY tbx-planted"), 0o600))
	t.Setenv("HOME", home)
	port, stop = sandboxtest.ListenLoopback(t)
	return host, home, port, stop
}

// TestReplayLocalIsolated replays a hostile tape in local:DIR under bubblewrap: its writes
// outside DIR (absolute path and ".."), its reads of ~/.ssh and its connection to a
// loopback port of the host are refused, the tool results say so, the host sees nothing,
// and no host secret reaches the replay tape.
func TestReplayLocalIsolated(t *testing.T) {
	if _, err := exec.LookPath("bwrap"); err != nil && os.Getenv("CI") == "" {
		t.Skipf("bwrap is not installed (Debian package bubblewrap): %v", err)
	}
	host, home, port, stop := hostileHost(t)
	steps := []struct{ cmd, want string }{
		{"echo x > " + filepath.Join(host, "outside.txt"), "Read-only file system"},
		{"echo x > ../escape.txt", "Read-only file system"},
		{"cat " + filepath.Join(home, ".ssh", "id_ed25519"), "No such file or directory"},
		{`cat "$HOME/.ssh/id_ed25519"`, "No such file or directory"},
		{fmt.Sprintf("exec 3<>/dev/tcp/127.0.0.1/%d && echo connected", port), "Connection refused"},
		{"env; printenv SECRET_TOKEN ANTHROPIC_API_KEY; for f in /proc/[0-9]*/environ; do tr '\\0' '\\n' < $f; done", ""},
		{"echo inside > inside.txt && cat inside.txt", "inside"},
	}
	var cmds, outputs []string
	for _, s := range steps {
		cmds, outputs = append(cmds, s.cmd), append(outputs, "recorded")
	}
	var logged []string
	dir := filepath.Join(host, "work")
	sb, err := sandbox.Open(t.Context(), "local:"+dir, sandbox.Options{Logf: func(format string, args ...any) {
		logged = append(logged, fmt.Sprintf(format, args...))
	}})
	require.NoError(t, err)
	t.Cleanup(func() { sb.Close(t.Context()) })
	require.Len(t, logged, 1)
	require.Contains(t, logged[0], "isolated with bubblewrap")

	rep := replayTo(t, bashTape(cmds, outputs), sb, filepath.Join(t.TempDir(), "replay.json"))
	for i, s := range steps {
		got := rep.Main().Steps[i].ToolResults[0].Text()
		assert.Contains(t, got, s.want, "step %d: %s", i, s.cmd)
		assert.NotContains(t, got, "connected")
		assert.NotContains(t, got, "PRIVATE KEY")
	}
	assert.Empty(t, stop(), "the host's listener accepted a connection")
	for _, p := range []string{filepath.Join(host, "outside.txt"), filepath.Join(host, "escape.txt")} {
		assert.NoFileExists(t, p)
	}
	assert.FileExists(t, filepath.Join(dir, "inside.txt"))
}

// TestReplayUnsafeLocalEnv: unsafe-local:DIR isolates nothing, but the host's environment
// is not passed whole: no planted secret reaches the replay tape through the environment.
func TestReplayUnsafeLocalEnv(t *testing.T) {
	hostileHost(t)
	sb, err := sandbox.Open(t.Context(), "unsafe-local:"+t.TempDir(), sandbox.Options{Logf: t.Logf})
	require.NoError(t, err)
	t.Cleanup(func() { sb.Close(t.Context()) })
	rep := replayTo(t, bashTape([]string{"env; printenv SECRET_TOKEN ANTHROPIC_API_KEY; echo home=$HOME"}, []string{"recorded"}), sb,
		filepath.Join(t.TempDir(), "replay.json"))
	got := rep.Main().Steps[0].ToolResults[0].Text()
	assert.Contains(t, got, "home="+os.Getenv("HOME"), "the command ran, with the host's HOME")
	assert.Contains(t, got, "PATH=")
}

// replayTo replays rec in sb with the replay tape written to out, checks that no planted
// secret is in the file, and returns the replay tape.
func replayTo(t *testing.T, rec *tape.Tape, sb *sandbox.Sandbox, out string) *tape.Tape {
	t.Helper()
	_, err := controller.Replay(t.Context(), rec, sb, controller.Options{Cwd: sb.Cwd(), Output: out, Logf: t.Logf})
	require.NoError(t, err)
	b, err := os.ReadFile(out)
	require.NoError(t, err)
	for k, v := range plantedSecrets {
		assert.NotContains(t, string(b), v, "%s's value is in the replay tape", k)
		assert.False(t, strings.Contains(string(b), k+"="), "%s is in the replay tape", k)
	}
	rep, err := tape.LoadFile(out)
	require.NoError(t, err)
	return rep
}
