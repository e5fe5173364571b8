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

// TestAnsweredCallOfTheSameConversation: two threads whose last steps made calls of the
// same id (a scripted model numbers them by turn, and answered a title request without
// tools with the agent's call): a request that answers that id continues the thread of its
// own conversation, whichever was opened first; with no thread of its conversation, the
// first thread that made the call.
func TestAnsweredCallOfTheSameConversation(t *testing.T) {
	text := func(role, s string) tape.Message {
		return tape.Message{Role: role, Content: []tape.Block{{Type: tape.BlockText, Text: s}}}
	}
	call := tape.ToolCall{ID: "toolu_fake_main_0_0", Name: "bash", Input: json.RawMessage(`{"command":"ls"}`)}
	title := &tape.Request{System: "You are a title generator.", Messages: []tape.Message{text("user", "Generate a title: [agent] do it")}}
	agent := &tape.Request{System: "You are opencode.", Tools: []tape.Tool{{Name: "bash"}}, Messages: []tape.Message{text("user", "[agent] do it")}}
	next := func(req *tape.Request) *tape.Request {
		r := *req
		r.Messages = append(append([]tape.Message(nil), req.Messages...),
			tape.Message{Role: "assistant", Content: []tape.Block{{Type: tape.BlockToolUse, ID: call.ID, Name: call.Name, Input: call.Input}}},
			tape.Message{Role: "user", Content: []tape.Block{{Type: tape.BlockToolResult, ToolCallID: call.ID, Content: []tape.Block{{Type: tape.BlockText, Text: "a\n"}}}}})
		return &r
	}
	for _, titleFirst := range []bool{true, false} {
		m := &matcher{spawning: SpawningTools}
		open := func(req *tape.Request) *thread {
			th, continued := m.attribute(req)
			require.False(t, continued)
			th.last, th.lastOK, th.turns = &tape.Step{ToolCalls: []tape.ToolCall{call}}, true, 1
			return th
		}
		var at *thread
		if titleFirst {
			open(title)
			at = open(agent)
		} else {
			at = open(agent)
			open(title)
		}
		th, continued := m.attribute(next(agent))
		require.True(t, continued)
		require.Same(t, at, th, "title first: %v", titleFirst)
		other := &tape.Request{System: "another", Messages: []tape.Message{text("user", "x")}}
		th, continued = m.attribute(next(other))
		require.True(t, continued)
		require.Same(t, m.threads[0], th, "title first: %v", titleFirst)
	}
}

// TestSideRequestLeavesSpawn: a side question that offers no tools and carries no spawn's
// prompt (Gemini CLI's loop check or edit correction, asked while a subagent starts) takes
// no pending spawning call; the subagent that comes after it gets its own, and an agent
// whose opening names no prompt still takes the oldest. Before, the side question took the
// oldest pending call and the subagent was left without its parent.
func TestSideRequestLeavesSpawn(t *testing.T) {
	text := func(role, s string) tape.Message {
		return tape.Message{Role: role, Content: []tape.Block{{Type: tape.BlockText, Text: s}}}
	}
	tools := []tape.Tool{{Name: "read_file"}, {Name: "complete_task"}}
	m := &matcher{spawning: SpawningTools}
	main, _ := m.attribute(&tape.Request{Tools: tools, Messages: []tape.Message{text("user", "Use two subagents.")}})
	require.Equal(t, "main", main.id)
	m.noteSpawns(main, &tape.Step{ToolCalls: []tape.ToolCall{
		{ID: "gemini-a-0", Name: "invoke_agent", Input: json.RawMessage(`{"agent_name":"generalist","prompt":"Write a.txt"}`)},
		{ID: "gemini-a-1", Name: "invoke_agent", Input: json.RawMessage(`{"agent_name":"generalist","prompt":"Write b.txt"}`)},
	}})
	open := func(req *tape.Request) *tape.Parent {
		th, continued := m.attribute(req)
		require.False(t, continued)
		return th.parent
	}
	// Subagent A has started, and asks its edit corrector a question.
	require.Equal(t, &tape.Parent{ThreadID: "main", ToolCallID: "gemini-a-0"}, open(&tape.Request{Tools: tools, Messages: []tape.Message{text("user", "Write a.txt")}}))
	require.Nil(t, open(&tape.Request{System: "You are an expert code-editing assistant.", Messages: []tape.Message{text("user", "Fix the search string.")}}))
	// Subagent B's opening does not hold its prompt (a template of another harness): the
	// one call left is its.
	require.Equal(t, &tape.Parent{ThreadID: "main", ToolCallID: "gemini-a-1"}, open(&tape.Request{Tools: tools, Messages: []tape.Message{text("user", "Your task: see above.")}}))
	require.Empty(t, m.spawns)
}

