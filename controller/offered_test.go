package controller

import (
	"testing"

	"github.com/tapebox/tapebox/tape"
)

// TestOffered: a call is of a tool the request offered when the request's tool list names
// it, when the list is empty (nothing known), or when the call is of a deferred namespace's
// tool, which the harness loads outside the list (Codex's multi_agent_v1 wait_agent); any
// other call is not offered, and its harness's refusal is what a replay answers.
func TestOffered(t *testing.T) {
	st := &tape.Step{Request: tape.Request{Tools: []tape.Tool{{Name: "exec_command"}, {Name: "apply_patch"}}}}
	for _, tc := range []struct {
		step *tape.Step
		call tape.ToolCall
		want bool
	}{
		{st, tape.ToolCall{Name: "exec_command"}, true},
		{st, tape.ToolCall{Name: "shell"}, false},
		{st, tape.ToolCall{Name: "wait_agent", Namespace: "multi_agent_v1"}, true},
		{st, tape.ToolCall{Name: "wait_agent"}, false},
		{&tape.Step{}, tape.ToolCall{Name: "Glob"}, true},
	} {
		if got := offered(tc.step, tc.call); got != tc.want {
			t.Errorf("offered(%v, %s/%s) = %v, want %v", len(tc.step.Request.Tools), tc.call.Namespace, tc.call.Name, got, tc.want)
		}
	}
}
