package controller

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/tape"
)

// TestCompareNeedsTheReplaysEnd: a replay tape that does not say how it ended (killed after
// its last step was written, before the writer finished it) did not reach the end, even with
// every step present and every result the same.
func TestCompareNeedsTheReplaysEnd(t *testing.T) {
	rec := pairTape("claude-code", "hello")
	rep := replayOf(t, rec, "hello")
	require.True(t, Compare(rec, rep).Identical, "the planted replay is otherwise identical")
	rep.Meta.Ended = nil
	r := Compare(rec, rep)
	require.False(t, r.ReachedEnd)
	require.False(t, r.Identical)
	require.Equal(t, "running or cut short", r.Ended)
}

// TestCompareThreadsNoSpawnLeadsTo: a recording (tapes come from strangers) can put its tool
// calls in a thread that no spawning call leads to, after a main thread that does nothing.
// A replay plays only the main thread and its children, so those calls never run; compare
// used to skip such threads as side conversations and call the replay identical. A thread
// without tool calls (a title call) is still skipped.
func TestCompareThreadsNoSpawnLeadsTo(t *testing.T) {
	answer := func(at float64) *tape.Step {
		return &tape.Step{Response: tape.Response{Status: 200, StopReason: "end_turn"}, Timing: tape.Timing{RequestAt: at, FirstByteAt: at + 1, LastByteAt: at + 2}}
	}
	work := pairTape("claude-code", "all 40 tests pass").Threads[0]
	work.ID = "work"
	for _, tc := range []struct {
		name    string
		threads []*tape.Thread
	}{
		{"a second thread without a parent", []*tape.Thread{{ID: "main", Steps: []*tape.Step{answer(0)}}, work}},
		// Every thread has a parent: there is no main thread at all.
		{"threads that are each other's parent", []*tape.Thread{
			{ID: "a", Parent: &tape.Parent{ThreadID: "work", ToolCallID: "toolu_00"}, Steps: []*tape.Step{answer(0)}},
			{ID: work.ID, Parent: &tape.Parent{ThreadID: "a", ToolCallID: "x"}, Steps: work.Steps}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := pairTape("claude-code", "x")
			rec.Threads = tc.threads
			// What a replay writes: every recorded thread, the main thread played.
			rep := newReplayTape(rec, time.Unix(0, 0), nil)
			rep.Meta.Ended = &tape.Ended{Reason: tape.EndComplete}
			if main := rec.Main(); main != nil {
				rep.Threads[0].Steps = main.Steps
			}
			r := Compare(rec, rep)
			require.False(t, r.Identical)
			require.False(t, r.ReachedEnd)
			require.NotEmpty(t, r.Differences)
			require.Equal(t, "work", r.Differences[0].Thread)
			require.Contains(t, r.Differences[0].Replayed, "not reachable from the main thread")
		})
	}
	// A side conversation without tool calls is not played and not compared.
	rec := pairTape("claude-code", "ok")
	rec.Threads = append(rec.Threads, &tape.Thread{ID: "title", Steps: []*tape.Step{answer(1)}})
	rep := replayOf(t, rec, "ok")
	rep.Threads[1].Steps = nil
	require.True(t, Compare(rec, rep).Identical)
}
