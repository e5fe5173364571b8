package claudecode_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/executor/harness"
	"github.com/tapebox/tapebox/executor/harness/claudecode"
	"github.com/tapebox/tapebox/internal/testutil/harnesstest"
	"github.com/tapebox/tapebox/tape"
)

func newFixture(t *testing.T) *harnesstest.Session {
	return harnesstest.New(t, claudecode.New(), "toolu_1", map[string]string{"BASH_MAX_OUTPUT_LENGTH": "200"})
}

func recorded(text string, isErr bool) *tape.ToolResult {
	return &tape.ToolResult{ToolCallID: "old", Content: []tape.Block{{Type: tape.BlockText, Text: text}}, IsError: isErr}
}

type m = map[string]any

func TestPolicy(t *testing.T) {
	p := claudecode.New().Policy()
	assert.True(t, p.ParallelToolCalls)
	assert.Equal(t, []string{"Agent", "Task"}, p.SpawningTools)
	assert.Equal(t, "claude-code", claudecode.New().Name())
}

func TestBash(t *testing.T) {
	f := newFixture(t)
	long := strings.Repeat("x", 150) + "\n" + strings.Repeat("y", 100) + "\nz\n"
	f.Write("long.txt", long)
	tests := []struct {
		name  string
		input m
		want  string
		isErr bool
	}{
		{"no output", m{"command": "true"}, "(Bash completed with no output)", false},
		{"output", m{"command": "printf '\\n\\nline 1\\nline 2\\nline 3\\n\\n'"}, "line 1\nline 2\nline 3", false},
		{"stderr", m{"command": "echo out; echo err >&2"}, "out\nerr", false},
		{"failure", m{"command": "echo about to fail; exit 1"}, "Exit code 1\nabout to fail", true},
		{"failure without output", m{"command": "exit 2"}, "Exit code 2", true},
		{"missing command", m{}, "<tool_use_error>InputValidationError: Bash failed due to the following issue:\nThe required parameter `command` is missing</tool_use_error>", true},
		{"wrong type", m{"command": 12}, "<tool_use_error>InputValidationError: Bash failed due to the following issue:\nThe parameter `command` type is expected as `string` but provided as `number`</tool_use_error>", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := f.Run("Bash", tt.input, nil)
			assert.Equal(t, tt.want, res.Text())
			assert.Equal(t, tt.isErr, res.IsError)
		})
	}
}

func TestBashLimits(t *testing.T) {
	f := newFixture(t)
	long := strings.Repeat("x", 150) + "\n" + strings.Repeat("y", 100) + "\nz\n"
	f.Write("long.txt", long)
	res := f.Run("Bash", m{"command": "cat long.txt"}, nil)
	// The size counts the output as written, its trailing newline too (seed 9021).
	match := regexp.MustCompile(`^<persisted-output>\nOutput too large \(254 bytes\)\. Full output saved to: (\S+)\n\nPreview \(first 2KB\):\n([^\x00]*)\.\.\.\n</persisted-output>$`).FindStringSubmatch(res.Text())
	require.NotNil(t, match, res.Text())
	assert.Equal(t, strings.TrimSuffix(long, "\n")+"\n", match[2])
	saved, err := os.ReadFile(match[1])
	require.NoError(t, err)
	assert.Equal(t, strings.TrimSuffix(long, "\n"), string(saved))

	// A command that outlives its timeout moves to the background and keeps running. What it
	// printed before the timeout leads the answer; on a loaded machine "started" may not
	// have come out within the 200 ms.
	res = f.Run("Bash", m{"command": "echo started; sleep 0.5; echo finished", "timeout": 200}, nil)
	assert.False(t, res.IsError)
	match = regexp.MustCompile(`^(?:started\n)?Command did not complete within its 1s timeout and was moved to the background \(ID: (b[0-9a-z]{8})\)\. Output is being written to: \S+\.output|^(?:started\n)?Command did not complete within its 1s timeout and was moved to the background \(ID: (b[0-9a-z]{8})\)\. Output is being written to: (\S+)\. You will be notified when it completes\. If it is still running after 10m in the background, it will be stopped and you will be notified\. It is running now: do not start a second copy while it runs\. If it is no longer needed, stop it with TaskStop\. To check interim output, use Read on that file path\.$`).FindStringSubmatch(res.Text())
	require.NotNil(t, match, res.Text())
	id := match[1] + match[2] // the alternative that matched
	out := f.Run("TaskOutput", m{"task_id": id}, nil)
	assert.Contains(t, out.Text(), "<output>\nstarted\nfinished\n</output>")
}

func TestBashCwdPersists(t *testing.T) {
	f := newFixture(t)
	require.NoError(t, os.Mkdir(filepath.Join(f.Dir, "sub"), 0o755))
	assert.Equal(t, "(Bash completed with no output)", f.Run("Bash", m{"command": "cd sub"}, nil).Text())
	assert.Equal(t, filepath.Join(f.Dir, "sub"), f.Run("Bash", m{"command": "pwd"}, nil).Text())
	assert.Equal(t, "Shell cwd was reset to "+f.Dir, f.Run("Bash", m{"command": "cd /"}, nil).Text())
	assert.Equal(t, f.Dir, f.Run("Bash", m{"command": "pwd"}, nil).Text())
}

var bgText = regexp.MustCompile(`^Command running in background with ID: (b[0-9a-z]{8})\. Output is being written to: (\S+)\. You will be notified when it completes\. To check interim output, use Read on that file path\.$`)

