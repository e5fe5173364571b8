package cli

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/sandbox"
)

// plantSetuid makes two setuid copies of sh in the working directory: rootsh, and hide/sh in
// a directory left execute-only ("--x": hide/sh still runs by its name, but the directory
// cannot be listed by its owner).
const plantSetuid = "cp /bin/sh rootsh && chmod 4755 rootsh && mkdir hide && cp /bin/sh hide/sh && chmod 4755 hide/sh && chmod 0111 hide"

// TestLocalReplayLeavesNothingExecutable reproduces findings 3 and 4 of issue 30 with the
// real tapebox binary, bwrap and executor, as root and as an unprivileged user (nobody,
// through SysProcAttr.Credential):
//   - a replay that ends leaves no setuid file in DIR, inside an execute-only directory
//     either (before, the clearing skipped what it could not list: as nobody, hide/sh stayed
//     setuid), and the directory keeps its mode;
//   - a replay killed with SIGKILL (local:DIR, and the bare local in a temporary directory)
//     leaves its setuid files and private directories; the next local replay clears the bits
//     and removes the directories (before, nothing reaped them: a setuid-root shell for good).
func TestLocalReplayLeavesNothingExecutable(t *testing.T) {
	if _, err := exec.LookPath("bwrap"); err != nil && os.Getenv("CI") == "" {
		t.Skipf("bwrap is not installed (Debian package bubblewrap): %v", err)
	}
	exe, err := sandbox.ExecutorPath(t.Context(), runtime.GOARCH)
	require.NoError(t, err)
	// Everything the unprivileged user runs or reads lies in a directory it can reach.
	base, err := os.MkdirTemp("", "tbsetid-")
	require.NoError(t, err)
	t.Cleanup(func() { removeTree(base) })
	require.NoError(t, os.Chmod(base, 0o755))
	bin := filepath.Join(base, "tapebox")
	copyExecutable(t, buildTapebox(t), bin)
	copyExecutable(t, exe, filepath.Join(base, "exec", filepath.Base(exe)))
	long := saveBashTape(t, filepath.Join(base, "long.json"), plantSetuid+" && sleep 300", "(Bash completed with no output)")
	short := saveBashTape(t, filepath.Join(base, "short.json"), plantSetuid, "(Bash completed with no output)")
	for _, p := range []string{long, short} {
		require.NoError(t, os.Chmod(p, 0o644))
	}

	for _, u := range []struct {
		name string
		cred *syscall.Credential
	}{{"root", nil}, {"nobody", &syscall.Credential{Uid: 65534, Gid: 65534}}} {
		t.Run(u.name, func(t *testing.T) {
			switch {
			case u.cred == nil && os.Geteuid() != 0:
				t.Skip("runs as root (CI does)")
			case u.cred != nil && os.Geteuid() != 0:
				t.Skip("needs root to switch to an unprivileged user (CI runs as root)")
			}
			home := filepath.Join(base, u.name)
			tmp := filepath.Join(home, "tmp") // the replays' $TMPDIR
			require.NoError(t, os.MkdirAll(tmp, 0o700))
			if u.cred != nil {
				for _, d := range []string{home, tmp} {
					require.NoError(t, os.Chown(d, int(u.cred.Uid), int(u.cred.Gid)))
				}
			}
			replay := func(tapePath, spec string) *exec.Cmd {
				cmd := exec.Command(bin, "replay", "--tape", tapePath, "--sandbox", spec, "--speed", "0")
				cmd.Dir = home
				cmd.Env = []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "HOME=" + home, "TMPDIR=" + tmp, sandbox.ExecDirEnv + "=" + filepath.Join(base, "exec")}
				cmd.SysProcAttr = &syscall.SysProcAttr{Credential: u.cred}
				return cmd
			}

			// Finding 3: the replay ends, Close clears every set-id bit.
			w1 := filepath.Join(home, "w1")
			out, err := replay(short, "local:"+w1).CombinedOutput()
			require.NoError(t, err, "%s", out)
			require.Contains(t, string(out), "isolated with bubblewrap")
			assertNoSetID(t, w1)

			// Finding 4: a replay in local:DIR killed in its sleep leaves its setuid files and
			// its private directory; the next local replay (itself killed then, in the bare
			// local's temporary directory) clears them; the one after that clears its.
			w2 := filepath.Join(home, "w2")
			killInSleep(t, replay(long, "local:"+w2), filepath.Join(w2, "hide"))
			assertLeft(t, w2, tmp)
			log := killInSleep(t, replay(long, "local"), filepath.Join(tmp, "tapebox-replay-*", "work", "hide"))
			assert.Equal(t, 1, strings.Count(log, "left by a replay that is gone"), "%s", log)
			assertNoSetID(t, w2)
			temps, err := filepath.Glob(filepath.Join(tmp, "tapebox-replay-*"))
			require.NoError(t, err)
			require.Len(t, temps, 1, "the bare local's temporary directory is left")
			assertLeft(t, filepath.Join(temps[0], "work"), tmp)

			out, err = replay(short, "local:"+filepath.Join(home, "w3")).CombinedOutput()
			require.NoError(t, err, "%s", out)
			assert.Equal(t, 1, strings.Count(string(out), "left by a replay that is gone"), "%s", out)
			assert.NoDirExists(t, temps[0], "the bare local's temporary directory is removed")
			left, err := filepath.Glob(filepath.Join(tmp, "tapebox-*"))
			require.NoError(t, err)
			assert.Empty(t, left, "only the reaping replay's, removed by its Close")
		})
	}
}

