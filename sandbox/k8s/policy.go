package k8s

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/tapebox/tapebox/sandbox"
	"github.com/tapebox/tapebox/sandbox/internal/kit"
)

// ErrNetworkUnenforced is wrapped by Open's error when a pod's "no network" cannot be
// relied on: the deny-all NetworkPolicy cannot be created or differs from TapeBox's, or the
// cluster does not enforce NetworkPolicies (the probe). --allow-network-unenforced
// (Options.AllowNetworkUnenforced, allow-network-unenforced=1 in the spec) runs anyway.
var ErrNetworkUnenforced = errors.New("no network cannot be enforced")

// denyAll is TapeBox's NetworkPolicy for namespace ns: every pod labeled NetworkLabel=none
// gets no ingress and no egress.
func denyAll(ns string) *networkingv1.NetworkPolicy {
	return &networkingv1.NetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: DenyAllPolicy, Namespace: ns, Labels: map[string]string{sandbox.Label: "1"}},
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{NetworkLabel: "none"}},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress},
		},
	}
}

// policyDiffers says how an existing policy's spec differs from want's, or "" when it
// denies the same pods everything: the same selector, both directions, no rule.
func policyDiffers(got, want *networkingv1.NetworkPolicy) string {
	var d []string
	g, w := got.Spec, want.Spec
	if !maps.Equal(g.PodSelector.MatchLabels, w.PodSelector.MatchLabels) || len(g.PodSelector.MatchExpressions) > 0 {
		d = append(d, fmt.Sprintf("it selects %s, not %s=none", metav1.FormatLabelSelector(&g.PodSelector), NetworkLabel))
	}
	types := slices.Clone(g.PolicyTypes)
	slices.Sort(types)
	if !slices.Equal(types, []networkingv1.PolicyType{networkingv1.PolicyTypeEgress, networkingv1.PolicyTypeIngress}) {
		d = append(d, fmt.Sprintf("its policy types are %v, not Ingress and Egress", g.PolicyTypes))
	}
	if len(g.Ingress) > 0 {
		d = append(d, fmt.Sprintf("it allows %d ingress rule(s)", len(g.Ingress)))
	}
	if len(g.Egress) > 0 {
		d = append(d, fmt.Sprintf("it allows %d egress rule(s)", len(g.Egress)))
	}
	return strings.Join(d, "; ")
}

// probed caches, per namespace, image and node, what the probe found once its pods ran, for
// the sandboxes this process opens after the first (a probe whose pods could not start, an
// image that cannot be pulled say, is tried again); probeMu makes concurrent Opens probe
// once.
var (
	probeMu sync.Mutex
	probed  = map[string]probeResult{}
)

type probeResult struct {
	verdict probeVerdict
	detail  string
	ran     bool // the probe's pods ran: the verdict stands for this process
}

type probeVerdict int

const (
	probeEnforced probeVerdict = iota
	probeNotEnforced
	probeUnknown
)

// checkNoNetwork makes sure the pods of ks's namespace without a network get none: the
// deny-all policy exists as TapeBox writes it, and the probe finds the cluster enforces
// NetworkPolicies. It says what it found (logf), and returns an error wrapping
// ErrNetworkUnenforced when either fails, unless allow (then it warns).
func checkNoNetwork(ctx context.Context, cs *kubernetes.Clientset, ks k8sSpec, allow bool, logf, warnf func(string, ...any)) error {
	ns := ks.namespace
	refuse := func(format string, args ...any) error {
		msg := fmt.Sprintf(format, args...)
		if allow {
			warnf("warning: k8s namespace %s: %s; running anyway (--allow-network-unenforced): the pod may have a network", ns, msg)
			return nil
		}
		return fmt.Errorf("%w: namespace %s: %s (--allow-network-unenforced runs anyway)", ErrNetworkUnenforced, ns, msg)
	}
	want := denyAll(ns)
	_, err := cs.NetworkingV1().NetworkPolicies(ns).Create(ctx, want, metav1.CreateOptions{})
	switch {
	case apierrors.IsAlreadyExists(err):
		got, gerr := cs.NetworkingV1().NetworkPolicies(ns).Get(ctx, DenyAllPolicy, metav1.GetOptions{})
		if gerr != nil {
			return refuse("read the existing NetworkPolicy %s: %v", DenyAllPolicy, gerr)
		}
		if d := policyDiffers(got, want); d != "" {
			return refuse("the NetworkPolicy %s exists and is not TapeBox's deny-all: %s", DenyAllPolicy, d)
		}
	case err != nil:
		return refuse("create the deny-all NetworkPolicy %s: %v", DenyAllPolicy, err)
	}
	probeMu.Lock()
	key := ns + "\x00" + ks.image + "\x00" + ks.node
	pr, ok := probed[key]
	if !ok {
		pr = probe(ctx, cs, ks)
		if pr.ran {
			probed[key] = pr
		}
	}
	probeMu.Unlock()
	switch pr.verdict {
	case probeEnforced:
		logf("k8s namespace %s: the cluster enforces NetworkPolicies (probe: %s)", ns, pr.detail)
	case probeNotEnforced:
		return refuse("the cluster does not enforce NetworkPolicies (probe: %s)", pr.detail)
	default:
		warnf("warning: k8s namespace %s: could not tell whether the cluster enforces NetworkPolicies (probe: %s)", ns, pr.detail)
	}
	return nil
}