func TestBackground(t *testing.T) {
	f := newFixture(t)
	res := f.Run("Bash", m{"command": "echo bg out; sleep 0.2; exit 3", "run_in_background": true}, nil)
	match := bgText.FindStringSubmatch(res.Text())
	require.NotNil(t, match, res.Text())
	id, path := match[1], match[2]
	assert.Equal(t, filepath.Join(f.Env.State.Path, "tasks", id, "output"), path)

	out := f.Run("TaskOutput", m{"task_id": id, "block": true, "timeout": 30000}, nil)
	assert.Equal(t, "<retrieval_status>success</retrieval_status>\n\n<task_id>"+id+"</task_id>\n\n<task_type>local_bash</task_type>\n\n<status>failed</status>\n\n<exit_code>3</exit_code>\n\n<output>\nbg out\n</output>", out.Text())

	// Read of the recording's output path reaches the task's output file, which ends
	// with the exit line, as Claude Code 2.1.332's does.
	rd := f.Run("Read", m{"file_path": "/tmp/claude-0/-app/0000/tasks/" + id + ".output"}, nil)
	assert.Equal(t, "1\tbg out\n2\t\n3\t[exited with code 3]\n4\t", rd.Text())

	bo := f.Run("BashOutput", m{"bash_id": id}, nil)
	assert.Regexp(t, `^<status>failed</status>\n\n<exit_code>3</exit_code>\n\n<stdout>\nbg out\n</stdout>\n\n<timestamp>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z</timestamp>$`, bo.Text())
	bo = f.Run("BashOutput", m{"bash_id": id}, nil)
	assert.NotContains(t, bo.Text(), "<stdout>", "only new output")

	// The old wording, picked by the recording.
	old := f.Run("Bash", m{"command": "sleep 60", "run_in_background": true}, recorded("Command running in background with ID: bash_1", false))
	// The recording's id is reused, so later calls that name it reach this task.
	require.Equal(t, "Command running in background with ID: bash_1", old.Text())
	killID := "bash_1"
	kill := f.Run("KillShell", m{"shell_id": killID}, nil)
	assert.Equal(t, `{"message":"Successfully killed shell: `+killID+` (sleep 60)","shell_id":"`+killID+`"}`, kill.Text())
	again := f.Run("KillShell", m{"shell_id": killID}, nil)
	assert.Equal(t, "Shell "+killID+" is not running, so cannot be killed (status: killed)", again.Text())
	assert.True(t, again.IsError)

	stop := f.Run("Bash", m{"command": "sleep 60", "run_in_background": true}, nil)
	stopID := bgText.FindStringSubmatch(stop.Text())[1]
	res = f.Run("TaskStop", m{"task_id": stopID}, nil)
	assert.Equal(t, `{"message":"Successfully stopped task: `+stopID+` (sleep 60)","task_id":"`+stopID+`","task_type":"local_bash","command":"sleep 60"}`, res.Text())

	nf := f.Run("TaskOutput", m{"task_id": "nope", "block": false}, nil)
	assert.Equal(t, "No task found with ID: nope", nf.Text())
	assert.True(t, nf.IsError)

	running := f.Run("Bash", m{"command": "sleep 60", "run_in_background": true}, nil)
	runID := bgText.FindStringSubmatch(running.Text())[1]
	nr := f.Run("TaskOutput", m{"task_id": runID, "block": false}, nil)
	assert.Equal(t, "<retrieval_status>not_ready</retrieval_status>\n\n<task_id>"+runID+"</task_id>\n\n<task_type>local_bash</task_type>\n\n<status>running</status>", nr.Text())
	f.Run("TaskStop", m{"task_id": runID}, nil)
}

func TestRead(t *testing.T) {
	f := newFixture(t)
	notes := f.Write("notes.txt", "alpha\nbeta\ngamma\n")
	empty := f.Write("empty.txt", "")
	bin := f.Write("data.bin", "\x00\x01")
	crlf := f.Write("crlf.txt", "a\r\nb")
	tests := []struct {
		name  string
		input m
		rec   *tape.ToolResult
		want  string
		isErr bool
	}{
		{"whole", m{"file_path": notes}, nil, "1\talpha\n2\tbeta\n3\tgamma\n4\t", false},
		{"offset limit", m{"file_path": notes, "offset": 2, "limit": 2}, nil, "2\tbeta\n3\tgamma", false},
		{"arrow variant", m{"file_path": notes}, recorded("     1\u2192alpha", false), "     1\u2192alpha\n     2\u2192beta\n     3\u2192gamma\n     4\u2192", false},
		{"crlf", m{"file_path": crlf}, nil, "1\ta\n2\tb", false},
		{"empty", m{"file_path": empty}, nil, "<system-reminder>Warning: the file exists but the contents are empty.</system-reminder>", false},
		{"past the end", m{"file_path": notes, "offset": 10}, nil, "<system-reminder>Warning: the file exists but is shorter than the provided offset (10). The file has 4 lines.</system-reminder>", false},
		{"missing", m{"file_path": filepath.Join(f.Dir, "nope.txt")}, nil, "File does not exist. Note: your current working directory is " + f.Dir + ".", true},
		{"missing, old wrapping", m{"file_path": filepath.Join(f.Dir, "nope.txt")}, recorded("<tool_use_error>File does not exist.</tool_use_error>", true), "<tool_use_error>File does not exist. Note: your current working directory is " + f.Dir + ".</tool_use_error>", true},
		{"binary", m{"file_path": bin}, nil, "<tool_use_error>This tool cannot read binary files. The file appears to be a binary .bin file. Use a skill for this file type if one is available, or a shell command or script that can read the format.</tool_use_error>", true},
		{"no path", m{}, nil, "<tool_use_error>InputValidationError: Read failed due to the following issue:\nThe required parameter `file_path` is missing</tool_use_error>", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := f.Run("Read", tt.input, tt.rec)
			assert.Equal(t, tt.want, res.Text())
			assert.Equal(t, tt.isErr, res.IsError)
		})
	}
	img := f.Write("p.png", "\x89PNG")
	res := f.Run("Read", m{"file_path": img}, nil)
	require.Len(t, res.Content, 1)
	assert.Equal(t, tape.BlockImage, res.Content[0].Type)
	assert.JSONEq(t, `{"type":"image","source":{"type":"base64","data":"iVBORw==","media_type":"image/png"}}`, string(res.Content[0].Raw))
}

func TestWriteAndEdit(t *testing.T) {
	f := newFixture(t)
	p := filepath.Join(f.Dir, "notes.txt")
	const note = " (file state is current in your context — no need to Read it back)"
	tests := []struct {
		name  string
		tool  string
		input m
		rec   *tape.ToolResult
		want  string
		isErr bool
		file  string
	}{
		{"create", "Write", m{"file_path": p, "content": "a b a\n"}, nil, "File created successfully at: " + p + note, false, "a b a\n"},
		{"update", "Write", m{"file_path": p, "content": "a b a b\n"}, nil, "The file " + p + " has been updated successfully." + note, false, "a b a b\n"},
		{"update, older wording", "Write", m{"file_path": p, "content": "a b a\n"}, recorded("The file "+p+" has been updated successfully.", false), "The file " + p + " has been updated successfully.", false, "a b a\n"},
		{"refused in the recording", "Write", m{"file_path": p, "content": "zzz"}, recorded("File has not been read yet. Read it first before writing to it.", true), "File has not been read yet. Read it first before writing to it.", true, "a b a\n"},
		{"edit", "Edit", m{"file_path": p, "old_string": "b", "new_string": "c"}, nil, "The file " + p + " has been updated successfully." + note, false, "a c a\n"},
		{"edit, older wording", "Edit", m{"file_path": p, "old_string": "c", "new_string": "b"}, recorded("The file "+p+" has been updated successfully.", false), "The file " + p + " has been updated successfully.", false, "a b a\n"},
		{"ambiguous", "Edit", m{"file_path": p, "old_string": "a", "new_string": "x"}, nil, "<tool_use_error>Found 2 matches of the string to replace, but replace_all is false. To replace all occurrences, set replace_all to true. To replace only one occurrence, please provide more context to uniquely identify the instance.\nString: a</tool_use_error>", true, "a b a\n"},
		{"replace all", "Edit", m{"file_path": p, "old_string": "a", "new_string": "x", "replace_all": true}, nil, "The file " + p + " has been updated. All occurrences were successfully replaced." + note, false, "x b x\n"},
		{"not found", "Edit", m{"file_path": p, "old_string": "no such text", "new_string": "y"}, nil, "<tool_use_error>String to replace not found in file.\nString: no such text</tool_use_error>", true, "x b x\n"},
		{"no change", "Edit", m{"file_path": p, "old_string": "b", "new_string": "b"}, nil, "<tool_use_error>No changes to make: old_string and new_string are exactly the same.</tool_use_error>", true, "x b x\n"},
		{"multi", "MultiEdit", m{"file_path": p, "edits": []m{{"old_string": "b", "new_string": "B"}, {"old_string": "x", "new_string": "X", "replace_all": true}}}, nil, "Applied 2 edits to " + p + ":\n1. Replaced \"b\" with \"B\"\n2. Replaced \"x\" with \"X\"", false, "X B X\n"},
		{"multi fails whole", "MultiEdit", m{"file_path": p, "edits": []m{{"old_string": "B", "new_string": "b"}, {"old_string": "q", "new_string": "Q"}}}, nil, "<tool_use_error>String to replace not found in file.\nString: q</tool_use_error>", true, "X B X\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := f.Run(tt.tool, tt.input, tt.rec)
			assert.Equal(t, tt.want, res.Text())
			assert.Equal(t, tt.isErr, res.IsError)
			b, err := os.ReadFile(p)
			require.NoError(t, err)
			assert.Equal(t, tt.file, string(b))
		})
	}
	res := f.Run("Edit", m{"file_path": filepath.Join(f.Dir, "missing.txt"), "old_string": "a", "new_string": "b"}, nil)
	assert.Equal(t, "<tool_use_error>File does not exist. Note: your current working directory is "+f.Dir+".</tool_use_error>", res.Text())
}

