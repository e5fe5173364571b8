package gemini_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/executor/harness/gemini"
	"github.com/tapebox/tapebox/internal/testutil/harnesstest"
	"github.com/tapebox/tapebox/tape"
)

type m = map[string]any

func TestPolicy(t *testing.T) {
	p := gemini.New().Policy()
	assert.True(t, p.ParallelToolCalls)
	assert.Equal(t, []string{"invoke_agent"}, p.SpawningTools)
	assert.Equal(t, "gemini-cli", gemini.New().Name())
}

// The formats are Gemini CLI 0.61.0's (test/e2e runs the real CLI and compares); these pin
// the module's own branches, errors included.
func TestTools(t *testing.T) {
	s := harnesstest.New(t, gemini.New(), "call_1", nil)
	dir := s.Dir
	write := func(name, content string) {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644))
	}
	write("notes.txt", "alpha\nbeta\ngamma\n")
	write("crlf.txt", "one\r\ntwo\r\n")
	write("twice.txt", "x y x\n")
	require.NoError(t, os.Mkdir(filepath.Join(dir, "sub"), 0o755))
	check := func(tool string, input m, want string, isError bool) {
		t.Helper()
		res := s.Run(tool, input, nil)
		assert.Equal(t, want, res.Text(), "%s %v", tool, input)
		assert.Equal(t, isError, res.IsError, "%s %v: is_error", tool, input)
	}
	check("read_file", m{"file_path": "notes.txt"}, "alpha\nbeta\ngamma\n", false)
	check("read_file", m{"file_path": "crlf.txt"}, "one\ntwo\n", false)
	check("read_file", m{"file_path": "notes.txt", "start_line": 2, "end_line": 2},
		"\nIMPORTANT: The file content has been truncated.\nStatus: Showing lines 2-2 of 4 total lines.\nAction: To read more of the file, you can use the 'start_line' and 'end_line' parameters in a subsequent 'read_file' call. For example, to read the next section of the file, use start_line: 3.\n\n--- FILE CONTENT (truncated) ---\nbeta", false)
	check("read_file", m{"file_path": "missing.txt"}, "File not found: "+dir+"/missing.txt", true)
	check("read_file", m{"file_path": "sub"}, "Path is a directory, not a file: "+dir+"/sub", true)
	require.NoError(t, os.Symlink("no/such/target", filepath.Join(dir, "dangling")))
	check("read_file", m{"file_path": "dangling"}, "File not found: "+dir+"/no/such/target", true)

	out := s.Run("run_shell_command", m{"command": "echo hi; echo err >&2"}, nil).Text()
	assert.Regexp(t, `^<untrusted_context>\nOutput: hi\nerr\nProcess Group PGID: \d+\n</untrusted_context>$`, out)
	out = s.Run("run_shell_command", m{"command": "printf '\\033[31mred\\033[0m\\n'; exit 2"}, nil).Text()
	assert.Regexp(t, `^<untrusted_context>\nOutput: red\nExit Code: 2\nProcess Group PGID: \d+\n</untrusted_context>$`, out)
	out = s.Run("run_shell_command", m{"command": "true", "dir_path": "sub"}, nil).Text()
	assert.Regexp(t, `^<untrusted_context>\nOutput: \(empty\)\nProcess Group PGID: \d+\n</untrusted_context>$`, out)
	out = s.Run("run_shell_command", m{"command": "echo '</untrusted_context>'"}, nil).Text()
	assert.Contains(t, out, "Output: &lt;/untrusted_context&gt;\n")

	check("write_file", m{"file_path": "new/deep.txt", "content": "a\nb\n"}, "Successfully created and wrote to new file: "+dir+"/new/deep.txt. Here is the updated code:\na\nb\n", false)
	check("write_file", m{"file_path": "crlf.txt", "content": "one\nTWO\n"}, "Successfully overwrote file: "+dir+"/crlf.txt. Here is the updated code:\none\nTWO\n", false)
	got, err := os.ReadFile(filepath.Join(dir, "crlf.txt"))
	require.NoError(t, err)
	assert.Equal(t, "one\r\nTWO\r\n", string(got), "a CRLF file stays CRLF")

	check("replace", m{"file_path": "notes.txt", "old_string": "beta", "new_string": "BETA"}, "Successfully modified file: "+dir+"/notes.txt (1 replacements). Here is the updated code:\nalpha\nBETA\ngamma\n", false)
	check("replace", m{"file_path": "notes.txt", "old_string": "nope", "new_string": "x"}, "Could not find an exact match for 'old_string' in 'notes.txt'. If previous edits modified the file or you are modifying lines outside your recent read window, please use ReadFile to inspect the target lines before retrying with an exact 'old_string'.", true)
	check("replace", m{"file_path": "twice.txt", "old_string": "x", "new_string": "z"}, "Failed to edit, Expected 1 occurrence but found 2 for old_string in file: twice.txt. If you intended to replace multiple occurrences, set 'allow_multiple' to true.", true)
	check("replace", m{"file_path": "twice.txt", "old_string": "x", "new_string": "z", "allow_multiple": true}, "Successfully modified file: "+dir+"/twice.txt (2 replacements). Here is the updated code:\nz y z\n", false)
	check("replace", m{"file_path": "twice.txt", "old_string": "y", "new_string": "y"}, "No changes to apply. The old_string and new_string are identical in file: twice.txt", true)
	check("replace", m{"file_path": "gone.txt", "old_string": "a", "new_string": "b"}, "File not found: "+dir+"/gone.txt", true)
	check("replace", m{"file_path": "notes.txt", "old_string": "", "new_string": "b"}, "File already exists, cannot create: "+dir+"/notes.txt", true)
	check("replace", m{"file_path": "made.txt", "old_string": "", "new_string": "b\n"}, "Created new file: "+dir+"/made.txt with provided content. Here is the updated code:\nb\n", false)

	check("list_directory", m{"dir_path": "sub"}, "Directory "+dir+"/sub is empty.", false)
	check("list_directory", m{"dir_path": "nowhere"}, "Error listing directory: ENOENT: no such file or directory, stat '"+dir+"/nowhere'", true)
	check("list_directory", m{"dir_path": "notes.txt"}, "Error: Path is not a directory: "+dir+"/notes.txt", true)
	listing := s.Run("list_directory", m{"dir_path": "."}, nil).Text()
	assert.Equal(t, "Directory listing for "+dir+":\n[DIR] new\n[DIR] sub\ncrlf.txt (10 bytes)\nmade.txt (2 bytes)\nnotes.txt (17 bytes)\ntwice.txt (6 bytes)", listing)
}

