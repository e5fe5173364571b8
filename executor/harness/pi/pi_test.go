package pi_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/executor/harness"
	"github.com/tapebox/tapebox/executor/harness/pi"
	"github.com/tapebox/tapebox/internal/testutil/harnesstest"
	"github.com/tapebox/tapebox/tape"
)

func TestPolicy(t *testing.T) {
	p := pi.New().Policy()
	assert.True(t, p.ParallelToolCalls)
	assert.Equal(t, []string{}, p.SpawningTools)
	assert.Equal(t, "pi", pi.New().Name())
}

// The byte-for-byte comparison with the real Pi is executor/conformance's; these pin the
// module's own branches, errors included.
func TestTools(t *testing.T) {
	s := harnesstest.New(t, pi.New(), "toolu_1", nil)
	write := func(name, content string) {
		require.NoError(t, os.WriteFile(filepath.Join(s.Dir, name), []byte(content), 0o644))
	}
	write("notes.txt", "alpha\nbeta\ngamma\n")
	write("same.txt", "x\nx\n")
	write("crlf.txt", "one\r\ntwo\r\n")
	require.NoError(t, os.Mkdir(filepath.Join(s.Dir, "sub"), 0o755))
	// check runs a call and compares its text and is_error with Pi's.
	check := func(tool string, input m, want string, isError bool) {
		t.Helper()
		res := s.Run(tool, input, nil)
		assert.Equal(t, want, res.Text(), "%s %v", tool, input)
		assert.Equal(t, isError, res.IsError, "%s %v: is_error", tool, input)
	}
	check("read", m{"path": "notes.txt"}, "alpha\nbeta\ngamma\n", false)
	check("read", m{"path": "@notes.txt", "offset": 2, "limit": 1}, "beta\n\n[2 more lines in file. Use offset=3 to continue.]", false)
	check("read", m{"path": "notes.txt", "offset": "3"}, "gamma\n", false)
	// node: ["alpha","beta","gamma",""].slice(0, -1), and Pi's arithmetic on it
	check("read", m{"path": "notes.txt", "limit": -1}, "alpha\nbeta\ngamma\n\n[5 more lines in file. Use offset=0 to continue.]", false)
	check("read", m{"path": "notes.txt", "limit": 0}, "\n\n[4 more lines in file. Use offset=1 to continue.]", false)
	check("read", m{"path": "notes.txt", "offset": 9}, "Offset 9 is beyond end of file (4 lines total)", true)
	check("read", m{"path": "missing.txt"}, "ENOENT: no such file or directory, access '"+s.Dir+"/missing.txt'", true)
	check("read", m{"path": "sub"}, "EISDIR: illegal operation on a directory, read", true)
	check("read", m{}, "Validation failed for tool \"read\":\n  - path: must have required properties path\n\nReceived arguments:\n{}", true)
	check("read", m{"path": "notes.txt", "limit": "many"}, "Validation failed for tool \"read\":\n  - limit: must be number\n\nReceived arguments:\n{\n  \"limit\": \"many\",\n  \"path\": \"notes.txt\"\n}", true)
	check("write", m{"path": "deep/er/new.txt", "content": "héllo 🙂\n"}, "Successfully wrote 9 bytes to deep/er/new.txt", false)
	check("write", m{"path": "sub", "content": "x"}, "EISDIR: illegal operation on a directory, open '"+s.Dir+"/sub'", true)
	check("write", m{"path": "notes.txt/x", "content": "x"}, "EEXIST: file already exists, mkdir '"+s.Dir+"/notes.txt'", true)
	check("edit", m{"path": "notes.txt", "edits": []m{{"oldText": "beta", "newText": "BETA"}}}, "Successfully replaced 1 block(s) in notes.txt.", false)
	check("edit", m{"path": "notes.txt", "oldText": "gamma", "newText": "GAMMA"}, "Successfully replaced 1 block(s) in notes.txt.", false)
	check("edit", m{"path": "notes.txt", "edits": `[{"oldText":"alpha","newText":"ALPHA"}]`}, "Successfully replaced 1 block(s) in notes.txt.", false)
	check("edit", m{"path": "notes.txt", "edits": []m{{"oldText": "nope", "newText": "x"}}}, "Could not find the exact text in notes.txt. The old text must match exactly including all whitespace and newlines.", true)
	check("edit", m{"path": "same.txt", "edits": []m{{"oldText": "x", "newText": "y"}}}, "Found 2 occurrences of the text in same.txt. The text must be unique. Please provide more context to make it unique.", true)
	check("edit", m{"path": "notes.txt", "edits": []m{{"oldText": "ALPHA", "newText": "a"}, {"oldText": "ALPHA\nBETA", "newText": "b"}}}, "edits[0] and edits[1] overlap in notes.txt. Merge them into one edit or target disjoint regions.", true)
	check("edit", m{"path": "notes.txt", "edits": []m{{"oldText": "ALPHA", "newText": "ALPHA"}}}, "No changes made to notes.txt. The replacement produced identical content. This might indicate an issue with special characters or the text not existing as expected.", true)
	check("edit", m{"path": "notes.txt", "edits": []m{}}, "Edit tool input is invalid. edits must contain at least one replacement.", true)
	check("edit", m{"path": "gone.txt", "edits": []m{{"oldText": "a", "newText": "b"}}}, "Could not edit file: gone.txt. Error code: ENOENT.", true)
	check("edit", m{"path": "crlf.txt", "edits": []m{{"oldText": "one\ntwo", "newText": "1\n2"}}}, "Successfully replaced 1 block(s) in crlf.txt.", false)
	check("edit", m{"path": "x", "edits": []m{{"oldText": "a"}}}, "Validation failed for tool \"edit\":\n  - edits.0.newText: must have required properties newText\n\nReceived arguments:\n{\n  \"edits\": [\n    {\n      \"oldText\": \"a\"\n    }\n  ],\n  \"path\": \"x\"\n}", true)
	check("bash", m{"command": "echo out; echo err >&2"}, "out\nerr\n", false)
	check("bash", m{"command": "true"}, "(no output)", false)
	check("bash", m{"command": "echo bad; exit 3"}, "bad\n\n\nCommand exited with code 3", true)
	check("bash", m{"command": "exit 1"}, "(no output)\n\nCommand exited with code 1", true)
	check("bash", m{"command": "echo start; sleep 5", "timeout": 0.5}, "start\n\n\nCommand timed out after 0.5 seconds", true)
	check("ls", m{"path": "sub"}, "(empty directory)", false)
	check("ls", m{"path": "nowhere"}, "Path not found: "+s.Dir+"/nowhere", true)
	check("ls", m{"path": "notes.txt"}, "Not a directory: "+s.Dir+"/notes.txt", true)
	got, err := os.ReadFile(filepath.Join(s.Dir, "notes.txt"))
	require.NoError(t, err)
	assert.Equal(t, "ALPHA\nBETA\nGAMMA\n", string(got))
	got, err = os.ReadFile(filepath.Join(s.Dir, "crlf.txt"))
	require.NoError(t, err)
	assert.Equal(t, "1\r\n2\r\n", string(got), "CRLF line ends kept")
}

