package cli

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/tape"
	"github.com/tapebox/tapebox/testkit"
	"github.com/tapebox/tapebox/testkit/fakeprovider"
)

// recordInRepo runs `tapebox record` with the helper agent (TestRecordHelperAgent) in a
// directory that already holds a README, and returns the tape's path, record's exit code and
// its stderr.
func recordInRepo(t *testing.T, extra ...string) (work, out string, code int, stderr string) {
	work, out, code, stderr, _ = recordInRepoOut(t, extra...)
	return
}

// recordInRepoOut is recordInRepo that also returns record's stdout.
func recordInRepoOut(t *testing.T, extra ...string) (work, out string, code int, stderr, stdoutText string) {
	t.Helper()
	script := fakeprovider.Script{Threads: []fakeprovider.Thread{{Name: "main", Turns: []fakeprovider.Turn{
		{Calls: []tape.ToolCall{fakeprovider.Call("Bash", map[string]string{"command": "cat README.md && echo made > made.txt"})}},
		{Text: "Made it."},
	}}}}
	fp := testkit.NewProvider(t, script)
	work = t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(work, "README.md"), []byte("read me\n"), 0o644))
	require.NoError(t, os.MkdirAll(filepath.Join(work, "node_modules", "x"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(work, "node_modules", "x", "index.js"), []byte("excluded by default\n"), 0o644))
	t.Chdir(work)
	t.Setenv(recordAgentEnv, "1")
	t.Setenv("TAPEBOX_TEST_AGENT_EXIT", "0")
	out = filepath.Join(t.TempDir(), "run.json")
	var stdout, errb syncBuffer
	env := &Env{Stdout: &stdout, Stderr: &errb, Getenv: func(string) string { return "" }}
	args := append([]string{"record", "--output", out, "--upstream", fp.URL(), "--harness", "claude-code"}, extra...)
	args = append(args, "--", os.Args[0], "-test.run=^TestRecordHelperAgent$")
	code = RunEnv(t.Context(), args, env)
	return work, out, code, errb.String(), stdout.String()
}

// TestRecordCarriesWorkspace: record snapshots the directory the agent starts in and records
// its end; a replay in an empty directory restores it (the agent's first call reads the
// README only the snapshot has) and compare checks the end state.
func TestRecordCarriesWorkspace(t *testing.T) {
	wd, err := os.Getwd()
	require.NoError(t, err)
	_, out, code, stderr := recordInRepo(t)
	t.Chdir(wd) // the executor is found from the checkout
	require.Equal(t, ExitOK, code, stderr)
	tp, err := tape.LoadFile(out)
	require.NoError(t, err)
	w := tp.Meta.Workspace
	require.NotNil(t, w)
	assert.Equal(t, "run.workspace.tar.zst", w.Snapshot)
	assert.Equal(t, 1, w.Files, "README.md; node_modules is excluded by default")
	assert.FileExists(t, filepath.Join(filepath.Dir(out), w.Snapshot))
	var paths []string
	for _, e := range w.End {
		paths = append(paths, e.Path)
	}
	assert.Equal(t, []string{"README.md", "made.txt"}, paths)
	assert.Equal(t, "read me", strings.TrimSpace(tp.Threads[0].Steps[0].ToolResults[0].Text()))

	code, stdout, stderr := runVerbForTest(t, "inspect", out)
	require.Equal(t, ExitOK, code, stderr)
	assert.Contains(t, stdout, "workspace  start: run.workspace.tar.zst (1 entries, 8 bytes of files")
	assert.Contains(t, stdout, "; end: 2 entries")

	dir := filepath.Join(t.TempDir(), "replay-here")
	rep := filepath.Join(t.TempDir(), "replay.json")
	code, _, stderr = runVerbForTest(t, "replay", "--tape", out, "--sandbox", "local:"+dir, "--speed", "0", "--output", rep)
	require.Equal(t, ExitOK, code, stderr)
	assert.Contains(t, stderr, "workspace: restored run.workspace.tar.zst")
	code, stdout, _ = runVerbForTest(t, "compare", out, rep)
	assert.Equal(t, ExitOK, code, stdout)
	assert.Contains(t, stdout, "end state: identical (2 entries)")

	// Without its snapshot the tape is refused before anything runs, unless --no-workspace.
	require.NoError(t, os.Remove(filepath.Join(filepath.Dir(out), w.Snapshot)))
	dir2 := filepath.Join(t.TempDir(), "again")
	code, _, stderr = runVerbForTest(t, "replay", "--tape", out, "--sandbox", "local:"+dir2, "--speed", "0")
	assert.Equal(t, ExitFailure, code)
	assert.Contains(t, stderr, "run.workspace.tar.zst, which is missing")
	assert.Contains(t, stderr, "--no-workspace")
	assert.NoDirExists(t, dir2, "nothing ran")
	rep2 := filepath.Join(t.TempDir(), "replay.json")
	code, _, stderr = runVerbForTest(t, "replay", "--tape", out, "--sandbox", "local:"+dir2, "--speed", "0", "--no-workspace", "--output", rep2)
	require.Equal(t, ExitOK, code, stderr)
	code, stdout, _ = runVerbForTest(t, "compare", out, rep2)
	assert.Equal(t, ExitFailure, code, "the README was not there, and no end manifest was taken")
	assert.Contains(t, stdout, "DIFFERS")
}