// The probe's programs, for an image with perl (the sandbox image) or busybox's nc.
const (
	probePort  = "8080"
	probeServe = `if command -v perl >/dev/null 2>&1; then exec perl -MIO::Socket::INET -e '$s=IO::Socket::INET->new(LocalPort=>` + probePort + `,Listen=>16,ReuseAddr=>1) or die "listen: $!"; while(1){$c=$s->accept or next; print $c "ok\n"; close $c}'; fi
exec nc -ll -p ` + probePort + ` -e echo ok`
	// The client waits for the policy to apply to its pod before it tries.
	probeConnect = `sleep 3
if command -v perl >/dev/null 2>&1; then exec perl -MIO::Socket::INET -e 'IO::Socket::INET->new(PeerAddr=>$ARGV[0],PeerPort=>` + probePort + `,Timeout=>5) or exit 1; exit 0' "$TARGET"; fi
exec nc -w 5 "$TARGET" ` + probePort + ` </dev/null`
)

// probe checks that the cluster enforces NetworkPolicies with three pods of ks's image: a
// listener, a control client without a network label, which must reach it, and a client
// labeled NetworkLabel=none (under the deny-all policy), which must not.
func probe(ctx context.Context, cs *kubernetes.Clientset, ks k8sSpec) probeResult {
	ctx, cancel := context.WithTimeout(ctx, ks.readyTimeout)
	defer cancel()
	base := "tapebox-probe-" + kit.RandomHex(4)
	pods := cs.CoreV1().Pods(ks.namespace)
	var made []string
	defer func() {
		var zero int64
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		for _, name := range made {
			_ = pods.Delete(dctx, name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
		}
		// Gone means gone, as for a sandbox's pod: nothing of the probe is left to find.
		for _, name := range made {
			for {
				if _, err := pods.Get(dctx, name, metav1.GetOptions{}); err != nil {
					break
				}
				select {
				case <-dctx.Done():
					return
				case <-time.After(100 * time.Millisecond):
				}
			}
		}
	}()
	create := func(suffix, script string, labels map[string]string, env []corev1.EnvVar) error {
		p := probePod(ks, base+"-"+suffix, script, labels, env)
		if _, err := pods.Create(ctx, p, metav1.CreateOptions{}); err != nil {
			return err
		}
		made = append(made, p.Name)
		return nil
	}
	if err := create("listen", probeServe, nil, nil); err != nil {
		return probeResult{verdict: probeUnknown, detail: fmt.Sprintf("create the listener pod: %v", err)}
	}
	listener, err := waitPod(ctx, cs, ks.namespace, base+"-listen", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodRunning && p.Status.PodIP != "" })
	if err != nil {
		return probeResult{verdict: probeUnknown, detail: fmt.Sprintf("the listener pod: %v", err)}
	}
	env := []corev1.EnvVar{{Name: "TARGET", Value: listener.Status.PodIP}}
	if err := create("control", probeConnect, nil, env); err != nil {
		return probeResult{verdict: probeUnknown, detail: fmt.Sprintf("create the control pod: %v", err)}
	}
	if err := create("none", probeConnect, map[string]string{NetworkLabel: "none"}, env); err != nil {
		return probeResult{verdict: probeUnknown, detail: fmt.Sprintf("create the probe pod: %v", err)}
	}
	done := func(p *corev1.Pod) bool {
		return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
	}
	control, err := waitPod(ctx, cs, ks.namespace, base+"-control", done)
	if err != nil {
		return probeResult{verdict: probeUnknown, detail: fmt.Sprintf("the control pod: %v", err)}
	}
	if control.Status.Phase != corev1.PodSucceeded {
		return probeResult{probeUnknown, fmt.Sprintf("a pod without a network label could not connect to another pod either (%s): this pod network connects no pods, or the image has neither perl nor nc", exitOf(control)), true}
	}
	none, err := waitPod(ctx, cs, ks.namespace, base+"-none", done)
	if err != nil {
		return probeResult{verdict: probeUnknown, detail: fmt.Sprintf("the probe pod: %v", err)}
	}
	if none.Status.Phase == corev1.PodSucceeded {
		return probeResult{probeNotEnforced, fmt.Sprintf("a pod labeled %s=none connected to pod %s on port %s, despite %s", NetworkLabel, listener.Status.PodIP, probePort, DenyAllPolicy), true}
	}
	return probeResult{probeEnforced, fmt.Sprintf("a pod labeled %s=none could not connect to pod %s on port %s, one without the label could", NetworkLabel, listener.Status.PodIP, probePort), true}
}

