// Package controller replays tapes in executor mode: Replay plays the model, serving the
// recorded responses with their recorded latency scaled by a speed, and drives tapebox-exec
// in a sandbox (local:, docker:, docker-image: or k8s:; package sandbox opens them) through
// one executor session to run every tool call; spawning calls play their child thread. The
// start snapshot is restored first (SnapshotFor finds it beside the tape, RestoreSnapshot
// puts it into a directory on this machine) and the end manifest read last. It learns which
// new identifier stands for which recorded one (package match) and substitutes them in the
// calls it sends, and writes a replay tape after every step.
//
// Simulator mode (a real harness against the recorded responses) is package gateway's
// model endpoint with a tape upstream; the verdict on a replay is package compare's, and
// the replay use case (snapshot, sandbox defaults, player, verdict) is package replay's.
package controller
