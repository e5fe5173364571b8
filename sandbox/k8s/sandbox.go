package k8s

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/url"
	"os"
	"path"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/httpstream"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/remotecommand"
	utilexec "k8s.io/client-go/util/exec"
	"k8s.io/klog/v2"

	"github.com/tapebox/tapebox/sandbox"
	"github.com/tapebox/tapebox/sandbox/internal/kit"
	"github.com/tapebox/tapebox/workspace"
)

// NetworkLabel marks the pods without a network (the default); the NetworkPolicy
// DenyAllPolicy selects them.
const NetworkLabel = "org.tapebox.network"

// DenyAllPolicy is the NetworkPolicy Open creates in the namespace, when missing, that
// denies all ingress and egress to the pods labeled NetworkLabel=none.
const DenyAllPolicy = "tapebox-deny-all"

// k8sContainer is the name of the pod's one container.
const k8sContainer = "sandbox"

// k8sExecutorDir is where the executor is copied in a pod: an emptyDir volume, writable by
// the pod's user whatever the image.
const k8sExecutorDir = "/opt/tapebox"

// DefaultEphemeralStorage is a pod's ephemeral-storage limit when the spec does not say
// (storage=).
const DefaultEphemeralStorage = "8Gi"

// k8sReadyTimeout bounds the wait for a pod to run when the spec does not say
// (ready-timeout=).
const k8sReadyTimeout = 2 * time.Minute

// k8sSpec is a parsed "k8s:[CONTEXT/]NAMESPACE?image=IMG&cpu=..&memory=..&pull=..&ready-timeout=..&node=..".
type k8sSpec struct {
	context, namespace, image string
	cpu, memory, node         string
	storage                   string // ephemeral-storage limit (default DefaultEphemeralStorage)
	allowUnenforced           bool   // allow-network-unenforced=1
	pull                      corev1.PullPolicy
	readyTimeout              time.Duration
}

func parseK8sSpec(spec sandbox.Spec) (k8sSpec, error) {
	target, query, _ := strings.Cut(spec.Target, "?")
	ks := k8sSpec{namespace: target, pull: corev1.PullIfNotPresent, readyTimeout: k8sReadyTimeout}
	if c, ns, ok := strings.Cut(target, "/"); ok {
		ks.context, ks.namespace = c, ns
	}
	bad := func(format string, args ...any) (k8sSpec, error) {
		return k8sSpec{}, fmt.Errorf("%w %q: %s; want k8s:[CONTEXT/]NAMESPACE?image=IMAGE[&cpu=1&memory=2Gi&storage=8Gi&pull=IfNotPresent&ready-timeout=2m&node=NAME&allow-network-unenforced=1]",
			sandbox.ErrBadSpec, spec.String(), fmt.Sprintf(format, args...))
	}
	if errs := validation.IsDNS1123Label(ks.namespace); len(errs) > 0 {
		return bad("namespace %q: %s", ks.namespace, strings.Join(errs, "; "))
	}
	q, err := url.ParseQuery(query)
	if err != nil {
		return bad("%v", err)
	}
	for k, vs := range q {
		v := vs[len(vs)-1]
		switch k {
		case "image":
			ks.image = v
		case "cpu":
			if _, err := resource.ParseQuantity(v); err != nil {
				return bad("cpu=%s: %v", v, err)
			}
			ks.cpu = v
		case "memory":
			if _, err := resource.ParseQuantity(v); err != nil {
				return bad("memory=%s: %v", v, err)
			}
			ks.memory = v
		case "pull":
			switch p := corev1.PullPolicy(v); p {
			case corev1.PullAlways, corev1.PullNever, corev1.PullIfNotPresent:
				ks.pull = p
			default:
				return bad("pull=%s: want Always, IfNotPresent or Never", v)
			}
		case "node":
			if errs := validation.IsDNS1123Subdomain(v); len(errs) > 0 {
				return bad("node=%s: %s", v, strings.Join(errs, "; "))
			}
			ks.node = v
		case "storage":
			if _, err := resource.ParseQuantity(v); err != nil {
				return bad("storage=%s: %v", v, err)
			}
			ks.storage = v
		case "allow-network-unenforced":
			b, err := strconv.ParseBool(v)
			if err != nil {
				return bad("allow-network-unenforced=%s: want 1 or 0", v)
			}
			ks.allowUnenforced = b
		case "ready-timeout":
			d, err := time.ParseDuration(v)
			if err != nil || d <= 0 {
				return bad("ready-timeout=%s: want a duration such as 90s", v)
			}
			ks.readyTimeout = d
		default:
			return bad("unknown parameter %q (known: image, cpu, memory, storage, pull, ready-timeout, node, allow-network-unenforced)", k)
		}
	}
	if ks.image == "" {
		return bad("no image (?image=IMAGE)")
	}
	return ks, nil
}

