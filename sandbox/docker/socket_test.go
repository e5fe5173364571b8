package docker

import (
	"bufio"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/docker/docker/api/types/mount"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/internal/testutil/dockertest"
	"github.com/tapebox/tapebox/internal/testutil/sandboxtest"
	"github.com/tapebox/tapebox/sandbox"
)

// TestDockerSocketTransport: in a container TapeBox creates, the executor session travels
// over a unix socket of the controller's, in a host directory mounted read-only, that the
// executor connects to; the session survives the executor's death by a restart, and the
// directory goes with the sandbox.
func TestDockerSocketTransport(t *testing.T) {
	cli := dockertest.Client(t)
	exe := sandboxtest.FakeExecutor(t, runtime.GOARCH)
	var log sandboxtest.LogLines
	sb := openImage(t, dockertest.TinyImage, sandbox.Options{InstallExecutor: true, ExecutorPath: exe, Logf: log.Logf})
	assert.Equal(t, "unix-socket", sb.Transport(), "the default for a created container on a local engine")

	ci, err := cli.ContainerInspect(t.Context(), sb.ContainerID())
	require.NoError(t, err)
	var hostDir string
	for _, m := range ci.HostConfig.Mounts {
		if m.Target == sockDirIn {
			assert.Equal(t, mount.TypeBind, m.Type)
			assert.True(t, m.ReadOnly, "the container must not change the socket directory")
			hostDir = m.Source
		}
	}
	require.NotEmpty(t, hostDir, "socket directory mounted at %s: %+v", sockDirIn, ci.HostConfig.Mounts)
	fi, err := os.Stat(hostDir)
	require.NoError(t, err)
	assert.Equal(t, fs.ModeDir|0o755, fi.Mode(), "writable by its owner (this process) only")
	fi, err = os.Stat(filepath.Dir(hostDir))
	require.NoError(t, err)
	assert.Equal(t, fs.ModeDir|0o700, fi.Mode(), "the private parent keeps the host's other users out")

	s, err := sb.Start(t.Context())
	require.NoError(t, err)
	assert.IsType(t, sockStdin{}, s.Stdin, "the session travels over the socket")
	assert.Contains(t, log.String(), "executor session over unix socket "+hostDir)
	r := bufio.NewReader(s.Stdout)
	assert.Equal(t, "ping", sandboxtest.RoundTrip(t, s, r, "ping"))
	long := strings.Repeat("x", 300<<10) // fills the socket buffers both ways
	assert.Equal(t, long, sandboxtest.RoundTrip(t, s, r, long))
	entries, err := os.ReadDir(hostDir)
	require.NoError(t, err)
	assert.Empty(t, entries, "the controller removes its socket once the executor is connected")

	// The executor dies: the session ends with an error, and a new one works.
	res, err := sb.Exec(t.Context(), []string{"sh", "-c", "kill -9 $(pidof tapebox-exec)"})
	require.NoError(t, err)
	require.Equal(t, 0, res.ExitCode, "%s", res.Stderr)
	_, err = io.Copy(io.Discard, s.Stdout)
	assert.NoError(t, err, "the connection ends with EOF")
	assert.Error(t, sandboxtest.WaitDone(t, s), "a killed executor is a failed session")
	s.Close()

	s, err = sb.Start(t.Context())
	require.NoError(t, err)
	assert.Equal(t, "again", sandboxtest.RoundTrip(t, s, bufio.NewReader(s.Stdout), "again"))
	require.NoError(t, s.Close())
	assert.NoError(t, s.Wait(), "closing the connection ends the executor cleanly; stderr: %s", s.Stderr())
	assert.Contains(t, s.Stderr(), "fakeexec: connection closed")

	require.NoError(t, sb.Close(t.Context()))
	assert.NoDirExists(t, filepath.Dir(hostDir), "Close removes the socket directory")
}

// TestDockerSocketRefusesImpostor: a process in the container that connects to the
// controller's socket before the executor does is turned away (its peer is not the exec's
// process), and the session is the executor's.
func TestDockerSocketRefusesImpostor(t *testing.T) {
	exe := sandboxtest.FakeExecutor(t, runtime.GOARCH)
	var log sandboxtest.LogLines
	sb := openImage(t, dockertest.TinyImage, sandbox.Options{InstallExecutor: true, ExecutorPath: exe, Logf: log.Logf, Transport: sandbox.TransportSocket,
		Env: map[string]string{"FAKEEXEC_DIAL_DELAY": "500ms"}})
	imp, err := sb.StartCommand(t.Context(), []string{sb.Executor(), "impostor", sockDirIn})
	require.NoError(t, err)
	defer imp.Close()
	impOut := bufio.NewReader(imp.Stdout)

	s, err := sb.Start(t.Context())
	require.NoError(t, err)
	defer s.Close()
	line, err := impOut.ReadString('\n')
	require.NoError(t, err, "stderr: %s", imp.Stderr())
	assert.Contains(t, line, "impostor: connected to "+sockDirIn+"/ctl-", "the impostor got in first")
	assert.Equal(t, "ping", sandboxtest.RoundTrip(t, s, bufio.NewReader(s.Stdout), "ping"), "the executor's echo, not the impostor's line")
	assert.Regexp(t, `refused a connection to the executor's socket from pid \d+: the executor is pid \d+`, log.String())
}