// TestWriteEmptyIsCreated: Claude Code words a Write over an empty file as a file created
// (its old content is empty), as internal/fidelity found (testdata/claude-code-write-empty.json).
func TestWriteEmptyIsCreated(t *testing.T) {
	f := newFixture(t)
	p := filepath.Join(f.Dir, "new file ✓.txt")
	const note = " (file state is current in your context — no need to Read it back)"
	for _, tt := range []struct{ content, want string }{
		{"", "File created successfully at: " + p + note},
		{"no newline", "File created successfully at: " + p + note},
		{"more\n", "The file " + p + " has been updated successfully." + note},
		{"", "The file " + p + " has been updated successfully." + note},
		{"again", "File created successfully at: " + p + note},
	} {
		res := f.Run("Write", m{"file_path": p, "content": tt.content}, nil)
		assert.Equal(t, tt.want, res.Text(), "Write %q", tt.content)
		b, err := os.ReadFile(p)
		require.NoError(t, err)
		assert.Equal(t, tt.content, string(b))
	}
}

// TestEditCRLF: an Edit of a file with CRLF line ends matches old_string's lines and keeps
// the CRLF; when it fails, the error quotes old_string as given (with \n), as Claude Code
// 2.1 does (internal/fidelity seed 7026, testdata/claude-code-crlf-edit.json).
func TestEditCRLF(t *testing.T) {
	f := newFixture(t)
	p := f.Write("crlf.txt", "one\r\ntwo\r\nthree\r\n")
	res := f.Run("Edit", m{"file_path": p, "old_string": "one\ntwo", "new_string": "1\n2"}, nil)
	assert.False(t, res.IsError, res.Text())
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	assert.Equal(t, "1\r\n2\r\nthree\r\n", string(b))
	res = f.Run("Edit", m{"file_path": p, "old_string": "one\ntwo", "new_string": "x\ny"}, nil)
	assert.Equal(t, "<tool_use_error>String to replace not found in file.\nString: one\ntwo</tool_use_error>", res.Text())
	f.Write("crlf.txt", "a\r\nb\r\na\r\nb\r\n")
	res = f.Run("Edit", m{"file_path": p, "old_string": "a\nb", "new_string": "c"}, nil)
	assert.Contains(t, res.Text(), "Found 2 matches of the string to replace, but replace_all is false.")
	assert.True(t, strings.HasSuffix(res.Text(), "\nString: a\nb</tool_use_error>"), res.Text())
}

func TestNotebookEdit(t *testing.T) {
	f := newFixture(t)
	nb := f.Write("n.ipynb", `{"cells":[{"cell_type":"code","id":"c1","metadata":{},"source":"print(1)","execution_count":3,"outputs":[{"output_type":"stream","text":"1"}]},{"cell_type":"markdown","id":"m1","metadata":{},"source":"# t"}],"metadata":{},"nbformat":4,"nbformat_minor":5}`)
	res := f.Run("NotebookEdit", m{"notebook_path": nb, "cell_id": "c1", "new_source": "print(2)"}, nil)
	assert.Equal(t, "Updated cell c1 with print(2)", res.Text())
	res = f.Run("NotebookEdit", m{"notebook_path": nb, "cell_id": "m1", "edit_mode": "delete"}, nil)
	assert.Equal(t, "Deleted cell m1", res.Text())
	res = f.Run("NotebookEdit", m{"notebook_path": nb, "cell_id": "c1", "edit_mode": "insert", "cell_type": "markdown", "new_source": "after"}, nil)
	assert.Regexp(t, `^Inserted cell [0-9a-z]{12} with after$`, res.Text())
	res = f.Run("NotebookEdit", m{"notebook_path": nb, "cell_id": "zz", "new_source": "x"}, nil)
	assert.Equal(t, `Cell with ID "zz" not found in notebook.`, res.Text())
	assert.True(t, res.IsError)
	var doc struct {
		Cells []struct {
			Type    string `json:"cell_type"`
			Source  string `json:"source"`
			Outputs []any  `json:"outputs"`
			Count   *int   `json:"execution_count"`
		} `json:"cells"`
	}
	b, _ := os.ReadFile(nb)
	require.NoError(t, json.Unmarshal(b, &doc))
	require.Len(t, doc.Cells, 2)
	assert.Equal(t, "print(2)", doc.Cells[0].Source)
	assert.Empty(t, doc.Cells[0].Outputs)
	assert.Nil(t, doc.Cells[0].Count)
	assert.Equal(t, "after", doc.Cells[1].Source)
	res = f.Run("NotebookEdit", m{"notebook_path": f.Write("x.txt", ""), "new_source": "x"}, nil)
	assert.Equal(t, "<tool_use_error>File must be a Jupyter notebook (.ipynb file). For editing other file types, use the FileEdit tool.</tool_use_error>", res.Text())
}

