package opencode_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/executor/harness/opencode"
	"github.com/tapebox/tapebox/internal/testutil/harnesstest"
	"github.com/tapebox/tapebox/tape"
)

type m = map[string]any

func TestPolicy(t *testing.T) {
	p := opencode.New().Policy()
	assert.True(t, p.ParallelToolCalls)
	assert.Equal(t, []string{"task"}, p.SpawningTools)
	assert.Equal(t, "opencode", opencode.New().Name())
}

// The byte-for-byte comparison with the real opencode is executor/conformance's (the
// fixture testdata/opencode.json); these pin the module's own branches, errors included,
// with results seen from opencode 1.18.33.
func TestTools(t *testing.T) {
	s := harnesstest.New(t, opencode.New(), "toolu_1", nil)
	write := func(name, content string) {
		t.Helper()
		p := filepath.Join(s.Dir, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	}
	read := func(name string) string {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(s.Dir, name))
		require.NoError(t, err)
		return string(b)
	}
	write("notes.txt", "alpha\nbeta\ngamma\n")
	write("dup.txt", "same\nsame\n")
	write("sub/a.go", "package x\nfunc A() {}\n")
	p := func(name string) string { return filepath.Join(s.Dir, name) }
	check := func(tool string, input m, want string, isError bool) {
		t.Helper()
		res := s.Run(tool, input, nil)
		assert.Equal(t, want, res.Text(), "%s %v", tool, input)
		assert.Equal(t, isError, res.IsError, "%s %v: is_error", tool, input)
	}
	check("bash", m{"command": "echo hi; echo err >&2", "description": "x"}, "hi\nerr\n", false)
	check("bash", m{"command": "echo about to fail; exit 3"}, "about to fail\n", false)
	check("bash", m{"command": "true"}, "(no output)", false)
	check("bash", m{"command": "pwd", "workdir": "sub"}, p("sub")+"\n", false)
	check("bash", m{"command": "sleep 5", "timeout": 300}, "(no output)\n\n<shell_metadata>\nshell tool terminated command after exceeding timeout 300 ms. If this command is expected to take longer and is not waiting for interactive input, retry with a larger timeout value in milliseconds.\n</shell_metadata>", false)
	check("bash", m{"command": "true", "timeout": -1}, "Invalid timeout value: -1. Timeout must be a positive number.", true)
	check("read", m{"filePath": p("notes.txt")}, "<path>"+p("notes.txt")+"</path>\n<type>file</type>\n<content>\n1: alpha\n2: beta\n3: gamma\n\n(End of file - total 3 lines)\n</content>", false)
	check("read", m{"filePath": p("notes.txt"), "offset": 2, "limit": 1}, "<path>"+p("notes.txt")+"</path>\n<type>file</type>\n<content>\n2: beta\n\n(Showing lines 2-2 of 3. Use offset=3 to continue.)\n</content>", false)
	check("read", m{"filePath": p("notes.txt"), "offset": 9}, "Offset 9 is out of range for this file (3 lines)", true)
	check("read", m{"filePath": p("missing.txt")}, "File not found: "+p("missing.txt"), true)
	check("read", m{"filePath": p("sub")}, "<path>"+p("sub")+"</path>\n<type>directory</type>\n<entries>\na.go\n\n(1 entries)\n</entries>", false)
	check("write", m{"filePath": p("deep/new.txt"), "content": "new file\n"}, "Wrote file successfully.", false)
	assert.Equal(t, "new file\n", read("deep/new.txt"))
	check("edit", m{"filePath": p("notes.txt"), "oldString": "beta", "newString": "BETA"}, "Edit applied successfully.", false)
	assert.Equal(t, "alpha\nBETA\ngamma\n", read("notes.txt"))
	check("edit", m{"filePath": p("notes.txt"), "oldString": "zzz", "newString": "y"}, "Could not find oldString in the file. It must match exactly, including whitespace, indentation, and line endings.", true)
	check("edit", m{"filePath": p("dup.txt"), "oldString": "same", "newString": "other"}, "Found multiple matches for oldString. Provide more surrounding context to make the match unique.", true)
	check("edit", m{"filePath": p("missing.txt"), "oldString": "a", "newString": "b"}, "File "+p("missing.txt")+" not found", true)
	check("edit", m{"filePath": p("notes.txt"), "oldString": "x", "newString": "x"}, "No changes to apply: oldString and newString are identical.", true)
	check("glob", m{"pattern": "**/*.go"}, p("sub/a.go"), false)
	check("glob", m{"pattern": "*.nothing"}, "No files found", false)
	check("grep", m{"pattern": "func"}, "Found 1 matches\n"+p("sub/a.go")+":\n  Line 2: func A() {}\n", false)
	check("grep", m{"pattern": "nomatchzzz"}, "No files found", false)
	check("todowrite", m{"todos": []m{{"content": "one <a> & \"b\"", "status": "pending", "priority": "high"}, {"status": "completed", "content": "two", "priority": "low"}}},
		"[\n  {\n    \"content\": \"one <a> & \\\"b\\\"\",\n    \"status\": \"pending\",\n    \"priority\": \"high\"\n  },\n  {\n    \"content\": \"two\",\n    \"status\": \"completed\",\n    \"priority\": \"low\"\n  }\n]", false)
	check("todowrite", m{"todos": []m{}}, "[]", false)
}

