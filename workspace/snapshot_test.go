package workspace

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/klauspost/compress/zstd"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// project is a small workspace with a bit of everything Snapshot keeps.
var project = map[string]node{
	"README.md":       {data: "# proj\n"},
	"bin":             {dir: true},
	"bin/run.sh":      {data: "#!/bin/sh\necho hi\n", mode: 0o755},
	"src":             {dir: true},
	"src/main.go":     {data: "package main\n"},
	"src/empty":       {data: ""},
	"private":         {dir: true, mode: 0o700},
	"private/key":     {data: "k", mode: 0o600},
	"latest":          {link: "src/main.go"},
	"passwd":          {link: "/etc/passwd"},
	"up":              {link: "../../outside"},
	".git":            {dir: true},
	".git/HEAD":       {data: "ref: refs/heads/main\n"},
	".git/objects":    {dir: true},
	".git/objects/ab": {data: "blob"},
	"a.txt":           {data: "a"},
	"a":               {dir: true},
	"a/b.txt":         {data: "b"},
}

func TestSnapshot(t *testing.T) {
	dir := t.TempDir()
	build(t, dir, project)
	var buf bytes.Buffer
	info, err := Snapshot(t.Context(), dir, &buf, Options{})
	require.NoError(t, err)

	sum := sha256.Sum256(buf.Bytes())
	assert.Equal(t, "sha256:"+hex.EncodeToString(sum[:]), info.Digest)
	assert.Equal(t, int64(buf.Len()), info.Size)
	assert.Equal(t, len(project), info.Files)
	assert.Equal(t, int64(len("# proj\n#!/bin/sh\necho hi\npackage main\nkref: refs/heads/main\nblobab")), info.Bytes)
	assert.Empty(t, info.Skipped)

	hdrs := listTar(t, bytes.NewReader(unzst(t, buf.Bytes())))
	assert.Equal(t, []string{
		".git/", ".git/HEAD", ".git/objects/", ".git/objects/ab", "README.md",
		"a/", "a/b.txt", "a.txt", "bin/", "bin/run.sh", "latest", "passwd", "private/", "private/key",
		"src/", "src/empty", "src/main.go", "up",
	}, names(hdrs), "walk order: lexical within a directory, a directory before what it holds")
	byName := map[string]tar.Header{}
	for _, h := range hdrs {
		byName[h.Name] = h
		assert.Zero(t, h.Uid, h.Name)
		assert.Zero(t, h.Gid, h.Name)
		assert.Empty(t, h.Uname, h.Name)
		assert.Empty(t, h.Gname, h.Name)
		if h.Typeflag != tar.TypeSymlink {
			assert.True(t, h.ModTime.Equal(stamp), "%s: time %v kept", h.Name, h.ModTime)
		}
	}
	assert.Equal(t, int64(0o755), byName["bin/run.sh"].Mode)
	assert.Equal(t, int64(0o700), byName["private/"].Mode)
	assert.Equal(t, int64(0o600), byName["private/key"].Mode)
	for name, target := range map[string]string{"latest": "src/main.go", "passwd": "/etc/passwd", "up": "../../outside"} {
		assert.Equal(t, byte(tar.TypeSymlink), byName[name].Typeflag, "%s is stored as a link, not followed", name)
		assert.Equal(t, target, byName[name].Linkname)
	}

	// The same directory gives the same bytes.
	var again bytes.Buffer
	info2, err := Snapshot(t.Context(), dir, &again, Options{})
	require.NoError(t, err)
	assert.Equal(t, info, info2)
	assert.Equal(t, buf.Bytes(), again.Bytes())

	// ... and a one-byte change another digest.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a.txt"), []byte("A"), 0o644))
	require.NoError(t, os.Chtimes(filepath.Join(dir, "a.txt"), stamp, stamp))
	info3, err := Snapshot(t.Context(), dir, &bytes.Buffer{}, Options{})
	require.NoError(t, err)
	assert.NotEqual(t, info.Digest, info3.Digest)
}