// Config loads the client configuration as kubectl does: KUBECONFIG, else
// ~/.kube/config, else the in-cluster service account; context "" is the current one.
func Config(kubeContext string) (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: kubeContext})
	cfg, err := cc.ClientConfig()
	if clientcmd.IsEmptyConfig(err) && kubeContext == "" {
		if in, ierr := rest.InClusterConfig(); ierr == nil {
			return in, nil
		}
		return nil, fmt.Errorf("no Kubernetes configuration: set KUBECONFIG, write ~/.kube/config, or run in a cluster")
	}
	if err != nil {
		return nil, fmt.Errorf("load the Kubernetes configuration: %w", err)
	}
	return cfg, nil
}

// Backend runs a sandbox's commands in a pod it creates, through the API server's exec
// subresource (WebSocket, else SPDY). See the package doc.
type Backend struct {
	spec    sandbox.Spec
	ks      k8sSpec
	cfg     *rest.Config
	cs      *kubernetes.Clientset
	name    string
	podCwd  string
	user    string
	env     []corev1.EnvVar
	logf    func(string, ...any)
	deleted sync.Once
	delErr  error
}

var _ sandbox.Backend = (*Backend)(nil)

func init() { sandbox.Register(sandbox.SchemeK8s, Open) }

// Open creates a pod for "k8s:[CONTEXT/]NAMESPACE?image=IMAGE" and waits for it to run: see
// the package doc. sandbox.Open calls it for the k8s scheme.
func Open(ctx context.Context, spec sandbox.Spec, opts sandbox.Options) (_ *sandbox.Sandbox, err error) {
	ks, err := parseK8sSpec(spec)
	if err != nil {
		return nil, err
	}
	if opts.Cwd != "" && !path.IsAbs(opts.Cwd) {
		return nil, fmt.Errorf("open sandbox %s: %w: Cwd %q must be an absolute path in the pod", spec, sandbox.ErrOption, opts.Cwd)
	}
	cwd := path.Clean("/" + opts.Cwd)
	if opts.ReadOnlyRoot && cwd == "/" {
		return nil, fmt.Errorf("open sandbox %s: %w: ReadOnlyRoot needs a Cwd other than / (it becomes a writable volume)", spec, sandbox.ErrOption)
	}
	uid, gid, err := k8sUser(opts.User)
	if err != nil {
		return nil, fmt.Errorf("open sandbox %s: %w", spec, err)
	}
	quietKlog()
	cfg, err := Config(ks.context)
	if err != nil {
		return nil, fmt.Errorf("open sandbox %s: %w", spec, err)
	}
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = 100, 200
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("open sandbox %s: %w", spec, err)
	}
	logf, warnf := kit.Logf(opts.Logf), kit.Warnf(opts.Warnf, opts.Logf)
	for _, w := range opts.Warnings() {
		warnf("warning: %s", w)
	}
	if opts.PidsLimit > 0 {
		warnf("warning: sandbox %s: a pod has no process limit of its own (the kubelet's podPidsLimit applies, see below): --pids-limit is ignored", spec)
	}
	b := &Backend{spec: spec, ks: ks, cfg: cfg, cs: cs, name: "tapebox-" + kit.RandomHex(6), logf: logf, podCwd: cwd,
		user: strconv.FormatInt(uid, 10) + ":" + strconv.FormatInt(gid, 10)}
	for _, k := range slices.Sorted(maps.Keys(opts.Env)) {
		b.env = append(b.env, corev1.EnvVar{Name: k, Value: opts.Env[k]})
	}
	reapK8sLeftovers(ctx, cs, ks.namespace, logf)
	network := cmp.Or(opts.Network, "none")
	if network == "none" {
		if err := checkNoNetwork(ctx, cs, ks, opts.AllowNetworkUnenforced || ks.allowUnenforced, logf, warnf); err != nil {
			return nil, fmt.Errorf("open sandbox %s: %w", spec, err)
		}
	}
	pod := b.podSpec(opts, cwd, uid, gid, network)
	if _, err := cs.CoreV1().Pods(ks.namespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		return nil, b.apiErr("create pod "+b.name, err)
	}
	defer func() {
		if err != nil {
			dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
			defer cancel()
			_ = b.deletePod(dctx)
		}
	}()
	logf("sandbox %s: created pod %s/%s", spec, ks.namespace, b.name)
	node, err := b.waitRunning(ctx)
	if err != nil {
		return nil, err
	}
	if n, ok := nodePidsLimit(ctx, cs, node); !ok {
		logf("sandbox %s: could not read node %s's podPidsLimit (its kubelet's /configz): the pod's process limit is unknown", spec, node)
	} else if n > 0 {
		logf("sandbox %s: node %s limits the pod to %d processes (kubelet podPidsLimit)", spec, node, n)
	} else {
		warnf("warning: sandbox %s: node %s sets no podPidsLimit: the pod has no process limit, and a fork bomb reaches the node", spec, node)
	}
	info := sandbox.Info{Cwd: cwd, Arch: b.nodeArch(ctx, node)}
	info.Executor = cmp.Or(opts.SandboxExecutor, "tapebox-exec")
	if opts.InstallExecutor {
		exe := opts.ExecutorPath
		if exe == "" {
			if exe, err = sandbox.ExecutorPath(ctx, info.Arch); err != nil {
				return nil, fmt.Errorf("open sandbox %s: %w", spec, err)
			}
		}
		if err := b.installExecutor(ctx, exe); err != nil {
			return nil, err
		}
		info.Executor = k8sExecutorDir + "/" + sandbox.ExecutorName
	}
	return sandbox.New(spec, b, info), nil
}

