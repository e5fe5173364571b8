// Package k8s is the tools module that builds the single-node Kubernetes cluster of the
// tests (scripts/k8s-node.sh): kube-apiserver, kubelet, kube-scheduler and
// kube-controller-manager from k8s.io/kubernetes through the module proxy, and the pause
// program of its pods. It holds no code of TapeBox's.
package k8s
