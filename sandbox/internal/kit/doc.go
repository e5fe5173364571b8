// Package kit holds what the sandbox backends (sandbox/local, sandbox/docker, sandbox/k8s)
// share and the sandbox package's users do not see: the owner labels that tell a killed
// run's leftovers, bounded buffers for a command's output, the environment list, user and
// owner parsing.
package kit
