package action

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// tree writes files (path -> content) under a new directory, each a second older than
// the next in the given order.
func tree(t *testing.T, files [][2]string) string {
	t.Helper()
	root := t.TempDir()
	base := time.Now().Add(-time.Hour)
	for i, f := range files {
		p := filepath.Join(root, f[0])
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(f[1]), 0o644))
		mt := base.Add(time.Duration(i) * time.Second)
		require.NoError(t, os.Chtimes(p, mt, mt))
	}
	return root
}

func rels(fs []FileEntry) []string {
	out := []string{}
	for _, f := range fs {
		out = append(out, f.Rel)
	}
	return out
}

func TestGlobRegexp(t *testing.T) {
	tests := []struct {
		glob  string
		match []string
		miss  []string
	}{
		{"*.go", []string{"a.go", "x/y/b.go"}, []string{"a.gox", "go"}},
		{"src/*.go", []string{"src/a.go"}, []string{"src/x/a.go", "y/src/a.go"}},
		{"**/test/*.py", []string{"test/a.py", "a/b/test/c.py"}, []string{"test/x/a.py"}},
		{"*.{ts,tsx}", []string{"a.ts", "b.tsx"}, []string{"c.js"}},
		{"[ab].txt", []string{"a.txt", "b.txt"}, []string{"c.txt"}},
		{"[!ab].txt", []string{"c.txt"}, []string{"a.txt"}},
		{"docs/**", []string{"docs/a", "docs/x/y"}, []string{"doc/a"}},
		{"a?c", []string{"abc"}, []string{"a/c", "abbc"}},
	}
	for _, tt := range tests {
		p, err := compilePattern(tt.glob, false)
		require.NoError(t, err, tt.glob)
		for _, m := range tt.match {
			assert.True(t, p.re.MatchString(m), "%s should match %s", tt.glob, m)
		}
		for _, m := range tt.miss {
			assert.False(t, p.re.MatchString(m), "%s should not match %s", tt.glob, m)
		}
	}
	_, err := compilePattern("{a,b", false)
	require.Error(t, err)
}

func TestGlob(t *testing.T) {
	root := tree(t, [][2]string{
		{"b.go", ""}, {"a.go", ""}, {"sub/c.go", ""}, {".hidden/d.go", ""}, {"x.txt", ""},
		{"ignored/e.go", ""}, {".gitignore", "ignored/\n"},
	})
	require.NoError(t, os.Mkdir(filepath.Join(root, ".git"), 0o755))
	got, err := Glob(t.Context(), GlobRequest{Root: root, Pattern: "**/*.go"})
	require.NoError(t, err)
	assert.Equal(t, []string{"b.go", "a.go", "sub/c.go"}, rels(got), "oldest first; hidden and ignored left out")

	// A glob that names hidden entries lists them without Hidden, as rg --glob does
	// (opencode's glob "**/.*", internal/fidelity seed 41000).
	got, err = Glob(t.Context(), GlobRequest{Root: root, Pattern: "**/.*", Walk: WalkOptions{SkipDirs: []string{".git"}}})
	require.NoError(t, err)
	assert.Equal(t, []string{".gitignore"}, rels(got))
	got, err = Glob(t.Context(), GlobRequest{Root: root, Pattern: ".hidden/*"})
	require.NoError(t, err)
	assert.Empty(t, rels(got), "a hidden directory the glob does not name is not entered (rg 14 agrees)")

	got, err = Glob(t.Context(), GlobRequest{Root: root, Pattern: "*.go", Walk: WalkOptions{Hidden: true, NoIgnore: true}})
	require.NoError(t, err)
	assert.Equal(t, []string{"b.go", "a.go", "sub/c.go", ".hidden/d.go", "ignored/e.go"}, rels(got))

	got, err = Glob(t.Context(), GlobRequest{Pattern: filepath.Join(root, "sub", "*.go")})
	require.NoError(t, err)
	assert.Equal(t, []string{"c.go"}, rels(got), "absolute pattern")

	// A glob's non-ASCII characters match themselves: before, each of their bytes was
	// quoted as a character of its own ("é" as "Ã©"), and "*é*" matched nothing (found by
	// executor/harness/gemini TestGlobAgainstNodeGlob).
	root = tree(t, [][2]string{{"é-notes.txt", ""}, {"e.txt", ""}, {"日本/語.md", ""}})
	got, err = Glob(t.Context(), GlobRequest{Root: root, Pattern: "**/*é*"})
	require.NoError(t, err)
	assert.Equal(t, []string{"é-notes.txt"}, rels(got))
	got, err = Glob(t.Context(), GlobRequest{Root: root, Pattern: "日本/\\語.md"})
	require.NoError(t, err)
	assert.Equal(t, []string{"日本/語.md"}, rels(got), "an escaped non-ASCII character")
}