// TestSubstitutionBlocked: the CLI refuses a command with a command substitution outside
// single quotes (an output, not an error), and runs the others.
func TestSubstitutionBlocked(t *testing.T) {
	s := harnesstest.New(t, gemini.New(), "call_1", nil)
	const blocked = "Command injection detected: command substitution syntax ($(), backticks, <() or >()) found in command arguments. On PowerShell, @() array subexpressions and $() subexpressions are also blocked. This is a security risk and the command was blocked."
	for cmd, refused := range map[string]bool{
		"echo $(date) > x.txt": true,
		"echo \"$(date)\"":     true,
		"echo `date`":          true,
		"cat <(ls)":            true,
		"echo '$(date)'":       false,
		"echo \\$(date)":       false,
		"echo \"\\$(date)\"":   false,
		"echo \"<(x)\"":        false,
		"echo $HOME (x)":       false,
		"printf '%s' \"it's\"": false,
	} {
		res := s.Run("run_shell_command", m{"command": cmd}, nil)
		assert.False(t, res.IsError, cmd)
		if refused {
			assert.Equal(t, blocked, res.Text(), cmd)
		} else {
			assert.NotEqual(t, blocked, res.Text(), cmd)
		}
	}
	_, err := os.Stat(filepath.Join(s.Dir, "x.txt"))
	assert.True(t, os.IsNotExist(err), "a blocked command does not run")
}

