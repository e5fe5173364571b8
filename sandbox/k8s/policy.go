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
	"k8s.io/apimachinery/pkg/types"
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

// The probe's verdict is kept, once its pods ran (a probe whose pods could not start, an
// image that cannot be pulled say, is tried again), for the deny-all policy it was taken
// under: its UID and generation (a policy changed or made again is probed again), with the
// image and node of the probe.
//
//   - In the process: probed, per namespace; probeMu makes concurrent Opens probe once.
//   - Across processes: the annotation ProbeAnnotation on the policy itself, for
//     probeTTL. Whoever may write it may change the policy anyway, so it trusts no one new;
//     a verdict past its time, or of another generation, image or node, is probed again.
var (
	probeMu sync.Mutex
	probed  = map[string]probeResult{}
)

// ProbeAnnotation is the annotation on the deny-all NetworkPolicy that keeps the probe's
// last verdict (JSON: probeRecord) for the Opens of other processes.
const ProbeAnnotation = "org.tapebox.probe"

// probeTTL is how long a verdict kept on the policy stands for other processes: a cluster's
// network plugin may change without the policy changing.
const probeTTL = time.Hour

type probeResult struct {
	verdict probeVerdict
	detail  string
	ran     bool // the probe's pods ran: the verdict stands for this process
	// policy is the deny-all policy's UID and generation it was taken under.
	policy string
	// cached says where a verdict not probed now came from ("" when probed now).
	cached string
}

type probeVerdict int

const (
	probeEnforced probeVerdict = iota
	probeNotEnforced
	probeUnknown
)

var verdictNames = map[probeVerdict]string{probeEnforced: "enforced", probeNotEnforced: "not-enforced", probeUnknown: "unknown"}

// probeRecord is ProbeAnnotation's value.
type probeRecord struct {
	Verdict    string    `json:"verdict"`
	Detail     string    `json:"detail"`
	Generation int64     `json:"generation"`
	Image      string    `json:"image"`
	Node       string    `json:"node,omitempty"`
	At         time.Time `json:"at"`
}

// policyVersion identifies a policy's spec: its UID and generation.
func policyVersion(p *networkingv1.NetworkPolicy) string {
	return fmt.Sprintf("%s/%d", p.UID, p.Generation)
}

// recorded returns the verdict ProbeAnnotation keeps on p for ks, when it stands now.
func recorded(p *networkingv1.NetworkPolicy, ks k8sSpec, now time.Time) (probeResult, bool) {
	raw, ok := p.Annotations[ProbeAnnotation]
	if !ok {
		return probeResult{}, false
	}
	var rec probeRecord
	if err := json.Unmarshal([]byte(raw), &rec); err != nil || rec.Generation != p.Generation || rec.Image != ks.image || rec.Node != ks.node {
		return probeResult{}, false
	}
	if age := now.Sub(rec.At); age < 0 || age > probeTTL {
		return probeResult{}, false
	}
	for v, name := range verdictNames {
		if name == rec.Verdict {
			return probeResult{verdict: v, detail: rec.Detail, ran: true, policy: policyVersion(p),
				cached: "kept on the policy since " + rec.At.UTC().Format(time.RFC3339)}, true
		}
	}
	return probeResult{}, false
}

// keep writes pr on the policy p for other processes (a merge patch of the annotation, which
// leaves the generation as it is). It fails quietly: without it, the next process probes.
func keep(ctx context.Context, cs *kubernetes.Clientset, p *networkingv1.NetworkPolicy, ks k8sSpec, pr probeResult, logf func(string, ...any)) {
	rec, _ := json.Marshal(probeRecord{Verdict: verdictNames[pr.verdict], Detail: pr.detail, Generation: p.Generation, Image: ks.image, Node: ks.node, At: time.Now().UTC().Truncate(time.Second)})
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{ProbeAnnotation: string(rec)}}})
	if _, err := cs.NetworkingV1().NetworkPolicies(p.Namespace).Patch(ctx, p.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		logf("k8s namespace %s: the probe's verdict is not kept on %s (%v): the next process probes again", p.Namespace, p.Name, err)
	}
}

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
	policy, err := cs.NetworkingV1().NetworkPolicies(ns).Create(ctx, want, metav1.CreateOptions{})
	switch {
	case apierrors.IsAlreadyExists(err):
		got, gerr := cs.NetworkingV1().NetworkPolicies(ns).Get(ctx, DenyAllPolicy, metav1.GetOptions{})
		if gerr != nil {
			return refuse("read the existing NetworkPolicy %s: %v", DenyAllPolicy, gerr)
		}
		if d := policyDiffers(got, want); d != "" {
			return refuse("the NetworkPolicy %s exists and is not TapeBox's deny-all: %s", DenyAllPolicy, d)
		}
		policy = got
	case err != nil:
		return refuse("create the deny-all NetworkPolicy %s: %v", DenyAllPolicy, err)
	}
	pr := probeFor(ctx, cs, ks, policy, logf)
	probe := "probe"
	if pr.cached != "" {
		probe = "probe " + pr.cached
	}
	switch pr.verdict {
	case probeEnforced:
		logf("k8s namespace %s: the cluster enforces NetworkPolicies (%s: %s)", ns, probe, pr.detail)
	case probeNotEnforced:
		return refuse("the cluster does not enforce NetworkPolicies (%s: %s)", probe, pr.detail)
	default:
		warnf("warning: k8s namespace %s: could not tell whether the cluster enforces NetworkPolicies (%s: %s)", ns, probe, pr.detail)
	}
	return nil
}

// probeFor returns the probe's verdict for ks under policy: this process's, the one kept
// on the policy, or a new probe's (then kept in both places).
func probeFor(ctx context.Context, cs *kubernetes.Clientset, ks k8sSpec, policy *networkingv1.NetworkPolicy, logf func(string, ...any)) probeResult {
	probeMu.Lock()
	defer probeMu.Unlock()
	key := ks.namespace + "\x00" + ks.image + "\x00" + ks.node
	version := policyVersion(policy)
	if pr, ok := probed[key]; ok && pr.policy == version {
		if pr.cached == "" {
			pr.cached = "taken earlier by this process"
		}
		return pr
	}
	if pr, ok := recorded(policy, ks, time.Now()); ok {
		probed[key] = pr
		return pr
	}
	pr := probe(ctx, cs, ks)
	pr.policy = version
	if pr.ran {
		probed[key] = pr
		keep(ctx, cs, policy, ks, pr, logf)
	}
	return pr
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
		return probeResult{verdict: probeUnknown, detail: fmt.Sprintf("a pod without a network label could not connect to another pod either (%s): this pod network connects no pods, or the image has neither perl nor nc", exitOf(control)), ran: true}
	}
	none, err := waitPod(ctx, cs, ks.namespace, base+"-none", done)
	if err != nil {
		return probeResult{verdict: probeUnknown, detail: fmt.Sprintf("the probe pod: %v", err)}
	}
	if none.Status.Phase == corev1.PodSucceeded {
		return probeResult{verdict: probeNotEnforced, detail: fmt.Sprintf("a pod labeled %s=none connected to pod %s on port %s, despite %s", NetworkLabel, listener.Status.PodIP, probePort, DenyAllPolicy), ran: true}
	}
	return probeResult{verdict: probeEnforced, detail: fmt.Sprintf("a pod labeled %s=none could not connect to pod %s on port %s, one without the label could", NetworkLabel, listener.Status.PodIP, probePort), ran: true}
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