// k8sUser reads Options.User for a pod: numeric "UID[:GID]" (the default DefaultUser), or
// root; a pod's securityContext has no user names.
func k8sUser(user string) (uid, gid int64, err error) {
	u, g, hasG := strings.Cut(cmp.Or(user, sandbox.DefaultUser), ":")
	if u == "root" {
		u = "0"
	}
	if uid, err = strconv.ParseInt(u, 10, 32); err != nil || uid < 0 {
		return 0, 0, fmt.Errorf("%w: user %q: a pod runs as a numeric UID[:GID] (or 0, root)", sandbox.ErrOption, user)
	}
	gid = uid
	if hasG {
		if gid, err = strconv.ParseInt(g, 10, 32); err != nil || gid < 0 {
			return 0, 0, fmt.Errorf("%w: user %q: the group must be a numeric GID", sandbox.ErrOption, user)
		}
	}
	return uid, gid, nil
}

func (b *Backend) podSpec(opts sandbox.Options, cwd string, uid, gid int64, network string) *corev1.Pod {
	labels := map[string]string{sandbox.Label: "1"}
	annotations := map[string]string{}
	if me, ok := kit.Self(); ok {
		annotations[sandbox.OwnerLabel] = me.String()
	}
	for k, v := range opts.Labels {
		if k == sandbox.Label || k == sandbox.OwnerLabel || k == NetworkLabel {
			continue
		}
		// What a label cannot hold goes into an annotation.
		if len(validation.IsQualifiedName(k)) == 0 && len(validation.IsValidLabelValue(v)) == 0 {
			labels[k] = v
		} else {
			annotations[k] = v
		}
	}
	if network == "none" {
		labels[NetworkLabel] = "none"
	}
	f, t := false, true
	root := uid == 0
	sc := &corev1.SecurityContext{
		AllowPrivilegeEscalation: &f,
		Privileged:               &f,
		ReadOnlyRootFilesystem:   &opts.ReadOnlyRoot,
		RunAsNonRoot:             &t,
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
	}
	if root {
		sc.RunAsNonRoot = &f
	}
	for _, c := range opts.CapAdd {
		sc.Capabilities.Add = append(sc.Capabilities.Add, corev1.Capability(strings.TrimPrefix(strings.ToUpper(c), "CAP_")))
	}
	res := corev1.ResourceRequirements{Limits: corev1.ResourceList{}, Requests: corev1.ResourceList{}}
	setLimit(res, corev1.ResourceCPU, resource.NewMilliQuantity(int64(kit.Limit(opts.CPUs, sandbox.DefaultCPUs)*1000), resource.DecimalSI), b.ks.cpu, opts.CPUs >= 0, "100m")
	setLimit(res, corev1.ResourceMemory, resource.NewQuantity(kit.Limit(opts.Memory, sandbox.DefaultMemory), resource.BinarySI), b.ks.memory, opts.Memory >= 0, "128Mi")
	// Disk: the writable layer, the emptyDirs on disk and the logs; past it the kubelet
	// evicts the pod.
	storage := resource.MustParse(DefaultEphemeralStorage)
	setLimit(res, corev1.ResourceEphemeralStorage, &storage, b.ks.storage, true, "64Mi")
	volumes := []corev1.Volume{{Name: "tapebox", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
	mounts := []corev1.VolumeMount{{Name: "tapebox", MountPath: k8sExecutorDir}}
	// A missing working directory would be made root's by the runtime; a volume there
	// is writable by the pod's user (the start snapshot is restored into it).
	if cwd != "/" && (!root || opts.ReadOnlyRoot) {
		volumes = append(volumes, corev1.Volume{Name: "work", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
		mounts = append(mounts, corev1.VolumeMount{Name: "work", MountPath: cwd})
	}
	if opts.ReadOnlyRoot && cwd != "/tmp" {
		volumes = append(volumes, corev1.Volume{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory}}})
		mounts = append(mounts, corev1.VolumeMount{Name: "tmp", MountPath: "/tmp"})
	}
	var grace int64 = 0
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: b.name, Namespace: b.ks.namespace, Labels: labels, Annotations: annotations},
		Spec: corev1.PodSpec{
			RestartPolicy:                 corev1.RestartPolicyNever,
			AutomountServiceAccountToken:  &f,
			EnableServiceLinks:            &f,
			TerminationGracePeriodSeconds: &grace,
			HostNetwork:                   network == "host",
			// The pod's first process (the pause container's) is then PID 1 of the pod and
			// reaps the orphans of the tape's commands; sleep, which keeps the pod alive,
			// reaps nothing.
			ShareProcessNamespace: &t,
			SecurityContext: &corev1.PodSecurityContext{
				RunAsUser: &uid, RunAsGroup: &gid, FSGroup: &gid,
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
			},
			Volumes: volumes,
			Containers: []corev1.Container{{
				Name:            k8sContainer,
				Image:           b.ks.image,
				ImagePullPolicy: b.ks.pull,
				// Keeps the pod alive for execs; the image needs sleep (coreutils or busybox).
				Command:         []string{"sleep", "infinity"},
				WorkingDir:      cwd,
				Env:             b.env,
				Resources:       res,
				SecurityContext: sc,
				VolumeMounts:    mounts,
			}},
		},
	}
	if opts.Runtime != "" {
		pod.Spec.RuntimeClassName = &opts.Runtime
	}
	if b.ks.node != "" {
		// A node selector, not spec.nodeName: the scheduler still checks the pod fits.
		pod.Spec.NodeSelector = map[string]string{"kubernetes.io/hostname": b.ks.node}
	}
	return pod
}

