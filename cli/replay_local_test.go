package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestReplayUnsafeLocal: unsafe-local:DIR replays as local:DIR does and prints one warning
// line, even with --quiet.
func TestReplayUnsafeLocal(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(t.TempDir(), "replay.json")
	rec := filepath.Join("..", "testdata", "replay", "codex.json")
	code, _, stderr := runVerbForTest(t, "replay", "--tape", rec, "--sandbox", "unsafe-local:"+dir, "--speed", "0", "--output", out, "--quiet")
	require.Equal(t, ExitOK, code, stderr)
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	require.Len(t, lines, 1, stderr)
	assert.True(t, strings.HasPrefix(lines[0], "tapebox replay: warning: sandbox unsafe-local:"+dir+" is NOT isolated: "), lines[0])
	assert.FileExists(t, filepath.Join(dir, "docs", "renamed.txt"))
	code, stdout, stderr := runVerbForTest(t, "compare", rec, out)
	assert.Equal(t, ExitOK, code, "%s%s", stdout, stderr)
}

// TestReplayLocalIsolated: local:DIR says that it is isolated, and warns nothing.
func TestReplayLocalIsolated(t *testing.T) {
	if _, err := exec.LookPath("bwrap"); err != nil && os.Getenv("CI") == "" {
		t.Skipf("bwrap is not installed (Debian package bubblewrap): %v", err)
	}
	dir := t.TempDir()
	rec := filepath.Join("..", "testdata", "replay", "codex.json")
	code, _, stderr := runVerbForTest(t, "replay", "--tape", rec, "--sandbox", "local:"+dir, "--speed", "0")
	require.Equal(t, ExitOK, code, stderr)
	assert.Contains(t, stderr, "tapebox replay: sandbox local:"+dir+": isolated with bubblewrap: only "+dir+" is writable")
	assert.NotContains(t, stderr, "warning")
	code, _, stderr = runVerbForTest(t, "replay", "--tape", rec, "--sandbox", "local:"+t.TempDir(), "--speed", "0", "--quiet")
	require.Equal(t, ExitOK, code, stderr)
	assert.Empty(t, stderr)
}

// TestReplayHelpLocal: replay --help says what local: isolates and what it does not.
func TestReplayHelpLocal(t *testing.T) {
	_, stdout, stderr := runVerbForTest(t, "replay", "--help")
	help := stdout + stderr
	for _, want := range []string{"local:DIR", "under bubblewrap (bwrap)", "DIR is the only host directory they can write",
		"no network", "Not limited: CPU", "unsafe-local:DIR", "It isolates NOTHING", "even with --quiet"} {
		assert.Contains(t, help, want)
	}
}
