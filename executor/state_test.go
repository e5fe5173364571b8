package executor_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/executor/harness"
	"github.com/tapebox/tapebox/executor/protocol"
	"github.com/tapebox/tapebox/internal/testutil/treetest"
	"github.com/tapebox/tapebox/tape"
)

// end says bye and waits for Serve to return.
func (s *session) end() {
	s.t.Helper()
	s.send(protocol.Bye{Op: protocol.OpBye})
	require.NotNil(s.t, s.recv().Bye)
	require.NoError(s.t, <-s.done)
	s.done <- nil // for the cleanup
}

// result sends a call and returns its result.
func (s *session) result(c protocol.Call) tape.ToolResult {
	s.t.Helper()
	s.send(c)
	env := s.recv()
	require.NotNil(s.t, env.Result, string(env.Raw))
	return env.Result.Result
}

// removeState removes, at the end of the test, the state directory sessions on cwd have by
// default (in the system's temporary directory, outside the test's).
func removeState(t *testing.T, cwd string) string {
	dir := harness.DefaultStateDir(cwd)
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// A session keeps no state in its working directory: after foreground commands the
// directory holds what they made and nothing else, and no state directory is left
// anywhere.
func TestServeLeavesWorkspaceAlone(t *testing.T) {
	for _, tc := range []struct {
		harness, tool string
		input         map[string]any
	}{
		{"claude-code", "Bash", map[string]any{"command": "mkdir sub && echo hi > sub/made.txt && echo done"}},
		{"codex", "exec_command", map[string]any{"cmd": "mkdir sub && echo hi > sub/made.txt && echo done", "login": false}},
	} {
		t.Run(tc.harness, func(t *testing.T) {
			dir := t.TempDir()
			state := removeState(t, dir)
			s := startSession(t)
			s.hello(tc.harness, dir)
			res := s.result(call("1", tc.tool, tc.input, nil))
			assert.Contains(t, res.Text(), "done")
			s.end()
			assert.Equal(t, []string{"sub/", "sub/made.txt"}, treetest.List(t, dir))
			assert.NoDirExists(t, state, "a session with no background task leaves no state directory")
		})
	}

	// Output past Claude Code's limit is saved in the state directory, not the workspace.
	dir := t.TempDir()
	state := removeState(t, dir)
	s := startSession(t)
	s.send(protocol.Hello{Op: protocol.OpHello, Harness: "claude-code", Cwd: dir, Env: map[string]string{"BASH_MAX_OUTPUT_LENGTH": "100"}})
	require.NotNil(t, s.recv().HelloReply)
	res := s.result(call("1", "Bash", map[string]any{"command": "seq 1000"}, nil))
	m := regexp.MustCompile(`Full output saved to: (\S+)`).FindStringSubmatch(res.Text())
	require.NotNil(t, m, res.Text())
	assert.True(t, strings.HasPrefix(m[1], state+string(filepath.Separator)), "%s is in %s", m[1], state)
	assert.FileExists(t, m[1])
	s.end()
	assert.Empty(t, treetest.List(t, dir))
}

// A restarted executor (a new session on the same working directory) answers for the
// background tasks of the one before: their state is at the same default place.
func TestServeRestartKeepsTasks(t *testing.T) {
	t.Run("claude-code", func(t *testing.T) {
		dir := t.TempDir()
		removeState(t, dir)
		s := startSession(t)
		s.hello("claude-code", dir)
		res := s.result(call("1", "Bash", map[string]any{"command": "echo started; sleep 0.3; echo finished", "run_in_background": true}, nil))
		m := regexp.MustCompile(`in background with ID: (\S+)\.`).FindStringSubmatch(res.Text())
		require.NotNil(t, m, res.Text())
		s.end()

		again := startSession(t)
		again.hello("claude-code", dir)
		out := again.result(call("2", "TaskOutput", map[string]any{"task_id": m[1], "block": true, "timeout": 30000}, nil))
		assert.False(t, out.IsError, out.Text())
		assert.Contains(t, out.Text(), "<status>completed</status>")
		assert.Contains(t, out.Text(), "<output>\nstarted\nfinished\n</output>")
		again.end()
		assert.Empty(t, treetest.List(t, dir))
	})
	t.Run("codex", func(t *testing.T) {
		dir := t.TempDir()
		removeState(t, dir)
		s := startSession(t)
		s.hello("codex", dir)
		res := s.result(call("1", "exec_command", map[string]any{"cmd": "echo started; sleep 0.5; echo finished", "login": false, "yield_time_ms": 100}, nil))
		m := regexp.MustCompile(`Process running with session ID (\d+)`).FindStringSubmatch(res.Text())
		require.NotNil(t, m, res.Text())
		s.end()

		again := startSession(t)
		again.hello("codex", dir)
		out := again.result(call("2", "write_stdin", map[string]any{"session_id": m[1], "chars": "", "yield_time_ms": 30000}, nil))
		assert.Contains(t, out.Text(), "Process exited with code 0")
		assert.Contains(t, out.Text(), "Output:\nfinished\n")
		again.end()
		assert.Empty(t, treetest.List(t, dir))
	})
}

// hello's state_dir still chooses the place, absolute or relative to the working
// directory.
func TestServeExplicitStateDir(t *testing.T) {
	for _, tc := range []struct{ name, stateDir, want string }{
		{"absolute", "ABS", ""},
		{"relative", ".state", ".state"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			def := removeState(t, dir)
			sd, want := tc.stateDir, filepath.Join(dir, tc.want)
			if sd == "ABS" {
				sd = filepath.Join(t.TempDir(), "state")
				want = sd
			}
			s := startSession(t)
			s.send(protocol.Hello{Op: protocol.OpHello, Harness: "claude-code", Cwd: dir, Env: map[string]string{}, StateDir: &sd})
			require.NotNil(t, s.recv().HelloReply)
			res := s.result(call("1", "Bash", map[string]any{"command": "echo bg", "run_in_background": true}, nil))
			m := regexp.MustCompile(`in background with ID: (\S+)\. Output is being written to: (\S+)\.`).FindStringSubmatch(res.Text())
			require.NotNil(t, m, res.Text())
			assert.Equal(t, filepath.Join(want, "tasks", m[1], "output"), m[2])
			assert.FileExists(t, m[2])
			s.end()
			assert.NoDirExists(t, def)
		})
	}
}

// A symbolic link planted at the default state directory (a hostile tape's command can
// compute its name) is refused: the call that needs state fails with a result that says
// why, and nothing is written through the link.
func TestServeRefusesPlantedStateDir(t *testing.T) {
	dir, target := t.TempDir(), t.TempDir()
	state := removeState(t, dir)
	require.NoError(t, os.Symlink(target, state))
	s := startSession(t)
	s.hello("claude-code", dir)
	res := s.result(call("1", "Bash", map[string]any{"command": "echo hi"}, nil))
	assert.True(t, res.IsError)
	assert.Contains(t, res.Text(), "refusing to use the state directory "+state+": it is a symbolic link (remove it, or name another in hello's state_dir)")
	// Calls that need no state still work.
	res = s.result(call("2", "Write", map[string]any{"file_path": filepath.Join(dir, "a.txt"), "content": "x"}, nil))
	assert.False(t, res.IsError, res.Text())
	s.end()
	assert.Empty(t, treetest.List(t, target))
}
