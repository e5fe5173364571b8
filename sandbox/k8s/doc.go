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
// add cpu= and memory= (quantities: the pod's limits), pull= (Always, IfNotPresent, Never),
// node= (pin the pod to a node) and ready-timeout= (how long Open waits for the pod to
// run, default 2m).
//
// # The pod
//
// The pod gets limits, a numeric user other than root unless Options.User says otherwise,
// every capability dropped, no privilege escalation, no service account token and no
// network: it is labeled NetworkLabel=none, and Open creates the namespace's NetworkPolicy
// DenyAllPolicy that denies such pods all ingress and egress, where missing (a cluster whose
// network plugin enforces policies then cuts them off). Options.Network gives a pod a network.
// A pod has no process limit of its own, so Options.PidsLimit is ignored with a warning.
//
// The executor is copied into an emptyDir at /opt/tapebox; a session is one exec stream
// through the API server (WebSocket, SPDY as the fallback), and Snapshot, WriteFiles and the
// workspace go through tar in the pod (the image needs sh and tar). The pods carry
// sandbox.Label and the sandbox.OwnerLabel annotation: Open deletes those of replays that
// are gone. An API server that cannot be reached is an error wrapping sandbox.ErrNoEngine.
package k8s