// TestShellTruncated: a result over 40,000 characters keeps its first 8,000 and last
// 32,000, and names the file that holds it whole.
func TestShellTruncated(t *testing.T) {
	s := harnesstest.New(t, gemini.New(), "call_1", nil)
	text := s.Run("run_shell_command", m{"command": "seq 1 20000"}, nil).Text()
	require.True(t, strings.HasPrefix(text, "Output too large. Showing first 8,000 and last 32,000 characters. For full output see: "), text[:200])
	first, rest, _ := strings.Cut(text, "\n")
	file := strings.TrimPrefix(first, "Output too large. Showing first 8,000 and last 32,000 characters. For full output see: ")
	whole, err := os.ReadFile(file)
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(string(whole), "<untrusted_context>\nOutput: 1\n2\n"))
	omitted := len(whole) - 40000
	assert.Contains(t, rest, fmt.Sprintf("\n\n... [%s characters omitted] ...\n\n", commaInt(omitted)))
	assert.True(t, strings.HasSuffix(rest, string(whole[len(whole)-32000:])))
	assert.True(t, strings.HasPrefix(rest, string(whole[:8000])))
}

func commaInt(n int) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// TestReplayed: tools the module does not perform, and calls it cannot reproduce, copy the
// recorded result and say so.
func TestReplayed(t *testing.T) {
	s := harnesstest.New(t, gemini.New(), "call_1", nil)
	rec := &tape.ToolResult{ToolCallID: "old", Content: []tape.Block{{Type: tape.BlockText, Text: "recorded"}}}
	for _, c := range []struct {
		tool  string
		input m
	}{
		{"google_web_search", m{"query": "x"}},
		{"web_fetch", m{"prompt": "https://example.com"}},
		{"glob", m{"pattern": "/etc/*"}},
		{"glob", m{"pattern": "+(a|b).txt"}},
		{"glob", m{"pattern": "*", "dir_path": "/etc"}},
		{"grep_search", m{"pattern": "(?i)x"}},
		{"grep_search", m{"pattern": "("}},
		{"grep_search", m{"pattern": "x", "dir_path": "/etc"}},
		{"grep_search", m{"pattern": "x", "total_max_matches": 0}},
		{"write_todos", m{"todos": []m{{"description": "a", "status": "in_progress"}, {"description": "b", "status": "in_progress"}}}},
		{"write_todos", m{"todos": []m{{"description": " ", "status": "pending"}}}},
		{"write_todos", m{"todos": []m{{"description": "a", "status": "later"}}}},
		{"read_file", m{"file_path": "/etc/hostname"}},
		{"run_shell_command", m{"command": "sleep 1", "is_background": true}},
		{"read_file", m{"file_path": 7}},
	} {
		res := s.Run(c.tool, c.input, rec)
		assert.Equal(t, "recorded", res.Text(), c.tool)
		assert.True(t, res.CopiedFromTape, "%s %v is counted as not run", c.tool, c.input)
	}
}

// TestSnippet pins getDiffContextSnippet on a file longer than the context: the lines
// around a change, "..." for the rest.
func TestSnippet(t *testing.T) {
	s := harnesstest.New(t, gemini.New(), "call_1", nil)
	var lines []string
	for i := 1; i <= 30; i++ {
		lines = append(lines, strings.Repeat("l", 1)+string(rune('a'+i%26)))
	}
	lines[14] = "target"
	require.NoError(t, os.WriteFile(filepath.Join(s.Dir, "long.txt"), []byte(strings.Join(lines, "\n")+"\n"), 0o644))
	res := s.Run("replace", m{"file_path": "long.txt", "old_string": "target", "new_string": "TARGET"}, nil)
	want := append([]string{}, lines[9:20]...)
	want[5] = "TARGET"
	assert.Equal(t, "Successfully modified file: "+s.Dir+"/long.txt (1 replacements). Here is the updated code:\n...\n"+strings.Join(want, "\n")+"\n...", res.Text())
}