// A tool this module does not perform (webfetch) replays its recorded result, marked as
// copied.
func TestNotRun(t *testing.T) {
	s := harnesstest.New(t, opencode.New(), "toolu_1", nil)
	rec := &tape.ToolResult{Content: []tape.Block{{Type: tape.BlockText, Text: "Transport error (GET https://example.com)"}}, IsError: true}
	res := s.Run("webfetch", m{"url": "https://example.com"}, rec)
	assert.Equal(t, "Transport error (GET https://example.com)", res.Text())
	assert.True(t, res.IsError)
	assert.True(t, res.CopiedFromTape)
}

// The edit matchers on inputs nobody picked: whatever the model sends, an edit either
// fails with one of opencode's messages and leaves the file as it was, or writes a file
// that holds newString.
func FuzzEdit(f *testing.F) {
	f.Add("alpha\nbeta\ngamma\n", "beta", "BETA", false)
	f.Add("a\r\nb\r\n", "a\nb", "x\ny", false)
	f.Add("  x = 1\n  y = 2\n", "x = 1\ny = 2", "z", true)
	f.Add("same\nsame\n", "same", "", true)
	f.Fuzz(func(t *testing.T, content, oldS, newS string, all bool) {
		s := harnesstest.New(t, opencode.New(), "toolu_1", nil)
		path := filepath.Join(s.Dir, "f.txt")
		require.NoError(t, os.WriteFile(path, []byte(content), 0o644))
		res := s.Run("edit", m{"filePath": path, "oldString": oldS, "newString": newS, "replaceAll": all}, nil)
		after, err := os.ReadFile(path)
		require.NoError(t, err)
		if res.IsError {
			assert.Equal(t, content, string(after), "a failed edit leaves the file: %s", res.Text())
			return
		}
		assert.Equal(t, "Edit applied successfully.", res.Text())
		// Sent as JSON, the model's string is valid UTF-8; the file is read as the
		// WHATWG decoder reads it.
		b, err := json.Marshal(newS)
		require.NoError(t, err)
		require.NoError(t, json.Unmarshal(b, &newS))
		want := strings.ReplaceAll(strings.TrimPrefix(newS, "\uFEFF"), "\r\n", "\n")
		if strings.Contains(strings.TrimPrefix(strings.ToValidUTF8(content, "\uFFFD"), "\uFEFF"), "\r\n") {
			want = strings.ReplaceAll(want, "\n", "\r\n")
		}
		assert.Contains(t, string(after), want)
	})
}

