package local

import (
	"bufio"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/internal/testutil/sandboxtest"
	"github.com/tapebox/tapebox/sandbox"
)

func TestLocalOpen(t *testing.T) {
	sb, dir := sandboxtest.OpenLocal(t, sandbox.Options{})
	assert.DirExists(t, dir, "DIR is created")
	assert.Equal(t, dir, sb.Cwd())
	assert.Equal(t, runtime.GOARCH, sb.Arch())
	assert.Empty(t, sb.ContainerID())
	assert.Equal(t, sandbox.Spec{Scheme: sandbox.SchemeLocal, Target: dir}, sb.Spec())
}

func TestLocalSessionEcho(t *testing.T) {
	sb, _ := sandboxtest.OpenLocal(t, sandbox.Options{})
	sandboxtest.CheckEcho(t, sb, "one", `{"op":"hello"}`, strings.Repeat("x", 1<<20))
}

func TestLocalSessionExitError(t *testing.T) {
	sb, _ := sandboxtest.OpenLocal(t, sandbox.Options{})
	sandboxtest.CheckExitError(t, sb)
}

func TestLocalSessionCloseKillsStubborn(t *testing.T) {
	sb, _ := sandboxtest.OpenLocal(t, sandbox.Options{})
	// Ignores end-of-file on stdin: Close must kill it after the grace period.
	s, err := sb.StartCommand(t.Context(), []string{"sleep", "600"})
	require.NoError(t, err)
	require.NoError(t, s.Close())
	assert.Error(t, s.Wait())
}

func TestLocalSandboxCloseEndsSessions(t *testing.T) {
	dir := t.TempDir()
	sb, err := sandbox.Open(t.Context(), "local:"+dir, sandbox.Options{})
	require.NoError(t, err)
	s, err := sb.StartCommand(t.Context(), []string{"cat"})
	require.NoError(t, err)
	require.NoError(t, sb.Close(t.Context()))
	assert.NoError(t, sandboxtest.WaitDone(t, s), "cat exits at end-of-file")
	_, err = sb.StartCommand(t.Context(), []string{"cat"})
	assert.ErrorContains(t, err, "the sandbox is closed")
}

func TestLocalExec(t *testing.T) {
	sb, dir := sandboxtest.OpenLocal(t, sandbox.Options{Env: map[string]string{"TAPEBOX_TEST": "yes"}})
	sandboxtest.CheckExec(t, sb, []sandboxtest.ExecCase{
		{Name: "cwd is DIR", Argv: []string{"pwd"}, Stdout: dir + "\n"},
		{Name: "env", Argv: []string{"sh", "-c", "echo $TAPEBOX_TEST"}, Stdout: "yes\n"},
		{Name: "exit status", Argv: []string{"sh", "-c", "echo e >&2; exit 4"}, Stderr: "e\n", ExitCode: 4},
		{Name: "not found", Argv: []string{"no-such-command-tapebox"}, WantErr: []string{"exec no-such-command-tapebox in local:"}},
	})
}

func TestLocalWriteFilesSnapshot(t *testing.T) {
	sb, dir := sandboxtest.OpenLocal(t, sandbox.Options{})
	require.NoError(t, sb.WriteFiles(t.Context(), "proj", sandboxtest.SeedFiles))
	got, err := sb.Snapshot(t.Context(), "proj")
	require.NoError(t, err)
	assert.Equal(t, sandboxtest.WithParents(sandboxtest.SeedFiles), got)

	abs, err := sb.Snapshot(t.Context(), filepath.Join(dir, "proj", "src"))
	require.NoError(t, err)
	assert.Equal(t, []byte("package main\n"), abs["main.go"].Data)

	// Overwrite a file with new contents and a symlink with a file.
	require.NoError(t, sb.WriteFiles(t.Context(), "proj", map[string]sandbox.File{
		"README.md": {Mode: 0o600, Data: []byte("new")},
		"latest":    {Data: []byte("now a file")},
	}))
	got, err = sb.Snapshot(t.Context(), "proj")
	require.NoError(t, err)
	assert.Equal(t, sandbox.File{Mode: 0o600, Data: []byte("new")}, got["README.md"])
	assert.Equal(t, sandbox.File{Mode: 0o644, Data: []byte("now a file")}, got["latest"])

	_, err = sb.Snapshot(t.Context(), "missing")
	assert.ErrorContains(t, err, "snapshot "+filepath.Join(dir, "missing"))

	for _, bad := range []string{"../escape", "/abs", "a/../b", ""} {
		err := sb.WriteFiles(t.Context(), "proj", map[string]sandbox.File{bad: {Data: []byte("x")}})
		assert.ErrorContains(t, err, "bad path", bad)
	}
}

