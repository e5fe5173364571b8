package sandbox

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/executor/protocol"
)

func openLocalT(t *testing.T, opts Options) (*Sandbox, string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "work")
	sb, err := Open(t.Context(), "local:"+dir, opts)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, sb.Close(t.Context())) })
	return sb, dir
}

func TestLocalOpen(t *testing.T) {
	sb, dir := openLocalT(t, Options{})
	assert.DirExists(t, dir, "DIR is created")
	assert.Equal(t, dir, sb.Cwd())
	assert.Equal(t, hostArch(), sb.Arch())
	assert.Empty(t, sb.ContainerID())
	assert.Equal(t, Spec{Scheme: SchemeLocal, Target: dir}, sb.Spec())
}

func TestLocalSessionEcho(t *testing.T) {
	sb, _ := openLocalT(t, Options{})
	s, err := sb.StartCommand(t.Context(), []string{"cat"})
	require.NoError(t, err)
	r := bufio.NewReader(s.Stdout)
	for _, line := range []string{"one", `{"op":"hello"}`, strings.Repeat("x", 1<<20)} {
		assert.Equal(t, line, roundTrip(t, s, r, line))
	}
	require.NoError(t, s.Stdin.Close())
	_, err = r.ReadByte()
	assert.ErrorIs(t, err, io.EOF)
	assert.NoError(t, waitDone(t, s))
	assert.NoError(t, s.Close())
	assert.NoError(t, s.Close(), "second Close")
}

func TestLocalSessionExitError(t *testing.T) {
	sb, _ := openLocalT(t, Options{})
	s, err := sb.StartCommand(t.Context(), []string{"sh", "-c", "echo out; echo oops >&2; exit 3"})
	require.NoError(t, err)
	out, err := io.ReadAll(s.Stdout)
	require.NoError(t, err)
	assert.Equal(t, "out\n", string(out))
	err = waitDone(t, s)
	var ee *ExitError
	require.ErrorAs(t, err, &ee)
	assert.Equal(t, 3, ee.Code)
	assert.Equal(t, "oops\n", ee.Stderr)
	assert.Equal(t, "oops\n", s.Stderr())
	assert.NoError(t, s.Close(), "Close after a non-zero exit")
}

func TestLocalSessionCloseKillsStubborn(t *testing.T) {
	sb, _ := openLocalT(t, Options{})
	// Ignores end-of-file on stdin: Close must kill it after the grace period.
	s, err := sb.StartCommand(t.Context(), []string{"sleep", "600"})
	require.NoError(t, err)
	require.NoError(t, s.Close())
	assert.Error(t, s.Wait())
}

func TestLocalSandboxCloseEndsSessions(t *testing.T) {
	dir := t.TempDir()
	sb, err := Open(t.Context(), "local:"+dir, Options{})
	require.NoError(t, err)
	s, err := sb.StartCommand(t.Context(), []string{"cat"})
	require.NoError(t, err)
	require.NoError(t, sb.Close(t.Context()))
	assert.NoError(t, waitDone(t, s), "cat exits at end-of-file")
	_, err = sb.StartCommand(t.Context(), []string{"cat"})
	assert.ErrorContains(t, err, "the sandbox is closed")
}

func TestLocalExec(t *testing.T) {
	sb, dir := openLocalT(t, Options{Env: map[string]string{"TAPEBOX_TEST": "yes"}})
	tests := []struct {
		name     string
		argv     []string
		stdout   string
		stderr   string
		exitCode int
		wantErr  string
	}{
		{name: "cwd is DIR", argv: []string{"pwd"}, stdout: dir + "\n"},
		{name: "env", argv: []string{"sh", "-c", "echo $TAPEBOX_TEST"}, stdout: "yes\n"},
		{name: "exit status", argv: []string{"sh", "-c", "echo e >&2; exit 4"}, stderr: "e\n", exitCode: 4},
		{name: "not found", argv: []string{"no-such-command-tapebox"}, wantErr: "exec no-such-command-tapebox in local:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := sb.Exec(t.Context(), tt.argv)
			if tt.wantErr != "" {
				assert.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.stdout, string(res.Stdout))
			assert.Equal(t, tt.stderr, string(res.Stderr))
			assert.Equal(t, tt.exitCode, res.ExitCode)
		})
	}
}