// TestSnapshotEncoderStable: the digest does not depend on how many goroutines compress.
func TestSnapshotEncoderStable(t *testing.T) {
	dir := t.TempDir()
	build(t, dir, project)
	build(t, dir, map[string]node{"big": {data: strings.Repeat("some text that compresses, ", 1<<18)}})
	var ours bytes.Buffer
	_, err := Snapshot(t.Context(), dir, &ours, Options{})
	require.NoError(t, err)
	raw := unzst(t, ours.Bytes())
	for _, n := range []int{1, 3} {
		var buf bytes.Buffer
		zw, err := zstd.NewWriter(&buf, zstd.WithEncoderLevel(zstd.SpeedDefault), zstd.WithEncoderConcurrency(n))
		require.NoError(t, err)
		_, err = zw.Write(raw)
		require.NoError(t, err)
		require.NoError(t, zw.Close())
		assert.Equal(t, ours.Bytes(), buf.Bytes(), "%d goroutines", n)
	}
}

func TestSnapshotThroughSymlinkedRoot(t *testing.T) {
	dir := t.TempDir()
	build(t, dir, map[string]node{"real/x": {data: "x"}})
	link := filepath.Join(dir, "link")
	require.NoError(t, os.Symlink("real", link))
	info, err := Snapshot(t.Context(), link, &bytes.Buffer{}, Options{})
	require.NoError(t, err)
	assert.Equal(t, 1, info.Files, "the root may be a symbolic link; the directory it names is taken")
}

func TestSnapshotExclude(t *testing.T) {
	ws := map[string]node{
		"keep.txt":                 {data: "k"},
		"node_modules/x/index.js":  {data: "x"},
		"web/node_modules/y.js":    {data: "y"},
		".venv/bin/python":         {data: "p"},
		"pkg/__pycache__/m.pyc":    {data: "c"},
		".tapebox/tasks/1.out":     {data: "o"},
		"debug.log":                {data: "l"},
		"logs/today.log":           {data: "l"},
		"build/out/bin":            {data: "b"},
		"build/keep":               {data: "b"},
		"src/build/out/generated":  {data: "g"},
		"dist/app.js":              {data: "d"},
		"src/dist/notanchored.txt": {data: "d"},
	}
	dir := t.TempDir()
	build(t, dir, ws)
	for _, tc := range []struct {
		name string
		opts Options
		want []string // the files kept
	}{
		{"defaults", Options{}, []string{
			"build/keep", "build/out/bin", "debug.log", "dist/app.js", "keep.txt", "logs/today.log",
			"src/build/out/generated", "src/dist/notanchored.txt",
		}},
		{"patterns", Options{Exclude: []string{"*.log", "build/out", "/dist"}}, []string{
			"build/keep", "keep.txt", "src/build/out/generated", "src/dist/notanchored.txt",
		}},
		{"trailing slash", Options{Exclude: []string{"logs/"}}, []string{
			"build/keep", "build/out/bin", "debug.log", "dist/app.js", "keep.txt",
			"src/build/out/generated", "src/dist/notanchored.txt",
		}},
		{"no defaults", Options{NoDefaultExclude: true, Exclude: []string{"src"}}, []string{
			".tapebox/tasks/1.out", ".venv/bin/python", "build/keep", "build/out/bin", "debug.log",
			"dist/app.js", "keep.txt", "logs/today.log", "node_modules/x/index.js",
			"pkg/__pycache__/m.pyc", "web/node_modules/y.js",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			_, err := Snapshot(t.Context(), dir, &buf, tc.opts)
			require.NoError(t, err)
			var files []string
			for _, h := range listTar(t, bytes.NewReader(unzst(t, buf.Bytes()))) {
				if h.Typeflag == tar.TypeReg {
					files = append(files, h.Name)
				}
			}
			assert.ElementsMatch(t, tc.want, files)

			// The manifest leaves out the same.
			m, err := ManifestDir(t.Context(), dir, tc.opts)
			require.NoError(t, err)
			files = nil
			for _, e := range m {
				if e.Type == TypeFile {
					files = append(files, e.Path)
				}
			}
			assert.ElementsMatch(t, tc.want, files)
		})
	}

	_, err := Snapshot(t.Context(), dir, &bytes.Buffer{}, Options{Exclude: []string{"[", "/"}})
	require.Error(t, err)
	assert.Contains(t, err.Error(), `exclude pattern "["`)
	assert.Contains(t, err.Error(), `exclude pattern "/": empty`)
}