// setLimit limits resource name of res to the spec's quantity when the spec gives one, else
// to def when limited; the request is the smaller of the limit and request. A small request
// lets a node's pods be bounded by their limits, not by their requests summed (a tape is
// mostly idle).
func setLimit(res corev1.ResourceRequirements, name corev1.ResourceName, def *resource.Quantity, spec string, limited bool, request string) {
	if spec != "" {
		q := resource.MustParse(spec)
		def, limited = &q, true
	}
	if limited {
		res.Limits[name] = *def
		res.Requests[name] = minQuantity(*def, resource.MustParse(request))
	}
}

func minQuantity(a, b resource.Quantity) resource.Quantity {
	if a.Cmp(b) < 0 {
		return a
	}
	return b
}

// waitRunning waits for the pod to run, failing at once on a condition that will not pass
// by itself (an image that cannot be pulled, a container that cannot be created) and after
// the ready timeout on any other, naming the pod's conditions either way.
func (b *Backend) waitRunning(ctx context.Context) (node string, err error) {
	ctx, cancel := context.WithTimeout(ctx, b.ks.readyTimeout)
	defer cancel()
	var last *corev1.Pod
	for delay := 5 * time.Millisecond; ; delay = min(2*delay, 100*time.Millisecond) {
		p, err := b.cs.CoreV1().Pods(b.ks.namespace).Get(ctx, b.name, metav1.GetOptions{})
		if err != nil && ctx.Err() == nil {
			return "", b.apiErr("wait for pod "+b.name, err)
		}
		if p != nil && err == nil {
			last = p
			switch p.Status.Phase {
			case corev1.PodRunning:
				return p.Spec.NodeName, nil
			case corev1.PodFailed, corev1.PodSucceeded:
				return "", fmt.Errorf("open sandbox %s: pod %s ended (%s) before it ran: %s", b.spec, b.name, p.Status.Phase, podState(p))
			}
			for _, cs := range p.Status.ContainerStatuses {
				if w := cs.State.Waiting; w != nil && fatalWaiting(w.Reason) {
					return "", fmt.Errorf("open sandbox %s: pod %s cannot start: %s: %s (image %s)", b.spec, b.name, w.Reason, w.Message, b.ks.image)
				}
			}
		}
		select {
		case <-ctx.Done():
			if errors.Is(context.Cause(ctx), context.DeadlineExceeded) && last != nil {
				return "", fmt.Errorf("open sandbox %s: pod %s not running after %v: %s", b.spec, b.name, b.ks.readyTimeout, podState(last))
			}
			return "", fmt.Errorf("open sandbox %s: wait for pod %s: %w", b.spec, b.name, ctx.Err())
		case <-time.After(delay):
		}
	}
}

