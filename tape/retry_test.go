package tape_test

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/tape"
)

// conv is a request whose conversation holds turns answers of the model.
func conv(turns int) tape.Request {
	msgs := []tape.Message{{Role: "user", Content: []tape.Block{{Type: tape.BlockText, Text: "do it"}}}}
	for range turns {
		// An answer may be several assistant entries in a row (a Responses answer's items).
		msgs = append(msgs, tape.Message{Role: "assistant"}, tape.Message{Role: "assistant"}, tape.Message{Role: "user"})
	}
	return tape.Request{Messages: msgs}
}

func TestRequestTurns(t *testing.T) {
	for n := range 5 {
		r := conv(n)
		assert.Equal(t, n, r.Turns())
	}
	r := tape.Request{Messages: []tape.Message{{Role: "system"}, {Role: "user"}, {Role: "assistant"}, {Role: "tool"}, {Role: "assistant"}}}
	assert.Equal(t, 2, r.Turns(), "a tool message between two answers splits them")
	assert.Equal(t, 0, (&tape.Request{}).Turns())
}

// TestSupersededGenerated: on threads generated as a harness makes them (each turn asked
// one or more times, every attempt but the last retried), Superseded names exactly the
// retried attempts and Kept the last attempt at each turn.
func TestSupersededGenerated(t *testing.T) {
	rng := rand.New(rand.NewPCG(29, 1098))
	for range 500 {
		th := &tape.Thread{ID: "main"}
		var want []bool
		var kept []int
		turns := rng.IntN(6)
		for n := range turns {
			attempts := 1 + rng.IntN(3)
			if rng.IntN(2) == 0 {
				attempts = 1
			}
			for a := range attempts {
				th.Steps = append(th.Steps, &tape.Step{Request: conv(n)})
				want = append(want, a < attempts-1)
				if a == attempts-1 {
					kept = append(kept, len(th.Steps)-1)
				}
			}
		}
		var got []bool
		for i := range th.Steps {
			got = append(got, th.Superseded(i))
		}
		require.Equal(t, want, got)
		if kept == nil {
			kept = []int{}
		}
		require.Equal(t, kept, th.Kept())
	}
}

// TestSupersededTellsNothing: a step whose request or next request holds no messages (a
// body the recorder did not keep, a tape without its normalized fields) is never called
// superseded, nor is the last step or an index out of range.
func TestSupersededTellsNothing(t *testing.T) {
	cut := tape.Step{Request: tape.Request{Raw: tape.Truncation{Bytes: 40 << 20, Limit: 32 << 20}.Raw()}}
	a, b := cut, cut
	th := &tape.Thread{Steps: []*tape.Step{&a, &b, {Request: conv(0)}, {Request: conv(0)}}}
	assert.False(t, th.Superseded(0), "two requests not kept")
	assert.False(t, th.Superseded(1), "a request not kept, then a first call")
	assert.True(t, th.Superseded(2))
	assert.False(t, th.Superseded(3), "the last step")
	assert.False(t, th.Superseded(-1))
	assert.False(t, th.Superseded(4))
	assert.Equal(t, []int{0, 1, 3}, th.Kept())
	assert.Equal(t, []int{}, (&tape.Thread{}).Kept())
}

// TestParentCallSkipsSuperseded: a spawning call answered alike to a step and its retry
// (the same call id twice) is the retry's: the superseded one was never run.
func TestParentCallSkipsSuperseded(t *testing.T) {
	spawn := tape.ToolCall{ID: "a", Name: "Agent"}
	main := &tape.Thread{ID: "main", Steps: []*tape.Step{
		{Request: conv(0), ToolCalls: []tape.ToolCall{{ID: "b", Name: "Bash"}}},
		{Request: conv(1), ToolCalls: []tape.ToolCall{spawn}},
		{Request: conv(1), ToolCalls: []tape.ToolCall{spawn}},
		{Request: conv(2)},
	}}
	child := &tape.Thread{ID: "t1", Parent: &tape.Parent{ThreadID: "main", ToolCallID: "a"}}
	tp := &tape.Tape{Threads: []*tape.Thread{main, child}}
	ref, call, ok := tp.ParentCall(child)
	require.True(t, ok)
	assert.Equal(t, 2, ref.Index)
	assert.Equal(t, spawn, call)
	// Only superseded steps made it: the first of them.
	main.Steps = main.Steps[:3]
	main.Steps[2].ToolCalls = nil
	main.Steps = append(main.Steps, &tape.Step{Request: conv(1)})
	ref, _, ok = tp.ParentCall(child)
	require.True(t, ok)
	assert.Equal(t, 1, ref.Index)
}
