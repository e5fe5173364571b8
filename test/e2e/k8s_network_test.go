package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/tapebox/tapebox/internal/testutil/dockertest"
	"github.com/tapebox/tapebox/sandbox"
	"github.com/tapebox/tapebox/sandbox/k8s"
)

// lines collects what a sandbox logs and warns, from any goroutine.
type lines struct {
	mu  sync.Mutex
	all []string
}

func (l *lines) add(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.all = append(l.all, fmt.Sprintf(format, args...))
}

func (l *lines) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.all, "\n")
}

// freshNamespace makes a namespace for one test, with its default service account (which
// a pod needs), deleted at the end.
func freshNamespace(t *testing.T, cs *kubernetes.Clientset, prefix string) string {
	t.Helper()
	ns := fmt.Sprintf("%s-%d", prefix, time.Now().UnixNano()%1e6)
	_, err := cs.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = cs.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{})
	})
	for start := time.Now(); ; time.Sleep(200 * time.Millisecond) {
		if _, err := cs.CoreV1().ServiceAccounts(ns).Get(t.Context(), "default", metav1.GetOptions{}); err == nil {
			return ns
		}
		require.Less(t, time.Since(start), time.Minute, "no default service account in %s", ns)
	}
}

// podsTalk lets the pods of the test cluster's bridge (tbk8s0, scripts/k8s-node.sh) reach
// each other until the test ends. On this machine Docker's FORWARD policy (DROP), which
// bridged traffic goes through, keeps them apart; on a real cluster pods reach each other.
func podsTalk(t *testing.T) {
	t.Helper()
	rule := []string{"FORWARD", "-i", "tbk8s0", "-o", "tbk8s0", "-j", "ACCEPT"}
	out, err := exec.Command("iptables", append([]string{"-I"}, rule...)...).CombinedOutput()
	require.NoError(t, err, "%s", out)
	t.Cleanup(func() {
		out, err := exec.Command("iptables", append([]string{"-D"}, rule...)...).CombinedOutput()
		require.NoError(t, err, "%s", out)
	})
}

// TestK8sRefusesUnenforcedNetwork: the cluster of scripts/k8s-node.sh enforces no
// NetworkPolicy. Where its pods cannot reach each other at all (this machine's default), the
// probe cannot tell and warns; where they can, a sandbox without a network refuses to run:
// the probe finds a pod under the deny-all policy reaching another pod. In a namespace whose
// policy of that name lets egress through, it refuses before any probe.
// --allow-network-unenforced runs anyway, with a warning. On main all of them opened a pod,
// saying nothing.
func TestK8sRefusesUnenforcedNetwork(t *testing.T) {
	cs := needK8s(t)
	// The verdict holds for the process, per namespace: each verdict gets its own.
	quiet := freshNamespace(t, cs, "tapebox-quiet")
	var log lines
	sb, err := sandbox.Open(t.Context(), "k8s:"+quiet+"?image="+dockertest.SandboxImage, sandbox.Options{Logf: log.add, Warnf: log.add})
	require.NoError(t, err)
	require.NoError(t, sb.Close(t.Context()))
	require.Contains(t, log.String(), "warning: k8s namespace "+quiet+": could not tell whether the cluster enforces NetworkPolicies (probe: a pod without a network label could not connect to another pod either")
	got, err := cs.NetworkingV1().NetworkPolicies(quiet).Get(t.Context(), k8s.DenyAllPolicy, metav1.GetOptions{})
	require.NoError(t, err, "the deny-all policy is made")
	require.Equal(t, "none", got.Spec.PodSelector.MatchLabels[k8s.NetworkLabel])

	ns := freshNamespace(t, cs, "tapebox-probe")
	spec := "k8s:" + ns + "?image=" + dockertest.SandboxImage
	podsTalk(t)
	log = lines{}
	_, err = sandbox.Open(t.Context(), spec, sandbox.Options{Logf: log.add, Warnf: log.add})
	require.ErrorIs(t, err, k8s.ErrNetworkUnenforced, "%s", log.String())
	require.ErrorContains(t, err, "does not enforce NetworkPolicies")
	require.ErrorContains(t, err, "labeled org.tapebox.network=none connected to pod")
	require.ErrorContains(t, err, "--allow-network-unenforced")
	log = lines{}
	sb, err = sandbox.Open(t.Context(), spec, sandbox.Options{Logf: log.add, Warnf: log.add, AllowNetworkUnenforced: true})
	require.NoError(t, err)
	require.NoError(t, sb.Close(t.Context()))
	require.Contains(t, log.String(), "warning: k8s namespace "+ns+": the cluster does not enforce NetworkPolicies")

	other := freshNamespace(t, cs, "tapebox-np")
	open := &networkingv1.NetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: k8s.DenyAllPolicy, Namespace: other},
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{k8s.NetworkLabel: "none"}},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress},
			Egress:      []networkingv1.NetworkPolicyEgressRule{{}}, // everything
		},
	}
	_, err = cs.NetworkingV1().NetworkPolicies(other).Create(t.Context(), open, metav1.CreateOptions{})
	require.NoError(t, err)
	spec = "k8s:" + other + "?image=" + dockertest.SandboxImage
	_, err = sandbox.Open(t.Context(), spec, sandbox.Options{Logf: log.add, Warnf: log.add})
	require.ErrorIs(t, err, k8s.ErrNetworkUnenforced)
	require.ErrorContains(t, err, "is not TapeBox's deny-all: it allows 1 egress rule(s)")
	var allowed lines
	sb, err = sandbox.Open(t.Context(), spec+"&allow-network-unenforced=1", sandbox.Options{Logf: allowed.add, Warnf: allowed.add})
	require.NoError(t, err)
	require.NoError(t, sb.Close(t.Context()))
	require.Contains(t, allowed.String(), "warning: k8s namespace "+other+": the NetworkPolicy tapebox-deny-all exists and is not TapeBox's deny-all")

	_, err = sandbox.Open(t.Context(), "k8s:no-such-namespace?image="+dockertest.SandboxImage, sandbox.Options{})
	require.ErrorIs(t, err, k8s.ErrNetworkUnenforced, "a policy that cannot be created")
	for _, n := range []string{quiet, ns, other} { // the probe's pods included
		pods, err := cs.CoreV1().Pods(n).List(t.Context(), metav1.ListOptions{})
		require.NoError(t, err)
		require.Empty(t, pods.Items, "pods left in %s", n)
	}
}