func TestGlobAndGrep(t *testing.T) {
	f := newFixture(t)
	base := time.Now().Add(-time.Hour)
	for i, name := range []string{"src/old.go", "src/mid.go", "README.md", "src/new.go"} {
		p := f.Write(name, "package x\n// TODO: one\nfunc f() {}\n// TODO: two\n")
		require.NoError(t, os.Chtimes(p, base.Add(time.Duration(i)*time.Minute), base.Add(time.Duration(i)*time.Minute)))
	}
	f.Write(".gitignore", "ignored.go\n")
	f.Write("ignored.go", "// TODO: hidden by gitignore\n")
	require.NoError(t, os.Mkdir(filepath.Join(f.Dir, ".git"), 0o755))
	// The executor's own state must never show up.
	f.Run("Bash", m{"command": "echo TODO", "run_in_background": true}, nil)

	tests := []struct {
		tool  string
		input m
		rec   *tape.ToolResult
		want  string
	}{
		{"Glob", m{"pattern": "**/*.go"}, nil, "src/old.go\nsrc/mid.go\nsrc/new.go\nignored.go"},
		{"Glob", m{"pattern": "*.go", "path": "src"}, recorded("/abs/x.go", false), f.Dir + "/src/old.go\n" + f.Dir + "/src/mid.go\n" + f.Dir + "/src/new.go"},
		{"Glob", m{"pattern": "*.rs"}, nil, "No files found"},
		{"Glob", m{"pattern": "*", "path": "nope"}, nil, "Directory does not exist: nope. Note: your current working directory is " + f.Dir + "."},
		{"Grep", m{"pattern": "TODO"}, nil, "Found 4 files\nsrc/new.go\nREADME.md\nsrc/mid.go\nsrc/old.go"},
		{"Grep", m{"pattern": "TODO", "head_limit": 2}, nil, "Found 2 files limit: 2\nsrc/new.go\nREADME.md"},
		// As in ripgrep, a --glob that names a file overrides .gitignore.
		{"Grep", m{"pattern": "TODO", "glob": "*.go", "output_mode": "count"}, nil, "ignored.go:1\nsrc/mid.go:2\nsrc/new.go:2\nsrc/old.go:2\nFound 7 total occurrences across 4 files."},
		{"Grep", m{"pattern": "two", "path": "src/new.go", "output_mode": "content", "-B": 1}, nil, "3-func f() {}\n4:// TODO: two"},
		{"Grep", m{"pattern": "one", "type": "go", "output_mode": "content", "-A": 1}, nil, "src/mid.go:2:// TODO: one\nsrc/mid.go-3-func f() {}\n--\nsrc/new.go:2:// TODO: one\nsrc/new.go-3-func f() {}\n--\nsrc/old.go:2:// TODO: one\nsrc/old.go-3-func f() {}"},
		{"Grep", m{"pattern": "one", "glob": "*.md", "output_mode": "content", "-n": false}, nil, "README.md:// TODO: one"},
		{"Grep", m{"pattern": "TODO", "output_mode": "content", "head_limit": 1, "offset": 1}, nil, "README.md:4:// TODO: two\n[Showing results with pagination = limit: 1, offset: 1]"},
		{"Grep", m{"pattern": "zzz", "output_mode": "content"}, nil, "No matches found"},
		{"Grep", m{"pattern": "zzz"}, nil, "No files found"},
		{"Grep", m{"pattern": "zzz", "output_mode": "count"}, nil, "No matches found\nFound 0 total occurrences across 0 files."},
	}
	for _, tt := range tests {
		t.Run(tt.tool+" "+tt.want[:min(20, len(tt.want))], func(t *testing.T) {
			res := f.Run(tt.tool, tt.input, tt.rec)
			assert.Equal(t, tt.want, res.Text())
		})
	}
}

func TestNoopAndSpawning(t *testing.T) {
	f := newFixture(t)
	rec := &tape.ToolResult{ToolCallID: "old", Content: []tape.Block{{Type: tape.BlockText, Text: "Todos have been modified successfully."}}}
	for _, tool := range []string{"TodoWrite", "WebFetch", "WebSearch", "Skill", "ToolSearch", "mcp__x__y", "Monitor"} {
		res := f.Run(tool, m{"anything": 1}, rec)
		assert.Equal(t, "Todos have been modified successfully.", res.Text())
		assert.False(t, res.IsError)
		assert.True(t, res.CopiedFromTape, "%s: a copied result says so", tool)
	}
	res := f.Run("WebFetch", m{}, nil)
	assert.True(t, res.IsError)
	assert.False(t, res.CopiedFromTape, "nothing was copied")
	assert.Contains(t, res.Text(), `"WebFetch"`)
	assert.False(t, f.Run("Bash", m{"command": "true"}, rec).CopiedFromTape, "a call the executor runs")
	for _, tool := range []string{"Agent", "Task"} {
		res := f.Run(tool, m{"prompt": "x"}, rec)
		assert.True(t, res.IsError)
		assert.Contains(t, res.Text(), "subagent")
	}
}

// TestMissingParameters: every tool names the first required parameter it lacks, in
// Claude Code's words; a parameter given as the wrong type is a type error instead.
func TestMissingParameters(t *testing.T) {
	f := newFixture(t)
	p := f.Write("a.txt", "a\n")
	missing := func(tool, param string) string {
		return "<tool_use_error>InputValidationError: " + tool + " failed due to the following issue:\nThe required parameter `" + param + "` is missing</tool_use_error>"
	}
	cases := []struct {
		tool  string
		input m
		want  string
	}{
		{"Bash", m{"command": " \n"}, missing("Bash", "command")},
		{"Read", m{"offset": 1}, missing("Read", "file_path")},
		{"Read", m{"file_path": ""}, missing("Read", "file_path")},
		{"Write", m{"content": "x"}, missing("Write", "file_path")},
		{"Write", m{"file_path": p}, missing("Write", "content")},
		{"Write", m{"file_path": p, "content": nil}, missing("Write", "content")},
		{"Edit", m{"old_string": "a", "new_string": "b"}, missing("Edit", "file_path")},
		{"Edit", m{"file_path": p, "new_string": "b"}, missing("Edit", "old_string")},
		{"Edit", m{"file_path": p, "old_string": "a"}, missing("Edit", "new_string")},
		{"MultiEdit", m{"file_path": p}, missing("MultiEdit", "edits")},
		{"MultiEdit", m{"file_path": p, "edits": []any{}}, missing("MultiEdit", "edits")},
		{"NotebookEdit", m{"new_source": "x"}, missing("NotebookEdit", "notebook_path")},
		{"Glob", m{"path": "."}, missing("Glob", "pattern")},
		{"Grep", m{"path": "."}, missing("Grep", "pattern")},
		{"TaskOutput", m{}, missing("TaskOutput", "task_id")},
		{"TaskStop", m{}, "<tool_use_error>Missing required parameter: task_id</tool_use_error>"},
		{"Read", m{"file_path": 7}, "<tool_use_error>InputValidationError: Read failed due to the following issue:\nThe parameter `file_path` type is expected as `string` but provided as `number`</tool_use_error>"},
	}
	for _, tc := range cases {
		res := f.Run(tc.tool, tc.input, nil)
		assert.Equal(t, tc.want, res.Text(), "%s %v", tc.tool, tc.input)
		assert.True(t, res.IsError, "%s %v", tc.tool, tc.input)
	}
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	assert.Equal(t, "a\n", string(b), "a refused call changed the file")
}

