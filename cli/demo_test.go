package cli

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

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
	rep, err := tape.LoadFile(filepath.Join(out, "replay-local.json"))
	require.NoError(t, err)
	require.Equal(t, rec.Meta.TapeID, *rep.Meta.ReplayOf)
}
