package k8s

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/tapebox/tapebox/sandbox"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func TestParseK8sSpec(t *testing.T) {
	for _, tt := range []struct {
		spec string
		want k8sSpec
		err  string
	}{
		{spec: "k8s:default?image=tapebox/sandbox:bookworm", want: k8sSpec{namespace: "default", image: "tapebox/sandbox:bookworm", pull: corev1.PullIfNotPresent, readyTimeout: k8sReadyTimeout}},
		{spec: "k8s:kind-ci/runs?image=busybox&cpu=500m&memory=256Mi&pull=Never&ready-timeout=30s",
			want: k8sSpec{context: "kind-ci", namespace: "runs", image: "busybox", cpu: "500m", memory: "256Mi", pull: corev1.PullNever, readyTimeout: 30 * time.Second}},
		{spec: "k8s:default", err: "no image"},
		{spec: "k8s:Bad_NS?image=x", err: `namespace "Bad_NS"`},
		{spec: "k8s:default?image=x&cpu=lots", err: "cpu=lots"},
		{spec: "k8s:default?image=x&pull=Sometimes", err: "pull=Sometimes"},
		{spec: "k8s:default?image=x&ready-timeout=-1s", err: "ready-timeout=-1s"},
		{spec: "k8s:default?image=x&gpu=1", err: `unknown parameter "gpu"`},
		{spec: "k8s:default?image=x&node=127.0.0.1", want: k8sSpec{namespace: "default", image: "x", node: "127.0.0.1", pull: corev1.PullIfNotPresent, readyTimeout: k8sReadyTimeout}},
		{spec: "k8s:default?image=x&node=Bad_Node", err: "node=Bad_Node"},
		{spec: "k8s:default?image=x&storage=2Gi&allow-network-unenforced=1", want: k8sSpec{namespace: "default", image: "x", storage: "2Gi", allowUnenforced: true, pull: corev1.PullIfNotPresent, readyTimeout: k8sReadyTimeout}},
		{spec: "k8s:default?image=x&storage=lots", err: "storage=lots"},
		{spec: "k8s:default?image=x&allow-network-unenforced=maybe", err: "allow-network-unenforced=maybe"},
	} {
		t.Run(tt.spec, func(t *testing.T) {
			s, err := sandbox.ParseSpec(tt.spec)
			require.NoError(t, err)
			got, err := parseK8sSpec(s)
			if tt.err != "" {
				require.ErrorContains(t, err, tt.err)
				require.True(t, errors.Is(err, sandbox.ErrBadSpec))
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

func TestK8sUser(t *testing.T) {
	for _, tt := range []struct {
		user     string
		uid, gid int64
		err      bool
	}{{"", 65534, 65534, false}, {"0", 0, 0, false}, {"root", 0, 0, false}, {"1000:50", 1000, 50, false}, {"1000", 1000, 1000, false},
		{"nobody", 0, 0, true}, {"1000:staff", 0, 0, true}} {
		uid, gid, err := k8sUser(tt.user)
		if tt.err {
			require.ErrorIs(t, err, sandbox.ErrOption, tt.user)
			continue
		}
		require.NoError(t, err, tt.user)
		require.Equal(t, [2]int64{tt.uid, tt.gid}, [2]int64{uid, gid}, tt.user)
	}
}

// TestK8sPodSpec checks the pod a sandbox asks for: hardened by default, limits, labels
// that fit (the rest as annotations), no token, no network, volumes where they are needed.
func TestK8sPodSpec(t *testing.T) {
	s, _ := sandbox.ParseSpec("k8s:default?image=img&memory=1Gi")
	ks, err := parseK8sSpec(s)
	require.NoError(t, err)
	b := &Backend{spec: s, ks: ks, name: "tapebox-x"}
	pod := b.podSpec(sandbox.Options{Labels: map[string]string{"org.tapebox.corpus.tape": "a.json", "bad/label/key": "x", "k": "has spaces"}}, "/work", 65534, 65534, "none")
	c := pod.Spec.Containers[0]
	require.False(t, *pod.Spec.AutomountServiceAccountToken)
	require.False(t, *c.SecurityContext.AllowPrivilegeEscalation)
	require.True(t, *c.SecurityContext.RunAsNonRoot)
	require.Equal(t, []corev1.Capability{"ALL"}, c.SecurityContext.Capabilities.Drop)
	require.Equal(t, int64(65534), *pod.Spec.SecurityContext.RunAsUser)
	require.Equal(t, "1Gi", c.Resources.Limits.Memory().String())
	require.Equal(t, "1", c.Resources.Limits.Cpu().String())
	require.Equal(t, "100m", c.Resources.Requests.Cpu().String())
	require.Equal(t, "none", pod.Labels[NetworkLabel])
	require.True(t, *pod.Spec.ShareProcessNamespace, "the pause process is PID 1 and reaps orphans")
	require.Equal(t, DefaultEphemeralStorage, c.Resources.Limits.StorageEphemeral().String())
	require.Equal(t, "1", pod.Labels[sandbox.Label])
	require.Equal(t, "a.json", pod.Labels["org.tapebox.corpus.tape"])
	require.Equal(t, "x", pod.Annotations["bad/label/key"])
	require.Equal(t, "has spaces", pod.Annotations["k"])
	require.Equal(t, "/work", c.WorkingDir)
	var mounts []string
	for _, m := range c.VolumeMounts {
		mounts = append(mounts, m.MountPath)
	}
	require.Equal(t, []string{k8sExecutorDir, "/work"}, mounts)

	root := b.podSpec(sandbox.Options{CapAdd: []string{"cap_net_raw"}, Network: "bridge", Memory: -1, CPUs: -1}, "/work", 0, 0, "bridge")
	rc := root.Spec.Containers[0]
	require.False(t, *rc.SecurityContext.RunAsNonRoot)
	require.Equal(t, []corev1.Capability{"NET_RAW"}, rc.SecurityContext.Capabilities.Add)
	require.NotContains(t, root.Labels, NetworkLabel)
	require.Len(t, rc.VolumeMounts, 1, "root gets the image's own working directory")
	require.Equal(t, "1Gi", rc.Resources.Limits.Memory().String(), "the spec's memory= wins over no limit")
	_, hasCPU := rc.Resources.Limits[corev1.ResourceCPU]
	require.False(t, hasCPU, "CPUs < 0: no CPU limit")

	s, _ = sandbox.ParseSpec("k8s:default?image=img&storage=1Gi")
	ks, err = parseK8sSpec(s)
	require.NoError(t, err)
	b = &Backend{spec: s, ks: ks, name: "tapebox-y"}
	sc := b.podSpec(sandbox.Options{}, "/work", 65534, 65534, "none").Spec.Containers[0]
	require.Equal(t, "1Gi", sc.Resources.Limits.StorageEphemeral().String(), "storage= sets the limit")
	require.Equal(t, "64Mi", sc.Resources.Requests.StorageEphemeral().String())
}

func TestPodStateAndFatalWaiting(t *testing.T) {
	require.True(t, fatalWaiting("ImagePullBackOff"))
	require.False(t, fatalWaiting("ContainerCreating"))
	p := &corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{
		{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "Unschedulable", Message: "0/1 nodes are available"},
		{Type: corev1.PodInitialized, Status: corev1.ConditionTrue}}}}
	require.Equal(t, "phase Pending; condition PodScheduled=False (Unschedulable: 0/1 nodes are available)", podState(p))
}

// TestPolicyDiffers: TapeBox's own deny-all is accepted; every way a policy of the same name
// can let traffic through, or select other pods, is named.
func TestPolicyDiffers(t *testing.T) {
	want := denyAll("ns")
	require.Empty(t, policyDiffers(denyAll("ns"), want))
	reordered := denyAll("ns")
	reordered.Spec.PolicyTypes = []networkingv1.PolicyType{networkingv1.PolicyTypeEgress, networkingv1.PolicyTypeIngress}
	reordered.Labels = nil // labels and annotations are not the policy
	require.Empty(t, policyDiffers(reordered, want))

	port := intstr.FromInt32(53)
	for _, tt := range []struct {
		name   string
		change func(*networkingv1.NetworkPolicy)
		says   string
	}{
		{"egress allowed", func(p *networkingv1.NetworkPolicy) {
			p.Spec.Egress = []networkingv1.NetworkPolicyEgressRule{{}}
		}, "1 egress rule"},
		{"DNS allowed", func(p *networkingv1.NetworkPolicy) {
			p.Spec.Egress = []networkingv1.NetworkPolicyEgressRule{{Ports: []networkingv1.NetworkPolicyPort{{Port: &port}}}}
		}, "1 egress rule"},
		{"ingress allowed", func(p *networkingv1.NetworkPolicy) {
			p.Spec.Ingress = []networkingv1.NetworkPolicyIngressRule{{}, {}}
		}, "2 ingress rule"},
		{"ingress only", func(p *networkingv1.NetworkPolicy) {
			p.Spec.PolicyTypes = []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}
		}, "policy types"},
		{"no types", func(p *networkingv1.NetworkPolicy) { p.Spec.PolicyTypes = nil }, "policy types"},
		{"other pods", func(p *networkingv1.NetworkPolicy) {
			p.Spec.PodSelector.MatchLabels = map[string]string{NetworkLabel: "other"}
		}, "selects"},
		{"every pod", func(p *networkingv1.NetworkPolicy) { p.Spec.PodSelector = metav1.LabelSelector{} }, "selects"},
		{"an expression more", func(p *networkingv1.NetworkPolicy) {
			p.Spec.PodSelector.MatchExpressions = []metav1.LabelSelectorRequirement{{Key: "a", Operator: metav1.LabelSelectorOpExists}}
		}, "selects"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := denyAll("ns")
			tt.change(got)
			require.Contains(t, policyDiffers(got, want), tt.says)
		})
	}
}

