//go:build linux

package local

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/executor/protocol"
	"github.com/tapebox/tapebox/internal/testutil/sandboxtest"
	"github.com/tapebox/tapebox/sandbox"
	"github.com/tapebox/tapebox/tape"
	"github.com/tapebox/tapebox/workspace"
	"golang.org/x/sys/unix"
)

// needBwrap skips t where bwrap is not installed, except in CI, which installs it
// (scripts/ci-setup.sh).
func needBwrap(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("bwrap"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("bwrap is not installed (scripts/ci-setup.sh installs bubblewrap): %v", err)
		}
		t.Skipf("bwrap is not installed (Debian package bubblewrap): %v", err)
	}
}

// openJailT opens a local sandbox in a fresh directory and fails t unless it is jailed. It
// returns the sandbox and the directory.
func openJailT(t *testing.T, opts sandbox.Options) (*sandbox.Sandbox, string) {
	t.Helper()
	needBwrap(t)
	var logged []string
	opts.Logf = func(format string, args ...any) { logged = append(logged, fmt.Sprintf(format, args...)) }
	sb, dir := sandboxtest.OpenLocal(t, opts)
	require.NotNil(t, sb.Backend().(*Backend).jail, "not jailed: %q", logged)
	require.Len(t, logged, 1)
	assert.Contains(t, logged[0], "isolated with bubblewrap")
	return sb, dir
}

// openJailToClose opens a jail at a DIR that does not exist yet, for a test that closes it
// itself and looks at DIR afterwards.
func openJailToClose(t *testing.T) (*sandbox.Sandbox, string) {
	t.Helper()
	needBwrap(t)
	dir := filepath.Join(t.TempDir(), "work")
	sb, err := sandbox.Open(t.Context(), "local:"+dir, sandbox.Options{Logf: t.Logf})
	require.NoError(t, err)
	require.NotNil(t, sb.Backend().(*Backend).jail)
	return sb, dir
}

// sh runs a shell command in the sandbox.
func sh(t *testing.T, sb *sandbox.Sandbox, script string) *sandbox.ExecResult {
	t.Helper()
	res, err := sb.Exec(t.Context(), []string{"sh", "-c", script})
	require.NoError(t, err, script)
	return res
}

