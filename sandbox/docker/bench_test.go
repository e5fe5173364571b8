package docker

import (
	"bufio"
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/client"

	"github.com/tapebox/tapebox/internal/testutil/dockertest"
	"github.com/tapebox/tapebox/internal/testutil/sandboxtest"
	"github.com/tapebox/tapebox/sandbox"
)

// benchSandbox opens a docker-image: sandbox for a benchmark.
func benchSandbox(b *testing.B, ref string, opts sandbox.Options) *sandbox.Sandbox {
	b.Helper()
	dockertest.Image(b, ref)
	sb, err := sandbox.Open(b.Context(), "docker-image:"+ref, opts)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { sb.Close(context.Background()) })
	return sb
}

// BenchmarkDockerRoundTrip compares, in one run on one container, a round trip through ONE
// long-lived exec session with one `docker exec` (create + start + wait) per call:
//
//   - floor-raw-cat: a line echoed by cat through a hijacked exec stream read with the bare
//     Go client (frame headers parsed inline): the floor of this path on this engine.
//   - session-cat: the same through Session (stdcopy demultiplexing into a pipe).
//   - session-executor-noop: a Noop call (Claude Code TodoWrite) through tapebox-exec serve
//     over the exec stream (TransportStream). Target: within 1.2x of floor-raw-cat.
//   - session-socket-noop: the same over the controller's unix socket in a read-only
//     bind-mounted directory (TransportSocket), which bypasses the engine. Target: p50 <=
//     0.05 ms.
//   - exec-per-call: Exec of "echo x", one exec per call, the peer's way.
func BenchmarkDockerRoundTrip(b *testing.B) {
	sb := benchSandbox(b, dockertest.SandboxImage, sandbox.Options{Cwd: "/app"})
	line := []byte(`{"op":"call","id":"1","call":{"id":"toolu_1","name":"TodoWrite","input":{"todos":[]}},"recorded":null}` + "\n")

	b.Run("floor-raw-cat", func(b *testing.B) {
		cli := dockertest.Client(b)
		ex, err := cli.ContainerExecCreate(b.Context(), sb.ContainerID(), container.ExecOptions{
			Cmd: []string{"cat"}, AttachStdin: true, AttachStdout: true, AttachStderr: true})
		if err != nil {
			b.Fatal(err)
		}
		resp, err := cli.ContainerExecAttach(b.Context(), ex.ID, container.ExecAttachOptions{})
		if err != nil {
			b.Fatal(err)
		}
		defer resp.Close()
		var lat sandboxtest.Latencies
		for b.Loop() {
			start := time.Now()
			if _, err := resp.Conn.Write(line); err != nil {
				b.Fatal(err)
			}
			if err := dockertest.ReadStdout(resp.Reader, len(line)); err != nil {
				b.Fatal(err)
			}
			lat.Time(start)
		}
		lat.Report(b)
	})

	b.Run("session-cat", func(b *testing.B) { sandboxtest.BenchCat(b, sb, line) })

	noopLoop := func(b *testing.B, tr sandbox.Transport) {
		exe := sandboxtest.RealExecutor(b, sb.Arch())
		esb := benchSandbox(b, dockertest.SandboxImage, sandbox.Options{Cwd: "/app", InstallExecutor: true, ExecutorPath: exe, Transport: tr})
		s, err := esb.Start(b.Context())
		if err != nil {
			b.Fatal(err)
		}
		defer s.Close()
		sandboxtest.BenchNoop(b, s, "/app")
	}
	b.Run("session-executor-noop", func(b *testing.B) { noopLoop(b, sandbox.TransportStream) })
	b.Run("session-socket-noop", func(b *testing.B) { noopLoop(b, sandbox.TransportSocket) })

	b.Run("exec-per-call", func(b *testing.B) { sandboxtest.BenchExec(b, sb, "echo", "x") })
}

// BenchmarkDockerReady compares a sandbox made ready for a replay (create with the safe
// defaults, install the executor, start, start the executor session and say hello) with a
// bare create + start of the same image through the Go client. Removal is not timed.
// Target: sandbox-ready within 1.2x of bare-create-start.
func BenchmarkDockerReady(b *testing.B) {
	cli, ref := dockertest.Image(b, dockertest.SandboxImage)

	b.Run("bare-create-start", func(b *testing.B) {
		benchBare(b, cli, ref, &container.HostConfig{})
	})
	b.Run("bare-create-start-nonet", func(b *testing.B) {
		benchBare(b, cli, ref, &container.HostConfig{NetworkMode: "none"})
	})

	b.Run("sandbox-ready", func(b *testing.B) {
		exe, hello := sandboxtest.FakeExecutor(b, runtime.GOARCH), false
		if p, err := sandbox.ExecutorPath(b.Context(), runtime.GOARCH); err == nil {
			exe, hello = p, true
		}
		greet := sandboxtest.Hello
		if !hello {
			// The stand-in echoes: one round trip proves the session is up.
			greet = func(tb testing.TB, s *sandbox.Session, _ string) {
				s.Stdin.Write([]byte("ready\n"))
				if _, err := bufio.NewReader(s.Stdout).ReadString('\n'); err != nil {
					tb.Fatal(err)
				}
			}
		}
		next := func() string { return "docker-image:" + ref }
		sandboxtest.BenchReady(b, next, sandbox.Options{Cwd: "/app", InstallExecutor: true, ExecutorPath: exe}, greet)
	})
}

func benchBare(b *testing.B, cli *client.Client, ref string, hc *container.HostConfig) {
	var lat sandboxtest.Latencies
	for b.Loop() {
		start := time.Now()
		c, err := cli.ContainerCreate(b.Context(), &container.Config{Image: ref, Cmd: []string{"sleep", "infinity"}}, hc, nil, nil, "")
		if err != nil {
			b.Fatal(err)
		}
		if err := cli.ContainerStart(b.Context(), c.ID, container.StartOptions{}); err != nil {
			b.Fatal(err)
		}
		lat.Time(start)
		b.StopTimer()
		if err := cli.ContainerRemove(context.Background(), c.ID, container.RemoveOptions{Force: true}); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	lat.Report(b)
}
