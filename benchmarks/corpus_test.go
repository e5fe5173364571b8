package benchmarks

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	tbcorpus "github.com/tapebox/tapebox/corpus"
	"github.com/tapebox/tapebox/internal/testutil/dockertest"
	"github.com/tapebox/tapebox/internal/testutil/sandboxtest"
	"github.com/tapebox/tapebox/sandbox"
	"github.com/tapebox/tapebox/sandbox/k8s"
)

// corpusReplayTapes is how many tapes one iteration of BenchmarkCorpus replays.
const corpusReplayTapes = 12

// corpusDir links n copies of the Codex tape of testdata/replay (7 steps, 7 tool calls) into
// a fresh folder: hard links, so that a corpus of 10,000 costs no disk.
func corpusDir(b *testing.B, n int) string {
	b.Helper()
	src, err := filepath.Abs("../testdata/replay/codex.json")
	if err != nil {
		b.Fatal(err)
	}
	return linkCorpus(b, src, n)
}

// lastStepTape writes the Codex tape cut down to its last step (a final answer, no tool
// call) and returns its path: a tape whose replay is nearly all sandbox overhead.
func lastStepTape(b *testing.B) string {
	b.Helper()
	data, err := os.ReadFile("../testdata/replay/codex.json")
	if err != nil {
		b.Fatal(err)
	}
	var t map[string]any
	if err := json.Unmarshal(data, &t); err != nil {
		b.Fatal(err)
	}
	th := t["threads"].([]any)[0].(map[string]any)
	steps := th["steps"].([]any)
	th["steps"] = steps[len(steps)-1:]
	t["threads"] = []any{th}
	out, err := json.Marshal(t)
	if err != nil {
		b.Fatal(err)
	}
	path := filepath.Join(b.TempDir(), "last-step.json")
	if err := os.WriteFile(path, out, 0o644); err != nil {
		b.Fatal(err)
	}
	return path
}

// linkCorpus hard-links n copies of the tape at src into a fresh folder.
func linkCorpus(b *testing.B, src string, n int) string {
	b.Helper()
	dir := filepath.Join(b.TempDir(), "corpus")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	for i := range n {
		if err := os.Link(src, filepath.Join(dir, fmt.Sprintf("t%05d.json", i))); err != nil {
			b.Fatal(err)
		}
	}
	return dir
}