// fatalWaiting names the waiting reasons that do not pass by waiting.
func fatalWaiting(reason string) bool {
	switch reason {
	case "ErrImagePull", "ImagePullBackOff", "ErrImageNeverPull", "InvalidImageName", "CreateContainerConfigError",
		"CreateContainerError", "RunContainerError", "CrashLoopBackOff":
		return true
	}
	return false
}

// podState describes a pod's phase, its conditions that are not true and its container's
// waiting state, for an error.
func podState(p *corev1.Pod) string {
	parts := []string{"phase " + string(p.Status.Phase)}
	for _, c := range p.Status.Conditions {
		if c.Status != corev1.ConditionTrue {
			s := fmt.Sprintf("condition %s=%s", c.Type, c.Status)
			if c.Reason != "" {
				s += " (" + c.Reason
				if c.Message != "" {
					s += ": " + c.Message
				}
				s += ")"
			}
			parts = append(parts, s)
		}
	}
	for _, cs := range p.Status.ContainerStatuses {
		if w := cs.State.Waiting; w != nil {
			parts = append(parts, fmt.Sprintf("container %s waiting: %s %s", cs.Name, w.Reason, w.Message))
		}
	}
	return strings.Join(parts, "; ")
}

// nodeArch is the architecture of the pod's node, in Go's spelling.
func (b *Backend) nodeArch(ctx context.Context, node string) string {
	if node != "" {
		if n, err := b.cs.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{}); err == nil {
			if a := n.Labels["kubernetes.io/arch"]; a != "" {
				return a
			}
			if a := n.Status.NodeInfo.Architecture; a != "" {
				return a
			}
		}
	}
	return runtime.GOARCH
}

func (b *Backend) installExecutor(ctx context.Context, exe string) error {
	f, err := os.Open(exe)
	if err != nil {
		return fmt.Errorf("open sandbox %s: install the executor: %w", b.spec, err)
	}
	defer f.Close()
	dest := k8sExecutorDir + "/" + sandbox.ExecutorName
	res, err := b.run(ctx, []string{"sh", "-c", `cat > "$1" && chmod 755 "$1"`, "sh", dest}, f)
	if err != nil {
		return fmt.Errorf("open sandbox %s: install the executor (the image needs sh and cat): %w", b.spec, err)
	}
	if res.ExitCode != 0 {
		return fmt.Errorf("open sandbox %s: install the executor into %s: exit status %d: %s", b.spec, dest, res.ExitCode, strings.TrimSpace(string(res.Stderr)))
	}
	b.logf("sandbox %s: executor copied into pod %s at %s", b.spec, b.name, dest)
	return nil
}