// seedFiles is a small tree of each kind of entry, for WriteFiles and Snapshot.
var seedFiles = map[string]File{
	"README.md":       {Mode: 0o644, Data: []byte("# hello\n")},
	"src":             {Mode: fs.ModeDir | 0o755},
	"src/main.go":     {Mode: 0o644, Data: []byte("package main\n")},
	"src/run.sh":      {Mode: 0o755, Data: []byte("#!/bin/sh\necho run\n")},
	"src/empty":       {Mode: 0o644, Data: []byte{}},
	"docs/a/b/c.txt":  {Mode: 0o600, Data: []byte("deep")},
	"latest":          {Mode: fs.ModeSymlink | 0o777, Link: "src/main.go"},
	"binary.dat":      {Mode: 0o644, Data: []byte{0, 1, 2, 0xff, '\n', 0}},
	"with space.txt":  {Mode: 0o644, Data: []byte("spaced")},
	"unicode-é-✓.txt": {Mode: 0o644, Data: []byte("ok")},
}

// withParents adds the directories WriteFiles creates for seedFiles.
func withParents(files map[string]File) map[string]File {
	out := map[string]File{}
	for name, f := range files {
		out[name] = f
		for d := filepath.Dir(name); d != "."; d = filepath.Dir(d) {
			if _, ok := files[d]; !ok {
				out[filepath.ToSlash(d)] = File{Mode: fs.ModeDir | 0o755}
			}
		}
	}
	return out
}

func TestLocalWriteFilesSnapshot(t *testing.T) {
	sb, dir := openLocalT(t, Options{})
	require.NoError(t, sb.WriteFiles(t.Context(), "proj", seedFiles))
	got, err := sb.Snapshot(t.Context(), "proj")
	require.NoError(t, err)
	assert.Equal(t, withParents(seedFiles), got)

	abs, err := sb.Snapshot(t.Context(), filepath.Join(dir, "proj", "src"))
	require.NoError(t, err)
	assert.Equal(t, []byte("package main\n"), abs["main.go"].Data)

	// Overwrite a file with new contents and a symlink with a file.
	require.NoError(t, sb.WriteFiles(t.Context(), "proj", map[string]File{
		"README.md": {Mode: 0o600, Data: []byte("new")},
		"latest":    {Data: []byte("now a file")},
	}))
	got, err = sb.Snapshot(t.Context(), "proj")
	require.NoError(t, err)
	assert.Equal(t, File{Mode: 0o600, Data: []byte("new")}, got["README.md"])
	assert.Equal(t, File{Mode: 0o644, Data: []byte("now a file")}, got["latest"])

	_, err = sb.Snapshot(t.Context(), "missing")
	assert.ErrorContains(t, err, "snapshot "+filepath.Join(dir, "missing"))

	for _, bad := range []string{"../escape", "/abs", "a/../b", ""} {
		err := sb.WriteFiles(t.Context(), "proj", map[string]File{bad: {Data: []byte("x")}})
		assert.ErrorContains(t, err, "bad path", bad)
	}
}

func TestLocalExecutorFromOptions(t *testing.T) {
	exe := fakeExecutor(t, hostArch())
	sb, _ := openLocalT(t, Options{ExecutorPath: exe})
	if sb.b.(*localBackend).jail != nil {
		assert.Equal(t, jailExecutor, sb.Executor(), "bound read-only into the jail")
	} else {
		assert.Equal(t, exe, sb.Executor())
	}
	s, err := sb.Start(t.Context())
	require.NoError(t, err)
	defer s.Close()
	r := bufio.NewReader(s.Stdout)
	assert.Equal(t, `{"op":"hello"}`, roundTrip(t, s, r, `{"op":"hello"}`))
	require.NoError(t, s.Stdin.Close())
	assert.NoError(t, waitDone(t, s))
	assert.Contains(t, s.Stderr(), "fakeexec: stdin closed")
}