// BenchmarkCorpus measures corpus throughput in tapes per minute (tapes/min), side by side
// with the engine's own rate for the same image in the same run:
//
//	docker-create-start-remove     the peer: bare create + start + remove through the Go
//	                               client, one container after another (containers/min)
//	docker-create-start-remove-x2  the same, two at a time
//	jobs1, jobs2, jobs4            tapebox replay --corpus on docker-image:, --jobs N, a
//	                               corpus of 12 Codex tapes (7 tool calls each), --speed 0
//	jobs2-pool2                    --jobs 2 --pool 2
//	notools-jobs2[-pool2]          the same with the Codex tape cut to its last step (no
//	                               tool call): the per-tape overhead alone
//	k8s-jobs2                      --jobs 2 on k8s: (skipped without the cluster)
//
// Target: jobs2 at least 0.8x docker-create-start-remove.
func BenchmarkCorpus(b *testing.B) {
	bare := func(b *testing.B, par int) {
		requireRuntime(b, "runc")
		cli := dockertest.Client(b)
		cfg := &container.Config{Image: dockertest.SandboxImage, Cmd: []string{"sleep", "infinity"},
			Labels: map[string]string{dockertest.Label: b.Name()}}
		hc := &container.HostConfig{NetworkMode: "none", Init: new(true)}
		start := time.Now()
		n := 0
		for b.Loop() {
			var wg sync.WaitGroup
			for range par {
				wg.Go(func() {
					c, err := cli.ContainerCreate(b.Context(), cfg, hc, nil, nil, "")
					if err != nil {
						b.Errorf("create: %v", err)
						return
					}
					if err := cli.ContainerStart(b.Context(), c.ID, container.StartOptions{}); err != nil {
						b.Errorf("start: %v", err)
					}
					if err := cli.ContainerRemove(b.Context(), c.ID, container.RemoveOptions{Force: true}); err != nil {
						b.Errorf("remove: %v", err)
					}
				})
			}
			wg.Wait()
			n += par
		}
		b.ReportMetric(float64(n)/time.Since(start).Minutes(), "tapes/min")
	}
	b.Run("docker-create-start-remove", func(b *testing.B) { bare(b, 1) })
	b.Run("docker-create-start-remove-x2", func(b *testing.B) { bare(b, 2) })

	run := func(b *testing.B, spec string, jobs, pool int, dir string) {
		exe, err := sandbox.ExecutorPath(b.Context(), runtime.GOARCH)
		if err != nil {
			b.Fatal(err)
		}
		var total time.Duration
		n := 0
		for b.Loop() {
			journal := filepath.Join(b.TempDir(), "run.db")
			start := time.Now()
			sum, err := tbcorpus.Run(b.Context(), tbcorpus.Options{Corpus: dir, Journal: journal, Sandbox: spec, Jobs: jobs, Pool: pool,
				SandboxOptions: sandbox.Options{InstallExecutor: true, ExecutorPath: exe, Runtime: runtimeFor(spec)}})
			total += time.Since(start)
			if err != nil {
				b.Fatal(err)
			}
			if sum.Identical != corpusReplayTapes {
				b.Fatalf("%d of %d replays identical", sum.Identical, corpusReplayTapes)
			}
			n += corpusReplayTapes
		}
		b.ReportMetric(float64(n)/total.Minutes(), "tapes/min")
	}
	docker := "docker-image:" + dockertest.SandboxImage
	for _, c := range []struct {
		name       string
		jobs, pool int
	}{{"jobs1", 1, 0}, {"jobs2", 2, 0}, {"jobs4", 4, 0}, {"jobs2-pool2", 2, 2}} {
		b.Run(c.name, func(b *testing.B) {
			requireRuntime(b, "runc")
			dockertest.Image(b, dockertest.SandboxImage)
			run(b, docker, c.jobs, c.pool, corpusDir(b, corpusReplayTapes))
		})
	}
	for _, c := range []struct {
		name       string
		jobs, pool int
	}{{"notools-jobs2", 2, 0}, {"notools-jobs2-pool2", 2, 2}} {
		b.Run(c.name, func(b *testing.B) {
			requireRuntime(b, "runc")
			dockertest.Image(b, dockertest.SandboxImage)
			run(b, docker, c.jobs, c.pool, linkCorpus(b, lastStepTape(b), corpusReplayTapes))
		})
	}
	b.Run("k8s-jobs2", func(b *testing.B) {
		k8sClient(b)
		run(b, "k8s:default?image="+dockertest.SandboxImage+"&allow-network-unenforced=1", 2, 0, corpusDir(b, corpusReplayTapes))
	})
}

func runtimeFor(spec string) string {
	if spec[:4] == "k8s:" {
		return ""
	}
	return "runc"
}

