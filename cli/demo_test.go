package cli

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/internal/testutil/dockertest"
	"github.com/tapebox/tapebox/tape"
)

// TestDemo runs the main job end to end on the local sandbox.
func TestDemo(t *testing.T) {
	out := filepath.Join(t.TempDir(), "demo")
	code, stdout, stderr := runVerbForTest(t, "demo", "--out", out, "--docker-image", "")
	require.Equal(t, ExitOK, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
	require.Equal(t, 1, strings.Count(stdout, "IDENTICAL"), stdout)
	require.Contains(t, stdout, "end state: the same 3 files as the recording")
	require.Contains(t, stdout, "end state: identical (4 entries)")
	rec, err := tape.LoadFile(filepath.Join(out, "run.json"))
	require.NoError(t, err)
	require.Len(t, rec.Threads, 2)
	require.Equal(t, filepath.Join(out, "record-work"), rec.Meta.Cwd, "the demo's recording names its working directory")
	rep, err := tape.LoadFile(filepath.Join(out, "replay-local.json"))
	require.NoError(t, err)
	require.Equal(t, rec.Meta.TapeID, *rep.Meta.ReplayOf)
}

// TestDemoTapeInDocker: the demo's tape, replayed with the docs' Docker command, works where
// it was recorded (its meta.cwd, inside the container), restores its workspace there and is
// identical, end state included (it used to restore into the container's /, fail "mkdir app"
// and report 21 end-state differences).
func TestDemoTapeInDocker(t *testing.T) {
	_, image := dockertest.Image(t, dockertest.SandboxImage)
	out := filepath.Join(t.TempDir(), "demo")
	code, stdout, stderr := runVerbForTest(t, "demo", "--out", out, "--docker-image", "")
	require.Equal(t, ExitOK, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
	code, stdout, stderr = runVerbForTest(t, "replay", "--tape", filepath.Join(out, "run.json"), "--sandbox", "docker-image:"+image, "--speed", "0", "--check")
	require.Equal(t, ExitOK, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
	require.Contains(t, stderr, "working directory "+filepath.Join(out, "record-work")+", where the tape was recorded")
	require.Contains(t, stdout, "IDENTICAL")
	require.Contains(t, stdout, "end state: identical (4 entries)")
}
