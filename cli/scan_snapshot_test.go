package cli

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/tape"
	"github.com/tapebox/tapebox/workspace"
)

// TestSecretsInTheStartSnapshot is issue 30's finding 8: a workspace .env holding an AWS
// key and a GitHub token went into the start snapshot; tapebox scan said "no secrets" and
// dataset export published it. Now scan names the file inside the snapshot and export
// refuses, unless --allow-secrets, or --no-workspace (the snapshot is then not published).
func TestSecretsInTheStartSnapshot(t *testing.T) {
	ws := t.TempDir()
	akid := fakeToken(30, "AK"+"IA", 0) + "QX7L2M5RT4WZ6YB3"
	secret := fakeToken(31, "", 40)
	gh := fakeToken(32, "gh"+"p_", 36)
	env := "AWS_ACCESS_KEY_ID=" + akid + "\nAWS_SECRET_ACCESS_KEY=" + secret + "\nGITHUB_TOKEN=" + gh + "\n"
	require.NoError(t, os.WriteFile(filepath.Join(ws, ".env"), []byte(env), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(ws, "main.go"), []byte("package main\n"), 0o644))

	dir := t.TempDir()
	snap := filepath.Join(dir, "run.workspace.tar.zst")
	info, err := workspace.SnapshotFile(t.Context(), ws, snap, workspace.Options{})
	require.NoError(t, err)
	tp := inspectTestTape()
	tp.Meta.Workspace = &tape.Workspace{Snapshot: filepath.Base(snap), Digest: info.Digest, Size: info.Size, Files: info.Files, Bytes: info.Bytes}
	path := writeTape(t, dir, "run.json", tp)

	code, stdout, stderr := runVerbForTest(t, "scan", path)
	assert.Equal(t, ExitFailure, code, stderr)
	assert.Contains(t, stdout, path+": /meta/workspace/snapshot: .env: aws-access-token: AKIA…")
	assert.Contains(t, stdout, path+": /meta/workspace/snapshot: .env: github-pat: ghp_…")
	assert.NotContains(t, stderr, "no secrets")
	for _, s := range []string{akid, secret, gh} {
		assert.NotContains(t, stdout+stderr, s[:8])
	}

	out := filepath.Join(t.TempDir(), "ds")
	code, _, stderr = runVerbForTest(t, "dataset", "export", "--out", out, path)
	assert.Equal(t, ExitFailure, code)
	assert.Contains(t, stderr, "/meta/workspace/snapshot: .env: aws-access-token")
	assert.NoDirExists(t, out)

	code, _, stderr = runVerbForTest(t, "dataset", "export", "--out", out, "--no-workspace", path)
	assert.Equal(t, ExitOK, code, "the tape alone holds no secret: %s", stderr)
	assert.NoDirExists(t, filepath.Join(out, "data", "workspaces"))
	require.NoError(t, os.RemoveAll(out))

	code, _, stderr = runVerbForTest(t, "dataset", "export", "--out", out, "--allow-secrets", path)
	assert.Equal(t, ExitOK, code, stderr)
	shards, err := filepath.Glob(filepath.Join(out, "data", "workspaces", "*.parquet"))
	require.NoError(t, err)
	assert.NotEmpty(t, shards, "--allow-secrets exports the snapshot")

	// A snapshot the tape names but that is not there cannot be known clean.
	require.NoError(t, os.Remove(snap))
	code, stdout, _ = runVerbForTest(t, "scan", path)
	assert.Equal(t, ExitFailure, code)
	assert.Contains(t, stdout, "missing")
}