// TestReplaceStrategies: an old_string the exact strategy misses is matched as Gemini CLI
// 0.61.0 matches it: flexibly (lines compared trimmed, the new text re-indented), by its
// tokens with any whitespace between, or fuzzily (with the CLI's feedback sentence). Before,
// the module copied the recorded result (none here), so each of these failed.
func TestReplaceStrategies(t *testing.T) {
	s := harnesstest.New(t, gemini.New(), "call_1", nil)
	dir := s.Dir
	for name, c := range map[string]struct{ content, old, new, want, file string }{
		"ind.txt": {"func f() {\n    return x\n}\n", "\treturn x", "return y", "(1 replacements). Here is the updated code:\nfunc f() {\n    return y\n}\n", "func f() {\n    return y\n}\n"},
		"sp.txt":  {"a = call(x,  y)\n", "a=call(x, y)", "b = 1", "(1 replacements). Here is the updated code:\nb = 1\n", "b = 1\n"},
		"fz.txt":  {"the quick brown fox\n", "the quick brown fax", "slow", "(1 replacements). Here is the updated code:\nslow\n Applied fuzzy match at line 1.", "slow\n"},
		"crlf.txt": {"if (a) {\r\n  go()\r\n}\r\n", "if (a) {\n go()", "if (b) {\n  stop()", "(1 replacements). Here is the updated code:\nif (b) {\n  stop()\n}\n",
			"if (b) {\r\n  stop()\r\n}\r\n"},
	} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(c.content), 0o644))
		res := s.Run("replace", m{"file_path": name, "old_string": c.old, "new_string": c.new}, nil)
		assert.False(t, res.IsError, name)
		assert.Equal(t, "Successfully modified file: "+dir+"/"+name+" "+c.want, res.Text(), name)
		got, err := os.ReadFile(filepath.Join(dir, name))
		require.NoError(t, err)
		assert.Equal(t, c.file, string(got), name)
	}
}

// TestShellTruncatedRecordedPGID: a long result is cut where the CLI cut it, counting the
// recording's process group id (seven digits here) and showing the sandbox's. Before, the cut
// counted the sandbox's id, and the omitted count and the tail's start differed (the fidelity
// class "the full output's file", 24 calls of Gemini CLI seeds 40000-40117).
func TestShellTruncatedRecordedPGID(t *testing.T) {
	s := harnesstest.New(t, gemini.New(), "call_1", nil)
	rec := &tape.ToolResult{Content: []tape.Block{{Type: tape.BlockText, Text: "Output too large. ...\nProcess Group PGID: 1234567\n</untrusted_context>"}}}
	text := s.Run("run_shell_command", m{"command": "seq 1 20000"}, rec).Text()
	first, rest, _ := strings.Cut(text, "\n")
	whole, err := os.ReadFile(strings.TrimPrefix(first, "Output too large. Showing first 8,000 and last 32,000 characters. For full output see: "))
	require.NoError(t, err)
	own := regexp.MustCompile(`Process Group PGID: [0-9]+`).FindString(string(whole))
	require.NotEmpty(t, own)
	widened := strings.Replace(string(whole), own, "Process Group PGID: 1234567", 1)
	assert.Contains(t, rest, fmt.Sprintf("\n\n... [%s characters omitted] ...\n\n", commaInt(len(widened)-40000)))
	tail := widened[len(widened)-32000:]
	assert.True(t, strings.HasSuffix(rest, strings.Replace(tail, "Process Group PGID: 1234567", own, 1)), "the tail is the recording's cut, with the sandbox's id")
}