// TestJailRefuses plays a hostile tape's moves in a jailed sandbox: writing outside DIR by
// absolute path and by "..", reading the host's home, reaching a loopback port of the host,
// reading the host's environment, finding its sockets. Each is refused, and the host side
// sees nothing.
func TestJailRefuses(t *testing.T) {
	needBwrap(t)
	host := t.TempDir()
	home := filepath.Join(host, "home")
	require.NoError(t, os.MkdirAll(filepath.Join(home, ".ssh"), 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(home, ".ssh", "id_ed25519"), []byte("PRIVATE KEY"), 0o600))
	t.Setenv("HOME", home)
	t.Setenv("SECRET_TOKEN", "tbx-planted-secret-1f2e3d")
	port, stop := sandboxtest.ListenLoopback(t)
	dir := filepath.Join(host, "work")
	sb, err := sandbox.Open(t.Context(), "local:"+dir, sandbox.Options{Logf: t.Logf})
	require.NoError(t, err)
	defer sb.Close(t.Context())
	require.NotNil(t, sb.Backend().(*Backend).jail)
	hostTmp := fmt.Sprintf("/tmp/tapebox-jail-test-%d", time.Now().UnixNano())

	tests := []struct {
		name, script string
		// want is in the command's output (stdout and stderr) when it is refused.
		want string
	}{
		{"write by absolute path", "echo x > " + filepath.Join(host, "outside.txt"), "Read-only file system"},
		{"write through ..", "echo x > ../escape.txt", "Read-only file system"},
		{"write through ../..", "echo x > ../../escape2.txt", "Read-only file system"},
		{"write to /etc", "echo x > /etc/tapebox-jail-test", "Read-only file system"},
		{"write to /usr", "echo x > /usr/tapebox-jail-test", "Read-only file system"},
		{"mkdir beside DIR", "mkdir ../sibling", "Read-only file system"},
		{"read the host's ~/.ssh by path", "cat " + filepath.Join(home, ".ssh", "id_ed25519"), "No such file or directory"},
		{"read $HOME/.ssh", `cat "$HOME/.ssh/id_ed25519"`, "No such file or directory"},
		{"read /root", "ls /root/.ssh", "No such file or directory"},
		{"connect to a loopback port of the host", fmt.Sprintf("bash -c 'exec 3<>/dev/tcp/127.0.0.1/%d' || python3 -c 'import socket; socket.create_connection((\"127.0.0.1\", %d))'", port, port), "Connection refused"},
		{"the docker socket", "ls -l /var/run/docker.sock /run/docker.sock", "No such file or directory"},
		{"remount read-write, then write", "mount -o remount,rw /; mount -o remount,rw,bind /etc; echo x > /etc/tapebox-jail-test", "Read-only file system"},
		{"a nested user namespace", "unshare -U true", "unshare failed"},
		// Run as root, the sandbox's uid is the host's root, and /proc/sys's files are
		// root's: a writable kernel.core_pattern ("|DIR/x") runs DIR/x as the host's root,
		// outside every namespace. The value written is the one read, so a failure changes
		// nothing.
		{"write a host sysctl (kernel.core_pattern)", `v=$(cat /proc/sys/kernel/core_pattern) && printf '%s\n' "$v" > /proc/sys/kernel/core_pattern`, "Read-only file system"},
		{"write a host sysctl (vm.swappiness)", `v=$(cat /proc/sys/vm/swappiness) && echo "$v" > /proc/sys/vm/swappiness`, "Read-only file system"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := sh(t, sb, tt.script)
			out := string(res.Stdout) + string(res.Stderr)
			assert.NotEqual(t, 0, res.ExitCode, "refused: %s", out)
			assert.Contains(t, out, tt.want)
		})
	}

	t.Run("no capabilities", func(t *testing.T) {
		res := sh(t, sb, "grep CapEff /proc/self/status")
		assert.Equal(t, "CapEff:\t0000000000000000\n", string(res.Stdout))
	})
	t.Run("its own /tmp", func(t *testing.T) {
		res := sh(t, sb, "echo x > "+hostTmp+" && cat "+hostTmp)
		assert.Equal(t, 0, res.ExitCode, "%s", res.Stderr)
		assert.NoFileExists(t, hostTmp, "the host's /tmp is not the sandbox's")
	})
	t.Run("DIR is writable", func(t *testing.T) {
		res := sh(t, sb, "echo inside > inside.txt && mkdir -p sub && echo deep > sub/f")
		assert.Equal(t, 0, res.ExitCode, "%s", res.Stderr)
		assert.FileExists(t, filepath.Join(dir, "inside.txt"))
		assert.FileExists(t, filepath.Join(dir, "sub", "f"))
	})
	t.Run("the host's environment", func(t *testing.T) {
		res := sh(t, sb, `env; for f in /proc/[0-9]*/environ; do tr '\0' '\n' < "$f"; done`)
		assert.NotContains(t, string(res.Stdout), "tbx-planted-secret")
		assert.NotContains(t, string(res.Stdout), "SECRET_TOKEN")
	})
	t.Run("the host's processes", func(t *testing.T) {
		res := sh(t, sb, `for f in /proc/[0-9]*/cmdline; do tr '\0' ' ' < "$f"; echo; done`)
		assert.NotContains(t, string(res.Stdout), filepath.Base(os.Args[0]), "this test's own process")
	})
	if os.Geteuid() == 0 {
		t.Run("root's /etc/shadow", func(t *testing.T) {
			res := sh(t, sb, "cat /etc/shadow")
			assert.Equal(t, 0, res.ExitCode, "%s", res.Stderr)
			assert.Empty(t, res.Stdout, "covered with an empty file")
		})
	}

	assert.Empty(t, stop(), "the host's listener accepted connections")
	for _, p := range []string{filepath.Join(host, "outside.txt"), filepath.Join(host, "escape.txt"), "/escape2.txt",
		filepath.Join(filepath.Dir(host), "escape2.txt"), filepath.Join(host, "sibling"), "/etc/tapebox-jail-test", "/usr/tapebox-jail-test"} {
		assert.NoFileExists(t, p)
		assert.NoDirExists(t, p)
	}
	entries, err := os.ReadDir(host)
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	assert.Equal(t, []string{"home", "work"}, names, "nothing new beside DIR")
}