// TestRetryOrNewThread: a request that asks again for the turn its thread last had answered
// continues that thread (a retry), at every turn; a thread waiting for that turn wins over
// a retry; a first request sent again while a spawning call whose prompt it carries waits
// opens that child instead (two subagents given the same task).
func TestRetryOrNewThread(t *testing.T) {
	text := func(role, s string) tape.Message {
		return tape.Message{Role: role, Content: []tape.Block{{Type: tape.BlockText, Text: s}}}
	}
	req := func(task string, turns int) *tape.Request {
		r := &tape.Request{System: "sys", Tools: []tape.Tool{{Name: "Bash"}}, Messages: []tape.Message{text("user", task)}}
		for range turns {
			r.Messages = append(r.Messages, text("assistant", "ok"), text("user", "go on"))
		}
		return r
	}
	answer := func(th *thread, turns int) {
		th.last, th.lastOK = &tape.Step{}, true
		th.answered(turns)
	}

	m := &matcher{spawning: SpawningTools}
	main, continued := m.attribute(req("do it", 0))
	require.False(t, continued)
	answer(main, 0)
	for turn := range 4 {
		th, continued := m.attribute(req("do it", turn))
		require.True(t, continued, "turn %d asked again", turn)
		require.Same(t, main, th)
		answer(th, turn)
		require.Equal(t, turn+1, th.turns, "a retry moves nothing on")
		th, continued = m.attribute(req("do it", turn+1))
		require.True(t, continued)
		require.Same(t, main, th)
		answer(th, turn+1)
	}
	require.Len(t, m.threads, 1)
	main.answered(1)
	require.Equal(t, 5, main.turns, "a late answer to an earlier turn moves nothing back")

	// Two subagents with one task: the first answered its first call; the second one's
	// first call is its own thread, while a spawn with that task waits.
	m = &matcher{spawning: SpawningTools}
	main, _ = m.attribute(req("do it", 0))
	m.noteSpawns(main, &tape.Step{ToolCalls: []tape.ToolCall{
		{ID: "a", Name: "Agent", Input: json.RawMessage(`{"prompt":"count the lines"}`)},
		{ID: "b", Name: "Agent", Input: json.RawMessage(`{"prompt":"count the lines"}`)},
	}})
	first, continued := m.attribute(req("count the lines", 0))
	require.False(t, continued)
	require.Equal(t, &tape.Parent{ThreadID: "main", ToolCallID: "a"}, first.parent)
	answer(first, 0)
	second, continued := m.attribute(req("count the lines", 0))
	require.False(t, continued)
	require.NotSame(t, first, second)
	require.Equal(t, &tape.Parent{ThreadID: "main", ToolCallID: "b"}, second.parent)
	answer(second, 0)
	// The second one asks for its turn 1 while the first is there already: it continues
	// its own thread, waiting for that turn, not the first's as a retry...
	answer(first, 1)
	th, _ := m.attribute(req("count the lines", 1))
	require.Same(t, second, th)
	answer(second, 1)
	// ...and with no spawn left, the turn both last had answered, asked again, is a retry;
	// an older turn is not (a conversation started anew).
	th, continued = m.attribute(req("count the lines", 1))
	require.True(t, continued)
	require.Contains(t, []*thread{first, second}, th)
	th, continued = m.attribute(req("count the lines", 0))
	require.False(t, continued)
	require.Len(t, m.threads, 4)
	require.Nil(t, th.parent)

	// The same, both first calls in flight at once; and a main thread's first call sent
	// again while in flight is a retry.
	m = &matcher{spawning: SpawningTools}
	main, _ = m.attribute(req("do it", 0))
	main.inFlight++
	th, continued = m.attribute(req("do it", 0))
	require.True(t, continued)
	require.Same(t, main, th)
	answer(main, 0)
	main.inFlight = 0
	m.noteSpawns(main, &tape.Step{ToolCalls: []tape.ToolCall{
		{ID: "a", Name: "Agent", Input: json.RawMessage(`{"prompt":"count the lines"}`)},
		{ID: "b", Name: "Agent", Input: json.RawMessage(`{"prompt":"count the lines"}`)},
	}})
	first, _ = m.attribute(req("count the lines", 0))
	first.inFlight++
	second, continued = m.attribute(req("count the lines", 0))
	require.False(t, continued)
	require.Equal(t, &tape.Parent{ThreadID: "main", ToolCallID: "b"}, second.parent)

	// A spawning answer retried: its calls are no longer pending (the model answered the
	// retry alike, with the same id: one pending spawn, the retry's).
	m = &matcher{spawning: SpawningTools}
	main, _ = m.attribute(req("do it", 0))
	spawning := &tape.Step{ToolCalls: []tape.ToolCall{{ID: "a", Name: "Agent", Input: json.RawMessage(`{"prompt":"count the lines"}`)}}}
	main.last, main.lastOK = spawning, true
	main.answered(0)
	m.noteSpawns(main, spawning)
	th, continued = m.attribute(req("do it", 0))
	require.True(t, continued)
	require.Empty(t, m.spawns, "the superseded answer's spawn")
	main.answered(0)
	m.noteSpawns(main, spawning)
	require.Len(t, m.spawns, 1)
}