// TestNotOffered: a call to a tool the recorded request did not offer gets Claude Code's
// answer (captured from 2.1.332 by internal/fidelity, testdata/claude-code-not-offered.json),
// a tool loaded on demand still runs, and a Noop tool replays its recording.
func TestNotOffered(t *testing.T) {
	env, err := harness.NewEnv(t.TempDir(), nil, nil)
	require.NoError(t, err)
	env.HarnessVersion = "2.1.332"
	sess := claudecode.New().NewSession(env)
	defer sess.Close()
	u, ok := sess.(harness.Unoffered)
	require.True(t, ok, "the Claude Code session answers calls to tools not offered")
	require.NoError(t, os.WriteFile(filepath.Join(env.Cwd, "a.txt"), []byte("alpha\n"), 0o644))
	call := func(name string, input m) tape.ToolCall {
		b, err := json.Marshal(input)
		require.NoError(t, err)
		return tape.ToolCall{ID: "toolu_1", Name: name, Input: b}
	}
	for _, tt := range []struct {
		tool  string
		input m
		want  string
		isErr bool
	}{
		{"Glob", m{"pattern": "*.txt"}, "<tool_use_error>Error: No such tool available: Glob. Glob is not available in this session — find files with `find` via the Bash tool instead.</tool_use_error>", true},
		{"Grep", m{"pattern": "alpha"}, "<tool_use_error>Error: No such tool available: Grep. Grep is not available in this session — search file contents with `grep` via the Bash tool instead.</tool_use_error>", true},
		{"MultiEdit", m{"file_path": filepath.Join(env.Cwd, "a.txt"), "edits": []m{{"old_string": "alpha", "new_string": "ALPHA"}}}, "<tool_use_error>Error: No such tool available: MultiEdit</tool_use_error>", true},
		{"BashOutput", m{"bash_id": "abc"}, "<tool_use_error>Error: No such tool available: BashOutput</tool_use_error>", true},
		// Loaded on demand: it runs (2.1's KillShell is TaskStop).
		{"KillShell", m{"shell_id": "abc"}, "No task found with ID: abc", true},
		// Not performed: the recording's result.
		{"WebFetch", m{"url": "http://x"}, "fetched", false},
	} {
		t.Run(tt.tool, func(t *testing.T) {
			var rec *tape.ToolResult
			if tt.tool == "WebFetch" {
				rec = recorded("fetched", false)
			}
			res := u.NotOffered(t.Context(), call(tt.tool, tt.input), rec)
			assert.Equal(t, tt.want, res.Text())
			assert.Equal(t, tt.isErr, res.IsError)
		})
	}
	b, err := os.ReadFile(filepath.Join(env.Cwd, "a.txt"))
	require.NoError(t, err)
	assert.Equal(t, "alpha\n", string(b), "the MultiEdit that was not offered changed nothing")

	// Offered, the same calls run.
	res := sess.Run(t.Context(), call("Grep", m{"pattern": "alpha"}), nil)
	assert.Equal(t, "Found 1 file\na.txt", res.Text())
}

// TestBashGrepIsUgrep: a recording of Claude Code 2.1 ran grep as its embedded ugrep, which
// names the files of a recursive search of "." without "./" and skips binary files; an older
// version's ran the system grep (internal/fidelity, the class "grep is ugrep").
func TestBashGrepIsUgrep(t *testing.T) {
	f := newFixture(t)
	f.Write("notes.txt", "alpha\nbeta\n")
	f.Write("src/a.go", "beta\n")
	f.Write("blob", "be\x00ta beta\n")
	f.Write(".git/config", "beta\n")
	for _, tt := range []struct{ version, command, want string }{
		{"2.1.332", "grep -rn beta . | sort", "notes.txt:2:beta\nsrc/a.go:1:beta"},
		{"2.1.332", "grep -r -e . . | sort", "notes.txt:alpha\nnotes.txt:beta\nsrc/a.go:beta"},
		{"2.1.332", "grep -rn beta src", "src/a.go:1:beta"},
		{"2.1.332", "grep -c beta notes.txt; grep -r nothing .; echo $?", "1\n1"},
		{"", "grep -rn beta . | sort", "notes.txt:2:beta\nsrc/a.go:1:beta"},
		{"2.1.332", "grep -rl beta . | LC_ALL=C sort", "notes.txt\nsrc/a.go"},
		{"2.0.77", "grep -rl beta . | LC_ALL=C sort", "./.git/config\n./blob\n./notes.txt\n./src/a.go"},
	} {
		f.Env.HarnessVersion = tt.version
		res := f.Run("Bash", m{"command": tt.command}, nil)
		assert.Equal(t, tt.want, strings.ReplaceAll(res.Text(), "grep: ", ""), "%s: %s", tt.version, tt.command)
	}
}

// TestReadRecordedPage: Claude Code 2.1 pages a Read of a file the provider counts at more
// tokens than its cap; the replay shows the lines the recorded page shows (seed 7036 of
// internal/fidelity, the class "Read of a large file"), and a Write the recording refused
// for it ("Nothing was written. ...") is refused and writes nothing.
func TestReadRecordedPage(t *testing.T) {
	f := newFixture(t)
	var file, page strings.Builder
	for i := 1; i <= 3000; i++ {
		fmt.Fprintf(&file, "line %d: %s\n", i, strings.Repeat("x", i%40))
		if i <= 2652 {
			if i > 1 {
				page.WriteByte('\n')
			}
			fmt.Fprintf(&page, "%d\tline %d: %s", i, i, strings.Repeat("x", i%40))
		}
	}
	p := f.Write("many.log", file.String())
	res := f.Run("Read", m{"file_path": p}, recorded(page.String(), false))
	assert.Equal(t, page.String(), res.Text())
	// Not a page: a short recorded result, or a Read with a limit.
	res = f.Run("Read", m{"file_path": p}, recorded("1\tline 1: x\n2\tline 2: xx", false))
	assert.True(t, strings.HasSuffix(res.Text(), "\n3000\tline 3000: \n3001\t"), res.Text()[len(res.Text())-80:])
	res = f.Run("Read", m{"file_path": p, "limit": 3}, recorded(page.String(), false))
	assert.Equal(t, "1\tline 1: x\n2\tline 2: xx\n3\tline 3: xxx", res.Text())

	refusal := "Nothing was written. Nothing shows that you have read all of this file in one call, so a Write could lose text that you have not seen."
	res = f.Run("Write", m{"file_path": p, "content": "gone\n"}, recorded(refusal, true))
	assert.Equal(t, refusal, res.Text())
	assert.True(t, res.IsError)
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	assert.Equal(t, file.String(), string(b))

	// A Read with an offset that the provider counted over the cap is refused as recorded
	// (internal/fidelity seed 20095); without that recording it reads.
	tokens := "File content (26450 tokens) exceeds maximum allowed tokens (25000). Use offset and limit parameters to read specific portions of the file, or search for specific content instead of reading the whole file."
	res = f.Run("Read", m{"file_path": p, "offset": 141}, recorded(tokens, true))
	assert.Equal(t, tokens, res.Text())
	assert.True(t, res.IsError)
	res = f.Run("Read", m{"file_path": p, "offset": 141}, nil)
	assert.True(t, strings.HasPrefix(res.Text(), "141\tline 141: "), res.Text()[:40])
	assert.False(t, res.IsError)
}