func TestLocalWrongArchExecutor(t *testing.T) {
	other := map[string]string{"amd64": "arm64", "arm64": "amd64"}[hostArch()]
	if other == "" {
		t.Skipf("no other architecture to test against on %s", hostArch())
	}
	_, err := Open(t.Context(), "local:"+t.TempDir(), Options{ExecutorPath: fakeExecutor(t, other)})
	require.ErrorIs(t, err, ErrWrongArch)
	assert.Contains(t, err.Error(), "this host is "+hostArch())
}

func TestLocalNoExecutor(t *testing.T) {
	t.Setenv(ExecDirEnv, t.TempDir())
	sb, _ := openLocalT(t, Options{})
	res, err := sb.Exec(t.Context(), []string{"true"})
	require.NoError(t, err, "Exec works without an executor")
	assert.Equal(t, 0, res.ExitCode)
	_, err = sb.Start(t.Context())
	require.ErrorIs(t, err, ErrNoExecutor)
	assert.Contains(t, err.Error(), "start the executor in local:")
}

// TestLocalRealExecutor speaks the protocol with the real tapebox-exec; it skips until the
// executor exists.
func TestLocalRealExecutor(t *testing.T) {
	realExecutor(t, hostArch())
	sb, dir := openLocalT(t, Options{})
	s, err := sb.Start(t.Context())
	require.NoError(t, err)
	defer s.Close()
	hello := helloRoundTrip(t, s, dir)
	assert.Equal(t, dir, hello.Cwd)
	bye(t, s)
}

// helloRoundTrip sends hello and returns the executor's reply.
func helloRoundTrip(t testing.TB, s *Session, cwd string) *protocol.HelloReply {
	t.Helper()
	enc := protocol.NewEncoder(s.Stdin)
	require.NoError(t, enc.Encode(protocol.Hello{Op: protocol.OpHello, Harness: "claude-code", Cwd: cwd, Env: map[string]string{}}))
	env, err := protocol.NewReplyDecoder(s.Stdout).Decode()
	require.NoError(t, err, "read hello reply; stderr: %s", s.Stderr())
	require.NotNil(t, env.HelloReply, "reply %s", env.Raw)
	require.True(t, env.HelloReply.OK, "reply %s", env.Raw)
	assert.Equal(t, protocol.Version, env.HelloReply.Protocol)
	return env.HelloReply
}

// bye ends a protocol session and checks that the executor exits 0.
func bye(t testing.TB, s *Session) {
	t.Helper()
	b, _ := json.Marshal(protocol.Bye{Op: protocol.OpBye})
	_, err := s.Stdin.Write(append(b, '\n'))
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, s.Stdout)
	err = waitDone(t, s)
	if err != nil && !errors.Is(err, os.ErrClosed) {
		assert.NoError(t, err, "executor exit; stderr: %s", s.Stderr())
	}
}

// TestLocalStartExecutor: the session as one io.ReadWriteCloser, the controller's view.
func TestLocalStartExecutor(t *testing.T) {
	sb, _ := openLocalT(t, Options{ExecutorPath: fakeExecutor(t, hostArch())})
	rwc, err := sb.StartExecutor(t.Context())
	require.NoError(t, err)
	_, err = rwc.Write([]byte("ping\n"))
	require.NoError(t, err)
	got, err := bufio.NewReader(rwc).ReadString('\n')
	require.NoError(t, err)
	assert.Equal(t, "ping\n", got)
	assert.NoError(t, rwc.Close())
}
