package codex_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/executor/action"
	"github.com/tapebox/tapebox/executor/harness/codex"
	"github.com/tapebox/tapebox/internal/testutil/harnesstest"
	"github.com/tapebox/tapebox/tape"
)

type m = map[string]any

func newFixture(t *testing.T) *harnesstest.Session {
	return harnesstest.New(t, codex.New(), "call_1", nil)
}

// volatile replaces what Codex itself makes volatile: chunk ids, wall times, session ids.
func volatile(s string) string {
	s = regexp.MustCompile(`Chunk ID: [0-9a-f]{6}`).ReplaceAllString(s, "Chunk ID: XXXXXX")
	s = regexp.MustCompile(`Wall time: [0-9.]+ seconds`).ReplaceAllString(s, "Wall time: W seconds")
	s = regexp.MustCompile(`"duration_seconds":[0-9.]+`).ReplaceAllString(s, `"duration_seconds":D`)
	s = regexp.MustCompile(`timed out after \d+ milliseconds`).ReplaceAllString(s, "timed out after T milliseconds")
	return regexp.MustCompile(`session ID \d+`).ReplaceAllString(s, "session ID N")
}

func TestPolicy(t *testing.T) {
	p := codex.New().Policy()
	assert.True(t, p.ParallelToolCalls)
	assert.Equal(t, []string{"spawn_agent"}, p.SpawningTools)
}

func TestExecCommand(t *testing.T) {
	f := newFixture(t)
	tests := []struct {
		input m
		want  string
	}{
		{m{"cmd": "echo made", "login": false}, "Chunk ID: XXXXXX\nWall time: W seconds\nProcess exited with code 0\nOriginal token count: 2\nOutput:\nmade\n"},
		{m{"cmd": "echo hello > out.txt"}, "Chunk ID: XXXXXX\nWall time: W seconds\nProcess exited with code 0\nOriginal token count: 0\nOutput:\n"},
		{m{"cmd": "echo about to fail; exit 1", "login": false}, "Chunk ID: XXXXXX\nWall time: W seconds\nProcess exited with code 1\nOriginal token count: 4\nOutput:\nabout to fail\n"},
		{m{"cmd": "seq 1 100", "login": false, "max_output_tokens": 10}, "Chunk ID: XXXXXX\nWall time: W seconds\nProcess exited with code 0\nOriginal token count: 73\nOutput:\nWarning: truncated output (original token count: 73)\nTotal output lines: 100\n\n1\n2\n3\n4\n5\n6\n7\n8\n9\n10…63 tokens truncated…\n95\n96\n97\n98\n99\n100\n"},
		{m{"cmd": 5}, "failed to parse function arguments: exec_command: parameter \"cmd\" must be string, got number"},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, volatile(f.Text("exec_command", tt.input, nil)))
	}
	b, err := os.ReadFile(filepath.Join(f.Dir, "out.txt"))
	require.NoError(t, err)
	assert.Equal(t, "hello\n", string(b))
}

func TestExecSession(t *testing.T) {
	f := newFixture(t)
	// With tty, a terminal: what is typed is echoed, and "\n" comes out as "\r\n".
	out := f.Text("exec_command", m{"cmd": "echo ready; read x; echo got $x", "tty": true, "yield_time_ms": 250}, nil)
	require.Regexp(t, `^Chunk ID: [0-9a-f]{6}\nWall time: [0-9.]+ seconds\nProcess running with session ID \d+\nOriginal token count: 2\nOutput:\nready\r\n$`, out)
	id := regexp.MustCompile(`session ID (\d+)`).FindStringSubmatch(out)[1]
	out = f.Text("write_stdin", json.RawMessage(`{"session_id":`+id+`,"chars":"abc\n","yield_time_ms":5000}`), nil)
	assert.Equal(t, "Chunk ID: XXXXXX\nWall time: W seconds\nProcess exited with code 0\nOriginal token count: 4\nOutput:\nabc\r\ngot abc\r\n", volatile(out))
	out = f.Text("write_stdin", m{"session_id": id, "chars": ""}, nil)
	assert.Equal(t, "write_stdin failed: Unknown process id "+id, out, "an ended session is gone")

	// Without tty, no stdin: a poll works, typing does not.
	out = f.Text("exec_command", m{"cmd": "cat; echo early; sleep 0.6; echo late", "yield_time_ms": 250}, nil)
	require.Regexp(t, `^Chunk ID: [0-9a-f]{6}\nWall time: [0-9.]+ seconds\nProcess running with session ID \d+\nOriginal token count: 2\nOutput:\nearly\n$`, out)
	id = regexp.MustCompile(`session ID (\d+)`).FindStringSubmatch(out)[1]
	out = f.Text("write_stdin", json.RawMessage(`{"session_id":`+id+`,"chars":"abc\n"}`), nil)
	assert.Equal(t, "write_stdin failed: stdin is closed for this session; rerun exec_command with tty=true to keep stdin open", out)
	out = f.Text("write_stdin", json.RawMessage(`{"session_id":`+id+`,"chars":"","yield_time_ms":5000}`), nil)
	assert.Equal(t, "Chunk ID: XXXXXX\nWall time: W seconds\nProcess exited with code 0\nOriginal token count: 2\nOutput:\nlate\n", volatile(out))
}