// TestDockerSocketContainerKilled: killing the container ends a socket session with an
// error, and a restart fails with ErrNotRunning, as on the exec stream.
func TestDockerSocketContainerKilled(t *testing.T) {
	cli := dockertest.Client(t)
	sb := openImage(t, dockertest.TinyImage, sandbox.Options{InstallExecutor: true, ExecutorPath: sandboxtest.FakeExecutor(t, runtime.GOARCH), Transport: sandbox.TransportSocket})
	s, err := sb.Start(t.Context())
	require.NoError(t, err)
	defer s.Close()
	require.IsType(t, sockStdin{}, s.Stdin)
	assert.Equal(t, "ping", sandboxtest.RoundTrip(t, s, bufio.NewReader(s.Stdout), "ping"))
	require.NoError(t, cli.ContainerKill(t.Context(), sb.ContainerID(), "KILL"))
	_, _ = io.Copy(io.Discard, s.Stdout)
	assert.Error(t, sandboxtest.WaitDone(t, s), "a killed container ends the session with an error")
	_, err = sb.Start(t.Context())
	require.ErrorIs(t, err, sandbox.ErrNotRunning)
}

// TestDockerSocketFallback: where the socket cannot work, auto says why and uses the exec
// stream; a forced socket is an error that says what to do.
func TestDockerSocketFallback(t *testing.T) {
	dockertest.Client(t)
	exe := sandboxtest.FakeExecutor(t, runtime.GOARCH)

	t.Run("executor without --dial", func(t *testing.T) {
		var log sandboxtest.LogLines
		sb := openImage(t, dockertest.TinyImage, sandbox.Options{InstallExecutor: true, ExecutorPath: exe, Logf: log.Logf,
			Env: map[string]string{"FAKEEXEC_OLD": "1"}})
		require.Equal(t, "unix-socket", sb.Transport())
		s, err := sb.Start(t.Context())
		require.NoError(t, err)
		defer s.Close()
		assert.NotEqual(t, sockStdin{}, s.Stdin)
		assert.Equal(t, "ping", sandboxtest.RoundTrip(t, s, bufio.NewReader(s.Stdout), "ping"))
		assert.Equal(t, "exec-stream", sb.Transport(), "the stream from then on")
		assert.Contains(t, log.String(), "does not know serve --dial")
	})

	t.Run("executor cannot reach the socket", func(t *testing.T) {
		var log sandboxtest.LogLines
		sb := openImage(t, dockertest.TinyImage, sandbox.Options{InstallExecutor: true, ExecutorPath: exe, Logf: log.Logf,
			Env: map[string]string{"FAKEEXEC_DIAL_TO": "/nowhere.sock"}})
		s, err := sb.Start(t.Context())
		require.NoError(t, err)
		defer s.Close()
		assert.Equal(t, "ping", sandboxtest.RoundTrip(t, s, bufio.NewReader(s.Stdout), "ping"))
		assert.Equal(t, "exec-stream", sb.Transport())
		assert.Contains(t, log.String(), "the executor could not connect to "+sockDirIn+"/ctl-")
		assert.Contains(t, log.String(), "the engine may not pass sockets through a bind mount")
	})

	long := filepath.Join(t.TempDir(), strings.Repeat("d", 100))
	require.NoError(t, os.MkdirAll(long, 0o755))
	for _, tt := range []struct {
		name, tmpdir, why string
	}{
		{"socket path too long", long, "over the 107 a unix socket address holds"},
		{"no temporary directory", filepath.Join(t.TempDir(), "missing"), "is $TMPDIR writable?"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("TMPDIR", tt.tmpdir)
			var log sandboxtest.LogLines
			sb := openImage(t, dockertest.TinyImage, sandbox.Options{InstallExecutor: true, ExecutorPath: exe, Logf: log.Logf})
			assert.Equal(t, "exec-stream", sb.Transport())
			assert.Contains(t, log.String(), tt.why)
			s, err := sb.Start(t.Context())
			require.NoError(t, err)
			defer s.Close()
			assert.Equal(t, "ping", sandboxtest.RoundTrip(t, s, bufio.NewReader(s.Stdout), "ping"))

			_, err = sandbox.Open(t.Context(), "docker-image:"+dockertest.TinyImage, sandbox.Options{InstallExecutor: true, ExecutorPath: exe, Transport: sandbox.TransportSocket})
			require.ErrorIs(t, err, sandbox.ErrOption)
			assert.ErrorContains(t, err, tt.why)
			assert.ErrorContains(t, err, "--exec-transport stream or auto")
		})
	}

	t.Run("forced where impossible", func(t *testing.T) {
		_, err := sandbox.Open(t.Context(), "docker-image:"+dockertest.TinyImage, sandbox.Options{Transport: sandbox.TransportSocket, Runtime: "runsc"})
		require.ErrorIs(t, err, sandbox.ErrOption)
		assert.ErrorContains(t, err, "runtime runsc")
		_, name := dockertest.Run(t, dockertest.TinyImage)
		_, err = sandbox.Open(t.Context(), "docker:"+name, sandbox.Options{Transport: sandbox.TransportSocket})
		require.ErrorIs(t, err, sandbox.ErrOption)
		assert.ErrorContains(t, err, "needs a container TapeBox creates")
		_, err = sandbox.Open(t.Context(), "docker:"+name, sandbox.Options{Transport: "carrier-pigeon"})
		assert.ErrorContains(t, err, `unknown executor transport "carrier-pigeon"`)
	})
}
