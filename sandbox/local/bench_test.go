package local

import (
	"context"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/tapebox/tapebox/executor/protocol"
	"github.com/tapebox/tapebox/internal/sandboxtest"
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
		var lat sandboxtest.Latencies
		quiet := func(string, ...any) {} // unsafe-local: warns every time
		for b.Loop() {
			dir := filepath.Join(root, "ready", time.Now().Format("150405.000000000"))
			start := time.Now()
			sb, err := sandbox.Open(b.Context(), scheme+":"+dir, sandbox.Options{ExecutorPath: exe, Logf: quiet})
			if err != nil {
				b.Fatal(err)
			}
			s, err := sb.Start(b.Context())
			if err != nil {
				b.Fatal(err)
			}
			enc, dec := protocol.NewEncoder(s.Stdin), protocol.NewReplyDecoder(s.Stdout)
			if err := enc.Encode(protocol.Hello{Op: protocol.OpHello, Harness: "claude-code", Cwd: dir, Env: map[string]string{}}); err != nil {
				b.Fatal(err)
			}
			if env, err := dec.Decode(); err != nil || env.HelloReply == nil {
				b.Fatalf("hello: %v; stderr: %s", err, s.Stderr())
			}
			lat.Time(start)
			b.StopTimer()
			if err := sb.Close(context.Background()); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
		}
		lat.Report(b)
	}
	b.Run("open-start-hello", func(b *testing.B) { ready(b, sandbox.SchemeLocal) })
	b.Run("open-start-hello-unsafe", func(b *testing.B) { ready(b, sandbox.SchemeUnsafeLocal) })
	b.Run("exec-true", func(b *testing.B) {
		sb, err := sandbox.Open(b.Context(), "local:"+filepath.Join(root, "exec"), sandbox.Options{ExecutorPath: exe})
		if err != nil {
			b.Fatal(err)
		}
		defer sb.Close(context.Background())
		var lat sandboxtest.Latencies
		for b.Loop() {
			start := time.Now()
			res, err := sb.Exec(b.Context(), []string{"true"})
			if err != nil || res.ExitCode != 0 {
				b.Fatalf("exec true: %v %+v", err, res)
			}
			lat.Time(start)
		}
		lat.Report(b)
	})
}
