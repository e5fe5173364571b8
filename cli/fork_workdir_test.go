package cli

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/tape"
	"github.com/tapebox/tapebox/workspace"
)

// hostileCwdTape writes a tape whose meta.cwd is cwd and whose start snapshot holds an
// authorized_keys file (the finding's tape), and returns its path.
func hostileCwdTape(t *testing.T, cwd string) string {
	t.Helper()
	rec, err := tape.LoadFile(filepath.Join("..", "testdata", "replay", "claude-code.json"))
	require.NoError(t, err)
	src := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(src, "authorized_keys"), []byte("ssh-ed25519 AAAA attacker\n"), 0o600))
	out := filepath.Join(t.TempDir(), "run.json")
	snap := workspace.SnapshotPath(out)
	info, err := workspace.SnapshotFile(t.Context(), src, snap, workspace.Options{})
	require.NoError(t, err)
	rec.Meta.Cwd = cwd
	rec.Meta.Workspace = &tape.Workspace{Snapshot: filepath.Base(snap), Digest: info.Digest, Size: info.Size, Files: info.Files, Bytes: info.Bytes}
	require.NoError(t, tape.Save(out, rec))
	return out
}

var forkInDir = regexp.MustCompile(`(?m)^tapebox fork: warning: the harness runs on this machine, not in a sandbox: .*, in (\S+);`)

// TestForkNeverWritesWhereTheTapeSays reproduces finding 2 of issue 30: a tape whose meta.cwd
// names an empty host directory, with authorized_keys in its snapshot. Before, tapebox fork
// restored the snapshot there by default (as root: into /root/.ssh, had the tape said so);
// now it works in a fresh temporary directory and says the harness runs on the host. Only
// --in-place (or --workdir) writes to meta.cwd, and a system, home or hidden directory is
// refused whatever names it.
func TestForkNeverWritesWhereTheTapeSays(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir()) // the fresh directories go here, removed with the test
	victim := t.TempDir()           // empty: what the tape names
	rec := hostileCwdTape(t, victim)
	marker := filepath.Join(t.TempDir(), "ran")

	code, _, stderr := runVerbForTest(t, "fork", "--tape", rec, "--at", "1", "--output", filepath.Join(t.TempDir(), "f.json"), "--", "touch", marker)
	assert.Equal(t, ExitFailure, code, "touch asks nothing: the fork point is not reached: %s", stderr)
	assert.NoFileExists(t, filepath.Join(victim, "authorized_keys"), "the snapshot went where the tape said")
	m := forkInDir.FindStringSubmatch(stderr)
	require.NotNil(t, m, "the host warning names the directory: %s", stderr)
	assert.Equal(t, os.Getenv("TMPDIR"), filepath.Dir(m[1]), "a fresh temporary directory")
	assert.FileExists(t, filepath.Join(m[1], "authorized_keys"), "restored into the fresh directory")
	assert.FileExists(t, marker, "the command ran")

	// The user asks for meta.cwd: it is used (it is empty and no system directory).
	code, _, stderr = runVerbForTest(t, "fork", "--tape", rec, "--at", "1", "--in-place", "--output", filepath.Join(t.TempDir(), "f.json"), "--", "true")
	assert.Equal(t, ExitFailure, code, stderr)
	assert.FileExists(t, filepath.Join(victim, "authorized_keys"), "--in-place restores into meta.cwd")
	assert.Contains(t, stderr, "in "+victim+";")

	home, err := os.UserHomeDir()
	require.NoError(t, err)
	for name, tc := range map[string]struct {
		args []string
		want string
	}{
		"--in-place, meta.cwd not empty now":  {[]string{"--in-place"}, "it is not empty (authorized_keys"},
		"--workdir in /etc":                   {[]string{"--workdir", "/etc/tapebox-fork-test-missing"}, "in the system directory /etc"},
		"--workdir /":                         {[]string{"--workdir", "/"}, "a system directory"},
		"--workdir $HOME":                     {[]string{"--workdir", home}, "a home directory"},
		"--workdir ~/.ssh":                    {[]string{"--workdir", filepath.Join(home, ".ssh-tapebox-test", "x")}, "a hidden directory of the home directory"},
		"--workdir a link to a system tree":   {[]string{"--workdir", linkTo(t, "/usr/share") + "/x"}, "in the system directory /usr"},
		"--workdir and --in-place":            {[]string{"--workdir", t.TempDir(), "--in-place"}, "exclude each other"},
		"--in-place, meta.cwd of the root fs": {nil, ""},
	} {
		t.Run(name, func(t *testing.T) {
			tp := rec
			if tc.args == nil {
				tp, tc.args, tc.want = hostileCwdTape(t, "/root/.ssh"), []string{"--in-place"}, "a hidden directory of the home directory /root"
			}
			args := append(append([]string{"fork", "--tape", tp, "--at", "1"}, tc.args...), "--", "touch", marker+"2")
			code, _, stderr := runVerbForTest(t, args...)
			assert.NotEqual(t, ExitOK, code)
			assert.Contains(t, stderr, tc.want)
			assert.NoFileExists(t, marker+"2", "refused before anything ran")
		})
	}
}

// linkTo is a fresh symbolic link to target.
func linkTo(t *testing.T, target string) string {
	l := filepath.Join(t.TempDir(), "link")
	require.NoError(t, os.Symlink(target, l))
	return l
}

// TestSimulatorWarnsAndChecksWorkspace: simulator mode says the harness runs on the host, and
// its --workspace DIR is checked as fork's working directory is.
func TestSimulatorWarnsAndChecksWorkspace(t *testing.T) {
	rec := hostileCwdTape(t, t.TempDir())
	code, _, stderr := runVerbForTest(t, "replay", "--tape", rec, "--listen", "127.0.0.1:0", "--workspace", "/etc/cron.d")
	assert.Equal(t, ExitFailure, code)
	assert.Contains(t, stderr, "tapebox replay: warning: simulator mode: the harness runs on this machine, not in a sandbox")
	assert.Contains(t, stderr, "--workspace: working directory /etc/cron.d: refused as a working directory: in the system directory /etc")
	assert.NoFileExists(t, "/etc/cron.d/authorized_keys")
}