// TestJailEnv: the jail's commands get a minimal environment: some host variables, HOME in
// the sandbox's /tmp, Options.Env.
func TestJailEnv(t *testing.T) {
	t.Setenv("SECRET_TOKEN", "tbx-planted-secret-1f2e3d")
	t.Setenv("LANG", "C.UTF-8")
	t.Setenv("PATH", "/root/.local/bin:/usr/local/bin:/usr/bin:/bin")
	sb, _ := openJailT(t, sandbox.Options{Env: map[string]string{"FROM_OPTIONS": "yes"}})
	res := sh(t, sb, "env")
	env := strings.Split(strings.TrimSpace(string(res.Stdout)), "\n")
	assert.Contains(t, env, "HOME="+jailHome)
	assert.Contains(t, env, "PATH=/usr/local/bin:/usr/bin:/bin", "entries outside the jail are dropped")
	assert.Contains(t, env, "LANG=C.UTF-8")
	assert.Contains(t, env, "FROM_OPTIONS=yes")
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		ok := slices.Contains(localEnvKeys, k) || strings.HasPrefix(k, "LC_") || k == "FROM_OPTIONS" ||
			k == "PWD" || k == "SHLVL" || k == "_" // the shell's own
		assert.True(t, ok, "unexpected variable %s", kv)
	}
	res = sh(t, sb, `cd && pwd && touch f && ls -a`)
	assert.Equal(t, jailHome+"\n.\n..\nf\n", string(res.Stdout), "HOME is a writable directory; stderr: %s", res.Stderr)
}

// TestUnsafeLocal: unsafe-local:DIR runs host processes, says so in one warning line, and
// still passes only a minimal environment.
func TestUnsafeLocal(t *testing.T) {
	t.Setenv("SECRET_TOKEN", "tbx-planted-secret-1f2e3d")
	dir := filepath.Join(t.TempDir(), "work")
	var logged []string
	sb, err := sandbox.Open(t.Context(), "unsafe-local:"+dir, sandbox.Options{Logf: func(format string, args ...any) { logged = append(logged, fmt.Sprintf(format, args...)) }})
	require.NoError(t, err)
	defer sb.Close(t.Context())
	assert.Equal(t, sandbox.Spec{Scheme: sandbox.SchemeLocal, Target: dir, Unsafe: true}, sb.Spec())
	assert.Equal(t, "unsafe-local:"+dir, sb.Spec().String())
	assert.Nil(t, sb.Backend().(*Backend).jail)
	require.Len(t, logged, 1)
	assert.True(t, strings.HasPrefix(logged[0], "warning: sandbox unsafe-local:"+dir+" is NOT isolated: "), logged[0])
	res := sh(t, sb, "env")
	assert.NotContains(t, string(res.Stdout), "tbx-planted-secret")
	assert.Contains(t, string(res.Stdout), "HOME="+os.Getenv("HOME")+"\n", "the host's HOME")
	outside := filepath.Join(filepath.Dir(dir), "outside.txt")
	res = sh(t, sb, "echo x > ../outside.txt")
	assert.Equal(t, 0, res.ExitCode, "not isolated: %s", res.Stderr)
	assert.FileExists(t, outside)
}

// TestLocalWithoutBwrap: local:DIR on a machine without bwrap runs as unsafe-local:DIR does,
// with one warning line that says why and what to do.
func TestLocalWithoutBwrap(t *testing.T) {
	bin := t.TempDir()
	for _, name := range []string{"sh", "cat", "env"} {
		p, err := exec.LookPath(name)
		require.NoError(t, err)
		require.NoError(t, os.Symlink(p, filepath.Join(bin, name)))
	}
	t.Setenv("PATH", bin)
	t.Setenv("SECRET_TOKEN", "tbx-planted-secret-1f2e3d")
	var logged []string
	sb, dir := sandboxtest.OpenLocal(t, sandbox.Options{Logf: func(format string, args ...any) { logged = append(logged, fmt.Sprintf(format, args...)) }})
	assert.Nil(t, sb.Backend().(*Backend).jail)
	require.Len(t, logged, 1)
	assert.Contains(t, logged[0], "warning: sandbox local:"+dir+" is NOT isolated: bwrap is not installed (install the bubblewrap package); ")
	assert.Contains(t, logged[0], "Spell it unsafe-local:DIR")
	res := sh(t, sb, "env")
	assert.NotContains(t, string(res.Stdout), "tbx-planted-secret")
	assert.Contains(t, string(res.Stdout), "PATH="+bin+"\n")
}