// executor builds the exec stream's executor: WebSocket, falling back to SPDY where the
// API server or a proxy cannot upgrade to it.
func (b *Backend) executor(argv []string, stdin, stderr bool) (remotecommand.Executor, error) {
	req := b.cs.CoreV1().RESTClient().Post().Resource("pods").Namespace(b.ks.namespace).Name(b.name).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{Container: k8sContainer, Command: argv, Stdin: stdin, Stdout: true, Stderr: stderr}, scheme.ParameterCodec)
	ws, err := remotecommand.NewWebSocketExecutor(b.cfg, "GET", req.URL().String())
	if err != nil {
		return nil, err
	}
	spdy, err := remotecommand.NewSPDYExecutor(b.cfg, "POST", req.URL())
	if err != nil {
		return nil, err
	}
	return remotecommand.NewFallbackExecutor(ws, spdy, func(err error) bool {
		return httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err)
	})
}

// Start runs argv in the pod's container through the API server's exec subresource, its
// stdio streamed as the Session's.
func (b *Backend) Start(ctx context.Context, argv []string) (*sandbox.Session, error) {
	what := "start " + argv[0]
	ex, err := b.executor(argv, true, true)
	if err != nil {
		return nil, fmt.Errorf("%s in %s: %w", what, b.spec, err)
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	s := sandbox.NewSession(inW, outR)
	go func() {
		// Stderr must have a writer: with PodExecOptions.Stderr and none, the SPDY stream hangs.
		err := ex.StreamWithContext(sctx, remotecommand.StreamOptions{Stdin: inR, Stdout: outW, Stderr: s.StderrSink()})
		err = b.streamErr(argv[0], s.Stderr(), err, sctx)
		outW.CloseWithError(io.EOF)
		inR.Close()
		s.Finish(err)
	}()
	s.SetStop(func() error {
		_ = inW.Close()
		t := time.NewTimer(sandbox.SessionGrace)
		defer t.Stop()
		exited := true
		select {
		case <-s.Done():
		case <-t.C:
			exited = false
		}
		cancel()
		err := s.Wait()
		if !exited {
			return nil
		}
		return sandbox.CloseResult(err)
	})
	return s, nil
}

// streamErr turns an exec stream's end into a session's: nil for status 0, an *ExitError
// for another, the cause for a broken stream.
func (b *Backend) streamErr(command, stderr string, err error, sctx context.Context) error {
	if err == nil {
		return nil
	}
	var ce utilexec.CodeExitError
	if errors.As(err, &ce) {
		return sandbox.NewExitError(command, ce.Code, stderr)
	}
	if sctx.Err() != nil {
		return sandbox.ErrSessionClosed
	}
	return fmt.Errorf("exec %s in pod %s: %w", command, b.name, b.reachErr(err))
}

// StartExecutor starts the executor as Start does: the exec stream is the only transport.
func (b *Backend) StartExecutor(ctx context.Context, argv []string) (*sandbox.Session, error) {
	return b.Start(ctx, argv)
}

// Transport is "k8s-exec".
func (b *Backend) Transport() string { return "k8s-exec" }

// run is a one-shot exec with stdin (nil for none), output kept in memory.
func (b *Backend) run(ctx context.Context, argv []string, stdin io.Reader) (*sandbox.ExecResult, error) {
	ex, err := b.executor(argv, stdin != nil, true)
	if err != nil {
		return nil, err
	}
	var stdout, stderr bytes.Buffer
	err = ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdin: stdin, Stdout: &stdout, Stderr: &stderr})
	res := &sandbox.ExecResult{Stdout: stdout.Bytes(), Stderr: stderr.Bytes()}
	var ce utilexec.CodeExitError
	switch {
	case err == nil:
		return res, nil
	case errors.As(err, &ce):
		res.ExitCode = ce.Code
		return res, nil
	}
	return nil, b.reachErr(err)
}