// assertLeft checks what a killed replay left: a setuid hide/sh in w, and one private
// directory in tmp.
func assertLeft(t *testing.T, w, tmp string) {
	t.Helper()
	fi, err := os.Stat(filepath.Join(w, "hide", "sh"))
	require.NoError(t, err)
	require.NotZero(t, fi.Mode()&os.ModeSetuid, "the killed replay left a setuid file: the case this test is about")
	scratch, err := filepath.Glob(filepath.Join(tmp, "tapebox-local-*"))
	require.NoError(t, err)
	require.Len(t, scratch, 1, "the killed replay left its private directory")
}

// killInSleep starts a replay, waits until its tape made hide execute-only (the last thing
// before its sleep; hide is a glob), kills it with SIGKILL and returns what it printed.
func killInSleep(t *testing.T, cmd *exec.Cmd, hide string) string {
	t.Helper()
	log, err := os.CreateTemp(t.TempDir(), "stderr")
	require.NoError(t, err)
	cmd.Stdout, cmd.Stderr = log, log
	require.NoError(t, cmd.Start())
	deadline := time.Now().Add(2 * time.Minute)
	for {
		m, _ := filepath.Glob(hide)
		if len(m) == 1 {
			if fi, err := os.Stat(m[0]); err == nil && fi.Mode().Perm() == 0o111 {
				break
			}
		}
		if !time.Now().Before(deadline) {
			cmd.Process.Kill()
			b, _ := os.ReadFile(log.Name())
			t.Fatalf("the replay did not get to its sleep:\n%s", b)
		}
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond) // into the sleep
	require.NoError(t, cmd.Process.Kill())
	_ = cmd.Wait()
	b, err := os.ReadFile(log.Name())
	require.NoError(t, err)
	return string(b)
}

// assertNoSetID checks that w holds rootsh and hide/sh without set-id bits, and that hide
// kept its execute-only mode.
func assertNoSetID(t *testing.T, w string) {
	t.Helper()
	for name, want := range map[string]os.FileMode{"rootsh": 0o755, "hide/sh": 0o755, "hide": os.ModeDir | 0o111} {
		fi, err := os.Lstat(filepath.Join(w, name))
		if assert.NoError(t, err) {
			assert.Equal(t, want, fi.Mode(), "%s in %s", name, w)
		}
	}
}

// copyExecutable copies the program from to to, mode 0755, making to's directory (0755).
func copyExecutable(t *testing.T, from, to string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(to), 0o755))
	in, err := os.Open(from)
	require.NoError(t, err)
	defer in.Close()
	out, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	require.NoError(t, err)
	_, err = io.Copy(out, in)
	require.NoError(t, err)
	require.NoError(t, out.Close())
}

// removeTree removes a tree whose directories a test's tape made unreadable.
func removeTree(dir string) {
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if d != nil && d.IsDir() {
			os.Chmod(p, 0o755)
		}
		return nil
	})
	os.RemoveAll(dir)
}
