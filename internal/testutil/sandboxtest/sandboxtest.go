package sandboxtest

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/executor/protocol"
	"github.com/tapebox/tapebox/sandbox"
)

// shared is a directory for builds shared by the tests of one test binary; Main makes and
// removes it.
var shared string

// Main runs a test binary's tests (call it from TestMain) with a shared build directory.
func Main(m *testing.M) {
	dir, err := os.MkdirTemp("", "tapebox-sandbox-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	shared = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

var fakeBuilds sync.Map // arch -> func() (string, error)

// fakeexecDir is sandbox/testdata/fakeexec in the sources of this package.
func fakeexecDir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..", "sandbox", "testdata", "fakeexec")
}

// FakeExecutor builds sandbox/testdata/fakeexec for linux/arch (once per test binary) and
// returns the binary's path, named like a real executor build.
func FakeExecutor(tb testing.TB, arch string) string {
	tb.Helper()
	if shared == "" {
		tb.Fatal("sandboxtest.FakeExecutor needs sandboxtest.Main in TestMain")
	}
	build, _ := fakeBuilds.LoadOrStore(arch, sync.OnceValues(func() (string, error) {
		out := filepath.Join(shared, "fake", sandbox.ExecutorName+"-"+arch)
		cmd := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", out, ".")
		cmd.Dir = fakeexecDir()
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+arch)
		if b, err := cmd.CombinedOutput(); err != nil {
			return "", fmt.Errorf("build fakeexec for %s: %v\n%s", arch, err, b)
		}
		return out, nil
	}))
	p, err := build.(func() (string, error))()
	require.NoError(tb, err)
	return p
}

// RealExecutor returns the real tapebox-exec for arch, or skips until it exists
// (sandbox.ExecutorPath builds it on demand from the sources).
func RealExecutor(tb testing.TB, arch string) string {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	p, err := sandbox.ExecutorPath(ctx, arch)
	if errors.Is(err, sandbox.ErrNoExecutor) {
		tb.Skipf("no tapebox-exec for %s yet: %v", arch, err)
	}
	require.NoError(tb, err)
	return p
}

// RoundTrip writes line to the session and reads one line back. The write runs beside the
// read: a long line fills the pipes both ways.
func RoundTrip(tb testing.TB, s *sandbox.Session, r *bufio.Reader, line string) string {
	tb.Helper()
	written := make(chan error, 1)
	go func() {
		_, err := s.Stdin.Write([]byte(line + "\n"))
		written <- err
	}()
	got, err := r.ReadString('\n')
	require.NoError(tb, err, "read the echo; stderr: %s", s.Stderr())
	require.NoError(tb, <-written)
	return got[:len(got)-1]
}

// WaitDone waits for a session to end, failing after a minute.
func WaitDone(tb testing.TB, s *sandbox.Session) error {
	tb.Helper()
	select {
	case <-s.Done():
		return s.Wait()
	case <-time.After(time.Minute):
		tb.Fatalf("session did not end; stderr: %s", s.Stderr())
		return nil
	}
}

// LogLines collects the lines of an Options.Logf. It is safe for concurrent use.
type LogLines struct {
	mu    sync.Mutex
	lines []string
}

// Logf is an Options.Logf.
func (l *LogLines) Logf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, fmt.Sprintf(format, args...))
}

// Lines returns the lines so far.
func (l *LogLines) Lines() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.lines)
}

func (l *LogLines) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

// Latencies collects the durations of a benchmark's iterations.
type Latencies []time.Duration

// Time adds the time since start.
func (l *Latencies) Time(start time.Time) { *l = append(*l, time.Since(start)) }

// Report reports the median and the 99th percentile as p50-ms and p99-ms.
func (l Latencies) Report(b *testing.B) {
	if len(l) == 0 {
		return
	}
	slices.Sort(l)
	b.ReportMetric(float64(l[len(l)/2].Nanoseconds())/1e6, "p50-ms")
	b.ReportMetric(float64(l[len(l)*99/100].Nanoseconds())/1e6, "p99-ms")
}

// HelloRoundTrip says hello to the executor of session s (harness claude-code, working
// directory cwd) and returns its reply, failing t unless it is OK.
func HelloRoundTrip(t testing.TB, s *sandbox.Session, cwd string) *protocol.HelloReply {
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

// Bye ends the executor of session s with a bye and waits for it to exit.
func Bye(t testing.TB, s *sandbox.Session) {
	t.Helper()
	b, _ := json.Marshal(protocol.Bye{Op: protocol.OpBye})
	_, err := s.Stdin.Write(append(b, '\n'))
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, s.Stdout)
	err = WaitDone(t, s)
	if err != nil && !errors.Is(err, os.ErrClosed) {
		assert.NoError(t, err, "executor exit; stderr: %s", s.Stderr())
	}
}

// SeedFiles are a tree for WriteFiles and Snapshot: nested directories, an executable, an
// empty and a binary file, a symbolic link, names with a space and non-ASCII letters.
var SeedFiles = map[string]sandbox.File{
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

// WithParents is files with the directories that hold them, as Snapshot returns them.
func WithParents(files map[string]sandbox.File) map[string]sandbox.File {
	out := map[string]sandbox.File{}
	for name, f := range files {
		out[name] = f
		for d := filepath.Dir(name); d != "."; d = filepath.Dir(d) {
			if _, ok := files[d]; !ok {
				out[filepath.ToSlash(d)] = sandbox.File{Mode: fs.ModeDir | 0o755}
			}
		}
	}
	return out
}

// OpenLocal opens a local sandbox in a fresh directory "work" and closes it when the test
// ends; it returns the sandbox and the directory. The program must link sandbox/local.
func OpenLocal(t *testing.T, opts sandbox.Options) (*sandbox.Sandbox, string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "work")
	sb, err := sandbox.Open(t.Context(), "local:"+dir, opts)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, sb.Close(t.Context())) })
	return sb, dir
}

// ListenLoopback listens on a loopback TCP port of the host, accepting and closing every
// connection, until stop: for a test that a sandbox cannot reach the host's loopback
// services. stop (also run at the end of the test) ends the listener and returns the
// addresses of the connections it accepted.
func ListenLoopback(t *testing.T) (port int, stop func() []string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []string
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c.RemoteAddr().String())
			mu.Unlock()
			c.Close()
		}
	})
	stop = func() []string {
		ln.Close()
		wg.Wait()
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(conns)
	}
	t.Cleanup(func() { stop() })
	return ln.Addr().(*net.TCPAddr).Port, stop
}