func TestLocalRoot(t *testing.T) {
	_, err := sandbox.Open(t.Context(), "local:/", sandbox.Options{})
	assert.ErrorIs(t, err, sandbox.ErrBadSpec)
	assert.ErrorContains(t, err, "unsafe-local:/")
}

// TestJailProcesses: a background process outlives the session that started it (the
// sandbox's pid namespace is the keeper's) and Close ends it, and removes the sandbox's
// private directory.
func TestJailProcesses(t *testing.T) {
	sb, _ := openJailT(t, sandbox.Options{})
	marker := fmt.Sprintf("%d", 100000+time.Now().UnixNano()%100000)
	s, err := sb.StartCommand(t.Context(), []string{"sh", "-c", "setsid sleep " + marker + " < /dev/null > /dev/null 2>&1 & echo $!"})
	require.NoError(t, err)
	var out bytes.Buffer
	_, _ = out.ReadFrom(s.Stdout)
	require.NoError(t, sandboxtest.WaitDone(t, s))
	require.NoError(t, s.Close())
	pid := strings.TrimSpace(out.String())
	// $! may still be setsid, about to exec sleep.
	require.Eventually(t, func() bool {
		res := sh(t, sb, "kill -0 "+pid+" && cat /proc/"+pid+"/cmdline | tr '\\0' ' '")
		return string(res.Stdout) == "sleep "+marker+" "
	}, time.Minute, 10*time.Millisecond, "alive after its session ended")
	assert.NotEmpty(t, hostProcesses(t, "sleep\x00"+marker))
	scratch := sb.Backend().(*Backend).jail.scratch
	assert.DirExists(t, scratch)

	require.NoError(t, sb.Close(t.Context()))
	assert.Empty(t, hostProcesses(t, "sleep\x00"+marker), "Close ends the sandbox's processes")
	assert.NoDirExists(t, scratch)
}

// hostProcesses returns the pids of the host's processes whose command line starts with
// cmdline (NUL-separated arguments).
func hostProcesses(t *testing.T, cmdline string) []string {
	t.Helper()
	var pids []string
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err == nil && bytes.HasPrefix(b, []byte(cmdline)) {
			pids = append(pids, filepath.Base(filepath.Dir(p)))
		}
	}
	return pids
}

// TestJailExecutorRestart: a background task started by one executor session is still
// running when that executor dies, and the next session (a new bwrap) answers for it from
// the same /tmp: the state directory lives there.
func TestJailExecutorRestart(t *testing.T) {
	sandboxtest.RealExecutor(t, runtime.GOARCH)
	sb, dir := openJailT(t, sandbox.Options{})
	start := func() (*sandbox.Session, *protocol.Encoder, *protocol.Decoder) {
		s, err := sb.Start(t.Context())
		require.NoError(t, err)
		t.Cleanup(func() { s.Close() })
		sandboxtest.HelloRoundTrip(t, s, dir)
		return s, protocol.NewEncoder(s.Stdin), protocol.NewReplyDecoder(s.Stdout)
	}
	call := func(enc *protocol.Encoder, dec *protocol.Decoder, id, tool string, input any) tape.ToolResult {
		b, _ := json.Marshal(input)
		require.NoError(t, enc.Encode(protocol.Call{Op: protocol.OpCall, ID: id, Call: tape.ToolCall{ID: "tc_" + id, Name: tool, Input: b}}))
		env, err := dec.Decode()
		require.NoError(t, err)
		require.NotNil(t, env.Result, "reply %s", env.Raw)
		return env.Result.Result
	}
	s, enc, dec := start()
	res := call(enc, dec, "1", "Bash", map[string]any{"command": "echo started; sleep 1; echo finished", "run_in_background": true})
	m := regexp.MustCompile(`in background with ID: (\S+)\. Output is being written to: (\S+)\.`).FindStringSubmatch(res.Text())
	require.NotNil(t, m, res.Text())
	assert.True(t, strings.HasPrefix(m[2], "/tmp/"), "state in the sandbox's /tmp: %s", m[2])
	// The executor exits while the task runs: in a pid namespace of its own bwrap's, the
	// task would end with it.
	require.NoError(t, s.Close())

	_, enc, dec = start()
	out := call(enc, dec, "2", "TaskOutput", map[string]any{"task_id": m[1], "block": true, "timeout": 120000})
	assert.False(t, out.IsError, out.Text())
	assert.Contains(t, out.Text(), "<status>completed</status>")
	assert.Contains(t, out.Text(), "<output>\nstarted\nfinished\n</output>")
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Empty(t, entries, "no state in the workspace")
}

