package docker

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/klauspost/compress/zstd"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/internal/dockertest"
	"github.com/tapebox/tapebox/internal/sandboxtest"
	"github.com/tapebox/tapebox/sandbox"
	"github.com/tapebox/tapebox/sandbox/internal/kit"
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

// snapshotFile writes recordedTree into a fresh directory, snapshots it to a file and returns
// the file's path, its Info and the tree's manifest.
func snapshotFile(t *testing.T) (string, workspace.Info, workspace.Manifest) {
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

// hostileSnapshot is a snapshot whose digest matches but whose second entry goes through a
// symbolic link to /.
func hostileSnapshot(t *testing.T) (string, workspace.Info) {
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

func digestOf(b []byte) string { return "sha256:" + sha256Hex(string(b)) }

func sha256Hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

func changes(cs []workspace.Change) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.String())
	}
	return out
}

// checkWorkspace restores the snapshot into sb, compares its manifest with the recorded one,
// changes the tree with a command and finds each change.
func checkWorkspace(t *testing.T, sb *sandbox.Sandbox) {
	snap, info, recorded := snapshotFile(t)
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
	}, changes(workspace.Diff(recorded, got)))
}

func TestLocalWorkspace(t *testing.T) {
	sb, dir := sandboxtest.OpenLocal(t, sandbox.Options{})
	checkWorkspace(t, sb)

	// Restoring needs an empty directory.
	snap, info, _ := snapshotFile(t)
	err := sb.RestoreWorkspace(t.Context(), snap, info)
	require.ErrorIs(t, err, workspace.ErrNotEmpty)
	assert.Contains(t, err.Error(), "restore workspace in local:"+dir)

	// A snapshot that is not the recorded one, and a hostile one, are refused before anything
	// is written; the errors name the file.
	sb2, dir2 := sandboxtest.OpenLocal(t, sandbox.Options{})
	bad := info
	bad.Digest = "sha256:" + strings.Repeat("0", 64)
	err = sb2.RestoreWorkspace(t.Context(), snap, bad)
	require.ErrorIs(t, err, workspace.ErrMismatch)
	assert.Contains(t, err.Error(), snap)
	hostile, hinfo := hostileSnapshot(t)
	err = sb2.RestoreWorkspace(t.Context(), hostile, hinfo)
	require.ErrorIs(t, err, workspace.ErrUnsafe)
	assert.Contains(t, err.Error(), hostile)
	assert.Contains(t, err.Error(), `"link/tmp/tapebox-evil"`)
	entries, err := os.ReadDir(dir2)
	require.NoError(t, err)
	assert.Empty(t, entries)
	assert.NoFileExists(t, "/tmp/tapebox-evil")

	err = sb2.RestoreWorkspace(t.Context(), filepath.Join(t.TempDir(), "missing.tar.zst"), info)
	assert.ErrorContains(t, err, "missing.tar.zst")
}

func TestDockerWorkspace(t *testing.T) {
	sb := openImage(t, dockertest.TinyImage, sandbox.Options{Cwd: "/work/app"})
	checkWorkspace(t, sb)
	res, err := sb.Exec(t.Context(), []string{"stat", "-c", "%u:%g", ".", "README.md"})
	require.NoError(t, err)
	assert.Equal(t, "65534:65534\n65534:65534\n", string(res.Stdout), "owned by the container's user (the default)")

	// The executor's state directory is left out by default.
	_, err = sb.Exec(t.Context(), []string{"sh", "-c", "mkdir -p .tapebox/tasks && echo out > .tapebox/tasks/1"})
	require.NoError(t, err)
	m, err := sb.WorkspaceManifest(t.Context(), workspace.Options{})
	require.NoError(t, err)
	for _, e := range m {
		assert.NotContains(t, e.Path, ".tapebox")
	}
	m, err = sb.WorkspaceManifest(t.Context(), workspace.Options{NoDefaultExclude: true})
	require.NoError(t, err)
	assert.Contains(t, m, workspace.Entry{Path: ".tapebox/tasks/1", Type: workspace.TypeFile, Mode: "0644", Size: 4, SHA256: sha256Hex("out\n")})
}