// k8sClient skips b without the cluster of scripts/k8s-node.sh (KUBECONFIG, else its admin
// kubeconfig).
func k8sClient(b *testing.B) *kubernetes.Clientset {
	b.Helper()
	if os.Getenv("KUBECONFIG") == "" {
		b.Setenv("KUBECONFIG", "/var/lib/tapebox-k8s/admin.kubeconfig")
	}
	cfg, err := k8s.Config("")
	if err != nil {
		b.Skipf("no Kubernetes cluster (scripts/k8s-node.sh up starts one): %v", err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := cs.CoreV1().Nodes().List(b.Context(), metav1.ListOptions{}); err != nil {
		b.Skipf("Kubernetes API server not reachable (scripts/k8s-node.sh up starts one): %v", err)
	}
	return cs
}

// BenchmarkK8s sets the k8s: backend beside Docker on the same machine:
//
//	docker-sandbox-ready, k8s-sandbox-ready  sandbox.Open (executor copied in), the executor
//	                                         started and greeted: ready for the first call
//	k8s-pod-create-running                   the peer: a bare pod created until Running
//	docker-exec-stream, k8s-exec             one Noop call's round trip through a long-lived
//	                                         executor session: Docker's hijacked exec stream,
//	                                         the API server's exec stream (WebSocket)
func BenchmarkK8s(b *testing.B) {
	k8sSpec := "k8s:default?image=" + dockertest.SandboxImage + "&allow-network-unenforced=1"
	b.Run("docker-sandbox-ready", func(b *testing.B) {
		requireRuntime(b, "runc")
		sandboxReady(b, "docker-image:"+dockertest.SandboxImage, sandbox.Options{Cwd: "/app", InstallExecutor: true, Runtime: "runc", Transport: sandbox.TransportStream})
	})
	b.Run("k8s-sandbox-ready", func(b *testing.B) {
		k8sClient(b)
		sandboxReady(b, k8sSpec, sandbox.Options{Cwd: "/app", InstallExecutor: true})
	})
	b.Run("k8s-pod-create-running", func(b *testing.B) {
		cs := k8sClient(b)
		pods := cs.CoreV1().Pods("default")
		var lat sandboxtest.Latencies
		var zero int64
		for i := 0; b.Loop(); i++ {
			name := fmt.Sprintf("tapebox-bench-%d-%d", os.Getpid(), i)
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{sandbox.Label: "1"}},
				Spec: corev1.PodSpec{TerminationGracePeriodSeconds: &zero, RestartPolicy: corev1.RestartPolicyNever,
					Containers: []corev1.Container{{Name: "c", Image: dockertest.SandboxImage, ImagePullPolicy: corev1.PullNever,
						Command: []string{"sleep", "infinity"}}}}}
			start := time.Now()
			if _, err := pods.Create(b.Context(), pod, metav1.CreateOptions{}); err != nil {
				b.Fatal(err)
			}
			for {
				p, err := pods.Get(b.Context(), name, metav1.GetOptions{})
				if err != nil {
					b.Fatal(err)
				}
				if p.Status.Phase == corev1.PodRunning {
					break
				}
				time.Sleep(5 * time.Millisecond)
			}
			lat.Time(start)
			b.StopTimer()
			_ = pods.Delete(b.Context(), name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
			b.StartTimer()
		}
		lat.Report(b)
	})
	b.Run("docker-exec-stream", func(b *testing.B) {
		sb := openTransport(b, sandbox.TransportStream)
		defer closeSandbox(b, sb)
		noopRoundTrips(b, sb)
	})
	b.Run("k8s-exec", func(b *testing.B) {
		k8sClient(b)
		sb, err := sandbox.Open(b.Context(), k8sSpec, sandbox.Options{Cwd: "/app", InstallExecutor: true})
		if err != nil {
			b.Fatal(err)
		}
		defer closeSandbox(b, sb)
		noopRoundTrips(b, sb)
	})
}

// BenchmarkCorpusMemory measures the peak RSS of tapebox replay --corpus (local sandbox,
// --jobs 2) after 100 tapes, with 100 and with 10,000 tapes in the corpus: the queue lives
// in the journal, so the two should cost the same (peak-rss-MB).
func BenchmarkCorpusMemory(b *testing.B) {
	bin := tapeboxBin(b)
	for _, n := range []int{100, 10000} {
		b.Run(fmt.Sprintf("queued-%d", n), func(b *testing.B) {
			dir := corpusDir(b, n)
			var peak int64
			for b.Loop() {
				journal := filepath.Join(b.TempDir(), "run.db")
				cmd := exec.Command(bin, "replay", "--corpus", dir, "--sandbox", "local", "--journal", journal,
					"--jobs", "2", "--speed", "0", "--quiet")
				if err := cmd.Start(); err != nil {
					b.Fatal(err)
				}
				waited := make(chan error, 1)
				go func() { waited <- cmd.Wait() }()
				deadline := time.Now().Add(5 * time.Minute)
			poll:
				for {
					select {
					case <-waited:
						break poll
					case <-time.After(100 * time.Millisecond):
					}
					if finished(b, journal) >= 100 {
						_ = cmd.Process.Kill()
						<-waited
						break
					}
					if time.Now().After(deadline) {
						_ = cmd.Process.Kill()
						<-waited
						b.Fatal("100 tapes not finished in 5 minutes")
					}
				}
				if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
					peak = max(peak, ru.Maxrss) // KiB on Linux
				}
			}
			b.ReportMetric(float64(peak)/1024, "peak-rss-MB")
		})
	}
}

// finished counts the done and failed tapes of a journal, read beside its writer.
func finished(b *testing.B, journal string) int {
	db, err := sql.Open("sqlite", "file:"+journal+"?mode=ro&_pragma=busy_timeout(5000)")
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM tapes WHERE state IN ('done', 'failed')`).Scan(&n); err != nil {
		return 0
	}
	return n
}