// TestJailNotReadyFailsClosed: a keeper that does not get ready (a bwrap that hangs here,
// a loaded machine's slow one, a caller whose context ends) fails Open, and the keeper and
// the private directory are gone; local:DIR does not become an unisolated sandbox with a
// warning, as on a machine that cannot isolate.
func TestJailNotReadyFailsClosed(t *testing.T) {
	marker := fmt.Sprintf("%d", 200000+time.Now().UnixNano()%100000)
	bin := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(bin, "bwrap"), []byte("#!/bin/sh\nexec sleep "+marker+"\n"), 0o755))
	t.Setenv("PATH", bin+":/usr/bin:/bin")
	saved := readyTimeout
	t.Cleanup(func() { readyTimeout = saved })

	for _, tc := range []struct {
		name    string
		timeout time.Duration // readyTimeout
		ctx     time.Duration // the caller's deadline
		want    error
		text    string
	}{
		{"the keeper hangs", 200 * time.Millisecond, time.Hour, errNotReady, "the sandbox's keeper did not get ready within 200ms"},
		{"the caller's context ends", time.Hour, 200 * time.Millisecond, context.DeadlineExceeded, "the sandbox's keeper did not get ready: context deadline exceeded"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			readyTimeout = tc.timeout
			scratch := t.TempDir()
			t.Setenv("TMPDIR", scratch) // the sandbox's private directory is made there
			ctx, cancel := context.WithTimeout(t.Context(), tc.ctx)
			defer cancel()
			var logged sandboxtest.LogLines
			dir := filepath.Join(t.TempDir(), "work")
			sb, err := sandbox.Open(ctx, "local:"+dir, sandbox.Options{Logf: logged.Logf})
			require.ErrorIs(t, err, tc.want)
			assert.ErrorIs(t, err, errNotReady)
			assert.ErrorContains(t, err, "open sandbox local:"+dir+": "+tc.text)
			assert.Nil(t, sb)
			assert.Empty(t, logged.Lines(), "no warning: nothing runs unisolated")
			assert.Empty(t, hostProcesses(t, "sleep\x00"+marker), "the keeper is ended")
			entries, err := os.ReadDir(scratch)
			require.NoError(t, err)
			assert.Empty(t, entries, "the private directory is removed")
		})
	}
}