func TestLsOrder(t *testing.T) {
	s := harnesstest.New(t, pi.New(), "toolu_1", nil)
	for _, n := range []string{"b.txt", "a_b", "a.b", "A-c", "a1", "ab", ".hidden", "Zed"} {
		require.NoError(t, os.WriteFile(filepath.Join(s.Dir, n), nil, 0o644))
	}
	require.NoError(t, os.Mkdir(filepath.Join(s.Dir, "dir"), 0o755))
	require.NoError(t, os.Symlink("nowhere", filepath.Join(s.Dir, "dangling")))
	// localeCompare's order (node -e: a_b before A-c before a.b), a dangling link left out.
	assert.Equal(t, ".hidden\na_b\nA-c\na.b\na1\nab\nb.txt\ndir/\nZed", s.Text("ls", m{}, nil))
	assert.Equal(t, ".hidden\na_b\n\n[2 entries limit reached. Use limit=4 for more]", s.Text("ls", m{"limit": 2}, nil))
}

func TestTruncation(t *testing.T) {
	s := harnesstest.New(t, pi.New(), "toolu_1", nil)
	var b strings.Builder
	for i := 1; i <= 2500; i++ {
		b.WriteString("line\n")
	}
	require.NoError(t, os.WriteFile(filepath.Join(s.Dir, "many.txt"), []byte(b.String()), 0o644))
	got := s.Text("read", m{"path": "many.txt"}, nil)
	assert.True(t, strings.HasSuffix(got, "line\n\n[Showing lines 1-2000 of 2501. Use offset=2001 to continue.]"), got[len(got)-100:])
	require.NoError(t, os.WriteFile(filepath.Join(s.Dir, "wide.txt"), []byte(strings.Repeat("w", 60000)), 0o644))
	assert.Equal(t, "[Line 1 is 58.6KB, exceeds 50.0KB limit. Use bash: sed -n '1p' wide.txt | head -c 51200]", s.Text("read", m{"path": "wide.txt"}, nil))

	res := s.Run("bash", m{"command": "seq 1 3000"}, nil)
	re := regexp.MustCompile(`\n\n\[Showing lines 1002-3001 of 3001\. Full output: (\S+\.log)\]$`)
	mm := re.FindStringSubmatch(res.Text())
	require.NotNil(t, mm, res.Text()[len(res.Text())-120:])
	full, err := os.ReadFile(mm[1])
	require.NoError(t, err)
	assert.Equal(t, 3000, strings.Count(string(full), "\n"), "the whole output is kept")
	assert.False(t, strings.HasPrefix(mm[1], s.Dir), "not in the workspace")
}

