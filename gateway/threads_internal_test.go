package gateway

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/tape"
)

// TestSpawnClaimedByLaterOpeningMessage: a Codex sub-agent's first request opens with its
// environment context and gives its task in a second user message; with two spawns
// pending, each child is still linked to the call that carried its task.
func TestSpawnClaimedByLaterOpeningMessage(t *testing.T) {
	g := &Gateway{matcher: matcher{spawning: SpawningTools}}
	text := func(role, s string) tape.Message {
		return tape.Message{Role: role, Content: []tape.Block{{Type: tape.BlockText, Text: s}}}
	}
	main, _ := g.attribute(&tape.Request{Messages: []tape.Message{text("user", "<environment_context>/app</environment_context>"), text("user", "Use two sub-agents.")}})
	require.Equal(t, "main", main.id)
	g.noteSpawns(main, &tape.Step{ToolCalls: []tape.ToolCall{
		{ID: "call_a", Name: "spawn_agent", Input: json.RawMessage(`{"message":"Task A: list the files"}`)},
		{ID: "call_b", Name: "spawn_agent", Input: json.RawMessage(`{"message":"Task B: count the lines"}`)},
	}})
	child := func(task string) *tape.Parent {
		th, continued := g.attribute(&tape.Request{Messages: []tape.Message{
			text("developer", "You are Codex."), text("user", "<environment_context>/app</environment_context>"), text("user", task),
		}})
		require.False(t, continued)
		return th.parent
	}
	require.Equal(t, &tape.Parent{ThreadID: "main", ToolCallID: "call_b"}, child("Task B: count the lines"))
	require.Equal(t, &tape.Parent{ThreadID: "main", ToolCallID: "call_a"}, child("Task A: list the files"))
}
