// Package fork runs an agent from step N of a recording onto a live model. The model
// endpoint is package gateway's in fork mode (gateway.Fork, wrapped by Server with the
// Overrides): the steps before the fork point are served from the tape, the harness running
// their tool calls for real in the restored workspace (on this machine, or in a fresh
// container with Options.Sandbox), and from step N on the calls go to the upstream and are
// recorded, with the model and the system prompt optionally overridden. The result is one
// complete tape whose meta.forked_from says which steps came from the recording: the served
// steps enter the fork tape at the fork point, through the live side's recorder (package
// gateway's doc says how, and what it costs).
//
// Run does the whole fork: it checks the fork point (Check), restores the start snapshot,
// serves the fork, runs the harness command against it, runs an optional verify command in
// the final workspace and finishes the fork tape (Result). On this machine the harness works
// in a directory HostWorkdir picks and CheckWorkdir accepts: never the tape's meta.cwd
// unless the user names it, never a system or home directory (ErrUnsafeWorkdir).
//
// Compare sets a fork beside its recording: the common prefix, where the timelines part, and
// each side's steps, tokens, cost and end state.
package fork
