package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/tapebox/tapebox/corpus"
	"github.com/tapebox/tapebox/dataset"
	"github.com/tapebox/tapebox/internal/testutil/dockertest"
	"github.com/tapebox/tapebox/sandbox"
	"github.com/tapebox/tapebox/sandbox/k8s"
	"github.com/tapebox/tapebox/testkit"
)

// The cluster of scripts/k8s-node.sh.
const (
	k8sRequireEnv = "TAPEBOX_REQUIRE_K8S"
	k8sKubeconfig = "/var/lib/tapebox-k8s/admin.kubeconfig"
	k8sNamespace  = "default"
	// The cluster's bridge network enforces no NetworkPolicy (see scripts/k8s-node.sh).
	k8sSandboxSpec = "k8s:" + k8sNamespace + "?image=" + dockertest.SandboxImage + "&allow-network-unenforced=1"
)

// needK8s returns a client of the test cluster, with KUBECONFIG set for the test (and the
// tapebox processes it starts). It skips without a reachable cluster, unless
// TAPEBOX_REQUIRE_K8S=1 (CI sets it and starts the cluster with scripts/k8s-node.sh up).
func needK8s(t *testing.T) *kubernetes.Clientset {
	t.Helper()
	fail := func(format string, args ...any) {
		t.Helper()
		if os.Getenv(k8sRequireEnv) == "1" {
			t.Fatalf(format+" (%s=1: Kubernetes tests must run; start the cluster with scripts/k8s-node.sh up)", append(args, k8sRequireEnv)...)
		}
		t.Skipf(format+" (scripts/k8s-node.sh up starts one; set %s=1 to make this a failure)", append(args, k8sRequireEnv)...)
	}
	kc := os.Getenv("KUBECONFIG")
	if kc == "" {
		kc = k8sKubeconfig
	}
	if _, err := os.Stat(kc); err != nil {
		fail("no Kubernetes cluster: %v", err)
	}
	t.Setenv("KUBECONFIG", kc)
	cfg, err := k8s.Config("")
	if err != nil {
		fail("no Kubernetes cluster: %v", err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	if _, err := cs.CoreV1().Nodes().List(t.Context(), metav1.ListOptions{}); err != nil {
		fail("Kubernetes API server %s not reachable: %v", cfg.Host, err)
	}
	return cs
}

// noPodsLeft fails when a pod TapeBox created is still in the namespace.
func noPodsLeft(t *testing.T, cs *kubernetes.Clientset) {
	t.Helper()
	pods, err := cs.CoreV1().Pods(k8sNamespace).List(t.Context(), metav1.ListOptions{LabelSelector: sandbox.Label + "=1"})
	require.NoError(t, err)
	var names []string
	for _, p := range pods.Items {
		names = append(names, p.Name)
	}
	require.Empty(t, names, "pods left behind")
}

// k8sCorpus writes n re-id'd copies of the Claude Code and Codex tapes of testdata/replay
// (which replay identically anywhere) and returns the folder.
func k8sCorpus(t *testing.T, n int) string {
	t.Helper()
	root := checkoutRoot(t)
	dir := filepath.Join(t.TempDir(), "corpus")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	for i := range n {
		src := filepath.Join(root, "testdata", "replay", []string{"claude-code.json", "codex.json"}[i%2])
		data, err := os.ReadFile(src)
		require.NoError(t, err)
		var v map[string]any
		require.NoError(t, json.Unmarshal(data, &v))
		v["meta"].(map[string]any)["tape_id"] = v["meta"].(map[string]any)["tape_id"].(string) + "-k8s" + string(rune('a'+i))
		out, err := json.Marshal(v)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, filepath.Base(src[:len(src)-5])+"-"+string(rune('a'+i))+".json"), out, 0o644))
	}
	return dir
}