// TestClaudeCode20: a recording of Claude Code 2.0.77 gets its wording, as internal/fidelity
// found it (seeds 7000 to 7049): Read of the whole file with "→" numbers and no cap, an
// empty selection counted in lines, binary by the name; Write and Edit over a file show a
// cat -n snippet; a timed-out command is "running in background"; a long output is cut
// with a count of lines; the session's reminders follow the recording.
func TestClaudeCode20(t *testing.T) {
	f := newFixture(t)
	f.Env.HarnessVersion = "2.0.77"
	long := strings.Repeat("x", 2500)
	p := f.Write("a.txt", "one\r\n"+long+"\n")
	const malware = "\n\n<system-reminder>\nWhenever you read a file, you should consider whether it would be considered malware. You CAN and SHOULD provide analysis of malware, what it is doing. But you MUST refuse to improve or augment the code. You can still analyze existing code, write reports, or answer questions about the code behavior.\n</system-reminder>\n"
	empty := f.Write("empty.txt", "")
	todo := "\n\n<system-reminder>\nThe TodoWrite tool hasn't been used recently. Nudge.\n</system-reminder>"
	for _, tt := range []struct {
		name, tool string
		input      m
		rec        *tape.ToolResult
		want       string
	}{
		{"read", "Read", m{"file_path": p}, nil, "     1→one\n     2→" + long + "\n     3→" + malware},
		{"read offset", "Read", m{"file_path": p, "offset": 2, "limit": 1}, nil, "     2→" + long + malware},
		{"read past the end", "Read", m{"file_path": p, "offset": 3, "limit": 1}, nil, "<system-reminder>Warning: the file exists but is shorter than the provided offset (3). The file has 3 lines.</system-reminder>"},
		{"read empty", "Read", m{"file_path": empty}, nil, "<system-reminder>Warning: the file exists but is shorter than the provided offset (1). The file has 1 lines.</system-reminder>"},
		{"read binary name", "Read", m{"file_path": f.Write("x.bin", "text")}, nil, "<tool_use_error>This tool cannot read binary files. The file appears to be a binary .bin file. Please use appropriate tools for binary file analysis.</tool_use_error>"},
		{"read token cap", "Read", m{"file_path": p}, recorded("File content (27000 tokens) exceeds maximum allowed tokens (25000). Please use offset and limit parameters to read specific portions of the file, or use the GrepTool to search for specific content.", true), "File content (27000 tokens) exceeds maximum allowed tokens (25000). Please use offset and limit parameters to read specific portions of the file, or use the GrepTool to search for specific content."},
		{"read, reminder", "Read", m{"file_path": p, "offset": 1, "limit": 1}, recorded("1→one"+strings.TrimSuffix(malware, "\n")+todo, false), "1→one" + strings.TrimSuffix(malware, "\n") + todo},
		{"glob of a missing directory", "Glob", m{"pattern": "*", "path": f.Dir + "/nope"}, nil, "Directory does not exist: " + f.Dir + "/nope"},
		{"write over", "Write", m{"file_path": p, "content": "a\nb\n"}, nil, "The file " + p + " has been updated. Here's the result of running `cat -n` on a snippet of the edited file:\n     1→a\n     2→b\n     3→"},
		{"edit", "Edit", m{"file_path": p, "old_string": "b", "new_string": "B"}, nil, "The file " + p + " has been updated. Here's the result of running `cat -n` on a snippet of the edited file:\n     1→a\n     2→B\n     3→"},
		{"same string", "Edit", m{"file_path": f.Dir + "/missing.txt", "old_string": "q", "new_string": "q"}, nil, "<tool_use_error>No changes to make: old_string and new_string are exactly the same.</tool_use_error>"},
		{"refused unread", "Edit", m{"file_path": empty, "old_string": "", "new_string": "filled\n"}, recorded("File has been unexpectedly modified. Read it again before attempting to write it.", true), "File has been unexpectedly modified. Read it again before attempting to write it."},
		{"grep count", "Grep", m{"pattern": "B", "output_mode": "count"}, nil, "a.txt:1\n\nFound 1 total occurrence across 1 file."},
	} {
		res := f.Run(tt.tool, tt.input, tt.rec)
		assert.Equal(t, tt.want, res.Text(), tt.name)
	}
	b, err := os.ReadFile(empty)
	require.NoError(t, err)
	assert.Empty(t, b, "an Edit the recording refused changed the file")

	f.Env.Environ = append(f.Env.Environ, "BASH_MAX_OUTPUT_LENGTH=20")
	res := f.Run("Bash", m{"command": "seq 1 30"}, nil)
	assert.Equal(t, "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n\n... [21 lines truncated] ...", res.Text())
	res = f.Run("Bash", m{"command": "sleep 2", "timeout": 200}, nil)
	assert.Regexp(t, `^Command running in background with ID: b[0-9a-z]{8}\. Output is being written to: \S+$`, res.Text())

	// The news of a background command's output follows the recording, with the replay's
	// output file; a Write's snippet shows the text as written, trailing blanks gone.
	rec := recorded("Command running in background with ID: bf00. Output is being written to: /tmp/claude/x/tasks/bf00.output\n\n<system-reminder>\nBackground bash bf00 has new output: 1 lines of stdout. Read /tmp/claude/x/tasks/bf00.output to see output.\n</system-reminder>", false)
	res = f.Run("Bash", m{"command": "echo hi", "run_in_background": true}, rec)
	out := f.Env.Tasks.OutputPath("bf00")
	assert.Equal(t, "Command running in background with ID: bf00. Output is being written to: "+out+"\n\n<system-reminder>\nBackground bash bf00 has new output: 1 lines of stdout. Read "+out+" to see output.\n</system-reminder>", res.Text())
	res = f.Run("Write", m{"file_path": p, "content": "a  \n"}, nil)
	assert.Equal(t, "The file "+p+" has been updated. Here's the result of running `cat -n` on a snippet of the edited file:\n     1→a\n     2→", res.Text())

	// A refusal replayed from the recording keeps one copy of its notes, with the replay's
	// output file (seeds 8045, 8049); a Write replaces a dangling link (seed 8046).
	rec = recorded("File has not been read yet. Read it first before writing to it.\n\n<system-reminder>\nBackground bash bf00 has new output: 1 lines of stdout. Read /tmp/claude/x/tasks/bf00.output to see output.\n</system-reminder>", true)
	res = f.Run("Write", m{"file_path": p, "content": "z"}, rec)
	assert.Equal(t, "File has not been read yet. Read it first before writing to it.\n\n<system-reminder>\nBackground bash bf00 has new output: 1 lines of stdout. Read "+out+" to see output.\n</system-reminder>", res.Text())
	require.NoError(t, os.Symlink("nowhere.txt", filepath.Join(f.Dir, "dangling")))
	res = f.Run("Write", m{"file_path": filepath.Join(f.Dir, "dangling"), "content": "x\n"}, recorded("File created successfully at: x", false))
	assert.Equal(t, "File created successfully at: "+filepath.Join(f.Dir, "dangling"), res.Text())
	st, err := os.Lstat(filepath.Join(f.Dir, "dangling"))
	require.NoError(t, err)
	assert.True(t, st.Mode().IsRegular())

	// Notes after an empty result start it (seed 8100).
	res = f.Run("Bash", m{"command": "true"}, recorded(strings.TrimPrefix(todo, "\n\n"), false))
	assert.Equal(t, strings.TrimPrefix(todo, "\n\n"), res.Text())

	// A missing file names the Bash tool's directory when it has left the project's (seed 8074).
	f.Run("Bash", m{"command": "mkdir -p sub && cd sub"}, nil)
	res = f.Run("Edit", m{"file_path": f.Dir + "/gone.txt", "old_string": "a", "new_string": "b"}, nil)
	assert.Equal(t, "<tool_use_error>File does not exist. Current working directory: "+f.Dir+"/sub</tool_use_error>", res.Text())
	f.Run("Bash", m{"command": "cd .."}, nil)

	// A file not valid UTF-8 is edited as 2.0 reads it, bad bytes made U+FFFD (seed 8085);
	// a failed edit leaves it as it was. Grep's content has no default head_limit (seed 8086).
	latin := f.Write("latin1.txt", "caf\xe9 cr\xe8me\n")
	f.Run("Edit", m{"file_path": latin, "old_string": "nothing", "new_string": "x"}, nil)
	b, err = os.ReadFile(latin)
	require.NoError(t, err)
	assert.Equal(t, "caf\xe9 cr\xe8me\n", string(b))
	f.Run("Edit", m{"file_path": latin, "old_string": "cr", "new_string": "CR"}, nil)
	b, err = os.ReadFile(latin)
	require.NoError(t, err)
	assert.Equal(t, "caf\ufffd CR\ufffdme\n", string(b))
	f.Write("many.txt", strings.Repeat("hit\n", 300))
	res = f.Run("Grep", m{"pattern": "hit", "output_mode": "content", "path": f.Dir + "/many.txt"}, nil)
	assert.Equal(t, 300, strings.Count(res.Text(), "hit"), res.Text()[len(res.Text())-60:])

	// A CRLF file keeps its line ends through a Write and a multi-line Edit (seed 8018).
	crlf := f.Write("crlf.txt", "one\r\ntwo\r\n")
	f.Run("Write", m{"file_path": crlf, "content": "1\n2\n3\n"}, nil)
	f.Run("Edit", m{"file_path": crlf, "old_string": "1\n2", "new_string": "x\ny"}, nil)
	b, err = os.ReadFile(crlf)
	require.NoError(t, err)
	assert.Equal(t, "x\r\ny\r\n3\r\n", string(b))
}