// The two matchers of opencode's edit that the module lacked (internal/fidelity's
// generator reaches both): a block whose first and last lines match and whose middle
// lines are similar (block anchor), and one whose middle lines are half the same (context
// aware). Each input here is matched by that matcher alone; before, both edits failed
// with "Could not find oldString".
func TestEditAnchorMatchers(t *testing.T) {
	s := harnesstest.New(t, opencode.New(), "toolu_1", nil)
	p := filepath.Join(s.Dir, "f.txt")
	for _, tc := range []struct{ name, content, old, want string }{
		{"block anchor", "x\nfunc a() {\n  one\n  two\n  three\n}\ny\n", "func a() {\n  onf\n  twp\n  three\n}", "x\nNEW\ny\n"},
		{"context aware", "x\n{\naaaa\nbbbb\ncccc\ndddd\n}\ny\n", "{\naaaa\nbbbb\nzzzz\nyyyy\n}", "x\nNEW\ny\n"},
		{"block anchor, CRLF", "x\r\nfunc a() {\r\n  one\r\n  two\r\n}\r\n", "func a() {\n  onf\n  two\n}", "x\r\nNEW\n"}, // the block's last line takes its \r along, in opencode too
	} {
		require.NoError(t, os.WriteFile(p, []byte(tc.content), 0o644))
		res := s.Run("edit", m{"filePath": p, "oldString": tc.old, "newString": "NEW"}, nil)
		assert.Equal(t, "Edit applied successfully.", res.Text(), tc.name)
		b, err := os.ReadFile(p)
		require.NoError(t, err)
		assert.Equal(t, tc.want, string(b), tc.name)
	}
	// Too far from the anchors' middle: not found, as opencode finds it.
	require.NoError(t, os.WriteFile(p, []byte("{\naaaa\nbbbb\ncccc\n}\n"), 0o644))
	res := s.Run("edit", m{"filePath": p, "oldString": "{\nqqqq\nrrrr\nssss\n}", "newString": "NEW"}, nil)
	assert.Equal(t, "Could not find oldString in the file. It must match exactly, including whitespace, indentation, and line endings.", res.Text())
}

// File system errors are opencode's Effect platform's words, seen from opencode 1.18.33
// (internal/fidelity seeds 1 and 2): a write over a directory, an edit of a read-only file,
// a command in a missing workdir. Before, the module sent Go's.
func TestFileSystemErrors(t *testing.T) {
	if os.Getuid() == 0 {
		t.Skip("root reads and writes a 0444 file") // the permission case; the others below run too
	}
	s := harnesstest.New(t, opencode.New(), "toolu_1", nil)
	ro := filepath.Join(s.Dir, "ro.txt")
	require.NoError(t, os.WriteFile(ro, []byte("alpha\n"), 0o444))
	res := s.Run("edit", m{"filePath": ro, "oldString": "alpha", "newString": "beta"}, nil)
	assert.Equal(t, "PermissionDenied: FileSystem.writeFile ("+ro+")", res.Text())
	assert.True(t, res.IsError)
}

func TestFileSystemErrorsAnyUser(t *testing.T) {
	s := harnesstest.New(t, opencode.New(), "toolu_1", nil)
	dir := filepath.Join(s.Dir, "dir with space")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	res := s.Run("write", m{"filePath": dir, "content": "x"}, nil)
	assert.Equal(t, "BadResource: FileSystem.readFile ("+dir+")", res.Text())
	assert.True(t, res.IsError)
	missing := filepath.Join(s.Dir, "no/such/dir")
	res = s.Run("bash", m{"command": "pwd", "workdir": missing}, nil)
	assert.Equal(t, "NotFound: FileSystem.access ("+missing+")", res.Text())
	assert.True(t, res.IsError)
	// A file under a file: the parent is no directory.
	require.NoError(t, os.WriteFile(filepath.Join(s.Dir, "plain"), []byte("x"), 0o644))
	under := filepath.Join(s.Dir, "plain", "child.txt")
	res = s.Run("write", m{"filePath": under, "content": "x"}, nil)
	assert.Equal(t, "BadResource: FileSystem.writeFile ("+under+")", res.Text())
}