// reachErr marks an API server that cannot be reached with ErrNoEngine.
func (b *Backend) reachErr(err error) error {
	// A *url.Error is a request that got no HTTP answer (an answer is an *errors.StatusError):
	// refused, reset, cut off mid-response, timed out.
	var ue *url.Error
	var oe *net.OpError
	if errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, io.ErrUnexpectedEOF) || errors.As(err, &ue) || errors.As(err, &oe) {
		return fmt.Errorf("%w: the Kubernetes API server %s: %v", sandbox.ErrNoEngine, b.cfg.Host, err)
	}
	return err
}

func (b *Backend) apiErr(op string, err error) error {
	if apierrors.IsNotFound(err) {
		return fmt.Errorf("%s in %s: %w: %v", op, b.spec, sandbox.ErrNotFound, err)
	}
	return fmt.Errorf("%s in %s: %w", op, b.spec, b.reachErr(err))
}

// Exec runs argv in the pod's container through the exec subresource and waits for its
// exit status.
func (b *Backend) Exec(ctx context.Context, argv []string) (*sandbox.ExecResult, error) {
	res, err := b.run(ctx, argv, nil)
	if err != nil {
		return nil, fmt.Errorf("exec %s in %s: %w", argv[0], b.spec, err)
	}
	if out := string(res.Stdout) + string(res.Stderr); (res.ExitCode == 126 || res.ExitCode == 127) && kit.IsOCIExecFailure(out) {
		return res, fmt.Errorf("exec %s in %s: %w", argv[0], b.spec, sandbox.NewExitError(argv[0], res.ExitCode, out))
	}
	return res, nil
}

func (b *Backend) abs(cwd, dir string) string {
	if path.IsAbs(dir) {
		return path.Clean(dir)
	}
	return path.Join(cwd, dir)
}

// tarFrom runs tar in the pod to archive dir as "<base of dir>/..." (as the Docker engine's
// archive names it), which the image must have.
func (b *Backend) tarFrom(ctx context.Context, dir, op string) (*bytes.Reader, error) {
	parent, base := path.Dir(dir), path.Base(dir)
	if dir == "/" {
		parent, base = "/", "."
	}
	res, err := b.run(ctx, []string{"tar", "-c", "-f", "-", "-C", parent, base}, nil)
	if err != nil {
		return nil, fmt.Errorf("%s in %s: %w", op, b.spec, err)
	}
	if res.ExitCode != 0 {
		msg := strings.TrimSpace(string(res.Stderr))
		if strings.Contains(msg, "No such file") || strings.Contains(msg, "Cannot") && strings.Contains(msg, base) {
			return nil, fmt.Errorf("%s in %s: %w: no such directory: %s", op, b.spec, sandbox.ErrNotFound, msg)
		}
		return nil, fmt.Errorf("%s in %s: tar exited with status %d (the image needs tar): %s", op, b.spec, res.ExitCode, msg)
	}
	return bytes.NewReader(res.Stdout), nil
}

// tarInto extracts an archive into dir (made first) with tar in the pod.
func (b *Backend) tarInto(ctx context.Context, dir string, archive io.Reader, op string) error {
	res, err := b.run(ctx, []string{"sh", "-c", `mkdir -p "$1" && exec tar -x -f - -C "$1"`, "sh", dir}, archive)
	if err != nil {
		return fmt.Errorf("%s in %s: %w", op, b.spec, err)
	}
	if res.ExitCode != 0 {
		return fmt.Errorf("%s in %s: tar exited with status %d (the image needs sh and tar): %s", op, b.spec, res.ExitCode, strings.TrimSpace(string(res.Stderr)))
	}
	return nil
}

// Snapshot reads the tree under dir as a tar stream from the pod (tar run by exec).
func (b *Backend) Snapshot(ctx context.Context, dir string) (map[string]sandbox.File, error) {
	abs := b.abs(b.podCwd, dir)
	r, err := b.tarFrom(ctx, abs, "snapshot "+abs)
	if err != nil {
		return nil, err
	}
	files, err := sandbox.ReadTar(r)
	if err != nil {
		return nil, fmt.Errorf("snapshot %s in %s: %w", abs, b.spec, err)
	}
	return files, nil
}

