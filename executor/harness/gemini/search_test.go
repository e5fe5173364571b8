package gemini_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/executor/harness/gemini"
	"github.com/tapebox/tapebox/internal/testutil/harnesstest"
	"github.com/tapebox/tapebox/tape"
)

// files writes name → content under dir, each a second older than the one before, so
// that their modification times order them (the first newest).
func files(t *testing.T, dir string, names ...string) {
	t.Helper()
	at := time.Now()
	for i := 0; i+1 < len(names); i += 2 {
		p := filepath.Join(dir, names[i])
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(names[i+1]), 0o644))
		at = at.Add(-time.Second)
		require.NoError(t, os.Chtimes(p, at, at))
	}
}

func recorded(text string) *tape.ToolResult {
	return &tape.ToolResult{Content: []tape.Block{{Type: tape.BlockText, Text: text}}}
}

// TestGlob pins the glob tool's shapes as Gemini CLI 0.61.0 words them: files newest
// first, dot files and every depth included, case folded unless case_sensitive, the
// directories it never enters left out, none found, and its errors.
func TestGlob(t *testing.T) {
	s := harnesstest.New(t, gemini.New(), "call_1", nil)
	dir := s.Dir
	files(t, dir, "b.txt", "b", "a.TXT", "a", "sub/c.txt", "c", ".dot.txt", "d", "node_modules/m.txt", "m", "x.go", "x", "dist/y.txt", "y")
	require.NoError(t, os.Symlink("b.txt", filepath.Join(dir, "link.txt")))
	check := func(input m, want string, isError bool) {
		t.Helper()
		res := s.Run("glob", input, nil)
		assert.Equal(t, want, res.Text(), "%v", input)
		assert.Equal(t, isError, res.IsError, "%v: is_error", input)
		assert.False(t, res.CopiedFromTape, "%v: performed", input)
	}
	found := func(n, pattern, within string, paths ...string) string {
		return "Found " + n + " file(s) matching \"" + pattern + "\" within " + within + ", sorted by modification time (newest first):\n" +
			dir + "/" + strings.Join(paths, "\n"+dir+"/")
	}
	check(m{"pattern": "*.txt"}, found("3", "*.txt", dir, "b.txt", "a.TXT", ".dot.txt"), false)
	check(m{"pattern": "*.txt", "case_sensitive": true}, found("2", "*.txt", dir, "b.txt", ".dot.txt"), false)
	check(m{"pattern": "**/*.txt"}, found("5", "**/*.txt", dir, "b.txt", "a.TXT", "sub/c.txt", ".dot.txt", "dist/y.txt"), false)
	check(m{"pattern": "*", "dir_path": "sub"}, found("1", "*", dir+"/sub", "sub/c.txt"), false)
	check(m{"pattern": "*.zzz"}, `No files found matching pattern "*.zzz" within `+dir, false)
	check(m{"pattern": "*", "dir_path": "nowhere"}, "Search path does not exist "+dir+"/nowhere", true)
	check(m{"pattern": "*", "dir_path": "b.txt"}, "Search path is not a directory: "+dir+"/b.txt", true)
	check(m{"pattern": "  "}, "The 'pattern' parameter cannot be empty.", true)

	// Files with the same modification time keep the recording's order.
	rec := recorded(found("3", "*.txt", dir, ".dot.txt", "a.TXT", "b.txt"))
	assert.Equal(t, rec.Text(), s.Run("glob", m{"pattern": "*.txt"}, rec).Text())

	// Outside a git repository a .gitignore is a file like any other, to the CLI and to
	// ripgrep; in one, its rules apply and the recording is copied.
	files(t, dir, ".gitignore", "b.txt\n")
	res := s.Run("glob", m{"pattern": "b.*"}, recorded("recorded"))
	assert.Equal(t, found("1", "b.*", dir, "b.txt"), res.Text())
	require.NoError(t, os.Mkdir(filepath.Join(dir, ".git"), 0o755))
	res = s.Run("glob", m{"pattern": "b.*"}, recorded("recorded"))
	assert.True(t, res.CopiedFromTape, "a .gitignore in a git repository")
	require.NoError(t, os.Remove(filepath.Join(dir, ".git")))
	require.NoError(t, os.Remove(filepath.Join(dir, ".gitignore")))

	// An ignore file the CLI's file discovery would apply: the recording is copied.
	files(t, dir, ".geminiignore", "b.txt\n")
	res = s.Run("glob", m{"pattern": "*.txt"}, recorded("recorded"))
	assert.True(t, res.CopiedFromTape)
	assert.Equal(t, "recorded", res.Text())
}