func TestLocalExecutorFromOptions(t *testing.T) {
	exe := sandboxtest.FakeExecutor(t, runtime.GOARCH)
	sb, _ := sandboxtest.OpenLocal(t, sandbox.Options{ExecutorPath: exe})
	if sb.Backend().(*Backend).jail != nil {
		assert.Equal(t, jailExecutor, sb.Executor(), "bound read-only into the jail")
	} else {
		assert.Equal(t, exe, sb.Executor())
	}
	s, err := sb.Start(t.Context())
	require.NoError(t, err)
	defer s.Close()
	r := bufio.NewReader(s.Stdout)
	assert.Equal(t, `{"op":"hello"}`, sandboxtest.RoundTrip(t, s, r, `{"op":"hello"}`))
	require.NoError(t, s.Stdin.Close())
	assert.NoError(t, sandboxtest.WaitDone(t, s))
	assert.Contains(t, s.Stderr(), "fakeexec: stdin closed")
}

func TestLocalWrongArchExecutor(t *testing.T) {
	other := map[string]string{"amd64": "arm64", "arm64": "amd64"}[runtime.GOARCH]
	if other == "" {
		t.Skipf("no other architecture to test against on %s", runtime.GOARCH)
	}
	_, err := sandbox.Open(t.Context(), "local:"+t.TempDir(), sandbox.Options{ExecutorPath: sandboxtest.FakeExecutor(t, other)})
	require.ErrorIs(t, err, sandbox.ErrWrongArch)
	assert.Contains(t, err.Error(), "this host is "+runtime.GOARCH)
}

func TestLocalNoExecutor(t *testing.T) {
	t.Setenv(sandbox.ExecDirEnv, t.TempDir())
	sb, _ := sandboxtest.OpenLocal(t, sandbox.Options{})
	res, err := sb.Exec(t.Context(), []string{"true"})
	require.NoError(t, err, "Exec works without an executor")
	assert.Equal(t, 0, res.ExitCode)
	_, err = sb.Start(t.Context())
	require.ErrorIs(t, err, sandbox.ErrNoExecutor)
	assert.Contains(t, err.Error(), "start the executor in local:")
}

// TestLocalRealExecutor speaks the protocol with the real tapebox-exec; it skips until the
// executor exists.
func TestLocalRealExecutor(t *testing.T) {
	sandboxtest.RealExecutor(t, runtime.GOARCH)
	sb, dir := sandboxtest.OpenLocal(t, sandbox.Options{})
	s, err := sb.Start(t.Context())
	require.NoError(t, err)
	defer s.Close()
	hello := sandboxtest.HelloRoundTrip(t, s, dir)
	assert.Equal(t, dir, hello.Cwd)
	sandboxtest.Bye(t, s)
}

// TestLocalStartExecutor: the session as one io.ReadWriteCloser, the controller's view.
func TestLocalStartExecutor(t *testing.T) {
	sb, _ := sandboxtest.OpenLocal(t, sandbox.Options{ExecutorPath: sandboxtest.FakeExecutor(t, runtime.GOARCH)})
	rwc, err := sb.StartExecutor(t.Context())
	require.NoError(t, err)
	_, err = rwc.Write([]byte("ping\n"))
	require.NoError(t, err)
	got, err := bufio.NewReader(rwc).ReadString('\n')
	require.NoError(t, err)
	assert.Equal(t, "ping\n", got)
	assert.NoError(t, rwc.Close())
}

func TestMain(m *testing.M) { sandboxtest.Main(m) }
