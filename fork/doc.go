// Package fork runs an agent from step N of a recording onto a live model: the steps
// before the fork point are served from the tape (controller's simulator), the harness
// running their tool calls for real in a restored workspace, and from step N on the calls
// go to the upstream and are recorded (gateway's recorder), with the model and the system
// prompt optionally overridden. The result is one complete tape whose meta.forked_from
// says which steps came from the recording.
package fork