// exitOf describes how a finished pod's container ended.
func exitOf(p *corev1.Pod) string {
	for _, c := range p.Status.ContainerStatuses {
		if t := c.State.Terminated; t != nil {
			return fmt.Sprintf("exit %d", t.ExitCode)
		}
	}
	return "phase " + string(p.Status.Phase)
}

// probePod is one of the probe's pods: ks's image running script in sh, hardened as a
// sandbox's pod, small.
func probePod(ks k8sSpec, name, script string, labels map[string]string, env []corev1.EnvVar) *corev1.Pod {
	f, t := false, true
	var uid, grace int64 = 65534, 0
	l := map[string]string{sandbox.Label: "1"}
	maps.Copy(l, labels)
	annotations := map[string]string{}
	if me, ok := kit.Self(); ok {
		annotations[sandbox.OwnerLabel] = me.String()
	}
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ks.namespace, Labels: l, Annotations: annotations},
		Spec: corev1.PodSpec{
			RestartPolicy:                 corev1.RestartPolicyNever,
			AutomountServiceAccountToken:  &f,
			EnableServiceLinks:            &f,
			TerminationGracePeriodSeconds: &grace,
			SecurityContext: &corev1.PodSecurityContext{RunAsUser: &uid, RunAsGroup: &uid,
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
			Containers: []corev1.Container{{
				Name: "probe", Image: ks.image, ImagePullPolicy: ks.pull,
				Command: []string{"sh", "-c", script}, Env: env,
				SecurityContext: &corev1.SecurityContext{AllowPrivilegeEscalation: &f, RunAsNonRoot: &t,
					Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}},
			}},
		},
	}
	if ks.node != "" {
		p.Spec.NodeSelector = map[string]string{"kubernetes.io/hostname": ks.node}
	}
	return p
}

// waitPod polls pod name until ok holds, or the pod cannot get there (its image cannot be
// pulled, it cannot be scheduled) or ctx ends.
func waitPod(ctx context.Context, cs *kubernetes.Clientset, ns, name string, ok func(*corev1.Pod) bool) (*corev1.Pod, error) {
	for delay := 50 * time.Millisecond; ; delay = min(2*delay, time.Second) {
		p, err := cs.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		if ok(p) {
			return p, nil
		}
		for _, c := range p.Status.ContainerStatuses {
			if w := c.State.Waiting; w != nil && fatalWaiting(w.Reason) {
				return nil, fmt.Errorf("%s: %s", w.Reason, w.Message)
			}
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("%s: %w", podState(p), ctx.Err())
		case <-time.After(delay):
		}
	}
}

// nodePidsLimit reads the podPidsLimit of node's kubelet through the API server
// (/api/v1/nodes/NODE/proxy/configz); ok is false when it cannot (no RBAC for nodes/proxy,
// a kubelet that does not answer). 0 or a negative value: no limit.
func nodePidsLimit(ctx context.Context, cs *kubernetes.Clientset, node string) (limit int64, ok bool) {
	if node == "" {
		return 0, false
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	raw, err := cs.CoreV1().RESTClient().Get().AbsPath("/api/v1/nodes", node, "proxy", "configz").DoRaw(ctx)
	if err != nil {
		return 0, false
	}
	var cz struct {
		KubeletConfig struct {
			PodPidsLimit *int64 `json:"podPidsLimit"`
		} `json:"kubeletconfig"`
	}
	if err := json.Unmarshal(raw, &cz); err != nil {
		return 0, false
	}
	if cz.KubeletConfig.PodPidsLimit == nil {
		return 0, true
	}
	return *cz.KubeletConfig.PodPidsLimit, true
}