// TestGrepSearch pins grep_search's shapes (ripgrep's lines, the CLI's wording): matches
// with the automatic context, names only, none found, the limit, the include filter, the
// exclude pattern, files ripgrep leaves out (hidden, binary, excluded directories), a
// file as the path, and a missing path.
func TestGrepSearch(t *testing.T) {
	s := harnesstest.New(t, gemini.New(), "call_1", nil)
	dir := s.Dir
	var many strings.Builder
	for i := 1; i <= 120; i++ {
		many.WriteString("hit\n")
	}
	files(t, dir, "a.txt", "one\nAlpha two  \nthree\n", "b.md", "alpha\r\nbeta\r\n", ".h.txt", "alpha\n", "bin.dat", "qqq\x00alpha\n",
		"dist/d.txt", "alpha\n", "sub/many.txt", many.String(), "x.log", "alpha\n")
	check := func(input m, want string) {
		t.Helper()
		res := s.Run("grep_search", input, nil)
		assert.Equal(t, want, res.Text(), "%v", input)
		assert.False(t, res.IsError, "%v: is_error", input)
		assert.False(t, res.CopiedFromTape, "%v: performed", input)
	}
	// Two matches: fifteen lines of context around each.
	check(m{"pattern": "alpha"}, "Found 2 matches for pattern \"alpha\" in path \".\":\n---\nFile: a.txt\nL1- one\nL2: Alpha two\nL3- three\n---\nFile: b.md\nL1: alpha\nL2- beta\n---")
	check(m{"pattern": "alpha", "case_sensitive": true}, "Found 1 match for pattern \"alpha\" in path \".\":\n---\nFile: b.md\nL1: alpha\nL2- beta\n---")
	check(m{"pattern": "alpha", "names_only": true}, "Found 2 files with matches for pattern \"alpha\" in path \".\":\na.txt\nb.md")
	check(m{"pattern": "alpha", "include_pattern": "*.md"}, "Found 1 match for pattern \"alpha\" in path \".\" (filter: \"*.md\"):\n---\nFile: b.md\nL1: alpha\nL2- beta\n---")
	check(m{"pattern": "alpha", "context": 0}, "Found 2 matches for pattern \"alpha\" in path \".\":\n---\nFile: a.txt\nL2: Alpha two\n---\nFile: b.md\nL1: alpha\n---")
	check(m{"pattern": "alpha|three", "exclude_pattern": "two", "context": 0}, "Found 2 matches for pattern \"alpha|three\" in path \".\":\n---\nFile: a.txt\nL3: three\n---\nFile: b.md\nL1: alpha\n---")
	check(m{"pattern": "zzz"}, "No matches found for pattern \"zzz\" in path \".\".")
	check(m{"pattern": "zzz", "include_pattern": "*.md"}, "No matches found for pattern \"zzz\" in path \".\" (filter: \"*.md\").")
	check(m{"pattern": "alpha", "dir_path": "a.txt", "context": 0}, "Found 1 match for pattern \"alpha\" in path \"a.txt\":\n---\nFile: a.txt\nL2: Alpha two\n---")
	check(m{"pattern": "alpha", "no_ignore": true, "names_only": true}, "Found 4 files with matches for pattern \"alpha\" in path \".\":\na.txt\nb.md\ndist/d.txt\nx.log")

	hits := strings.Repeat("L1: hit\n", 0)
	var b strings.Builder
	for i := 1; i <= 100; i++ {
		b.WriteString("L" + itoa(i) + ": hit\n")
	}
	hits = b.String()
	check(m{"pattern": "hit"}, "Found 100 matches for pattern \"hit\" in path \".\" (results limited to 100 matches for performance):\n---\nFile: sub/many.txt\n"+hits+"---")
	check(m{"pattern": "hit", "total_max_matches": 2, "names_only": true}, "Found 1 files with matches for pattern \"hit\" in path \".\" (results limited to 2 matches for performance):\nsub/many.txt")
	// names_only past the limit: the recording lists its files sorted, not in ripgrep's
	// order; the file with the most matches goes last, so the recorded three are found.
	files(t, dir, "n/a.txt", strings.Repeat("hit\n", 150), "n/b.txt", "hit\nhit\n", "n/c.txt", "hit\nhit\nhit\n", "n/d.txt", "hit\n")
	three := "Found 3 files with matches for pattern \"hit\" in path \"n\" (results limited to 100 matches for performance):\na.txt\nb.txt\nc.txt"
	res := s.Run("grep_search", m{"pattern": "hit", "dir_path": "n", "names_only": true}, recorded(three))
	assert.Equal(t, three, res.Text())
	assert.False(t, res.CopiedFromTape)
	require.NoError(t, os.RemoveAll(filepath.Join(dir, "n")))
	// --max-count with context, as ripgrep 13 prints it: the last match's after-context
	// shows a matching line as a match, and goes no further.
	files(t, dir, "m/m.txt", "a1\nfoo\nb\nfoo\nc\nd\nfoo\ne\n")
	check(m{"pattern": "foo", "dir_path": "m", "max_matches_per_file": 1, "context": 2},
		"Found 2 matches for pattern \"foo\" in path \"m\":\n---\nFile: m.txt\nL1- a1\nL2: foo\nL3- b\nL4: foo\n---")
	check(m{"pattern": "foo", "dir_path": "m", "max_matches_per_file": 2, "context": 0},
		"Found 2 matches for pattern \"foo\" in path \"m\":\n---\nFile: m.txt\nL2: foo\nL4: foo\n---")
	res = s.Run("grep_search", m{"pattern": "x", "dir_path": "nowhere"}, nil)
	assert.Equal(t, "Path does not exist: "+dir+"/nowhere", res.Text())
	assert.True(t, res.IsError)

	// A binary file with a match before its NUL byte: ripgrep prints it or not by its
	// buffers; the recording is copied.
	files(t, dir, "sub/bin2.dat", "hit\x00")
	res = s.Run("grep_search", m{"pattern": "hit"}, recorded("recorded"))
	assert.True(t, res.CopiedFromTape)
	require.NoError(t, os.Remove(filepath.Join(dir, "sub/bin2.dat")))

	// Past the limit, the files the recording lists come first (ripgrep's threads order
	// them from run to run).
	files(t, dir, "sub/more.txt", strings.Repeat("hit\n", 3))
	rec := recorded("Found 2 matches for pattern \"hit\" in path \".\" (results limited to 2 matches for performance):\n---\nFile: sub/more.txt\nL1: hit\nL2: hit\n---")
	assert.Equal(t, rec.Text(), s.Run("grep_search", m{"pattern": "hit", "total_max_matches": 2}, rec).Text())
}

func itoa(i int) string {
	if i < 10 {
		return string(rune('0' + i))
	}
	return itoa(i/10) + string(rune('0'+i%10))
}

// TestWriteTodos: the list echoed back, numbered, or cleared.
func TestWriteTodos(t *testing.T) {
	s := harnesstest.New(t, gemini.New(), "call_1", nil)
	res := s.Run("write_todos", m{"todos": []m{{"description": "step one", "status": "in_progress"}, {"description": "step two", "status": "pending"}}}, nil)
	assert.Equal(t, "Successfully updated the todo list. The current list is now:\n1. [in_progress] step one\n2. [pending] step two", res.Text())
	assert.False(t, res.CopiedFromTape)
	assert.Equal(t, "Successfully cleared the todo list.", s.Run("write_todos", m{"todos": []m{}}, nil).Text())
}
