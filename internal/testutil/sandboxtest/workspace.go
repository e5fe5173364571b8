package sandboxtest

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tapebox/tapebox/sandbox"
	"github.com/tapebox/tapebox/workspace"
)

// recordedTree is the workspace the tests snapshot: files, modes, an empty directory, a link
// inside and one pointing outside, a hard link, what the default exclusions leave out.
var recordedTree = map[string]sandbox.File{
	"README.md":           {Mode: 0o644, Data: []byte("# proj\n")},
	"bin/run.sh":          {Mode: 0o755, Data: []byte("#!/bin/sh\necho hi\n")},
	"src/main.go":         {Mode: 0o644, Data: []byte("package main\n")},
	"src/empty":           {Mode: 0o600, Data: []byte{}},
	"emptydir":            {Mode: fs.ModeDir | 0o700},
	"latest":              {Mode: fs.ModeSymlink | 0o777, Link: "src/main.go"},
	"passwd":              {Mode: fs.ModeSymlink | 0o777, Link: "/etc/passwd"},
	"node_modules/dep.js": {Mode: 0o644, Data: []byte("left out")},
}

// SnapshotFile writes recordedTree into a fresh directory, snapshots it to a file and returns
// the file's path, its Info and the tree's manifest.
func SnapshotFile(t *testing.T) (string, workspace.Info, workspace.Manifest) {
	t.Helper()
	src := t.TempDir()
	require.NoError(t, sandbox.WriteDir(src, recordedTree))
	require.NoError(t, os.Link(filepath.Join(src, "src", "main.go"), filepath.Join(src, "src", "same.go")))
	when := time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC)
	require.NoError(t, os.Chtimes(filepath.Join(src, "README.md"), when, when))
	out := filepath.Join(t.TempDir(), "start.tar.zst")
	info, err := workspace.SnapshotFile(t.Context(), src, out, workspace.Options{})
	require.NoError(t, err)
	m, err := workspace.ManifestDir(t.Context(), src, workspace.Options{})
	require.NoError(t, err)
	require.NotEmpty(t, m)
	return out, info, m
}

// HostileSnapshot is a snapshot whose digest matches but whose second entry goes through a
// symbolic link to /.
func HostileSnapshot(t *testing.T) (string, workspace.Info) {
	t.Helper()
	var tb bytes.Buffer
	tw := tar.NewWriter(&tb)
	for _, h := range []*tar.Header{
		{Typeflag: tar.TypeSymlink, Name: "link", Linkname: "/", Mode: 0o777},
		{Typeflag: tar.TypeReg, Name: "link/tmp/tapebox-evil", Mode: 0o644, Size: 1},
	} {
		require.NoError(t, tw.WriteHeader(h))
		if h.Size > 0 {
			_, err := tw.Write([]byte("x"))
			require.NoError(t, err)
		}
	}
	require.NoError(t, tw.Close())
	var zb bytes.Buffer
	zw, err := zstd.NewWriter(&zb)
	require.NoError(t, err)
	_, err = zw.Write(tb.Bytes())
	require.NoError(t, err)
	require.NoError(t, zw.Close())
	out := filepath.Join(t.TempDir(), "hostile.tar.zst")
	require.NoError(t, os.WriteFile(out, zb.Bytes(), 0o644))
	// An honest Info for dishonest content: the digest matches.
	f, err := os.Open(out)
	require.NoError(t, err)
	defer f.Close()
	info := workspace.Info{Size: int64(zb.Len()), Files: 2, Bytes: 1}
	info.Digest = digestOf(zb.Bytes())
	require.ErrorIs(t, workspace.Verify(f, info), workspace.ErrUnsafe, "the digest matches; the entry is what is refused")
	return out, info
}

func digestOf(b []byte) string { return "sha256:" + SHA256Hex(string(b)) }

// SHA256Hex is the hex SHA-256 of s, as a workspace manifest has it.
func SHA256Hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// Changes are the changes as strings, for comparison.
func Changes(cs []workspace.Change) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.String())
	}
	return out
}

