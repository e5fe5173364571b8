// Package controller replays tapes, in two modes.
//
// In executor mode (Replay) it plays the model, serving the recorded responses with their
// recorded latency scaled by a speed, and drives tapebox-exec in a sandbox (local:,
// docker:, docker-image: or k8s:; package sandbox opens them) through one executor
// session to run every tool call; spawning calls play their child thread. The start
// snapshot is restored first and the end manifest read last. It learns which new
// identifier stands for which recorded one (package match) and substitutes them in the
// calls it sends, and writes a replay tape after every step.
//
// In simulator mode (Simulator) it serves the recorded responses on the providers' own
// paths to a real harness, checks each request against the recording (a divergence gets an
// error in the provider's shape), substitutes learned identifiers in the streams, and
// records each run's replay tape.
//
// The verdict on a replay is package compare's.
package controller