// TestRecordWorkspaceOverCap: a workspace over --workspace-max is an error before the agent
// starts, and nothing is written.
func TestRecordWorkspaceOverCap(t *testing.T) {
	work, out, code, stderr := recordInRepo(t, "--workspace-max", "4")
	assert.Equal(t, ExitFailure, code)
	assert.Contains(t, stderr, "over the size cap")
	assert.NoFileExists(t, filepath.Join(work, "made.txt"), "the agent never ran")
	assert.NoFileExists(t, out)
	entries, err := os.ReadDir(filepath.Dir(out))
	require.NoError(t, err)
	assert.Empty(t, entries, "no half-written snapshot")

	_, out, code, stderr = recordInRepo(t, "--no-workspace")
	require.Equal(t, ExitOK, code, stderr)
	tp, err := tape.LoadFile(out)
	require.NoError(t, err)
	assert.Nil(t, tp.Meta.Workspace)
}

// TestOutputsRefuseDevices: record --output and replay --output on a copy of /dev/null (and
// on a FIFO) fail with a clear error and leave the node as it was.
func TestOutputsRefuseDevices(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	require.NoError(t, syscall.Mkfifo(fifo, 0o644))
	nodes := []string{fifo}
	null := filepath.Join(dir, "null")
	if err := syscall.Mknod(null, syscall.S_IFCHR|0o666, 1<<8|3); err == nil {
		nodes = append(nodes, null)
	} else if os.Getuid() == 0 {
		t.Fatalf("mknod: %v", err)
	}
	rec := filepath.Join("..", "testdata", "replay", "codex.json")
	for _, node := range nodes {
		before, err := os.Lstat(node)
		require.NoError(t, err)
		code, _, stderr := runVerbForTest(t, "replay", "--tape", rec, "--sandbox", "local:"+t.TempDir(), "--speed", "0", "--output", node)
		assert.Equal(t, ExitFailure, code)
		assert.Contains(t, stderr, "refusing to replace "+node)
		code, _, stderr = runVerbForTest(t, "record", "--no-workspace", "--output", node, "--", "true")
		assert.Equal(t, ExitFailure, code)
		assert.Contains(t, stderr, "refusing to replace "+node)
		after, err := os.Lstat(node)
		require.NoError(t, err)
		assert.Equal(t, before.Mode(), after.Mode(), "%s is as it was", node)
	}
}