// With login (the default), commands run as `bash -c` in the environment a login shell
// left, captured once: Codex's shell snapshot.
func TestExecLoginSnapshot(t *testing.T) {
	f := newFixture(t)
	home := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(home, ".profile"), []byte("export FROM_PROFILE=yes\nprofilefn() { :; }\necho noise\n"), 0o644))
	f.Env.Environ = append(f.Env.Environ, "HOME="+home)
	const cmd = `echo "p=$FROM_PROFILE $(type -t profilefn) $(shopt -p login_shell) 0=$0"`
	out := f.Text("exec_command", m{"cmd": cmd}, nil)
	assert.True(t, strings.HasSuffix(out, "\nOutput:\np=yes  shopt -u login_shell 0="+action.FindShell()+"\n"), out)
	out = f.Text("exec_command", m{"cmd": cmd, "login": false}, nil)
	assert.True(t, strings.HasSuffix(out, "\nOutput:\np=  shopt -u login_shell 0="+action.FindShell()+"\n"), out)
}

func TestApplyPatch(t *testing.T) {
	f := newFixture(t)
	require.NoError(t, os.MkdirAll(filepath.Join(f.Dir, "docs"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(f.Dir, "docs/first.txt"), []byte("one\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(f.Dir, "old.txt"), []byte("keep\n"), 0o644))
	patch := "*** Begin Patch\n*** Add File: docs/second.txt\n+two\n*** Delete File: docs/first.txt\n*** Update File: old.txt\n*** Move to: renamed.txt\n@@\n-keep\n+kept\n*** End Patch"
	out := f.Text("apply_patch", m{"input": patch}, nil)
	assert.Equal(t, "Exit code: 0\nWall time: W seconds\nOutput:\nSuccess. Updated the following files:\nA docs/second.txt\nM renamed.txt\nD docs/first.txt\n", volatile(out))
	assert.Regexp(t, `Wall time: 0 seconds`, out)

	out = f.Text("apply_patch", m{"input": "*** Begin Patch\n*** Update File: renamed.txt\n@@\n-this line is not in the file\n+x\n*** End Patch"}, nil)
	assert.Equal(t, "apply_patch verification failed: Failed to find expected lines in "+filepath.Join(f.Dir, "renamed.txt")+":\nthis line is not in the file", out)
	out = f.Text("apply_patch", m{"input": "*** Begin Patch\nnonsense\n*** End Patch"}, nil)
	assert.Equal(t, "apply_patch verification failed: invalid hunk at line 2, 'nonsense' is not a valid hunk header. Valid hunk headers: '*** Add File: {path}', '*** Delete File: {path}', '*** Update File: {path}'", out)

	// Two hunks on one file: Codex refuses the patch before touching anything.
	out = f.Text("apply_patch", m{"input": "*** Begin Patch\n*** Add File: dup.txt\n+x\n*** Delete File: ./dup.txt\n*** End Patch"}, nil)
	assert.Equal(t, "apply_patch verification failed: invalid patch: multiple operations target "+filepath.Join(f.Dir, "dup.txt"), out)
	assert.NoFileExists(t, filepath.Join(f.Dir, "dup.txt"))

	// apply_patch through exec_command and the older shell tool.
	out = f.Text("exec_command", m{"cmd": "apply_patch <<'EOF'\n*** Begin Patch\n*** Add File: h.txt\n+x\n*** End Patch\nEOF"}, nil)
	assert.Equal(t, "Exit code: 0\nWall time: W seconds\nOutput:\nSuccess. Updated the following files:\nA h.txt\n", volatile(out))
	out = f.Text("shell", m{"command": []string{"apply_patch", "*** Begin Patch\n*** Delete File: h.txt\n*** End Patch"}}, nil)
	assert.Equal(t, `{"output":"Success. Updated the following files:\nD h.txt\n","metadata":{"exit_code":0,"duration_seconds":D}}`, volatile(out))
}

func TestOlderShellTools(t *testing.T) {
	f := newFixture(t)
	tests := []struct {
		tool  string
		input m
		rec   *tape.ToolResult
		want  string
	}{
		{"shell", m{"command": []string{"bash", "-c", "echo 'a \"q\"'; exit 2"}, "workdir": f.Dir}, nil, `{"output":"a \"q\"\n","metadata":{"exit_code":2,"duration_seconds":D}}`},
		{"shell", m{"command": []string{"sleep", "5"}, "timeout_ms": 100}, nil, `{"output":"command timed out after T milliseconds\n","metadata":{"exit_code":124,"duration_seconds":D}}`},
		{"shell", m{"command": []string{"echo", "x"}}, &tape.ToolResult{Content: []tape.Block{{Type: tape.BlockText, Text: "Exit code: 0\nWall time: 0 seconds\nOutput:\nx\n"}}}, "Exit code: 0\nWall time: W seconds\nOutput:\nx\n"},
		{"shell_command", m{"command": "echo hi", "login": false}, nil, "Exit code: 0\nWall time: W seconds\nOutput:\nhi\n"},
		{"local_shell", m{"action": m{"type": "exec", "command": []string{"pwd"}, "working_directory": "/"}}, nil, `{"output":"/\n","metadata":{"exit_code":0,"duration_seconds":D}}`},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, volatile(f.Text(tt.tool, tt.input, tt.rec)))
	}
}

func TestNoop(t *testing.T) {
	f := newFixture(t)
	rec := &tape.ToolResult{Content: []tape.Block{{Type: tape.BlockText, Text: "recorded"}}}
	for _, tool := range []string{"update_plan", "view_image", "web_search", "request_user_input", "get_goal", "create_goal", "update_goal", "tool_search", "wait", "something_new"} {
		assert.Equal(t, "recorded", f.Text(tool, m{}, rec))
	}
	assert.Equal(t, "Plan updated", f.Text("update_plan", m{"plan": []m{}}, nil))
	assert.Contains(t, f.Text("view_image", m{}, nil), `"view_image"`)
	assert.Contains(t, f.Text("spawn_agent", m{}, rec), "subagent")
}

func TestTruncateTokens(t *testing.T) {
	assert.Equal(t, "short", codex.TruncateTokens("short", 10))
	s := strings.Repeat("é", 30) // 60 bytes
	got := codex.TruncateTokens(s, 5)
	assert.Equal(t, "Total output lines: 1\n\néé…10 tokens truncated…éé", strings.ReplaceAll(got, strings.Repeat("é", 5), "éé"))
	// A head and a tail cut back to a character boundary keep nothing of "日本語..." under
	// a 4-byte budget, but Codex counts the bytes past the budget as removed: 896 bytes, 224
	// tokens (the executor said 225, the tokens of all 900; fidelity seed codex 109).
	assert.Equal(t, "Total output lines: 1\n\n…224 tokens truncated…", codex.TruncateTokens(strings.Repeat("日本語", 100), 1))
	assert.Equal(t, 0, codex.ApproxTokens(0))
	assert.Equal(t, 2, codex.ApproxTokens(5))
}

// A tool the recorded request did not offer gets Codex 0.171's answer, and nothing runs;
// offered, it runs.
func TestUnsupported(t *testing.T) {
	f := newFixture(t)
	assert.Equal(t, "unsupported call: shell", f.NotOffered("shell", m{"command": []string{"touch", "made.txt"}}))
	assert.Equal(t, "unsupported call: update_plan", f.NotOffered("update_plan", m{"plan": []m{}}))
	assert.NoFileExists(t, filepath.Join(f.Dir, "made.txt"))
	assert.Contains(t, f.Text("shell", m{"command": []string{"touch", "made.txt"}}, nil), `"exit_code":0`)
	assert.FileExists(t, filepath.Join(f.Dir, "made.txt"))
}

func TestExecWorkdir(t *testing.T) {
	f := newFixture(t)
	require.NoError(t, os.WriteFile(filepath.Join(f.Dir, "plain.txt"), nil, 0o644))
	assert.Equal(t, `exec_command failed: CreateProcess { message: "Rejected(\"Failed to create unified exec process: No such file or directory (os error 2)\")" }`,
		f.Text("exec_command", m{"cmd": "pwd", "workdir": "no/such"}, nil))
	assert.Equal(t, `exec_command failed: CreateProcess { message: "Rejected(\"Failed to create unified exec process: Not a directory (os error 20)\")" }`,
		f.Text("exec_command", m{"cmd": "pwd", "workdir": "plain.txt"}, nil))
	assert.Equal(t, "patch rejected: empty patch", f.Text("apply_patch", m{"input": "*** Begin Patch\n*** End Patch"}, nil))
}

// A patch whose changes cannot all be written answers as a command that exited 1 with the
// failed write alone, the changes before it written (it said "apply_patch verification
// failed: ...: Not a directory (os error 20)").
func TestPatchWriteFails(t *testing.T) {
	f := newFixture(t)
	require.NoError(t, os.WriteFile(filepath.Join(f.Dir, "notes.txt"), []byte("alpha\n"), 0o644))
	out := f.Text("apply_patch", m{"input": "*** Begin Patch\n*** Add File: first.txt\n+one\n*** Add File: notes.txt/inner.txt\n+x\n*** End Patch"}, nil)
	assert.Regexp(t, `^Exit code: 1\nWall time: [0-9.]+ seconds\nOutput:\nFailed to write file `+regexp.QuoteMeta(filepath.Join(f.Dir, "notes.txt/inner.txt"))+`\n$`, out)
	assert.FileExists(t, filepath.Join(f.Dir, "first.txt"))
}
