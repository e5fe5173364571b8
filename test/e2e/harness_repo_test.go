package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/controller"
	"github.com/tapebox/tapebox/internal/testutil/dockertest"
	"github.com/tapebox/tapebox/tape"
	"github.com/tapebox/tapebox/tape/seal"
	"github.com/tapebox/tapebox/testkit/fakeprovider"
	"github.com/tapebox/tapebox/workspace"
)

// greeterRepo is the small repository the repo cases start from: a README, a script, a file
// the agent never touches (LICENSE.txt, which the removed-file check takes away) and a
// subdirectory.
func greeterRepo() map[string]string {
	return map[string]string{
		"README.md":     "# Greeter\n\nRun ./greet.sh NAME.\n",
		"greet.sh*":     "#!/bin/sh\necho \"hello, $1\"\n",
		"LICENSE.txt":   "Apache-2.0\n",
		"src/names.txt": "ada\nlin\n",
	}
}

// writeRepo fills dir with files (see realCase.repo).
func writeRepo(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		mode := os.FileMode(0o644)
		if strings.HasSuffix(name, "*") {
			name, mode = strings.TrimSuffix(name, "*"), 0o755
		}
		p := filepath.Join(dir, filepath.FromSlash(name))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(content), mode))
		require.NoError(t, os.Chmod(p, mode))
	}
}

// claudeRepoCase: real Claude Code edits files that existed before it started.
func claudeRepoCase() realCase {
	const cwd = "/tmp/tapebox-rh-claude-repo"
	c := repoCase(claudeCase(), "claude-code-repo", cwd, "[rh-claude-repo]", 5)
	call := fakeprovider.Call
	c.scratch = []string{fmt.Sprintf("/tmp/claude-%d/-tmp-tapebox-rh-claude-repo", os.Getuid())}
	c.script = func() fakeprovider.Script {
		return fakeprovider.Script{Threads: []fakeprovider.Thread{{Name: "main", Marker: "[rh-claude-repo]", Turns: []fakeprovider.Turn{
			{Text: "Reading the repository.", Calls: []tape.ToolCall{
				call("Read", map[string]any{"file_path": cwd + "/README.md"}),
				call("Read", map[string]any{"file_path": cwd + "/greet.sh"}),
			}},
			{Calls: []tape.ToolCall{call("Edit", map[string]any{"file_path": cwd + "/greet.sh", "old_string": "hello", "new_string": "Hello"})}},
			{Calls: []tape.ToolCall{call("Edit", map[string]any{"file_path": cwd + "/README.md", "old_string": "NAME.", "new_string": "NAME: it prints Hello, NAME."})}},
			{Calls: []tape.ToolCall{call("Bash", map[string]any{"command": "./greet.sh $(head -1 src/names.txt) | tee out.txt", "description": "run the script"})}},
			{Text: "Done: the greeting is capitalised and documented."},
		}}}}
	}
	return c
}

// codexRepoCase: real Codex patches files that existed before it started.
func codexRepoCase() realCase {
	c := repoCase(codexCase(), "codex-repo", "/tmp/tapebox-rh-codex-repo", "[rh-codex-repo]", 4)
	exec := func(cmd string) tape.ToolCall { return fakeprovider.Call("exec_command", map[string]any{"cmd": cmd}) }
	c.script = func() fakeprovider.Script {
		return fakeprovider.Script{Threads: []fakeprovider.Thread{{Name: "main", Marker: "[rh-codex-repo]", Turns: []fakeprovider.Turn{
			{Text: "Reading the repository.", Calls: []tape.ToolCall{exec("cat README.md greet.sh; ls -l")}},
			{Calls: []tape.ToolCall{fakeprovider.Custom("apply_patch", "*** Begin Patch\n*** Update File: greet.sh\n@@\n-echo \"hello, $1\"\n+echo \"Hello, $1\"\n*** Update File: README.md\n@@\n-Run ./greet.sh NAME.\n+Run ./greet.sh NAME: it prints Hello, NAME.\n*** End Patch\n")}},
			{Calls: []tape.ToolCall{exec("./greet.sh $(head -1 src/names.txt) | tee out.txt")}},
			{Text: "Done: the greeting is capitalised and documented."},
		}}}}
	}
	return c
}

