package unsupported

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/tapebox/tapebox/tape"
)

// CodexMultiAgentV2 names Codex's multi_agent_v2 sub-agents ([features] multi_agent_v2 = true).
const CodexMultiAgentV2 = "Codex multi_agent_v2 sub-agents"

// Label is the meta.labels key the gateway sets on a tape whose recording showed an
// unsupported feature; its value names the feature, the thread and the request item.
const Label = "tapebox.unsupported"

// Docs is where the refusal is explained.
const Docs = "docs/codex-subagents.md"

// Why is what replaying a multi_agent_v2 tape would get wrong.
const Why = "a warm-forked child's first request answers its parent's spawn_agent call, so it would be attributed to the parent's thread, and agent_message items (the children's tasks and final answers) and the mailbox timing between threads are not modelled"

// Finding is one request item that shows an unsupported feature.
type Finding struct {
	// Feature is what it shows (CodexMultiAgentV2).
	Feature string
	// Pointer is the JSON pointer of the item in the request body (/tools/5, /input/11).
	Pointer string
	// Item says what stands there.
	Item string
}

// String is "FEATURE: POINTER is ITEM".
func (f *Finding) String() string { return f.Feature + ": request " + f.Pointer + " is " + f.Item }

// Request looks for an unsupported feature in a request body: a Responses tool of type
// "namespace" named "collaboration" (offered to a v2 root), or an input item of type
// "agent_message" (a v2 child's task, or a child's final answer to its parent). It returns
// nil when it finds none, also for a body that is not JSON or not a Responses request.
func Request(raw []byte) *Finding {
	// Almost every body has neither word: skip the decoding.
	hasNS, hasMsg := bytes.Contains(raw, []byte(`"collaboration"`)), bytes.Contains(raw, []byte(`"agent_message"`))
	if !hasNS && !hasMsg {
		return nil
	}
	var body struct {
		Tools []json.RawMessage `json:"tools"`
		Input json.RawMessage   `json:"input"`
	}
	if json.Unmarshal(raw, &body) != nil {
		return nil
	}
	type item struct {
		Type string `json:"type"`
		Name string `json:"name"`
	}
	if hasNS {
		for i, t := range body.Tools {
			var it item
			if json.Unmarshal(t, &it) == nil && it.Type == "namespace" && it.Name == "collaboration" {
				return &Finding{CodexMultiAgentV2, fmt.Sprintf("/tools/%d", i), `the tool namespace "collaboration"`}
			}
		}
	}
	if hasMsg {
		var input []json.RawMessage // a string input (a bare prompt) has no items
		if json.Unmarshal(body.Input, &input) == nil {
			for i, in := range input {
				var it item
				if json.Unmarshal(in, &it) == nil && it.Type == "agent_message" {
					return &Finding{CodexMultiAgentV2, fmt.Sprintf("/input/%d", i), `an input item of type "agent_message"`}
				}
			}
		}
	}
	return nil
}

// Error is a tape that shows an unsupported feature.
type Error struct {
	// Thread and Step name the step whose request shows it; Step is -1 when only the
	// tape's Label does (the request was not recorded whole).
	Thread string
	Step   int
	// Finding is what the request shows; for a Label, its value is in Item.
	Finding Finding
}

// Error names the place, the feature, why it is refused and where the docs say more.
func (e *Error) Error() string {
	where := fmt.Sprintf("thread %q step %d: %s", e.Thread, e.Step, e.Finding.String())
	if e.Step < 0 {
		where = fmt.Sprintf("meta.labels %s: %s", Label, e.Finding.Item)
	}
	return fmt.Sprintf("%s: the tape records %s, which TapeBox records but does not replay or fork: %s (see %s)", where, e.Finding.Feature, Why, Docs)
}

// Check returns an *Error for the first step (threads in tape order) whose request shows an
// unsupported feature, or for the tape's Label when no step does; nil for a tape without.
func Check(t *tape.Tape) error {
	for _, th := range t.Threads {
		for si, s := range th.Steps {
			if f := Request(s.Request.Raw); f != nil {
				return &Error{Thread: th.ID, Step: si, Finding: *f}
			}
		}
	}
	if v, ok := t.Meta.Labels[Label]; ok {
		return &Error{Step: -1, Finding: Finding{Feature: CodexMultiAgentV2, Item: fmt.Sprintf("%q", v)}}
	}
	return nil
}
