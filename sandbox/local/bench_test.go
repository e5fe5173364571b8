package local

import (
	"context"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/tapebox/tapebox/internal/testutil/sandboxtest"
	"github.com/tapebox/tapebox/sandbox"
)

// BenchmarkLocalReady is a local sandbox made ready for a replay: Open a fresh directory,
// Start the executor and say hello (Close is not timed), in local: (under bubblewrap where
// the machine has it) and unsafe-local:; and a one-shot Exec of "true" in an open local:
// sandbox.
func BenchmarkLocalReady(b *testing.B) {
	exe := sandboxtest.RealExecutor(b, runtime.GOARCH)
	root := b.TempDir()
	ready := func(b *testing.B, scheme string) {
		next := func() string {
			return scheme + ":" + filepath.Join(root, "ready", time.Now().Format("150405.000000000"))
		}
		quiet := func(string, ...any) {} // unsafe-local: warns every time
		sandboxtest.BenchReady(b, next, sandbox.Options{ExecutorPath: exe, Logf: quiet}, sandboxtest.Hello)
	}
	b.Run("open-start-hello", func(b *testing.B) { ready(b, sandbox.SchemeLocal) })
	b.Run("open-start-hello-unsafe", func(b *testing.B) { ready(b, sandbox.SchemeUnsafeLocal) })
	b.Run("exec-true", func(b *testing.B) {
		sb, err := sandbox.Open(b.Context(), "local:"+filepath.Join(root, "exec"), sandbox.Options{ExecutorPath: exe})
		if err != nil {
			b.Fatal(err)
		}
		defer sb.Close(context.Background())
		sandboxtest.BenchExec(b, sb, "true")
	})
}

// BenchmarkLocalRoundTrip is the local backend's round trip: cat, and a Noop call through
// tapebox-exec serve as a host process (target p50 <= 0.05 ms).
func BenchmarkLocalRoundTrip(b *testing.B) {
	dir := b.TempDir()
	sb, err := sandbox.Open(b.Context(), "local:"+dir, sandbox.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer sb.Close(context.Background())
	line := []byte(`{"op":"call","id":"1"}` + "\n")
	b.Run("session-cat", func(b *testing.B) { sandboxtest.BenchCat(b, sb, line) })
	b.Run("session-executor-noop", func(b *testing.B) {
		sandboxtest.RealExecutor(b, runtime.GOARCH)
		s, err := sb.Start(b.Context())
		if err != nil {
			b.Fatal(err)
		}
		defer s.Close()
		sandboxtest.BenchNoop(b, s, dir)
	})
}