// TestK8sPodReapsOrphans: in a sandbox's pod, a process whose parent exits is reaped once it
// exits (the pause process is the pod's PID 1), where main's pod, whose PID 1 was sleep,
// kept it as a zombie for good. Open names the node's process limit, or warns that there
// is none.
func TestK8sPodReapsOrphans(t *testing.T) {
	cs := needK8s(t)
	var log lines
	sb, err := sandbox.Open(t.Context(), k8sSandboxSpec, sandbox.Options{Logf: log.add, Warnf: log.add})
	require.NoError(t, err)
	defer func() { require.NoError(t, sb.Close(context.Background())) }()
	require.Regexp(t, `limits the pod to \d+ processes|sets no podPidsLimit|could not read node`, log.String())

	res, err := sb.Exec(t.Context(), []string{"sh", "-c", "(sleep 1 &); (sleep 1 &); cat /proc/1/cmdline | tr '\\0' ' '"})
	require.NoError(t, err)
	require.Equal(t, 0, res.ExitCode, "%s", res.Stderr)
	require.NotContains(t, string(res.Stdout), "sleep infinity", "PID 1 is not the container's sleep")
	zombies := func() string {
		res, err := sb.Exec(t.Context(), []string{"sh", "-c", `for f in /proc/[0-9]*/stat; do s=$(cat "$f" 2>/dev/null) || continue; case "$s" in *") Z "*) echo "$s";; esac; done`})
		require.NoError(t, err)
		return string(res.Stdout)
	}
	// The orphans exit after a second; then they are reaped, or stay zombies for good.
	time.Sleep(3 * time.Second)
	deadline := time.Now().Add(15 * time.Second)
	for z := zombies(); z != ""; z = zombies() {
		if time.Now().After(deadline) {
			t.Fatalf("orphans left as zombies long after they exited:\n%s", z)
		}
		time.Sleep(500 * time.Millisecond)
	}
	_ = cs
}

// probePods returns a function that says how many of the probe's pods (tapebox-probe-*)
// the namespace has seen, by the events the scheduler left of them (the probe deletes its
// pods; a watch of this cluster's API server can fail with "too large resource version").
func probePods(t *testing.T, cs *kubernetes.Clientset, ns string) func() int {
	t.Helper()
	return func() int {
		t.Helper()
		time.Sleep(time.Second) // the scheduler's events come after the pods
		evs, err := cs.CoreV1().Events(ns).List(t.Context(), metav1.ListOptions{FieldSelector: "involvedObject.kind=Pod"})
		require.NoError(t, err)
		seen := map[string]bool{}
		for _, ev := range evs.Items {
			if strings.HasPrefix(ev.InvolvedObject.Name, "tapebox-probe-") {
				seen[ev.InvolvedObject.Name] = true
			}
		}
		return len(seen)
	}
}