// TestRecordedVerdict: a verdict kept on the policy stands only for the generation, image
// and node it was taken with, and within probeTTL; anything else, or garbage, is probed
// again.
func TestRecordedVerdict(t *testing.T) {
	now := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	ks := k8sSpec{namespace: "ns", image: "img:1", node: "n1"}
	with := func(rec string, gen int64) *networkingv1.NetworkPolicy {
		p := denyAll("ns")
		p.UID, p.Generation = "u1", gen
		if rec != "" {
			p.Annotations = map[string]string{ProbeAnnotation: rec}
		}
		return p
	}
	good := `{"verdict":"not-enforced","detail":"d","generation":3,"image":"img:1","node":"n1","at":"2026-12-07T11:30:00Z"}`
	pr, ok := recorded(with(good, 3), ks, now)
	require.True(t, ok)
	require.Equal(t, probeNotEnforced, pr.verdict)
	require.Equal(t, "d", pr.detail)
	require.Equal(t, "u1/3", pr.policy)
	require.Contains(t, pr.cached, "2026-12-07T11:30:00Z")
	for name, p := range map[string]*networkingv1.NetworkPolicy{
		"none":            with("", 3),
		"generation":      with(good, 4),
		"garbage":         with("{", 3),
		"verdict unknown": with(`{"verdict":"maybe","generation":3,"image":"img:1","node":"n1","at":"2026-12-07T11:30:00Z"}`, 3),
		"image":           with(`{"verdict":"enforced","generation":3,"image":"img:2","node":"n1","at":"2026-12-07T11:30:00Z"}`, 3),
		"node":            with(`{"verdict":"enforced","generation":3,"image":"img:1","at":"2026-12-07T11:30:00Z"}`, 3),
		"expired":         with(`{"verdict":"enforced","generation":3,"image":"img:1","node":"n1","at":"2026-12-07T10:59:00Z"}`, 3),
		"future":          with(`{"verdict":"enforced","generation":3,"image":"img:1","node":"n1","at":"2026-12-07T12:01:00Z"}`, 3),
	} {
		_, ok := recorded(p, ks, now)
		require.False(t, ok, name)
	}
}