// grep with a path that is a file searches the file's whole directory, as opencode 1.18
// runs ripgrep there (internal/fidelity seed 4); before, only that file.
func TestGrepFilePath(t *testing.T) {
	s := harnesstest.New(t, opencode.New(), "toolu_1", nil)
	a, b := filepath.Join(s.Dir, "a.txt"), filepath.Join(s.Dir, "b.txt")
	require.NoError(t, os.WriteFile(a, nil, 0o644))
	require.NoError(t, os.WriteFile(b, []byte("needle\n"), 0o644))
	res := s.Run("grep", m{"pattern": "needle", "path": a}, nil)
	assert.Equal(t, "Found 1 matches\n"+b+":\n  Line 1: needle\n", res.Text())
}

// glob under a path that is not there, and grep under a directory that is not there: ripgrep
// cannot start, and opencode says only that (internal/fidelity seed 40000); before, Go's
// stat error.
func TestSearchMissingDir(t *testing.T) {
	s := harnesstest.New(t, opencode.New(), "toolu_1", nil)
	res := s.Run("glob", m{"pattern": "**/*", "path": filepath.Join(s.Dir, "missing.txt")}, nil)
	assert.Equal(t, "ripgrep execution failed", res.Text())
	assert.True(t, res.IsError)
	res = s.Run("grep", m{"pattern": "x", "path": filepath.Join(s.Dir, "no/such/file.txt")}, nil)
	assert.Equal(t, "ripgrep execution failed", res.Text())
	assert.True(t, res.IsError)
}

// A pattern ripgrep refuses for a group left open is worded as ripgrep words it
// (internal/fidelity seeds 41000, 41001, 41005); before, Go's parser's words.
func TestGrepUnclosedGroup(t *testing.T) {
	s := harnesstest.New(t, opencode.New(), "toolu_1", nil)
	require.NoError(t, os.WriteFile(filepath.Join(s.Dir, "a.txt"), []byte("x\n"), 0o644))
	res := s.Run("grep", m{"pattern": "(unclosed"}, nil)
	assert.Equal(t, "regex parse error:\n    (unclosed\n    ^\nerror: unclosed group", res.Text())
	assert.True(t, res.IsError)
	res = s.Run("grep", m{"pattern": "a(b)(é(c"}, nil)
	assert.Equal(t, "regex parse error:\n    a(b)(é(c\n          ^\nerror: unclosed group", res.Text())
}

// A match whose line of ripgrep's JSON output passes 65536 bytes fails the search, as
// opencode stops reading ripgrep there (internal/fidelity seed 42007: "é" in a line of
// 20,000 and more); before, the module listed the match. A long line whose record fits
// is listed, cut at 2000 characters.
func TestGrepRecordLimit(t *testing.T) {
	s := harnesstest.New(t, opencode.New(), "toolu_1", nil)
	p := filepath.Join(s.Dir, "long.txt")
	require.NoError(t, os.WriteFile(p, []byte("short é\n"+strings.Repeat("é", 20000)+"\n"), 0o644))
	res := s.Run("grep", m{"pattern": "é"}, nil)
	assert.Equal(t, "Ripgrep JSON record exceeded 65536 bytes", res.Text())
	assert.True(t, res.IsError)
	require.NoError(t, os.WriteFile(p, []byte(strings.Repeat("w", 30000)+" end\n"), 0o644))
	res = s.Run("grep", m{"pattern": "end"}, nil)
	assert.False(t, res.IsError, res.Text())
	assert.True(t, strings.HasPrefix(res.Text(), "Found 1 matches\n"+p+":\n  Line 1: www"), res.Text()[:80])
}

// ripgrep searches a file with a UTF-8 byte order mark from after it: the line shown has
// no BOM and "^" matches there (internal/fidelity seed 42011: a file written with a BOM;
// checked against rg 14); before, the BOM was shown and "^x" missed the first line.
func TestGrepBOM(t *testing.T) {
	s := harnesstest.New(t, opencode.New(), "toolu_1", nil)
	p := filepath.Join(s.Dir, "bom.txt")
	require.NoError(t, os.WriteFile(p, []byte("\uFEFFxhéllo\nx2\n"), 0o644))
	res := s.Run("grep", m{"pattern": "^x"}, nil)
	assert.Equal(t, "Found 2 matches\n"+p+":\n  Line 1: xhéllo\n\n  Line 2: x2\n", res.Text())
}