func TestSnapshotCap(t *testing.T) {
	dir := t.TempDir()
	build(t, dir, map[string]node{
		"big/a.bin":   {data: strings.Repeat("a", 3000)},
		"big/b/c.bin": {data: strings.Repeat("c", 2000)},
		"mid.bin":     {data: strings.Repeat("m", 1500)},
		"small/x":     {data: "x"},
	})
	var buf bytes.Buffer
	_, err := Snapshot(t.Context(), dir, &buf, Options{MaxBytes: 4096})
	require.ErrorIs(t, err, ErrTooBig)
	assert.Zero(t, buf.Len(), "nothing written")
	for _, want := range []string{
		"6501 bytes (6.3 KiB) of files", "cap of 4096 bytes (4.0 KiB)",
		"biggest: big/ 5000 bytes (4.9 KiB), mid.bin 1500 bytes (1.5 KiB), small/ 1 byte",
		"Options.Exclude", "Options.MaxBytes",
	} {
		assert.Contains(t, err.Error(), want)
	}

	out := filepath.Join(t.TempDir(), "start.tar.zst")
	_, err = SnapshotFile(t.Context(), dir, out, Options{MaxBytes: 4096})
	require.ErrorIs(t, err, ErrTooBig)
	entries, err := os.ReadDir(filepath.Dir(out))
	require.NoError(t, err)
	assert.Empty(t, entries, "no snapshot, no temporary file")

	_, err = Snapshot(t.Context(), dir, &bytes.Buffer{}, Options{MaxBytes: 6501})
	assert.NoError(t, err, "the cap is inclusive")
	_, err = Snapshot(t.Context(), dir, &bytes.Buffer{}, Options{MaxBytes: -1})
	assert.NoError(t, err, "no cap")
}

func TestSnapshotSkipsSpecialFiles(t *testing.T) {
	dir := t.TempDir()
	build(t, dir, map[string]node{"f": {data: "f"}})
	require.NoError(t, syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o644))
	// A unix socket's path must be short; bind from inside dir.
	t.Chdir(dir)
	l, err := net.Listen("unix", "sock")
	require.NoError(t, err)
	defer l.Close()

	var buf bytes.Buffer
	info, err := Snapshot(t.Context(), dir, &buf, Options{})
	require.NoError(t, err)
	assert.Equal(t, []string{"fifo", "sock"}, info.Skipped)
	assert.Equal(t, 1, info.Files)
	assert.Equal(t, []string{"f"}, names(listTar(t, bytes.NewReader(unzst(t, buf.Bytes())))))
}

func TestSnapshotFile(t *testing.T) {
	dir := t.TempDir()
	build(t, dir, project)
	out := filepath.Join(t.TempDir(), "start.tar.zst")
	require.NoError(t, os.WriteFile(out, []byte("old"), 0o644))
	info, err := SnapshotFile(t.Context(), dir, out, Options{})
	require.NoError(t, err)
	b, err := os.ReadFile(out)
	require.NoError(t, err)
	sum := sha256.Sum256(b)
	assert.Equal(t, "sha256:"+hex.EncodeToString(sum[:]), info.Digest)
	entries, err := os.ReadDir(filepath.Dir(out))
	require.NoError(t, err)
	require.Len(t, entries, 1, "the temporary file is gone")

	_, err = SnapshotFile(t.Context(), filepath.Join(dir, "missing"), out, Options{})
	assert.ErrorContains(t, err, "snapshot "+filepath.Join(dir, "missing"))
}

func TestSizeString(t *testing.T) {
	for n, want := range map[int64]string{
		0: "0 bytes", 1: "1 byte", 1023: "1023 bytes", 1024: "1024 bytes (1.0 KiB)",
		256 << 20: "268435456 bytes (256.0 MiB)", 3 << 30: "3221225472 bytes (3.0 GiB)",
	} {
		assert.Equal(t, want, sizeString(n))
	}
}
