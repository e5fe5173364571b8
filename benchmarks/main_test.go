package benchmarks

import (
	"context"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tapebox/tapebox/internal/testutil/dockertest"
	"github.com/tapebox/tapebox/sandbox"
)

// scratch holds the directories shared by the whole run (the generated corpus, the
// miniagent recording); TestMain removes them at the end.
var scratch struct {
	mu   sync.Mutex
	dirs []string
}

// scratchDir makes a directory that lives until the test binary ends, for data that is
// built once and shared by every -count round of a benchmark.
func scratchDir(pattern string) (string, error) {
	dir, err := os.MkdirTemp("", pattern)
	if err != nil {
		return "", err
	}
	scratch.mu.Lock()
	scratch.dirs = append(scratch.dirs, dir)
	scratch.mu.Unlock()
	return dir, nil
}

func TestMain(m *testing.M) {
	if cmd := os.Getenv(peakRSSEnv); cmd != "" {
		os.Exit(runForPeakRSS(cmd))
	}
	code := m.Run()
	for _, dir := range scratch.dirs {
		os.RemoveAll(dir)
	}
	os.Exit(code)
}

// ms converts a duration to milliseconds for ReportMetric.
func ms(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e6 }

// closeCtx bounds cleanup that must run even when the benchmark's context is done.
func closeCtx(b *testing.B) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(b.Context()), time.Minute)
}

// requireRuntime skips b unless the Docker engine lists the OCI runtime rt (runc, runsc);
// with no engine or no sandbox image it skips, or fails under TAPEBOX_REQUIRE_DOCKER=1.
func requireRuntime(b *testing.B, rt string) {
	b.Helper()
	cli, _ := dockertest.Image(b, dockertest.SandboxImage)
	info, err := cli.Info(b.Context())
	if err != nil {
		b.Fatalf("docker info: %v", err)
	}
	if _, ok := info.Runtimes[rt]; !ok {
		b.Skipf("runtime %s is not installed: docker info lists %s (install gVisor and register runsc in daemon.json to measure it)",
			rt, strings.Join(slices.Sorted(maps.Keys(info.Runtimes)), ", "))
	}
}

// runtimes are the OCI runtimes Docker replays are measured on; one that docker info does
// not list is skipped with a message.
var runtimes = []string{"runc", "runsc"}

// openDocker opens a fresh container of the sandbox image on runtime rt, with the executor
// installed; the caller closes it.
func openDocker(b *testing.B, rt, cwd string) *sandbox.Sandbox {
	b.Helper()
	requireRuntime(b, rt)
	sb, err := sandbox.Open(b.Context(), "docker-image:"+dockertest.SandboxImage,
		sandbox.Options{Cwd: cwd, InstallExecutor: true, Runtime: rt})
	if err != nil {
		b.Fatalf("open a %s sandbox: %v", rt, err)
	}
	return sb
}

// closeSandbox removes what sb created, failing b if it cannot.
func closeSandbox(b *testing.B, sb *sandbox.Sandbox) {
	ctx, cancel := closeCtx(b)
	defer cancel()
	if err := sb.Close(ctx); err != nil {
		b.Errorf("close sandbox %s: %v", sb.Spec(), err)
	}
}
