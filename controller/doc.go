// Package controller replays tapes. In executor mode (Replay) it plays the model, serving
// the recorded responses with their recorded latency scaled by a speed, and drives
// tapebox-exec in a sandbox through one executor session to run every tool call; spawning
// calls play their child thread. It learns which new identifier stands for which recorded
// one (Identifiers) and substitutes them in the calls it sends from then on, and writes a
// replay tape after every step. Compare diffs a replay against its recording.
//
// The controller declares what it needs of a sandbox (Sandbox); package sandbox provides
// local and Docker implementations.
package controller
