// Package k8s is the sandbox backend for "k8s:[CONTEXT/]NAMESPACE?image=IMAGE": a fresh pod on
// a Kubernetes cluster through client-go, deleted by Close. Importing it registers the
// scheme with package sandbox; it is the only package that links client-go.
//
//	import _ "github.com/tapebox/tapebox/sandbox/k8s"
//
//	sb, err := sandbox.Open(ctx, "k8s:default?image=tapebox/sandbox:bookworm",
//		sandbox.Options{Cwd: "/app", InstallExecutor: true})
//
// # The spec
//
// CONTEXT is a kubeconfig context (default: the current one; the configuration is found as
// kubectl finds it: KUBECONFIG, ~/.kube/config, else in-cluster, see Config). The query may
// add cpu=, memory= and storage= (quantities: the pod's limits; storage is its
// ephemeral-storage, default DefaultEphemeralStorage), pull= (Always, IfNotPresent, Never),
// node= (pin the pod to a node), ready-timeout= (how long Open waits for the pod to run,
// default 2m) and allow-network-unenforced=1 (as Options.AllowNetworkUnenforced).
//
// # The pod
//
// The pod gets limits, a numeric user other than root unless Options.User says otherwise,
// every capability dropped, no privilege escalation, no service account token and no
// network (Options.Network gives it one). It shares one process namespace across its
// containers, so that the pod's first process (the pause container's, which reaps what it
// inherits) is PID 1 and reaps the orphans of the tape's commands: the container's own
// process, sleep, reaps nothing. A pod has no process limit of its own: the node's kubelet
// podPidsLimit applies, which Open reads (nodes/proxy configz) and names, with a warning when
// there is none; Options.PidsLimit is ignored with a warning.
//
// # No network
//
// A pod without a network is labeled NetworkLabel=none, and the namespace's NetworkPolicy
// DenyAllPolicy denies such pods all ingress and egress. Open creates it; when it cannot
// (no RBAC for networkpolicies, no such namespace), or when a policy of that name exists and
// is not TapeBox's deny-all (another selector, a rule that lets traffic through), Open
// refuses. A policy is only as good as the network plugin, and many (the bridge plugin of
// scripts/k8s-node.sh, flannel) ignore policies: the first Open in a namespace runs a probe
// of three small pods of the sandbox's image (it needs perl or busybox nc): a listener, a
// client without the label that must reach it, and one labeled none that must not. Open
// says what it found, and refuses when a labeled pod got through. Where the probe cannot
// tell (the image lacks both, pods cannot reach each other at all), it warns. The verdict is
// kept for the policy it was taken under (UID and generation): in the process, and on the
// policy itself (ProbeAnnotation) for an hour, so that other processes' Opens (each
// tapebox replay) skip the probe's 12 s; a policy changed or made again is probed again.
// Each refusal wraps ErrNetworkUnenforced; Options.AllowNetworkUnenforced
// (--allow-network-unenforced) runs anyway, with a warning.
//
// The executor is copied into an emptyDir at /opt/tapebox; a session is one exec stream
// through the API server (WebSocket, SPDY as the fallback), and Snapshot, WriteFiles and the
// workspace go through tar in the pod (the image needs sh and tar). The pods carry
// sandbox.Label and the sandbox.OwnerLabel annotation: Open deletes those of replays that
// are gone. An API server that cannot be reached is an error wrapping sandbox.ErrNoEngine.
package k8s