// CheckRestoreRefused restores into sb the snapshot file snap with the wrong info bad, then
// HostileSnapshot, and requires that each is refused with an error naming its file
// (ErrMismatch, ErrUnsafe); it returns the hostile one's error. The caller checks that
// nothing was written.
func CheckRestoreRefused(t *testing.T, sb *sandbox.Sandbox, snap string, bad workspace.Info) error {
	t.Helper()
	err := sb.RestoreWorkspace(t.Context(), snap, bad)
	require.ErrorIs(t, err, workspace.ErrMismatch)
	assert.Contains(t, err.Error(), snap)
	hostile, hinfo := HostileSnapshot(t)
	err = sb.RestoreWorkspace(t.Context(), hostile, hinfo)
	require.ErrorIs(t, err, workspace.ErrUnsafe)
	assert.Contains(t, err.Error(), hostile)
	return err
}

// CheckWorkspace restores the snapshot into sb, compares its manifest with the recorded one,
// changes the tree with a command and finds each change.
func CheckWorkspace(t *testing.T, sb *sandbox.Sandbox) {
	t.Helper()
	snap, info, recorded := SnapshotFile(t)
	require.NoError(t, sb.RestoreWorkspace(t.Context(), snap, info))
	got, err := sb.WorkspaceManifest(t.Context(), workspace.Options{})
	require.NoError(t, err)
	assert.Equal(t, recorded, got)
	assert.Empty(t, workspace.Diff(recorded, got))

	res, err := sb.Exec(t.Context(), []string{"sh", "-c", "stat -c %Y README.md; echo new > new.txt; chmod 600 bin/run.sh; rm src/empty; printf 'package main\\n\\n' > src/main.go"})
	require.NoError(t, err)
	require.Equal(t, 0, res.ExitCode, "stderr: %s", res.Stderr)
	assert.Equal(t, "1714979289\n", string(res.Stdout), "the recorded modification time")
	got, err = sb.WorkspaceManifest(t.Context(), workspace.Options{})
	require.NoError(t, err)
	assert.Equal(t, []string{
		"bin/run.sh: mode differs: recorded 0755, replayed 0600",
		"new.txt: extra: file 0644, 4 bytes",
		"src/empty: missing: recorded file 0600, 0 bytes",
		"src/main.go: size differs: recorded 13 bytes, replayed 14 bytes",
		// src/same.go was a hard link to main.go on the recording side; in the sandbox it is
		// a file of its own (snapshots store copies), so it keeps the old content.
	}, Changes(workspace.Diff(recorded, got)))
}

// CheckManifestBounded plays a tape that leaves a sparse file of 64 GiB in sb's working
// directory, which costs it no disk and no time: sb's end manifest is refused at once
// (workspace.ErrTooBig, naming the file) instead of hashing 64 GiB of zeros (a terabyte
// costs the tape no more). The directory is empty to begin with.
func CheckManifestBounded(t *testing.T, sb *sandbox.Sandbox) {
	t.Helper()
	res, err := sb.Exec(t.Context(), []string{"sh", "-c", "truncate -s 64G huge && echo made > small"})
	require.NoError(t, err)
	require.Equal(t, 0, res.ExitCode, "%s", res.Stderr)
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	_, err = sb.WorkspaceManifest(ctx, workspace.Options{})
	require.ErrorIs(t, err, workspace.ErrTooBig)
	assert.Contains(t, err.Error(), "huge is 68719476736 bytes")
	res, err = sb.Exec(t.Context(), []string{"rm", "huge"})
	require.NoError(t, err)
	require.Equal(t, 0, res.ExitCode, "%s", res.Stderr)
	m, err := sb.WorkspaceManifest(t.Context(), workspace.Options{})
	require.NoError(t, err)
	require.Len(t, m, 1)
	assert.Equal(t, "small", m[0].Path, "the bound is the content's, not the directory's")
}