// TestJailHostSideFollowsNoLink: what the host side does in DIR after the tape's commands
// ran (Sandbox.WriteFiles, Snapshot) never follows a symbolic link they left, nor one they
// swap in while it reads. Before, WriteFiles wrote through DIR/sub -> a host directory, and
// Snapshot, walking by path, read a host file through a directory swapped for a link.
func TestJailHostSideFollowsNoLink(t *testing.T) {
	sb, dir := openJailT(t, sandbox.Options{})
	host := t.TempDir() // the host's files, not visible in the jail
	require.NoError(t, os.WriteFile(filepath.Join(host, "secret"), []byte("HOST-SECRET"), 0o600))

	t.Run("WriteFiles through a link the tape made", func(t *testing.T) {
		res := sh(t, sb, "ln -s "+host+" sub && ln -s .. up")
		require.Equal(t, 0, res.ExitCode, "%s", res.Stderr)
		for _, name := range []string{"sub/planted", "up/planted"} {
			err := sb.WriteFiles(t.Context(), ".", map[string]sandbox.File{name: {Mode: 0o644, Data: []byte("x")}})
			assert.Error(t, err, name)
		}
		assert.NoFileExists(t, filepath.Join(host, "planted"))
		assert.NoFileExists(t, filepath.Join(filepath.Dir(dir), "planted"))
		res = sh(t, sb, "rm sub up")
		require.Equal(t, 0, res.ExitCode, "%s", res.Stderr)
	})

	t.Run("Snapshot while a directory is swapped for a link", func(t *testing.T) {
		// The swap a background task of the tape can run (renameat2 RENAME_EXCHANGE, so d
		// always exists); the test plays it on DIR from the host, where it is the same.
		res := sh(t, sb, "mkdir -p d && echo decoy > d/secret && ln -s "+host+" swap")
		require.Equal(t, 0, res.ExitCode, "%s", res.Stderr)
		stop := swapLoop(filepath.Join(dir, "d"), filepath.Join(dir, "swap"))
		leaks, reads := 0, 0
		for range 300 {
			files, err := sb.Snapshot(t.Context(), ".")
			if err != nil {
				continue // "changed while it was read" is a fine answer
			}
			reads++
			for name, f := range files {
				if strings.Contains(string(f.Data), "HOST-SECRET") {
					leaks++
					t.Logf("read the host's file as %s", name)
				}
			}
		}
		stop()
		assert.Zero(t, leaks, "snapshots that hold the host's file")
		assert.Positive(t, reads, "some snapshots were read whole")
	})

	t.Run("WorkspaceManifest while a directory is swapped for a link", func(t *testing.T) {
		// A host directory of links only, so that nothing stops a manifest that lists it:
		// its names and link targets would go into the replay tape.
		lonely := t.TempDir()
		require.NoError(t, os.Symlink("/HOST-LINK-TARGET", filepath.Join(lonely, "hostlink")))
		res := sh(t, sb, "rm -rf d swap && mkdir -p e && echo decoy > e/f && ln -s "+lonely+" swap2")
		require.Equal(t, 0, res.ExitCode, "%s", res.Stderr)
		stop := swapLoop(filepath.Join(dir, "e"), filepath.Join(dir, "swap2"))
		leaks, reads := 0, 0
		for range 300 {
			m, err := sb.WorkspaceManifest(t.Context(), workspace.Options{})
			if err != nil {
				continue
			}
			reads++
			for _, e := range m {
				if strings.Contains(e.Path, "hostlink") || strings.Contains(e.Link, "HOST-LINK-TARGET") {
					leaks++
					t.Logf("listed the host's %s -> %s", e.Path, e.Link)
				}
			}
		}
		stop()
		assert.Zero(t, leaks, "manifests that list the host's directory")
		assert.Positive(t, reads, "some manifests were read whole")
	})
}

// swapLoop exchanges the paths a and b (renameat2 RENAME_EXCHANGE, so both always exist)
// until the returned stop is called, as a background task of a tape can.
func swapLoop(a, b string) (stop func()) {
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-quit:
				return
			default:
			}
			_ = unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, b, unix.RENAME_EXCHANGE)
		}
	}()
	return func() { close(quit); <-done }
}

// TestJailSetuidCleared: DIR is nosuid in the jail only; on the host a program the tape
// made setuid (setuid root when the replay runs as root) would stay in DIR for any user of
// the machine. Closing the sandbox clears the bits, and keeps the rest of the mode.
func TestJailSetuidCleared(t *testing.T) {
	sb, dir := openJailToClose(t)
	res := sh(t, sb, "cp /usr/bin/id x && chmod 4755 x && cp x y && chmod 2711 y && mkdir -p sub && cp x sub/z && chmod 6750 sub/z && ln -s x link")
	require.Equal(t, 0, res.ExitCode, "%s", res.Stderr)
	fi, err := os.Stat(filepath.Join(dir, "x"))
	require.NoError(t, err)
	require.NotZero(t, fi.Mode()&os.ModeSetuid, "the jail let the tape set the bit: the case this test is about")
	require.NoError(t, sb.Close(t.Context()))
	for name, want := range map[string]os.FileMode{"x": 0o755, "y": 0o711, "sub/z": 0o750} {
		fi, err := os.Lstat(filepath.Join(dir, name))
		require.NoError(t, err)
		assert.Equal(t, want, fi.Mode(), name)
	}
}

// TestJailStderrEscaped: what a tape's process writes into its executor's stderr reaches
// error messages escaped (sandboxtest.CheckStderrEscaped).
func TestJailStderrEscaped(t *testing.T) {
	sb, _ := openJailT(t, sandbox.Options{})
	sandboxtest.CheckStderrEscaped(t, sb)
}