// TestK8sCorpus replays a corpus of 10 tapes and one invalid tape on k8s: with --jobs 2:
// every replay compares identical, the invalid tape is reported by file and field while the
// rest go on, no pod is left behind, and the journal is refused for another corpus.
func TestK8sCorpus(t *testing.T) {
	cs := needK8s(t)
	r := &rig{dir: t.TempDir()}
	bin := r.tapebox(t)
	corp := k8sCorpus(t, 10)
	require.NoError(t, os.WriteFile(filepath.Join(corp, "zz-bad.json"), []byte(`{"version": 1, "meta": {"tape_id": "x"}}`), 0o644))
	dir := t.TempDir()
	journal := filepath.Join(dir, "k8s.db")
	p := startProc(t, dir, os.Environ(), bin, "replay", "--corpus", corp, "--sandbox", k8sSandboxSpec, "--journal", journal,
		"--output-dir", filepath.Join(dir, "out"), "--jobs", "2", "--speed", "0", "--json")
	require.Equal(t, 1, p.wait(t, 5*time.Minute), "one tape is invalid: exit 1\n%s", p.stderr())
	var sum corpus.Summary
	require.NoError(t, json.Unmarshal([]byte(p.stdout()), &sum), p.stdout())
	require.Equal(t, 11, sum.Total)
	require.Equal(t, 10, sum.Identical, p.stderr())
	require.Equal(t, 1, sum.Failed)
	require.Contains(t, p.stderr(), filepath.Join(corp, "zz-bad.json")+" is not a valid tape")
	require.Contains(t, p.stderr(), "/meta/harness")
	rows, err := dataset.ReadResults(corpus.ResultsPath(journal))
	require.NoError(t, err)
	for _, row := range rows {
		if row.Key != "zz-bad.json" {
			require.Equal(t, corpus.VerdictIdentical, row.Verdict, row.Key)
			require.Positive(t, row.ReadyMS)
		}
	}
	noPodsLeft(t, cs)

	other := startProc(t, dir, os.Environ(), bin, "replay", "--corpus", t.TempDir(), "--sandbox", k8sSandboxSpec, "--journal", journal)
	require.Equal(t, 1, other.wait(t, time.Minute))
	require.Contains(t, other.stderr(), "journal belongs to another corpus")
}

// TestK8sHarnessTapes replays a Claude Code and a Codex tape in a pod: identical.
func TestK8sHarnessTapes(t *testing.T) {
	cs := needK8s(t)
	root := checkoutRoot(t)
	for _, name := range []string{"claude-code", "codex"} {
		t.Run(name, func(t *testing.T) {
			res := testkit.Replay(t, filepath.Join(root, "testdata", "replay", name+".json"), k8sSandboxSpec)
			require.NoError(t, testkit.CheckReachedEnd(res))
			require.NoError(t, testkit.CheckIdentical(res))
		})
	}
	noPodsLeft(t, cs)
}

// TestK8sMissingImage: an image the node does not have fails each tape at once with the
// pod's reason named, never hanging on ImagePullBackOff; a pod no node takes ends at the
// ready deadline with its condition named; no pod is left.
func TestK8sMissingImage(t *testing.T) {
	cs := needK8s(t)
	for _, tt := range []struct{ pull, reason string }{{"Never", "ErrImageNeverPull"}, {"IfNotPresent", "ErrImagePull"}} {
		t.Run(tt.pull, func(t *testing.T) {
			start := time.Now()
			_, err := sandbox.Open(t.Context(), "k8s:"+k8sNamespace+"?image=tapebox/no-such-image:1&pull="+tt.pull, sandbox.Options{InstallExecutor: true})
			require.Error(t, err)
			require.Contains(t, err.Error(), tt.reason)
			require.Contains(t, err.Error(), "tapebox/no-such-image:1")
			require.Less(t, time.Since(start), time.Minute, "the error came from a deadline, not the pod's state")
		})
	}
	// A pod that waits without a reason to give up (no node matches) ends at the deadline,
	// which names the pod's condition.
	_, err := sandbox.Open(t.Context(), "k8s:"+k8sNamespace+"?image="+dockertest.SandboxImage+"&node=no-such-node&ready-timeout=3s", sandbox.Options{})
	require.Error(t, err)
	require.Contains(t, err.Error(), "not running after 3s")
	require.Contains(t, err.Error(), "condition PodScheduled=False (Unschedulable")
	_, err = sandbox.Open(t.Context(), "k8s:"+k8sNamespace+"?image=tapebox/no-such-image:1&pull=Sometimes", sandbox.Options{})
	require.ErrorIs(t, err, sandbox.ErrBadSpec)
	_, err = sandbox.Open(t.Context(), "k8s:no-such-namespace?image="+dockertest.SandboxImage, sandbox.Options{})
	require.ErrorContains(t, err, "no-such-namespace")
	noPodsLeft(t, cs)
}

