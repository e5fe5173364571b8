package benchmarks

import (
	"encoding/json"
	"os/exec"
	"slices"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"

	"github.com/tapebox/tapebox/internal/testutil/dockertest"
	"github.com/tapebox/tapebox/internal/testutil/sandboxtest"
	"github.com/tapebox/tapebox/sandbox"
)

// BenchmarkExecRoundTrip measures one tool call's round trip between the host and a
// sandbox. In one container of the sandbox image (runc):
//
//	docker-cli-per-call    the peer: `docker exec CONTAINER true`, one CLI process per call
//	docker-exec-per-call   one Engine API exec per call (create, attach, wait), no CLI
//	exec-stream-floor      a line as long as a Noop call echoed by cat through ONE hijacked
//	                       exec stream, frames parsed inline: the floor of this path
//	tapebox-session        a Noop call through tapebox-exec serve in one exec session, as a
//	                       replay sends it over the exec stream (--exec-transport stream;
//	                       target: within 1.2x of exec-stream-floor)
//	tapebox-session-paired floor and session round trips taken in turn, one each per
//	                       iteration, so that both see the same load on a shared machine:
//	                       floor-p50-ms, session-p50-ms and their ratio x-floor
//	tapebox-socket         the same over the controller's unix socket in a host directory
//	                       mounted read-only, which the executor dials (--exec-transport
//	                       socket, the default for docker-image: on a local engine); it
//	                       bypasses the engine (target: p50 <= 0.05 ms)
//
// and over local pipes (the local sandbox):
//
//	local-pipes-floor      the same line echoed by cat
//	tapebox-local          a Noop call through tapebox-exec serve (target: p50 <= 0.05 ms)
func BenchmarkExecRoundTrip(b *testing.B) {
	line, err := json.Marshal(sandboxtest.NoopCall)
	if err != nil {
		b.Fatal(err)
	}
	line = append(line, '\n')

	// One container serves the Docker sub-benchmarks; it is opened by the first that runs.
	var docker *sandbox.Sandbox
	defer func() {
		if docker != nil {
			closeSandbox(b, docker)
		}
	}()
	inDocker := func(b *testing.B) *sandbox.Sandbox {
		if docker == nil {
			docker = openTransport(b, sandbox.TransportStream)
		}
		return docker
	}

	b.Run("docker-cli-per-call", func(b *testing.B) {
		sb := inDocker(b)
		bin, err := exec.LookPath("docker")
		if err != nil {
			b.Skipf("no docker CLI on PATH: %v", err)
		}
		var lat sandboxtest.Latencies
		for b.Loop() {
			start := time.Now()
			if out, err := exec.CommandContext(b.Context(), bin, "exec", sb.ContainerID(), "true").CombinedOutput(); err != nil {
				b.Fatalf("docker exec: %v: %s", err, out)
			}
			lat.Time(start)
		}
		lat.Report(b)
	})

	b.Run("docker-exec-per-call", func(b *testing.B) { sandboxtest.BenchExec(b, inDocker(b), "true") })

	// floorConn starts cat in the stream sandbox's container through a bare hijacked exec.
	floorConn := func(b *testing.B) func() {
		sb := inDocker(b)
		cli := dockertest.Client(b)
		ex, err := cli.ContainerExecCreate(b.Context(), sb.ContainerID(), container.ExecOptions{
			Cmd: []string{"cat"}, AttachStdin: true, AttachStdout: true, AttachStderr: true})
		if err != nil {
			b.Fatalf("exec create: %v", err)
		}
		resp, err := cli.ContainerExecAttach(b.Context(), ex.ID, container.ExecAttachOptions{})
		if err != nil {
			b.Fatalf("exec attach: %v", err)
		}
		b.Cleanup(resp.Close)
		return func() {
			if _, err := resp.Conn.Write(line); err != nil {
				b.Fatalf("write: %v", err)
			}
			if err := dockertest.ReadStdout(resp.Reader, len(line)); err != nil {
				b.Fatalf("read the echo: %v", err)
			}
		}
	}

	b.Run("exec-stream-floor", func(b *testing.B) {
		echo := floorConn(b)
		var lat sandboxtest.Latencies
		for b.Loop() {
			start := time.Now()
			echo()
			lat.Time(start)
		}
		lat.Report(b)
	})

	b.Run("tapebox-session", func(b *testing.B) { noopRoundTrips(b, inDocker(b)) })

	b.Run("tapebox-session-paired", func(b *testing.B) {
		echo := floorConn(b)
		sb := inDocker(b)
		sess, err := sb.Start(b.Context())
		if err != nil {
			b.Fatalf("start the executor: %v", err)
		}
		defer sess.Close()
		enc, dec := sandboxtest.Greet(b, sess, sb.Cwd())
		var floor, session sandboxtest.Latencies
		for b.Loop() {
			start := time.Now()
			echo()
			mid := time.Now()
			sandboxtest.Noop(b, sess, enc, dec)
			floor, session = append(floor, mid.Sub(start)), append(session, time.Since(mid))
		}
		slices.Sort(floor)
		slices.Sort(session)
		f, s := floor[len(floor)/2], session[len(session)/2]
		b.ReportMetric(ms(f), "floor-p50-ms")
		b.ReportMetric(ms(s), "session-p50-ms")
		b.ReportMetric(float64(s)/float64(f), "x-floor")
	})

	b.Run("tapebox-socket", func(b *testing.B) {
		sb := openTransport(b, sandbox.TransportSocket)
		defer closeSandbox(b, sb)
		noopRoundTrips(b, sb)
	})

	local := func(b *testing.B) *sandbox.Sandbox {
		sb := openLocal(b)
		b.Cleanup(func() { closeSandbox(b, sb) })
		return sb
	}

	b.Run("local-pipes-floor", func(b *testing.B) { sandboxtest.BenchCat(b, local(b), line) })

	b.Run("tapebox-local", func(b *testing.B) { noopRoundTrips(b, local(b)) })
}

// openTransport opens a runc container of the sandbox image whose executor sessions use
// transport t.
func openTransport(b *testing.B, t sandbox.Transport) *sandbox.Sandbox {
	b.Helper()
	requireRuntime(b, "runc")
	sb, err := sandbox.Open(b.Context(), "docker-image:"+dockertest.SandboxImage,
		sandbox.Options{Cwd: "/app", InstallExecutor: true, Runtime: "runc", Transport: t})
	if err != nil {
		b.Fatalf("open a sandbox (transport %s): %v", t, err)
	}
	return sb
}

// noopRoundTrips times Noop calls through one executor session in sb.
func noopRoundTrips(b *testing.B, sb *sandbox.Sandbox) {
	s, err := sb.Start(b.Context())
	if err != nil {
		b.Fatalf("start the executor: %v", err)
	}
	defer s.Close()
	sandboxtest.BenchNoop(b, s, sb.Cwd())
}