// TestJailExecutorNotTamperable: the tape's commands run as the executor's user, but
// cannot open the executor's file descriptors through /proc (its protocol pipes, its
// stderr) nor ptrace it: the executor is not dumpable. Before, a command wrote a line
// into the executor's protocol input (which answered "line 3: malformed JSON") and into
// its stderr and protocol output.
func TestJailExecutorNotTamperable(t *testing.T) {
	sandboxtest.RealExecutor(t, runtime.GOARCH)
	sb, dir := openJailT(t, sandbox.Options{})
	script := `for p in /proc/[0-9]*; do
  case "$(tr '\0' ' ' < $p/cmdline 2>/dev/null)" in "/run/tapebox/tapebox-exec serve"*)
    echo "FOUND $p"
    for fd in $p/fd/*; do printf 'INJECTED\n' > $fd 2>/dev/null && echo "WROTE $fd"; done
    grep -h TracerPid $p/status;;
  esac
done`
	// Before, the command's "INJECTED" reached the executor's stdin, which answered with
	// an error for a malformed line 3 before the result.
	out, s := jailBash(t, sb, dir, script)
	assert.Contains(t, out, "FOUND", "the executor was found: %s", out)
	assert.Regexp(t, `/proc/\d+/fd/2: Permission denied`, out)
	assert.NotContains(t, out, "WROTE")
	assert.NotContains(t, s.Stderr(), "INJECTED")
}

// TestJailCloseDirRemoved: a DIR removed before the sandbox closes leaves nothing to clear,
// and Close does not fail for it.
func TestJailCloseDirRemoved(t *testing.T) {
	sb, dir := openJailToClose(t)
	require.NoError(t, os.RemoveAll(dir))
	assert.NoError(t, sb.Close(t.Context()))
}

// TestJailLeakedDescriptorStaysOut: a descriptor the controller's process inherited
// without close-on-exec (from whoever started it) travels through bwrap into the jail; a
// host directory among them would let a command read the host's files through
// /proc/self/fd/N. The executor keeps such descriptors from the tape's commands, and no
// process of the jail lets them take its own.
func TestJailLeakedDescriptorStaysOut(t *testing.T) {
	sandboxtest.RealExecutor(t, runtime.GOARCH)
	host := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(host, "secret"), []byte("HOST-SECRET"), 0o600))
	fd, err := syscall.Open(host, syscall.O_RDONLY|syscall.O_DIRECTORY, 0) // no O_CLOEXEC: the leak
	require.NoError(t, err)
	t.Cleanup(func() { syscall.Close(fd) })
	sb, dir := openJailT(t, sandbox.Options{})
	script := fmt.Sprintf(`for p in self $(ls /proc | grep '^[0-9]'); do cat /proc/$p/fd/%d/secret 2>/dev/null && echo " via $p"; done; echo checked; ls /proc/self/fd | tr '\n' ' '`, fd)
	out, _ := jailBash(t, sb, dir, script)
	assert.Contains(t, out, "checked")
	assert.NotContains(t, out, "HOST-SECRET")
	// Nor the namespaces' descriptors the jail's bwrap is given: the command holds its
	// stdio and ls's own directory only.
	assert.Regexp(t, `checked\n0 1 2 3\s*$`, out)
}

// jailBash starts the executor in the jail sb (working directory dir), runs script in one
// Bash call and returns its output, and the session for what it wrote besides.
func jailBash(t *testing.T, sb *sandbox.Sandbox, dir, script string) (string, *sandbox.Session) {
	t.Helper()
	s, err := sb.Start(t.Context())
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	sandboxtest.HelloRoundTrip(t, s, dir)
	enc, dec := protocol.NewEncoder(s.Stdin), protocol.NewReplyDecoder(s.Stdout)
	b, _ := json.Marshal(map[string]any{"command": script})
	require.NoError(t, enc.Encode(protocol.Call{Op: protocol.OpCall, ID: "1", Call: tape.ToolCall{ID: "tc_1", Name: "Bash", Input: b}}))
	env, err := dec.Decode()
	require.NoError(t, err)
	require.NotNil(t, env.Result, "reply %s", env.Raw)
	return env.Result.Result.Text(), s
}