// TestSearchRecordedOrder: Glob and Grep list files by modification time, which a restored
// workspace does not keep; the same files come in the recorded order, other files in the
// executor's (seeds 8005, 8009 of internal/fidelity).
func TestSearchRecordedOrder(t *testing.T) {
	f := newFixture(t)
	f.Env.HarnessVersion = "2.0.77"
	f.Write("a.txt", "beta\n")
	f.Write("b.txt", "beta\n")
	f.Write("c.txt", "beta\n")
	res := f.Run("Glob", m{"pattern": "*.txt"}, recorded("c.txt\na.txt\nb.txt", false))
	assert.Equal(t, "c.txt\na.txt\nb.txt", res.Text())
	res = f.Run("Grep", m{"pattern": "beta", "output_mode": "count"}, recorded("b.txt:1\nc.txt:1\na.txt:1\n\nFound 3 total occurrences across 3 files.", false))
	assert.Equal(t, "b.txt:1\nc.txt:1\na.txt:1\n\nFound 3 total occurrences across 3 files.", res.Text())
	res = f.Run("Grep", m{"pattern": "beta"}, recorded("Found 3 files\nb.txt\na.txt\nc.txt", false))
	assert.Equal(t, "Found 3 files\nb.txt\na.txt\nc.txt", res.Text())
	res = f.Run("Glob", m{"pattern": "*.txt"}, recorded("c.txt\nd.txt\nb.txt", false))
	assert.NotContains(t, res.Text(), "d.txt")
	assert.ElementsMatch(t, []string{"a.txt", "b.txt", "c.txt"}, strings.Split(res.Text(), "\n"))
}

// TestClaudeCode20Streams: Claude Code 2.0 reads a command's stdout and stderr from two
// pipes: a success shows stdout, then stderr; a failure the code, stderr, then stdout,
// cut in the middle past 10000 characters; grep's exit code 1 is no failure
// (internal/fidelity, the class "2.0: stdout before stderr", seed 21053).
func TestClaudeCode20Streams(t *testing.T) {
	f := newFixture(t)
	f.Env.HarnessVersion = "2.0.77"
	for _, tt := range []struct {
		name, command, want string
		isErr               bool
	}{
		{"stderr first", "cat blob.bin | od -c | head -5", "0000000\ncat: blob.bin: No such file or directory", false},
		{"interleaved", "echo err1 >&2; echo out1; echo err2 >&2; echo out2", "out1\nout2\nerr1\nerr2", false},
		{"stderr only", "echo err >&2", "err", false},
		{"failure", "echo out; echo err >&2; exit 3", "Exit code 3\nerr\n\nout", true},
		{"grep finds nothing", "printf 'a\\n' | grep zzz", "", false},
		{"grep fails", "grep zzz nowhere.txt", "Exit code 2\ngrep: nowhere.txt: No such file or directory", true},
	} {
		res := f.Run("Bash", m{"command": tt.command}, nil)
		assert.Equal(t, tt.want, res.Text(), tt.name)
		assert.Equal(t, tt.isErr, res.IsError, tt.name)
	}
	res := f.Run("Bash", m{"command": "seq 1 3000; exit 1"}, nil)
	all := "Exit code 1\n" + seq(1, 3000)
	assert.Equal(t, all[:5000]+"\n\n... ["+fmt.Sprint(len(all)-10000)+" characters truncated] ...\n\n"+all[len(all)-5000:], res.Text())
}