// TestImmediate: edit and write run as they arrive (Pi orders the changes to one file by
// call), bash, read and ls concurrently, the rest replay at once.
func TestImmediate(t *testing.T) {
	env, err := harness.NewEnv(t.TempDir(), nil, nil)
	require.NoError(t, err)
	s := pi.New().NewSession(env)
	im, ok := s.(harness.Immediate)
	require.True(t, ok)
	for tool, want := range map[string]bool{"edit": true, "write": true, "find": true, "grep": false, "bash": false, "read": false, "ls": false} {
		assert.Equal(t, want, im.Immediate(tape.ToolCall{Name: tool}), tool)
	}
}

func TestGrep(t *testing.T) {
	s := harnesstest.New(t, pi.New(), "toolu_1", nil)
	for name, content := range map[string]string{"a.txt": "alpha\nbeta\r\n", "sub/b.txt": "beta\ngamma\n", "sub/c.md": "one\ntwo\nbeta three\nfour\n"} {
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(s.Dir, name)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(s.Dir, name), []byte(content), 0o644))
	}
	check := func(input m, rec *tape.ToolResult, want string, isError bool) {
		t.Helper()
		res := s.Run("grep", input, rec)
		assert.Equal(t, want, res.Text(), "%v", input)
		assert.Equal(t, isError, res.IsError, "%v: is_error", input)
	}
	check(m{"pattern": "beta"}, nil, "a.txt:2: beta\nsub/b.txt:1: beta\nsub/c.md:3: beta three", false)
	check(m{"pattern": "beta", "path": "sub/c.md", "context": 1}, nil, "c.md-2- two\nc.md:3: beta three\nc.md-4- four", false)
	check(m{"pattern": "BETA", "ignoreCase": true, "glob": "*.md"}, nil, "sub/c.md:3: beta three", false)
	check(m{"pattern": "a.", "literal": "true", "limit": 1}, nil, "No matches found", false)
	check(m{"pattern": "beta", "limit": 2}, nil, "a.txt:2: beta\nsub/b.txt:1: beta\n\n[2 matches limit reached. Use limit=4 for more, or refine pattern]", false)
	check(m{"pattern": "x", "path": "nowhere"}, nil, "Path not found: "+s.Dir+"/nowhere", true)
	// ripgrep's order, where the recording has it.
	rec := &tape.ToolResult{Content: []tape.Block{{Type: tape.BlockText, Text: "sub/c.md:3: beta three\na.txt:2: beta\nsub/b.txt:1: beta"}}}
	check(m{"pattern": "beta"}, rec, "sub/c.md:3: beta three\na.txt:2: beta\nsub/b.txt:1: beta", false)
	// Under a limit, which matches fill it is ripgrep's order too: the recording's choice,
	// when its lines are matches here (it showed the first matches of the walk instead).
	rec = &tape.ToolResult{Content: []tape.Block{{Type: tape.BlockText, Text: "sub/c.md:3: beta three\nsub/b.txt:1: beta\n\n[2 matches limit reached. Use limit=4 for more, or refine pattern]"}}}
	check(m{"pattern": "beta", "limit": 2}, rec, "sub/c.md:3: beta three\nsub/b.txt:1: beta\n\n[2 matches limit reached. Use limit=4 for more, or refine pattern]", false)
	rec = &tape.ToolResult{Content: []tape.Block{{Type: tape.BlockText, Text: "sub/c.md-2- two\nsub/c.md:3: beta three\nsub/c.md-4- four\n\n[1 matches limit reached. Use limit=2 for more, or refine pattern]"}}}
	check(m{"pattern": "beta", "limit": 1, "context": 1}, rec, "sub/c.md-2- two\nsub/c.md:3: beta three\nsub/c.md-4- four\n\n[1 matches limit reached. Use limit=2 for more, or refine pattern]", false)
	// A recorded line that is no match here is not copied: the walk's first matches.
	rec = &tape.ToolResult{Content: []tape.Block{{Type: tape.BlockText, Text: "sub/c.md:3: beta four\nsub/b.txt:1: beta"}}}
	check(m{"pattern": "beta", "limit": 2}, rec, "a.txt:2: beta\nsub/b.txt:1: beta\n\n[2 matches limit reached. Use limit=4 for more, or refine pattern]", false)
	rec = &tape.ToolResult{Content: []tape.Block{{Type: tape.BlockText, Text: "ripgrep (rg) is not available and could not be downloaded"}}, IsError: true}
	check(m{"pattern": "beta"}, rec, "ripgrep (rg) is not available and could not be downloaded", true)
	require.NoError(t, os.WriteFile(filepath.Join(s.Dir, "wide.txt"), []byte(strings.Repeat("w", 600)+"\n"), 0o644))
	check(m{"pattern": "w+", "path": "wide.txt"}, nil, "wide.txt:1: "+strings.Repeat("w", 500)+"... [truncated]\n\n[Some lines truncated to 500 chars. Use read tool to see full lines]", false)
}

