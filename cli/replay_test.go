package cli

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/internal/dockertest"
	"github.com/tapebox/tapebox/sandbox"
	"github.com/tapebox/tapebox/tape"
)

// TestReplayCwd: --cwd when given (even empty), else meta.cwd in a Docker sandbox; a local
// sandbox works in its own directory.
func TestReplayCwd(t *testing.T) {
	tests := []struct {
		name    string
		spec    string
		flag    *string // --cwd, nil when not given
		metaCwd string
		want    string
	}{
		{"docker-image: meta.cwd", "docker-image:img", nil, "/tmp/tapebox-e2e-claude", "/tmp/tapebox-e2e-claude"},
		{"docker: meta.cwd", "docker:box", nil, "/work", "/work"},
		{"--cwd wins", "docker-image:img", ptr("/app"), "/work", "/app"},
		{"--cwd empty keeps the container's", "docker-image:img", ptr(""), "/work", ""},
		{"no meta.cwd", "docker-image:img", nil, "", ""},
		{"meta.cwd not absolute", "docker-image:img", nil, `C:\Users\dev\app`, ""},
		{"local: meta.cwd does not apply", "local:/tmp/x", nil, "/work", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec, err := sandbox.ParseSpec(tt.spec)
			require.NoError(t, err)
			f := &replayFlags{}
			if tt.flag != nil {
				f.cwd, f.cwdGiven = *tt.flag, true
			}
			rec := &tape.Tape{Meta: tape.Meta{Cwd: tt.metaCwd}}
			var logged []string
			got := replayCwd(f, spec, rec, func(format string, args ...any) { logged = append(logged, format) })
			assert.Equal(t, tt.want, got)
			if tt.flag == nil && spec.Scheme != sandbox.SchemeLocal {
				assert.Len(t, logged, 1, "a replay says which directory it picked and why")
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

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