// WriteFiles writes files under dir as a tar stream into the pod, owned by its user.
func (b *Backend) WriteFiles(ctx context.Context, dir string, files map[string]sandbox.File) error {
	abs := b.abs(b.podCwd, dir)
	owner, _ := kit.OwnerOf(b.user)
	var buf bytes.Buffer
	if err := sandbox.WriteTar(&buf, files, owner); err != nil {
		return fmt.Errorf("write files to %s in %s: %w", abs, b.spec, err)
	}
	return b.tarInto(ctx, abs, &buf, "write files to "+abs)
}

// RestoreWorkspace streams the snapshot into the pod's working directory, owned by its user.
func (b *Backend) RestoreWorkspace(ctx context.Context, snapshot *os.File, info workspace.Info) error {
	rc, _, err := kit.WorkspaceTar(snapshot, info, b.user)
	if err != nil {
		return fmt.Errorf("restore workspace in %s: %w", b.spec, err)
	}
	defer rc.Close()
	return b.tarInto(ctx, b.podCwd, rc, "restore workspace "+snapshot.Name()+" into "+b.podCwd)
}

// WorkspaceManifest reads the working directory's manifest from a tar stream of it,
// bounded as a directory the tape's commands wrote is (workspace.Options.Untrusted).
func (b *Backend) WorkspaceManifest(ctx context.Context, opts workspace.Options) (workspace.Manifest, error) {
	opts.Untrusted = true
	r, err := b.tarFrom(ctx, b.podCwd, "workspace manifest of "+b.podCwd)
	if err != nil {
		return nil, err
	}
	m, err := workspace.ManifestTar(r, path.Base(b.podCwd), opts)
	if err != nil {
		return nil, fmt.Errorf("workspace manifest of %s in %s: %w", b.podCwd, b.spec, err)
	}
	return m, nil
}

func (b *Backend) deletePod(ctx context.Context) error {
	b.deleted.Do(func() {
		var zero int64
		err := b.cs.CoreV1().Pods(b.ks.namespace).Delete(ctx, b.name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
		if err != nil && !apierrors.IsNotFound(err) {
			b.delErr = b.apiErr("delete pod "+b.name, err)
			return
		}
		// Gone means gone: wait until the API server no longer has it.
		for delay := 10 * time.Millisecond; ; delay = min(2*delay, 200*time.Millisecond) {
			_, err := b.cs.CoreV1().Pods(b.ks.namespace).Get(ctx, b.name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				b.logf("sandbox %s: deleted pod %s/%s", b.spec, b.ks.namespace, b.name)
				return
			}
			select {
			case <-ctx.Done():
				b.delErr = fmt.Errorf("delete pod %s in %s: still there: %w", b.name, b.spec, ctx.Err())
				return
			case <-time.After(delay):
			}
		}
	})
	return b.delErr
}

// Close deletes the pod, which ends its sessions.
func (b *Backend) Close(ctx context.Context, open []*sandbox.Session) error {
	err := b.deletePod(ctx)
	sandbox.CloseSessions(open)
	return err
}

// reapK8sLeftovers deletes the pods in the namespace that replays which are gone left
// behind (labeled Label, annotated OwnerLabel), as reapLeftovers does for containers.
func reapK8sLeftovers(ctx context.Context, cs *kubernetes.Clientset, ns string, logf func(string, ...any)) {
	if _, ok := kit.Self(); !ok {
		return
	}
	list, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: sandbox.Label + "=1"})
	if err != nil {
		logf("look for pods left by killed replays in %s: %v", ns, err)
		return
	}
	var zero int64
	for _, p := range list.Items {
		o, ok := kit.ParseOwner(p.Annotations[sandbox.OwnerLabel])
		if !ok || !o.Gone() || p.DeletionTimestamp != nil {
			continue
		}
		if err := cs.CoreV1().Pods(ns).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil && !apierrors.IsNotFound(err) {
			logf("delete pod %s/%s, left by a replay that is gone (pid %d): %v", ns, p.Name, o.PID, err)
			continue
		}
		logf("deleted pod %s/%s, left by a replay that is gone (pid %d)", ns, p.Name, o.PID)
	}
}

// quietKlog stops client-go's klog lines (a stream's stdin copier that ends with the
// session, say) from reaching stderr: errors come back as errors.
var quietKlog = sync.OnceFunc(func() { klog.SetLogger(logr.Discard()) })
