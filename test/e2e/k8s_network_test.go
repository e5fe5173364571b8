package e2e

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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

// TestK8sRefusesUnenforcedNetwork: the cluster of scripts/k8s-node.sh enforces no
// NetworkPolicy, and a sandbox without a network refuses to run there: its probe finds a
// pod under the deny-all policy reaching another pod. In a namespace whose policy of that
// name lets egress through, it refuses before any probe. --allow-network-unenforced runs
// anyway, with a warning. On main all three opened a pod, saying nothing.
func TestK8sRefusesUnenforcedNetwork(t *testing.T) {
	cs := needK8s(t)
	spec := "k8s:" + k8sNamespace + "?image=" + dockertest.SandboxImage
	var log lines
	_, err := sandbox.Open(t.Context(), spec, sandbox.Options{Logf: log.add, Warnf: log.add})
	require.ErrorIs(t, err, k8s.ErrNetworkUnenforced)
	require.ErrorContains(t, err, "does not enforce NetworkPolicies")
	require.ErrorContains(t, err, "connected to pod")
	require.ErrorContains(t, err, "--allow-network-unenforced")

	ns := "tapebox-np-" + strings.ToLower(fmt.Sprint(time.Now().UnixNano()%1e6))
	_, err = cs.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = cs.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{})
	})
	// A pod needs the namespace's default service account, which the controller makes.
	for start := time.Now(); ; time.Sleep(200 * time.Millisecond) {
		if _, err := cs.CoreV1().ServiceAccounts(ns).Get(t.Context(), "default", metav1.GetOptions{}); err == nil {
			break
		}
		require.Less(t, time.Since(start), time.Minute, "no default service account in %s", ns)
	}
	open := &networkingv1.NetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: k8s.DenyAllPolicy, Namespace: ns},
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{k8s.NetworkLabel: "none"}},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress},
			Egress:      []networkingv1.NetworkPolicyEgressRule{{}}, // everything
		},
	}
	_, err = cs.NetworkingV1().NetworkPolicies(ns).Create(t.Context(), open, metav1.CreateOptions{})
	require.NoError(t, err)
	spec = "k8s:" + ns + "?image=" + dockertest.SandboxImage
	_, err = sandbox.Open(t.Context(), spec, sandbox.Options{Logf: log.add, Warnf: log.add})
	require.ErrorIs(t, err, k8s.ErrNetworkUnenforced)
	require.ErrorContains(t, err, "is not TapeBox's deny-all: it allows 1 egress rule(s)")

	var allowed lines
	sb, err := sandbox.Open(t.Context(), spec, sandbox.Options{Logf: allowed.add, Warnf: allowed.add, AllowNetworkUnenforced: true})
	require.NoError(t, err)
	require.NoError(t, sb.Close(t.Context()))
	require.Contains(t, allowed.String(), "warning: k8s namespace "+ns+": the NetworkPolicy tapebox-deny-all exists and is not TapeBox's deny-all")
	noPodsLeft(t, cs)
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
