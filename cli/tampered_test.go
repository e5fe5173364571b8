package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/tape"
	"github.com/tapebox/tapebox/tape/seal"
)

// tamperedTape writes a sealed golden tape, and another sealed golden tape with the output
// tokens of its last main step changed after sealing; it returns both paths and the
// changed step's pointer.
func tamperedTape(t *testing.T) (sealed, tampered, ptr string) {
	t.Helper()
	dir := t.TempDir()
	tp, err := tape.LoadFile(filepath.Join("..", "testdata", "anthropic-stream.json"))
	require.NoError(t, err)
	require.NoError(t, seal.Tape(tp, nil))
	sealed = filepath.Join(dir, "sealed.json")
	require.NoError(t, tape.Save(sealed, tp))
	tp, err = tape.LoadFile(filepath.Join("..", "testdata", "anthropic-json.json"))
	require.NoError(t, err)
	require.NoError(t, seal.Tape(tp, nil))
	last := len(tp.Threads[0].Steps) - 1
	tp.Threads[0].Steps[last].Response.Usage.OutputTokens++
	tampered = filepath.Join(dir, "tampered.json")
	require.NoError(t, tape.Save(tampered, tp))
	return sealed, tampered, "/threads/0/steps/" + strings.TrimSpace(string(rune('0'+last)))
}

// TestTamperedRefused (issue 30, finding 9): replay, fork, dataset export and import refuse
// a tape whose digests do not match, naming the changed step, unless --allow-tampered; the
// export no longer writes a row its own validate rejects.
func TestTamperedRefused(t *testing.T) {
	sealed, tampered, ptr := tamperedTape(t)
	tp, err := tape.LoadFile(tampered)
	require.NoError(t, err)
	require.Less(t, len(tp.Threads[0].Steps), 10, "the pointer is built for a one-digit step")

	for _, args := range [][]string{
		{"replay", "--tape", tampered, "--sandbox", "local:" + t.TempDir()},
		{"replay", "--tape", tampered, "--listen", "127.0.0.1:0"},
		{"fork", "--tape", tampered, "--at", "0", "--workdir", t.TempDir(), "--", "true"},
	} {
		code, _, stderr := runVerbForTest(t, args...)
		require.Equal(t, ExitFailure, code, "%v: %s", args, stderr)
		require.Contains(t, stderr, ptr, args)
		require.Contains(t, stderr, "--allow-tampered", args)
	}

	// Corpus replay: the tape fails, named.
	corpusDir := filepath.Join(t.TempDir(), "corpus")
	require.NoError(t, os.MkdirAll(corpusDir, 0o755))
	data, err := os.ReadFile(tampered)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(corpusDir, "tampered.json"), data, 0o644))
	code, _, stderr := runVerbForTest(t, "replay", "--corpus", corpusDir, "--sandbox", "local", "--journal", filepath.Join(t.TempDir(), "j.sqlite"), "--speed", "0")
	require.Equal(t, ExitFailure, code, stderr)
	require.Contains(t, stderr, ptr)
	require.Contains(t, stderr, "--allow-tampered")

	// dataset export: the tampered tape is invalid; the sealed one exports and validates.
	out := filepath.Join(t.TempDir(), "ds")
	code, _, stderr = runDatasetCLI(t, "export", "--out", out, sealed, tampered)
	require.Equal(t, ExitFailure, code, stderr)
	require.Contains(t, stderr, ptr)
	require.Contains(t, stderr, "tampered.json")
	code, _, stderr = runDatasetCLI(t, "export", "--out", out, sealed)
	require.Equal(t, ExitOK, code, stderr)
	code, _, stderr = runDatasetCLI(t, "validate", out)
	require.Equal(t, ExitOK, code, stderr)

	// With --allow-tampered it goes in, and validate still reports the row.
	forced := filepath.Join(t.TempDir(), "forced")
	code, _, stderr = runDatasetCLI(t, "export", "--allow-tampered", "--out", forced, sealed, tampered)
	require.Equal(t, ExitOK, code, stderr)
	code, stdout, stderr := runDatasetCLI(t, "validate", forced)
	require.Equal(t, ExitFailure, code, stdout+stderr)
	require.Contains(t, stdout+stderr, "digest mismatch")

	// dataset import of that dataset stops at the tampered row, unless --allow-tampered.
	code, _, stderr = runDatasetCLI(t, "import", "--out", filepath.Join(t.TempDir(), "in"), forced)
	require.Equal(t, ExitFailure, code, stderr)
	require.Contains(t, stderr, ptr)
	in := filepath.Join(t.TempDir(), "in2")
	code, _, stderr = runDatasetCLI(t, "import", "--allow-tampered", "--out", in, forced)
	require.Equal(t, ExitOK, code, stderr)
	files, err := os.ReadDir(in)
	require.NoError(t, err)
	require.Len(t, files, 2)
}
