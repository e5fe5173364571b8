package sandbox

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// shared is a directory for builds shared by the tests of this binary.
var shared string

func TestMain(m *testing.M) {
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

// fakeExecutor builds testdata/fakeexec for linux/arch (once per test binary) and returns
// the binary's path, named like a real executor build.
func fakeExecutor(tb testing.TB, arch string) string {
	tb.Helper()
	build, _ := fakeBuilds.LoadOrStore(arch, sync.OnceValues(func() (string, error) {
		out := filepath.Join(shared, "fake", ExecutorName+"-"+arch)
		cmd := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", out, "./testdata/fakeexec")
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

// realExecutor returns the real tapebox-exec for arch, or skips until it exists (the
// executor is built by another part of the project; ExecutorPath builds it on demand once
// cmd/tapebox-exec is there).
func realExecutor(tb testing.TB, arch string) string {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	p, err := ExecutorPath(ctx, arch)
	if errors.Is(err, ErrNoExecutor) {
		tb.Skipf("no tapebox-exec for %s yet: %v", arch, err)
	}
	require.NoError(tb, err)
	return p
}

// roundTrip writes line to the session and reads one line back. The write runs beside the
// read: a long line fills the pipes both ways.
func roundTrip(tb testing.TB, s *Session, r *bufio.Reader, line string) string {
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

// waitDone waits for a session to end, failing after a minute.
func waitDone(tb testing.TB, s *Session) error {
	tb.Helper()
	select {
	case <-s.Done():
		return s.Wait()
	case <-time.After(time.Minute):
		tb.Fatalf("session did not end; stderr: %s", s.Stderr())
		return nil
	}
}

func hostArch() string { return runtime.GOARCH }