// TestDockerWorkspaceOwner: the restored files belong to the user the container runs as: a
// numeric one the container's passwd file does not know, or a name it does.
func TestDockerWorkspaceOwner(t *testing.T) {
	cli, img := dockertest.Image(t, dockertest.TinyImage)
	for user, want := range map[string]string{"1234:1234": "1234:1234", "nobody": "65534:65534"} {
		t.Run(user, func(t *testing.T) {
			created, err := cli.ContainerCreate(t.Context(),
				&container.Config{Image: img, Cmd: []string{"sleep", "infinity"}, User: user, Labels: map[string]string{dockertest.Label: t.Name()}},
				&container.HostConfig{NetworkMode: "none"}, nil, nil, "")
			require.NoError(t, err)
			t.Cleanup(func() { dockertest.Remove(t, created.ID) })
			require.NoError(t, cli.ContainerStart(t.Context(), created.ID, container.StartOptions{}))
			sb, err := sandbox.Open(t.Context(), "docker:"+created.ID, sandbox.Options{Cwd: "/tmp"})
			require.NoError(t, err)
			defer sb.Close(t.Context())

			snap, info, _ := snapshotFile(t)
			require.NoError(t, sb.RestoreWorkspace(t.Context(), snap, info))
			res, err := sb.Exec(t.Context(), []string{"sh", "-c", "stat -c %u:%g README.md src; echo more >> src/main.go && echo writable"})
			require.NoError(t, err)
			assert.Equal(t, want+"\n"+want+"\nwritable\n", string(res.Stdout), "stderr: %s", res.Stderr)
		})
	}
}

func TestOwnerOf(t *testing.T) {
	for user, want := range map[string]struct {
		owner  workspace.Owner
		byName bool
	}{
		"": {}, "root": {}, "0": {}, "0:0": {},
		"1234":       {owner: workspace.Owner{UID: 1234}},
		"1234:5678":  {owner: workspace.Owner{UID: 1234, GID: 5678}},
		"root:staff": {byName: true},
		"node":       {byName: true},
		"1000:users": {byName: true},
		"-1":         {byName: true},
	} {
		owner, byName := kit.OwnerOf(user)
		assert.Equal(t, want.owner, owner, user)
		assert.Equal(t, want.byName, byName, user)
	}
}

// TestDockerWorkspaceRefused: nothing of a snapshot that fails verification reaches the
// container.
func TestDockerWorkspaceRefused(t *testing.T) {
	sb := openImage(t, dockertest.TinyImage, sandbox.Options{Cwd: "/app"})
	snap, info, _ := snapshotFile(t)
	bad := info
	bad.Bytes++
	err := sb.RestoreWorkspace(t.Context(), snap, bad)
	require.ErrorIs(t, err, workspace.ErrMismatch)
	assert.Contains(t, err.Error(), snap)
	hostile, hinfo := hostileSnapshot(t)
	err = sb.RestoreWorkspace(t.Context(), hostile, hinfo)
	require.ErrorIs(t, err, workspace.ErrUnsafe)
	assert.Contains(t, err.Error(), hostile)

	m, err := sb.WorkspaceManifest(t.Context(), workspace.Options{})
	require.NoError(t, err)
	assert.Empty(t, m, "the working directory is still empty")
	res, err := sb.Exec(t.Context(), []string{"sh", "-c", "test -e /tmp/tapebox-evil && echo present || echo absent"})
	require.NoError(t, err)
	assert.Equal(t, "absent\n", string(res.Stdout))
}

// TestDockerLocalSameWorkspace: one snapshot restored in both backends gives one manifest,
// and the container's root directory can be listed too.
func TestDockerLocalSameWorkspace(t *testing.T) {
	docker := openImage(t, dockertest.TinyImage, sandbox.Options{Cwd: "/work/proj"})
	local, _ := sandboxtest.OpenLocal(t, sandbox.Options{})
	snap, info, recorded := snapshotFile(t)
	for _, sb := range []*sandbox.Sandbox{docker, local} {
		require.NoError(t, sb.RestoreWorkspace(t.Context(), snap, info), sb.Spec().String())
		m, err := sb.WorkspaceManifest(t.Context(), workspace.Options{})
		require.NoError(t, err)
		assert.Equal(t, recorded, m, sb.Spec().String())
	}

	root := openImage(t, dockertest.TinyImage, sandbox.Options{Cwd: "/"})
	m, err := root.WorkspaceManifest(t.Context(), workspace.Options{Exclude: []string{"proc", "sys", "dev"}})
	require.NoError(t, err)
	var paths []string
	for _, e := range m {
		paths = append(paths, e.Path)
	}
	assert.Contains(t, paths, "bin")
}
