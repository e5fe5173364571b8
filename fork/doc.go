// Package fork runs an agent from step N of a recording onto a live model: the steps
// before the fork point are served from the tape (controller's simulator), the harness
// running their tool calls for real in the restored workspace (on this machine, or in a
// fresh container with Options.Sandbox), and from step N on the calls go to the upstream
// and are recorded (gateway's recorder), with the model and the system prompt optionally
// overridden. The result is one complete tape whose meta.forked_from says which steps came
// from the recording. Compare sets a fork beside its recording: the common prefix, where the
// timelines part, and each side's steps, tokens, cost and end state.
package fork