// k8sChildEnv makes TestK8sOpenInChild open a sandbox of that spec.
const k8sChildEnv = "TAPEBOX_K8S_CHILD_SPEC"

// TestK8sOpenInChild opens and closes one sandbox of the spec in k8sChildEnv and prints what
// it logged: another process, for TestK8sProbeVerdictKept. It does nothing otherwise.
func TestK8sOpenInChild(t *testing.T) {
	spec := os.Getenv(k8sChildEnv)
	if spec == "" {
		t.Skip("run by TestK8sProbeVerdictKept only")
	}
	var log lines
	sb, err := sandbox.Open(t.Context(), spec, sandbox.Options{Logf: log.add, Warnf: log.add})
	require.NoError(t, err)
	require.NoError(t, sb.Close(t.Context()))
	fmt.Println(log.String())
}

// TestK8sProbeVerdictKept: the network probe (12.7 s of a cold k8s Open) runs once per
// namespace and policy: a second Open in the process, and an Open in another process, take
// its verdict (kept on the policy, ProbeAnnotation) and create no probe pod; a changed
// policy (a new generation) and a policy made again (a new UID) are probed again.
func TestK8sProbeVerdictKept(t *testing.T) {
	cs := needK8s(t)
	ns := freshNamespace(t, cs, "tapebox-kept")
	spec := "k8s:" + ns + "?image=" + dockertest.SandboxImage + "&allow-network-unenforced=1"
	made := probePods(t, cs, ns)
	open := func() (string, time.Duration) {
		t.Helper()
		var log lines
		start := time.Now()
		sb, err := sandbox.Open(t.Context(), spec, sandbox.Options{Logf: log.add, Warnf: log.add})
		require.NoError(t, err)
		took := time.Since(start)
		require.NoError(t, sb.Close(t.Context()))
		return log.String(), took
	}
	verdict := regexp.MustCompile(`NetworkPolicies \((probe[^:]*):`)
	how := func(log string) string {
		t.Helper()
		m := verdict.FindStringSubmatch(log)
		require.NotNil(t, m, "no verdict in %s", log)
		return m[1]
	}

	log, cold := open()
	require.Equal(t, "probe", how(log), "the first Open probes")
	require.Equal(t, 3, made(), "the probe's three pods: %s", log)
	p, err := cs.NetworkingV1().NetworkPolicies(ns).Get(t.Context(), k8s.DenyAllPolicy, metav1.GetOptions{})
	require.NoError(t, err)
	require.Contains(t, p.Annotations[k8s.ProbeAnnotation], `"generation":1`)

	log, warm := open()
	require.Equal(t, "probe taken earlier by this process", how(log))
	require.Equal(t, 3, made(), "no probe pod for the second Open")
	t.Logf("Open with the probe %v, with this process's verdict %v", cold.Round(time.Millisecond), warm.Round(time.Millisecond))

	// Another process.
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestK8sOpenInChild$", "-test.v")
	cmd.Env = append(os.Environ(), k8sChildEnv+"="+spec)
	start := time.Now()
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	t.Logf("another process's test binary, start to end: %v", time.Since(start).Round(time.Millisecond))
	require.Contains(t, string(out), "NetworkPolicies (probe kept on the policy since ")
	require.Equal(t, 3, made(), "no probe pod for another process's Open")

	// A changed policy (its types in another order: still the deny-all, a new generation).
	p.Spec.PolicyTypes = []networkingv1.PolicyType{networkingv1.PolicyTypeEgress, networkingv1.PolicyTypeIngress}
	p, err = cs.NetworkingV1().NetworkPolicies(ns).Update(t.Context(), p, metav1.UpdateOptions{})
	require.NoError(t, err)
	require.EqualValues(t, 2, p.Generation)
	log, _ = open()
	require.Equal(t, "probe", how(log), "a changed policy is probed again")
	require.Equal(t, 6, made())

	// A policy made again.
	require.NoError(t, cs.NetworkingV1().NetworkPolicies(ns).Delete(t.Context(), k8s.DenyAllPolicy, metav1.DeleteOptions{}))
	log, _ = open()
	require.Equal(t, "probe", how(log), "a policy made again is probed again")
	require.Equal(t, 9, made())
}
