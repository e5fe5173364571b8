package cli

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/controller"
	"github.com/tapebox/tapebox/internal/testutil/dockertest"
	"github.com/tapebox/tapebox/tape"
)

// TestReplayLocalCwd: a local replay works in its directory, and its replay tape says so.
func TestReplayLocalCwd(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(t.TempDir(), "replay.json")
	rec := filepath.Join("..", "testdata", "replay", "codex.json")
	code, _, stderr := runVerbForTest(t, "replay", "--tape", rec, "--sandbox", "local:"+dir, "--speed", "0", "--output", out)
	require.Equal(t, ExitOK, code, stderr)
	rep, err := tape.LoadFile(out)
	require.NoError(t, err)
	assert.Equal(t, dir, rep.Meta.Cwd, "the replay tape holds the directory the replay ran in")
	assert.FileExists(t, filepath.Join(dir, "docs", "renamed.txt"))
	code, stdout, stderr := runVerbForTest(t, "compare", rec, out)
	assert.Equal(t, ExitOK, code, "%s%s", stdout, stderr)
}

// TestReplayDockerDefaultsToMetaCwd: the hand-built Claude Code tape writes to absolute paths
// under the directory it was recorded in; without --cwd the replay runs there (the container
// creates it) and is identical to the recording.
func TestReplayDockerDefaultsToMetaCwd(t *testing.T) {
	_, image := dockertest.Image(t, dockertest.SandboxImage)
	rec := filepath.Join("..", "testdata", "replay", "claude-code.json")
	recorded, err := tape.LoadFile(rec)
	require.NoError(t, err)
	require.Equal(t, "/tmp/tapebox-e2e-claude", recorded.Meta.Cwd)
	out := filepath.Join(t.TempDir(), "replay.json")
	code, _, stderr := runVerbForTest(t, "replay", "--tape", rec, "--sandbox", "docker-image:"+image, "--speed", "0", "--output", out)
	require.Equal(t, ExitOK, code, stderr)
	assert.Contains(t, stderr, "working directory /tmp/tapebox-e2e-claude, where the tape was recorded")
	rep, err := tape.LoadFile(out)
	require.NoError(t, err)
	assert.Equal(t, recorded.Meta.Cwd, rep.Meta.Cwd)
	code, stdout, stderr := runVerbForTest(t, "compare", rec, out)
	assert.Equal(t, ExitOK, code, "%s%s", stdout, stderr)
}

// TestReplayCheck: --check compares when the replay ends and exits 1 when it differs.
func TestReplayCheck(t *testing.T) {
	rec := filepath.Join("..", "testdata", "replay", "codex.json")
	code, stdout, stderr := runVerbForTest(t, "replay", "--tape", rec, "--sandbox", "local:"+t.TempDir(), "--speed", "0", "--check")
	require.Equal(t, ExitOK, code, stderr)
	assert.Contains(t, stdout, ": IDENTICAL")
	assert.NotContains(t, stderr, "\r", "no progress line when stderr is not a terminal")

	tp, err := tape.LoadFile(rec)
	require.NoError(t, err)
	tp.Main().Steps[0].ToolResults[0].Content[0].Text += "planted"
	spoiled := filepath.Join(t.TempDir(), "spoiled.json")
	require.NoError(t, tape.Save(spoiled, tp))
	code, stdout, _ = runVerbForTest(t, "replay", "--tape", spoiled, "--sandbox", "local:"+t.TempDir(), "--speed", "0", "--check")
	assert.Equal(t, ExitFailure, code)
	assert.Contains(t, stdout, ": DIFFERS")
	assert.Contains(t, stdout, "planted")
}

// TestReplayProgressLine: the progress line names the step, the thread and the tool.
func TestReplayProgressLine(t *testing.T) {
	var b strings.Builder
	p := &statusLine{w: &b, every: time.Hour}
	p.draw(replayLine(controller.Progress{Done: 3, Total: 31, Thread: "main", Tool: "Bash"}), false)
	p.draw(replayLine(controller.Progress{Done: 4, Total: 31, Thread: "main", Tool: "Bash"}), false) // too soon: not drawn
	p.clear()
	assert.Equal(t, "\r\x1b[Kreplay: step 3/31, thread main: Bash\r\x1b[K", b.String())
	assert.Nil(t, newStatusLine(&b, false, time.Second), "off when stderr is not a terminal")
}

// TestFlagsAfterArguments: flags may follow the positional arguments on every verb, as the
// README writes them; "--" ends the flags.
func TestFlagsAfterArguments(t *testing.T) {
	rec := filepath.Join("..", "testdata", "replay", "codex.json")
	for _, args := range [][]string{
		{"inspect", rec, "--json"},
		{"compare", rec, rec, "--json"},
		{"validate", rec, "--json"},
		{"compare", "--json", rec, rec},
	} {
		code, stdout, stderr := runVerbForTest(t, args...)
		require.Equal(t, ExitOK, code, "%v: %s", args, stderr)
		assert.True(t, strings.HasPrefix(strings.TrimSpace(stdout), "{") || strings.HasPrefix(strings.TrimSpace(stdout), "["), "%v prints JSON: %s", args, stdout)
	}
	code, stdout, stderr := runVerbForTest(t, "validate", "--", "--json")
	assert.Equal(t, ExitFailure, code, "after --, --json is a file name")
	assert.Contains(t, stdout+stderr, "--json")
}

// TestReplayContainerDefaults: replay --help names the limits and the user of a created
// container; a replay with --network host and a capability that breaks isolation says so,
// once each, even with --quiet, and runs as the user it is given.
func TestReplayContainerDefaults(t *testing.T) {
	code, stdout, _ := runVerbForTest(t, "replay", "--help")
	require.Equal(t, ExitOK, code)
	for _, want := range []string{"--pids-limit 512", "--memory 2g", "--cpus 1", "--user 65534:65534", "0: unlimited", "--cap-add"} {
		assert.Contains(t, stdout, want)
	}

	_, image := dockertest.Image(t, dockertest.SandboxImage)
	rec := filepath.Join("..", "testdata", "replay", "claude-code.json")
	out := filepath.Join(t.TempDir(), "replay.json")
	code, _, stderr := runVerbForTest(t, "replay", "--tape", rec, "--sandbox", "docker-image:"+image, "--speed", "0", "--output", out, "--quiet",
		"--network", "host", "--cap-add", "SYS_ADMIN", "--cap-add", "CHOWN", "--user", "0:0", "--pids-limit", "0", "--memory", "0", "--cpus", "0")
	require.Equal(t, ExitOK, code, stderr)
	assert.Equal(t, "tapebox replay: sandbox docker-image:"+image+": warning: --network host: the tape's commands share this machine's network: they reach its loopback services and can listen on its ports\n"+
		"tapebox replay: sandbox docker-image:"+image+": warning: capabilities SYS_ADMIN: a process holding them can reach past the container (as with --privileged); give them to trusted tapes only\n",
		stderr)
	code, stdout, stderr = runVerbForTest(t, "compare", rec, out)
	assert.Equal(t, ExitOK, code, "%s%s", stdout, stderr)

	// Limits apply to created containers only: given for local:DIR, they are refused.
	code, _, stderr = runVerbForTest(t, "replay", "--tape", rec, "--sandbox", "local:"+t.TempDir(), "--pids-limit", "10")
	assert.Equal(t, ExitFailure, code)
	assert.Contains(t, stderr, "PidsLimit only apply to containers TapeBox creates")
}
