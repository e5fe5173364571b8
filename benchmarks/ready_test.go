package benchmarks

import (
	"runtime"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"

	"github.com/tapebox/tapebox/internal/testutil/dockertest"
	"github.com/tapebox/tapebox/internal/testutil/sandboxtest"
	"github.com/tapebox/tapebox/sandbox"
)

// BenchmarkSandboxReady measures how long a fresh container takes to be ready, removal
// not timed:
//
//	docker-create-start        the peer: bare create + start through the Go client
//	docker-create-start-nonet  the same without a network, as TapeBox creates them
//	tapebox-sandbox-ready      sandbox.Open (safe defaults, executor copied in), start
//	                           tapebox-exec serve and say hello: ready for the first call
//	                           (target: within 1.2x of docker-create-start)
func BenchmarkSandboxReady(b *testing.B) {
	bare := func(b *testing.B, hc *container.HostConfig) {
		requireRuntime(b, "runc")
		cli := dockertest.Client(b)
		cfg := &container.Config{Image: dockertest.SandboxImage, Cmd: []string{"sleep", "infinity"},
			Labels: map[string]string{dockertest.Label: b.Name()}}
		var lat sandboxtest.Latencies
		for b.Loop() {
			start := time.Now()
			c, err := cli.ContainerCreate(b.Context(), cfg, hc, nil, nil, "")
			if err != nil {
				b.Fatalf("create: %v", err)
			}
			err = cli.ContainerStart(b.Context(), c.ID, container.StartOptions{})
			lat.Time(start)
			b.StopTimer()
			dockertest.Remove(b, c.ID)
			if err != nil {
				b.Fatalf("start: %v", err)
			}
			b.StartTimer()
		}
		lat.Report(b)
	}
	b.Run("docker-create-start", func(b *testing.B) { bare(b, &container.HostConfig{}) })
	b.Run("docker-create-start-nonet", func(b *testing.B) { bare(b, &container.HostConfig{NetworkMode: "none"}) })

	b.Run("tapebox-sandbox-ready", func(b *testing.B) {
		requireRuntime(b, "runc")
		// Find (or build) the executor once, off the clock, as a release finds it beside tapebox.
		exe, err := sandbox.ExecutorPath(b.Context(), runtime.GOARCH)
		if err != nil {
			b.Fatalf("executor: %v", err)
		}
		sandboxReady(b, "docker-image:"+dockertest.SandboxImage, sandbox.Options{Cwd: "/app", InstallExecutor: true, ExecutorPath: exe})
	})
}

// sandboxReady times sandbox.Open of spec with opts, starting the executor and its hello:
// until the sandbox is ready for the first call. Closing it is not timed.
func sandboxReady(b *testing.B, spec string, opts sandbox.Options) {
	var sb *sandbox.Sandbox // the open one, removed if the benchmark fails midway
	defer func() {
		if sb != nil {
			closeSandbox(b, sb)
		}
	}()
	var lat sandboxtest.Latencies
	for b.Loop() {
		start := time.Now()
		var err error
		sb, err = sandbox.Open(b.Context(), spec, opts)
		if err != nil {
			b.Fatalf("open: %v", err)
		}
		s, err := sb.Start(b.Context())
		if err != nil {
			b.Fatalf("start the executor: %v", err)
		}
		sandboxtest.Greet(b, s, sb.Cwd())
		lat.Time(start)
		b.StopTimer()
		s.Close()
		closeSandbox(b, sb)
		sb = nil
		b.StartTimer()
	}
	lat.Report(b)
}
