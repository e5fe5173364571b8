// Package replay is the replay use case: play a tape, in executor mode, in a fresh sandbox
// named by a spec. Run finds and checks the tape's start snapshot, opens the sandbox with the
// one set of defaults every caller shares (where the tool calls run, which sandboxes get the
// executor installed), plays the tape with controller.Replay, which restores the snapshot and
// reads the end manifest, compares the replay with its recording when asked, and closes the
// sandbox.
//
//	res, err := replay.Run(ctx, rec, "docker-image:tapebox/sandbox:bookworm",
//		replay.Options{TapePath: "run.json", Compare: true})
//
// Open and Play split Run in two for callers that make sandboxes ready ahead of their
// replays (a corpus's warm pool) or keep one open after it (testkit's end-state checks).
//
// SandboxOptions is that one rule (Cwd, the working directory: --cwd, else the tape's
// meta.cwd, else a fresh DefaultCwd; the executor installed in the sandboxes a replay
// creates, docker-image: and k8s:).
//
// The command line (tapebox replay, bench, demo, replay --corpus), testkit (Replay, Run,
// Bench) and package corpus all replay through Run or Open. Package fork, which runs the
// real harness against the model endpoint rather than the player, takes its container's
// working directory from Cwd. The package links no sandbox backend: the program imports the
// ones it wants (sandbox/all).
package replay