// repoCase makes base a case on the greeter repository, named name, in cwd: its prompt is
// marker's task to capitalise the greeting and document it, and its check wants steps steps
// on the main thread, the first reading the README that was there before the harness
// started, the edits and their run in the end state, and checkRepoWorkspace.
func repoCase(base realCase, name, cwd, marker string, steps int) realCase {
	c := base
	c.name, c.cwd, c.repo = name, cwd, greeterRepo()
	c.command = func(t *testing.T, home string) ([]string, []string) {
		argv, env := base.command(t, home)
		argv[len(argv)-1] = marker + " Capitalise the greeting and document it."
		return argv, env
	}
	c.check = func(t *testing.T, rec *tape.Tape, state map[string]string) {
		main := rec.Main()
		require.Len(t, main.Steps, steps)
		assert.Contains(t, main.Steps[0].ToolResults[0].Text(), "Run ./greet.sh NAME.", "%s read the README that was there before it started", base.harness)
		assert.Equal(t, "Hello, ada\n", state["out.txt"])
		assert.Equal(t, "# Greeter\n\nRun ./greet.sh NAME: it prints Hello, NAME.\n", state["README.md"])
		checkRepoWorkspace(t, rec)
	}
	return c
}

// checkRepoWorkspace: the recording carries the repository's start snapshot and an end
// manifest with what the agent changed.
func checkRepoWorkspace(t *testing.T, rec *tape.Tape) {
	t.Helper()
	w := rec.Meta.Workspace
	require.NotNil(t, w, "tapebox record took the workspace")
	assert.NotEmpty(t, w.Snapshot)
	assert.Equal(t, 5, w.Files, "README.md, greet.sh, LICENSE.txt, src/, src/names.txt")
	paths := map[string]tape.FileEntry{}
	for _, e := range w.End {
		paths[e.Path] = e
	}
	assert.Equal(t, "0755", paths["greet.sh"].Mode)
	assert.Contains(t, paths, "out.txt")
	assert.Contains(t, paths, "LICENSE.txt")
}

// repoReplays replays a repo case's tape with the tapebox CLI in a fresh container with no
// --cwd (meta.cwd and the snapshot do it all), expects compare to say identical, end state
// included; then replays a copy whose snapshot lacks LICENSE.txt and expects DIFFERS naming
// it.
func repoReplays(t *testing.T, r *rig, c realCase, recPath string) {
	dockertest.Image(t, "tapebox/sandbox:bookworm")
	repPath := filepath.Join(t.TempDir(), "replay-docker-cli.json")
	code, _, errOut := r.run(t, t.TempDir(), cleanEnv(), "replay", "--tape", recPath, "--sandbox", "docker-image:tapebox/sandbox:bookworm",
		"--output", repPath, "--speed", "0", "--user", c.replayUser())
	require.Equal(t, 0, code, "tapebox replay (no --cwd)\n%s", errOut)
	assert.Contains(t, errOut, "workspace: restored")
	report := r.requireIdentical(t, recPath, repPath)
	require.True(t, report.EndState.Compared)
	require.True(t, report.EndState.Identical)
	_, out, _ := r.run(t, t.TempDir(), cleanEnv(), "compare", recPath, repPath)
	assert.Contains(t, out, "end state: identical")

	// The same tape with LICENSE.txt taken out of its snapshot.
	rec, err := tape.LoadFile(recPath)
	require.NoError(t, err)
	snap, err := controller.SnapshotFor(recPath, rec)
	require.NoError(t, err)
	tree := filepath.Join(t.TempDir(), "tree")
	f, err := os.Open(snap)
	require.NoError(t, err)
	require.NoError(t, workspace.Restore(t.Context(), f, workspace.InfoOf(rec.Meta.Workspace), tree))
	f.Close()
	require.NoError(t, os.Remove(filepath.Join(tree, "LICENSE.txt")))
	dir := t.TempDir()
	spoiled := filepath.Join(dir, "spoiled.json")
	info, err := workspace.SnapshotFile(t.Context(), tree, workspace.SnapshotPath(spoiled), workspace.Recorded(rec.Meta.Workspace))
	require.NoError(t, err)
	rec.Meta.Workspace.Snapshot = filepath.Base(workspace.SnapshotPath(spoiled))
	rec.Meta.Workspace.Digest, rec.Meta.Workspace.Size, rec.Meta.Workspace.Files, rec.Meta.Workspace.Bytes = info.Digest, info.Size, info.Files, info.Bytes
	// Sealed again, as an honest tape of that start would be: replay refuses a tape changed
	// after its digests were written.
	require.NoError(t, seal.Tape(rec, nil))
	require.NoError(t, tape.Save(spoiled, rec))
	spoiledRep := filepath.Join(dir, "spoiled-replay.json")
	code, _, errOut = r.run(t, t.TempDir(), cleanEnv(), "replay", "--tape", spoiled, "--sandbox", "docker-image:tapebox/sandbox:bookworm",
		"--output", spoiledRep, "--speed", "0", "--user", c.replayUser())
	require.Equal(t, 0, code, "replay of the spoiled tape\n%s", errOut)
	code, out, _ = r.run(t, t.TempDir(), cleanEnv(), "compare", recPath, spoiledRep)
	assert.Equal(t, 1, code, "compare must say DIFFERS\n%s", out)
	assert.Contains(t, out, ": DIFFERS")
	assert.Contains(t, out, "LICENSE.txt: missing")
}
