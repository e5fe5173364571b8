// Package unsupported finds, in a model call or a tape, a harness feature that TapeBox
// records but cannot replay: today Codex's multi_agent_v2 sub-agents (the "collaboration"
// tool namespace, agent_message input items), whose warm-forked children the gateway's
// thread matcher attributes to the wrong thread (see docs/codex-subagents.md).
//
// The gateway calls Request on each recorded request and marks the tape with the Label
// once; replay and fork call Check and refuse the tape with the *Error it returns.
//
//	if err := unsupported.Check(rec); err != nil {
//		return err // names the thread, the step and the request item
//	}
package unsupported