func TestNoopTools(t *testing.T) {
	s := harnesstest.New(t, pi.New(), "toolu_1", nil)
	rec := &tape.ToolResult{ToolCallID: "old", Content: []tape.Block{{Type: tape.BlockText, Text: "a.go"}}}
	res := s.Run("find", m{"pattern": "*.go"}, rec)
	assert.Equal(t, "a.go", res.Text())
	assert.Equal(t, "toolu_1", res.ToolCallID)
}

// m is a tool call's input.
type m = map[string]any

// Before 0.71, edit of a file it cannot open said "File not found: P" (Pi 0.67.1).
func TestEditOlderVersion(t *testing.T) {
	f := harnesstest.New(t, pi.New(), "toolu_1", nil)
	f.Env.HarnessVersion = "0.67.1"
	assert.Equal(t, "File not found: gone.txt", f.Text("edit", map[string]any{"path": "gone.txt", "edits": []map[string]any{{"oldText": "a", "newText": "b"}}}, nil))
	f.Env.HarnessVersion = "0.73.1"
	assert.Equal(t, "Could not edit file: gone.txt. Error code: ENOENT.", f.Text("edit", map[string]any{"path": "gone.txt", "edits": []map[string]any{{"oldText": "a", "newText": "b"}}}, nil))
}

// Before 0.73, bash formatted the last 64 KiB chunks of the output (Pi 0.67.1: seq 1 30000
// shows "lines 4306-6305 of 6305").
func TestBashOlderVersionTail(t *testing.T) {
	f := harnesstest.New(t, pi.New(), "toolu_1", nil)
	f.Env.HarnessVersion = "0.67.1"
	assert.True(t, strings.Contains(f.Text("bash", map[string]any{"command": "seq 1 30000"}, nil), "\n\n[Showing lines 4306-6305 of 6305. Full output: "))
	f.Env.HarnessVersion = ""
	assert.True(t, strings.Contains(f.Text("bash", map[string]any{"command": "seq 1 30000"}, nil), "\n\n[Showing lines 28002-30001 of 30001. Full output: "))
}

// ß sorts as "ss" (Pi 0.73.1: "src/" before "ß-notes.tar.gz").
func TestLsSharpS(t *testing.T) {
	f := harnesstest.New(t, pi.New(), "toolu_1", nil)
	for _, n := range []string{"ß-notes.tar.gz", "sub", "src", "notes.json"} {
		require.NoError(t, os.MkdirAll(filepath.Join(f.Dir, n), 0o755))
	}
	assert.Equal(t, "notes.json/\nsrc/\nß-notes.tar.gz/\nsub/", f.Text("ls", map[string]any{}, nil))
}
