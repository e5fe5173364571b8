package workspace

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func sum(s string) string {
	b := sha256.Sum256([]byte(s))
	return hex.EncodeToString(b[:])
}

func TestManifestDir(t *testing.T) {
	dir := t.TempDir()
	build(t, dir, map[string]node{
		"a.txt":          {data: "a"},
		"a":              {dir: true},
		"a/b.sh":         {data: "#!/bin/sh\n", mode: 0o755},
		"empty":          {data: ""},
		"link":           {link: "/etc/passwd"},
		"ro":             {dir: true, mode: 0o555},
		"node_modules/x": {data: "x"},
	})
	require.NoError(t, os.Link(filepath.Join(dir, "a.txt"), filepath.Join(dir, "hard")))
	m, err := ManifestDir(t.Context(), dir, Options{})
	require.NoError(t, err)
	assert.Equal(t, Manifest{
		{Path: "a", Type: TypeDir, Mode: "0755"},
		{Path: "a.txt", Type: TypeFile, Mode: "0644", Size: 1, SHA256: sum("a")},
		{Path: "a/b.sh", Type: TypeFile, Mode: "0755", Size: 10, SHA256: sum("#!/bin/sh\n")},
		{Path: "empty", Type: TypeFile, Mode: "0644", SHA256: sum("")},
		{Path: "hard", Type: TypeFile, Mode: "0644", Size: 1, SHA256: sum("a")},
		{Path: "link", Type: TypeSymlink, Mode: "0777", Link: "/etc/passwd"},
		{Path: "ro", Type: TypeDir, Mode: "0555"},
	}, m, "sorted by path, byte by byte; the symlink not followed; node_modules left out")

	_, err = ManifestDir(t.Context(), filepath.Join(dir, "a.txt"), Options{})
	assert.ErrorContains(t, err, "is not a directory")
}

// TestManifestJSON: a manifest's JSON is the tape's meta.workspace.end (size always given).
func TestManifestJSON(t *testing.T) {
	m := Manifest{
		{Path: "d", Type: TypeDir, Mode: "0755"},
		{Path: "f", Type: TypeFile, Mode: "0644", Size: 1, SHA256: sum("a")},
		{Path: "l", Type: TypeSymlink, Mode: "0777", Link: "f"},
	}
	b, err := json.Marshal(m)
	require.NoError(t, err)
	assert.JSONEq(t, `[
		{"path":"d","type":"dir","mode":"0755","size":0},
		{"path":"f","type":"file","mode":"0644","size":1,"sha256":"`+sum("a")+`"},
		{"path":"l","type":"symlink","mode":"0777","size":0,"link":"f"}
	]`, string(b))
	var back Manifest
	require.NoError(t, json.Unmarshal(b, &back))
	assert.Equal(t, m, back)
}

// TestManifestTar reads an archive shaped like CopyFromContainer's for /app: the root entry,
// "app/" names, a hard link to an earlier file, a FIFO.
func TestManifestTar(t *testing.T) {
	fifo := dirEnt("app/pipe")
	fifo.hdr.Typeflag = '6'
	b := tarOf(t,
		dirEnt("app/"),
		reg("app/z.txt", "z"),
		dirEnt("app/src/"),
		reg("app/src/main.go", "package main\n"),
		hardlink("app/src/copy.go", "app/src/main.go"),
		symlink("app/link", "src/main.go"),
		fifo,
		dirEnt("app/node_modules/"),
		reg("app/node_modules/dep.js", "dep"),
	)
	m, err := ManifestTar(bytes.NewReader(b), "app", Options{})
	require.NoError(t, err)
	want := Manifest{
		{Path: "link", Type: TypeSymlink, Mode: "0777", Link: "src/main.go"},
		{Path: "src", Type: TypeDir, Mode: "0755"},
		{Path: "src/copy.go", Type: TypeFile, Mode: "0644", Size: 13, SHA256: sum("package main\n")},
		{Path: "src/main.go", Type: TypeFile, Mode: "0644", Size: 13, SHA256: sum("package main\n")},
		{Path: "z.txt", Type: TypeFile, Mode: "0644", Size: 1, SHA256: sum("z")},
	}
	assert.Equal(t, want, m)

	// The same tree on disk gives the same manifest.
	dir := t.TempDir()
	build(t, dir, map[string]node{
		"z.txt": {data: "z"}, "src": {dir: true}, "src/main.go": {data: "package main\n"},
		"src/copy.go": {data: "package main\n"}, "link": {link: "src/main.go"},
	})
	fromDir, err := ManifestDir(t.Context(), dir, Options{})
	require.NoError(t, err)
	assert.Equal(t, want, fromDir)

	// CopyFromContainer of "/" names entries "/<path>".
	m, err = ManifestTar(bytes.NewReader(tarOf(t, dirEnt("/"), reg("/a", "a"), hardlink("/b", "/a"))), "/", Options{})
	require.NoError(t, err)
	assert.Equal(t, Manifest{
		{Path: "a", Type: TypeFile, Mode: "0644", Size: 1, SHA256: sum("a")},
		{Path: "b", Type: TypeFile, Mode: "0644", Size: 1, SHA256: sum("a")},
	}, m)

	// Without a prefix, names are taken as they are ("./" dropped).
	m, err = ManifestTar(bytes.NewReader(tarOf(t, dirEnt("./"), reg("./a", "a"))), "", Options{})
	require.NoError(t, err)
	assert.Equal(t, Manifest{{Path: "a", Type: TypeFile, Mode: "0644", Size: 1, SHA256: sum("a")}}, m)
}

// TestEmptyManifest: an empty workspace has an empty manifest, not none, from a directory
// and from an archive, and goes into a tape as an empty list (a nil End says the end was
// not taken, and compare would not compare it).
func TestEmptyManifest(t *testing.T) {
	fromDir, err := ManifestDir(t.Context(), t.TempDir(), Options{})
	require.NoError(t, err)
	fromTar, err := ManifestTar(bytes.NewReader(tarOf(t, dirEnt("app/"))), "app", Options{})
	require.NoError(t, err)
	for _, m := range []Manifest{fromDir, fromTar, nil} {
		require.NotNil(t, m.TapeEntries())
		require.Empty(t, m.TapeEntries())
	}
}

func TestManifestTarErrors(t *testing.T) {
	for _, tc := range []struct {
		name    string
		entries []tent
		want    string
	}{
		{"outside the prefix", []tent{reg("other/a", "a")}, `entry "other/a" is not under "app"`},
		{"dot dot", []tent{reg("app/../a", "a")}, `entry "app/../a": not a clean relative path`},
		{"hard link to nothing", []tent{hardlink("app/h", "app/missing")}, "hard link h to app/missing: no earlier file"},
		{"hard link to an excluded file", []tent{reg("app/node_modules/x", "x"), hardlink("app/h", "app/node_modules/x")}, "excluded, or missing"},
		{"truncated", nil, "unexpected EOF"},
		{"sparse", []tent{}, `entry "app/big" is a sparse file`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := tarOf(t, tc.entries...)
			switch {
			case tc.entries == nil:
				b = tarOf(t, reg("app/a", "abc"))[:514]
			case len(tc.entries) == 0:
				b = sparseTar(t, "app/big")
			}
			_, err := ManifestTar(bytes.NewReader(b), "app", Options{})
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}