// TestK8sAPIServerGoesAway kills the API server midway through a corpus run: the run stops
// cleanly (exit 1, no tape failed, the cut-off ones queued again), and once the API server
// is back (scripts/k8s-node.sh up) the same command finishes the corpus, identical.
func TestK8sAPIServerGoesAway(t *testing.T) {
	cs := needK8s(t)
	root := checkoutRoot(t)
	pidFile := "/run/tapebox-k8s/kube-apiserver.pid"
	if _, err := os.Stat(pidFile); err != nil {
		t.Skipf("the API server is not one of scripts/k8s-node.sh (%v): not killing it", err)
	}
	r := &rig{dir: t.TempDir()}
	bin := r.tapebox(t)
	corp := k8sCorpus(t, 10)
	dir := t.TempDir()
	journal := filepath.Join(dir, "k8s.db")
	// --speed 1 keeps the recorded model latency, so that the kill lands midway.
	args := []string{"replay", "--corpus", corp, "--sandbox", k8sSandboxSpec, "--journal", journal, "--jobs", "1", "--json"}
	p := startProc(t, dir, os.Environ(), bin, args...)
	deadline := time.Now().Add(3 * time.Minute)
	for doneCount(t, journal) < 2 {
		require.False(t, time.Now().After(deadline), "2 tapes not done in 3 minutes:\n%s", p.stderr())
		time.Sleep(50 * time.Millisecond)
	}
	pidText, err := os.ReadFile(pidFile)
	require.NoError(t, err)
	pid, err := strconv.Atoi(strings.TrimSpace(string(pidText)))
	require.NoError(t, err)
	require.NoError(t, syscall.Kill(pid, syscall.SIGKILL))
	t.Cleanup(func() { restartCluster(t, root) }) // whatever happens below

	code := p.wait(t, 3*time.Minute)
	require.Equal(t, 1, code, "stdout:\n%s\nstderr:\n%s", p.stdout(), p.stderr())
	require.Contains(t, p.stderr(), "run it again to resume")
	var sum corpus.Summary
	require.NoError(t, json.Unmarshal([]byte(p.stdout()), &sum), p.stdout())
	require.Equal(t, 0, sum.Failed, "a tape cut off by the API server is not the tape's failure:\n%s", p.stderr())
	require.Positive(t, sum.Queued)
	require.Less(t, sum.Done, 10)

	restartCluster(t, root)
	again := startProc(t, dir, os.Environ(), bin, append(args, "--speed", "0")...)
	require.Equal(t, 0, again.wait(t, 5*time.Minute), again.stderr())
	require.NoError(t, json.Unmarshal([]byte(again.stdout()), &sum))
	require.Equal(t, 10, sum.Identical)
	require.Equal(t, 0, sum.Failed)
	noPodsLeft(t, cs)
}

func doneCount(t *testing.T, journal string) int {
	n := 0
	for _, s := range journalStates(t, journal) {
		if s[0] == corpus.StateDone {
			n++
		}
	}
	return n
}

// restartCluster brings back what a test stopped (up only starts what is not running).
func restartCluster(t *testing.T, root string) {
	cmd := exec.Command("bash", filepath.Join(root, "scripts", "k8s-node.sh"), "up")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "scripts/k8s-node.sh up:\n%s", out)
}