func seq(from, to int) string {
	var b strings.Builder
	for i := from; i <= to; i++ {
		if i > from {
			b.WriteByte('\n')
		}
		fmt.Fprint(&b, i)
	}
	return b.String()
}

// TestClaudeCode20Search: Claude Code 2.0 runs rg in its first working directory with the
// searched one as an argument, and rg matches --glob against the path from its own
// directory (seeds 21053, 21129); a Grep result is cut at 20000 characters (seed 21128);
// content lines come in the recorded order of their files (seed 21221); a tool not offered
// keeps the session's notes (seed 21069).
func TestClaudeCode20Search(t *testing.T) {
	f := newFixture(t)
	f.Env.HarnessVersion = "2.0.77"
	f.Write("src/main.go", "package main\n")
	f.Write("src/util.go", "package main\n")
	main, util := filepath.Join(f.Dir, "src/main.go"), filepath.Join(f.Dir, "src/util.go")
	rec := recorded(main+"\n"+util, false)
	res := f.Run("Glob", m{"pattern": "src/*", "path": filepath.Join(f.Dir, "src")}, rec)
	assert.Equal(t, main+"\n"+util, res.Text())
	f.Run("Bash", m{"command": "cd src"}, nil)
	res = f.Run("Glob", m{"pattern": "src/*"}, rec)
	assert.Equal(t, main+"\n"+util, res.Text())
	res = f.Run("Glob", m{"pattern": "*.go"}, rec)
	assert.Equal(t, main+"\n"+util, res.Text())
	res = f.Run("Grep", m{"pattern": "package", "glob": "src/m*"}, nil)
	assert.Equal(t, "Found 1 file\nmain.go", res.Text())
	f.Run("Bash", m{"command": "cd .."}, nil)

	res = f.Run("Grep", m{"pattern": "^package", "output_mode": "content"}, recorded("src/util.go:1:package main\nsrc/main.go:1:package main", false))
	assert.Equal(t, "src/util.go:1:package main\nsrc/main.go:1:package main", res.Text())
	res = f.Run("Grep", m{"pattern": "^package", "output_mode": "content"}, nil)
	assert.Equal(t, "src/main.go:1:package main\nsrc/util.go:1:package main", res.Text())
	res = f.Run("Grep", m{"pattern": "^package", "output_mode": "content", "head_limit": 1}, nil)
	assert.Equal(t, "src/main.go:1:package main\n\n[Showing results with pagination = limit: 1, offset: 0]", res.Text())

	var many strings.Builder
	for i := range 1000 {
		fmt.Fprintf(&many, "line %d: %s\n", i+1, strings.Repeat("x", 30))
	}
	f.Write("many.log", many.String())
	res = f.Run("Grep", m{"pattern": "x{30}", "output_mode": "content", "path": filepath.Join(f.Dir, "many.log")}, nil)
	var lines []string
	for i := range 1000 {
		lines = append(lines, fmt.Sprintf("%d:line %d: %s", i+1, i+1, strings.Repeat("x", 30)))
	}
	all := strings.Join(lines, "\n")
	assert.Equal(t, all[:20000]+"\n\n... ["+fmt.Sprint(strings.Count(all[20000:], "\n")+1)+" lines truncated] ...", res.Text())

	env, err := harness.NewEnv(t.TempDir(), nil, nil)
	require.NoError(t, err)
	env.HarnessVersion = "2.0.77"
	sess := claudecode.New().NewSession(env)
	defer sess.Close()
	todo := "\n\n<system-reminder>\nThe TodoWrite tool hasn't been used recently. Nudge.\n</system-reminder>"
	b, err := json.Marshal(m{"file_path": main, "edits": []m{{"old_string": "a", "new_string": "b"}}})
	require.NoError(t, err)
	r := sess.(harness.Unoffered).NotOffered(t.Context(), tape.ToolCall{ID: "toolu_1", Name: "MultiEdit", Input: b}, recorded("<tool_use_error>Error: No such tool available: MultiEdit</tool_use_error>"+todo, true))
	assert.Equal(t, "<tool_use_error>Error: No such tool available: MultiEdit</tool_use_error>"+todo, r.Text())
}

// TestEditThroughLinkChecksString: Claude Code 2.1 checks old_string against a link's
// target before it refuses to write through the link (internal/fidelity, 2.1.332 seed
// 20174).
func TestEditThroughLinkChecksString(t *testing.T) {
	f := newFixture(t)
	f.Env.HarnessVersion = "2.1.332"
	target := f.Write("notes.txt", "alpha\nbeta\nbeta\n")
	link := filepath.Join(f.Dir, "link.txt")
	require.NoError(t, os.Symlink("notes.txt", link))
	res := f.Run("Edit", m{"file_path": link, "old_string": "delta", "new_string": "DELTA", "replace_all": true}, nil)
	assert.Equal(t, "<tool_use_error>String to replace not found in file.\nString: delta</tool_use_error>", res.Text())
	res = f.Run("Edit", m{"file_path": link, "old_string": "beta", "new_string": "BETA"}, nil)
	assert.Contains(t, res.Text(), "Found 2 matches of the string to replace")
	res = f.Run("Edit", m{"file_path": link, "old_string": "alpha", "new_string": "ALPHA"}, nil)
	assert.Equal(t, "Refusing to write "+link+": it is a symbolic link. Write to the link's target path instead: "+target+".", res.Text())
	b, err := os.ReadFile(target)
	require.NoError(t, err)
	assert.Equal(t, "alpha\nbeta\nbeta\n", string(b))
}

// TestClaudeCode20NewsWaits: the recording's news of a background command's output shows
// that the command had written it when the harness answered; the replay waits for as many
// lines before it answers, so that what the command made is there too (internal/fidelity,
// seed 21121: a file made in the background was missing from the replay's end state).
func TestClaudeCode20NewsWaits(t *testing.T) {
	f := newFixture(t)
	f.Env.HarnessVersion = "2.0.77"
	rec := recorded("Command running in background with ID: bf01. Output is being written to: /tmp/claude/x/tasks/bf01.output\n\n<system-reminder>\nBackground bash bf01 has new output: 1 line of stdout. Read /tmp/claude/x/tasks/bf01.output to see output.\n</system-reminder>", false)
	res := f.Run("Bash", m{"command": "sleep 0.3; printf 'x\\ny\\n' > made.txt && wc -l made.txt", "run_in_background": true}, rec)
	out := f.Env.Tasks.OutputPath("bf01")
	assert.Equal(t, "Command running in background with ID: bf01. Output is being written to: "+out+"\n\n<system-reminder>\nBackground bash bf01 has new output: 1 line of stdout. Read "+out+" to see output.\n</system-reminder>", res.Text())
	b, err := os.ReadFile(filepath.Join(f.Dir, "made.txt"))
	require.NoError(t, err, "the command's file is there when the call is answered")
	assert.Equal(t, "x\ny\n", string(b))
}