func TestGrep(t *testing.T) {
	root := tree(t, [][2]string{
		{"a.txt", "one\nfoo two\nthree\nfour\nfive foo\n"},
		{"b.go", "package b\n// FOO\n"},
		{"bin.dat", "foo\x00bar"},
		{".git/config", "foo"},
		{".env", "foo=1\n"},
		{"vendor/v.txt", "foo\n"},
		{".ignore", "vendor/\n"},
		{"empty/none.txt", ""},
		{"empty/nl.txt", "\n"},
	})
	walk := WalkOptions{Hidden: true, SkipDirs: []string{".git"}}
	tests := []struct {
		name  string
		req   GrepRequest
		files []string
		lines map[string][]GrepLine
	}{
		{"plain", GrepRequest{Pattern: "foo"}, []string{".env", "a.txt"}, map[string][]GrepLine{
			"a.txt": {{N: 2, Text: "foo two", Match: true}, {N: 5, Text: "five foo", Match: true}}}},
		{"ignore case", GrepRequest{Pattern: "foo", IgnoreCase: true, Walk: WalkOptions{Globs: []string{"*.go"}}}, []string{"b.go"}, nil},
		{"type", GrepRequest{Pattern: "(?i)foo", Type: "go"}, []string{"b.go"}, nil},
		{"context", GrepRequest{Pattern: "two", Before: 1, After: 1, Walk: WalkOptions{Globs: []string{"a.txt"}}}, []string{"a.txt"}, map[string][]GrepLine{
			"a.txt": {{N: 1, Text: "one"}, {N: 2, Text: "foo two", Match: true}, {N: 3, Text: "three"}}}},
		{"only matching", GrepRequest{Pattern: "f[a-z]+", OnlyMatching: true, Walk: WalkOptions{Globs: []string{"a.txt"}}}, []string{"a.txt"}, map[string][]GrepLine{
			"a.txt": {{N: 2, Text: "foo", Match: true}, {N: 4, Text: "four", Match: true}, {N: 5, Text: "five", Match: true}, {N: 5, Text: "foo", Match: true}}}},
		// ripgrep: an empty file has no line for ^$; a file of one line end has one.
		{"empty file", GrepRequest{Pattern: "^$", Walk: WalkOptions{Globs: []string{"empty/*"}}}, []string{"empty/nl.txt"}, map[string][]GrepLine{
			"empty/nl.txt": {{N: 1, Text: "", Match: true}}}},
		{"multiline", GrepRequest{Pattern: "two.three", Multiline: true}, []string{"a.txt"}, map[string][]GrepLine{
			"a.txt": {{N: 2, Text: "foo two", Match: true}, {N: 3, Text: "three", Match: true}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.req.Root = root
			if tt.req.Walk.Globs == nil {
				tt.req.Walk = walk
			} else {
				tt.req.Walk.Hidden, tt.req.Walk.SkipDirs = true, walk.SkipDirs
			}
			got, err := Grep(t.Context(), tt.req)
			require.NoError(t, err)
			var names []string
			for _, f := range got {
				names = append(names, f.Rel)
				if want, ok := tt.lines[f.Rel]; ok {
					assert.Equal(t, want, f.Lines)
				}
			}
			assert.Equal(t, tt.files, names)
		})
	}
	_, err := Grep(t.Context(), GrepRequest{Root: root, Pattern: "("})
	require.ErrorContains(t, err, "regex parse error")
	_, err = Grep(t.Context(), GrepRequest{Root: root, Pattern: "x", Type: "nosuch"})
	require.ErrorContains(t, err, "unrecognized file type")
	got, err := Grep(t.Context(), GrepRequest{Root: filepath.Join(root, "a.txt"), Pattern: "three"})
	require.NoError(t, err)
	require.Len(t, got, 1)
	assert.Equal(t, 1, got[0].Count)
}

// TestLastMatchWins: in an ignore file and among --glob filters the last matching pattern
// decides, a directory-only pattern passes files by, and a whitelist glob skips the files
// it does not match but not directories (which are walked into).
func TestLastMatchWins(t *testing.T) {
	var ps []*pattern
	for _, line := range []string{"*.log", "!keep.log", "build/", "deep/*.tmp"} {
		p, err := compilePattern(line, false)
		require.NoError(t, err)
		ps = append(ps, p)
	}
	ignore := (&ignoreFile{patterns: ps}).match
	globs, err := compileOverrides([]string{"*.go", "!vendor/", "!*_test.go"}, false)
	require.NoError(t, err)
	exclude, err := compileOverrides([]string{"!*.md"}, false)
	require.NoError(t, err)
	for _, tc := range []struct {
		rules string
		match func(rel string, isDir bool) int
		rel   string
		isDir bool
		want  int
	}{
		{"ignore file", ignore, "a.log", false, 1},
		{"ignore file", ignore, "sub/a.log", false, 1},
		{"ignore file", ignore, "keep.log", false, -1},
		{"ignore file", ignore, "sub/keep.log", false, -1},
		{"ignore file", ignore, "build", true, 1},
		{"ignore file", ignore, "build", false, 0},
		{"ignore file", ignore, "deep/x.tmp", false, 1},
		{"ignore file", ignore, "x.tmp", false, 0},
		{"ignore file", ignore, "a.go", false, 0},
		{"globs", globs.decide, "a.go", false, 1},
		{"globs", globs.decide, "a_test.go", false, -1},
		{"globs", globs.decide, "vendor", true, -1},
		{"globs", globs.decide, "src", true, 0},
		{"globs", globs.decide, "x.go", true, 0},
		{"globs", globs.decide, "a.txt", false, -1},
		{"exclusions only", exclude.decide, "a.md", false, -1},
		{"exclusions only", exclude.decide, "a.txt", false, 0},
		{"no globs", (*overrides)(nil).decide, "a.txt", false, 0},
	} {
		assert.Equal(t, tc.want, tc.match(tc.rel, tc.isDir), "%s: %s (dir %v)", tc.rules, tc.rel, tc.isDir)
	}
}
