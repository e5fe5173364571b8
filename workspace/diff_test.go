package workspace

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDiff(t *testing.T) {
	file := func(p, data, mode string) Entry {
		return Entry{Path: p, Type: TypeFile, Mode: mode, Size: int64(len(data)), SHA256: sum(data)}
	}
	dir := func(p string) Entry { return Entry{Path: p, Type: TypeDir, Mode: "0755"} }
	link := func(p, to string) Entry { return Entry{Path: p, Type: TypeSymlink, Mode: "0777", Link: to} }
	base := Manifest{dir("d"), file("d/a", "a", "0644"), file("d/b", "b", "0644"), link("l", "d/a"), file("x", "x", "0755")}

	for _, tc := range []struct {
		name     string
		replayed Manifest
		want     []string
	}{
		{"identical", base, nil},
		{"content", Manifest{dir("d"), file("d/a", "A", "0644"), file("d/b", "b", "0644"), link("l", "d/a"), file("x", "x", "0755")},
			[]string{"d/a: content differs: recorded sha256:" + sum("a")[:12] + ", replayed sha256:" + sum("A")[:12]}},
		{"size and mode", Manifest{dir("d"), file("d/a", "a", "0644"), file("d/b", "bb", "0600"), link("l", "d/a"), file("x", "x", "0755")},
			[]string{"d/b: size differs: recorded 1 byte, replayed 2 bytes", "d/b: mode differs: recorded 0644, replayed 0600"}},
		{"link", Manifest{dir("d"), file("d/a", "a", "0644"), file("d/b", "b", "0644"), link("l", "d/b"), file("x", "x", "0755")},
			[]string{"l: link differs: recorded d/a, replayed d/b"}},
		{"type", Manifest{dir("d"), file("d/a", "a", "0644"), file("d/b", "b", "0644"), file("l", "d/a", "0644"), file("x", "x", "0755")},
			[]string{"l: type differs: recorded symlink to d/a, replayed file 0644, 3 bytes"}},
		{"missing and extra", Manifest{dir("d"), file("d/a", "a", "0644"), link("l", "d/a"), file("new", "n", "0644"), file("x", "x", "0755")},
			[]string{"d/b: missing: recorded file 0644, 1 byte", "new: extra: file 0644, 1 byte"}},
		{"a missing directory is one change", Manifest{link("l", "d/a"), file("x", "x", "0755")},
			[]string{"d: missing: recorded dir 0755"}},
		{"a directory that became a file", Manifest{file("d", "d", "0644"), link("l", "d/a"), file("x", "x", "0755")},
			[]string{"d: type differs: recorded dir 0755, replayed file 0644, 1 byte"}},
		{"empty", nil, []string{"d: missing: recorded dir 0755", "l: missing: recorded symlink to d/a", "x: missing: recorded file 0755, 1 byte"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, c := range Diff(base, tc.replayed) {
				got = append(got, c.String())
			}
			assert.Equal(t, tc.want, got)
		})
	}

	// Kinds and fields, both ways round.
	assert.Equal(t, []Change{{Path: "d", Kind: Extra, Replayed: "dir 0755"}}, Diff(nil, Manifest{dir("d"), file("d/a", "a", "0644")}))
	assert.Equal(t, []Change{{Path: "x", Kind: Differs, What: "mode", Recorded: "0755", Replayed: "0644"}},
		Diff(Manifest{file("x", "x", "0755")}, Manifest{file("x", "x", "0644")}))
	// Unsorted input is sorted first.
	assert.Empty(t, Diff(Manifest{file("b", "b", "0644"), file("a", "a", "0644")}, Manifest{file("a", "a", "0644"), file("b", "b", "0644")}))
}

// TestDiffDirs plants one change of each kind in a copy of a tree and finds each.
func TestDiffDirs(t *testing.T) {
	recorded, replayed := t.TempDir(), t.TempDir()
	build(t, recorded, project)
	build(t, replayed, project)
	m0, err := ManifestDir(t.Context(), recorded, Options{})
	require.NoError(t, err)
	m1, err := ManifestDir(t.Context(), replayed, Options{})
	require.NoError(t, err)
	require.Empty(t, Diff(m0, m1), "identical trees")

	p := func(rel string) string { return filepath.Join(replayed, filepath.FromSlash(rel)) }
	require.NoError(t, os.WriteFile(p("src/main.go"), []byte("package main\n\n"), 0o644)) // one byte more
	require.NoError(t, os.WriteFile(p("a.txt"), []byte("b"), 0o644))                      // one byte changed
	require.NoError(t, os.Chmod(p("bin/run.sh"), 0o644))
	require.NoError(t, os.Remove(p("README.md")))
	require.NoError(t, os.WriteFile(p("new.txt"), []byte("new"), 0o644))
	m1, err = ManifestDir(t.Context(), replayed, Options{})
	require.NoError(t, err)
	var got []string
	for _, c := range Diff(m0, m1) {
		got = append(got, c.String())
	}
	assert.Equal(t, []string{
		"README.md: missing: recorded file 0644, 7 bytes",
		"a.txt: content differs: recorded sha256:" + sum("a")[:12] + ", replayed sha256:" + sum("b")[:12],
		"bin/run.sh: mode differs: recorded 0755, replayed 0644",
		"new.txt: extra: file 0644, 3 bytes",
		"src/main.go: size differs: recorded 13 bytes, replayed 14 bytes",
	}, got)
}
