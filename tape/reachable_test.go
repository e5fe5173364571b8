package tape_test

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/tape"
)

// TestReachableSetAgreesWithWalking: reachableSet finds the threads that walking up each
// thread's parents (walkUp, the way it was done per step) reaches the main thread from, on
// random trees with circles, missing parents, repeated ids and several parentless threads.
func TestReachableSetAgreesWithWalking(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for round := range 500 {
		tp := tape.New(tape.ProviderAnthropic, time.Unix(0, 0))
		n := 1 + rng.IntN(8)
		for i := range n {
			th := &tape.Thread{ID: fmt.Sprint("t", rng.IntN(n+1))}
			if rng.IntN(4) > 0 || i > 0 && rng.IntN(2) == 0 {
				th.Parent = &tape.Parent{ThreadID: fmt.Sprint("t", rng.IntN(n+2)), ToolCallID: "c"}
			}
			tp.Threads = append(tp.Threads, th)
		}
		set := tp.Reachable()
		for _, th := range tp.Threads {
			require.Equal(t, walkUp(tp, th), set[th], "round %d thread %s", round, th.ID)
		}
	}
}

// walkUp says whether th is the main thread or descends from it, walking up its parents.
func walkUp(t *tape.Tape, th *tape.Thread) bool {
	main := t.Main()
	for range len(t.Threads) + 1 {
		if th == main {
			return true
		}
		if th.Parent == nil {
			return false
		}
		if th = t.Thread(th.Parent.ThreadID); th == nil {
			return false
		}
	}
	return false
}

// TestMainThread: the main thread is the first thread without a parent that makes tool calls
// (a title call that a harness sends before its agent's first call is not it), else the
// first without a parent.
func TestMainThread(t *testing.T) {
	calls := func(id string) *tape.Thread {
		return &tape.Thread{ID: id, Steps: []*tape.Step{{ToolCalls: []tape.ToolCall{{ID: "c", Name: "bash"}}}}}
	}
	talks := func(id string) *tape.Thread { return &tape.Thread{ID: id, Steps: []*tape.Step{{}}} }
	child := calls("child")
	child.Parent = &tape.Parent{ThreadID: "agent", ToolCallID: "c"}
	// offered: a thread whose request offers bash and that calls it.
	offered := func(id string) *tape.Thread {
		th := calls(id)
		th.Steps[0].Request.Tools = []tape.Tool{{Name: "bash"}}
		return th
	}
	for _, tc := range []struct {
		name    string
		threads []*tape.Thread
		want    string
	}{
		{"empty", nil, ""},
		{"one thread", []*tape.Thread{talks("main")}, "main"},
		{"a title call first", []*tape.Thread{talks("main"), calls("agent"), child}, "agent"},
		{"the first of two that call", []*tape.Thread{calls("a"), calls("b")}, "a"},
		{"no thread calls: the first", []*tape.Thread{talks("a"), talks("b")}, "a"},
		{"a child that calls is never main", []*tape.Thread{child, talks("agent")}, "agent"},
		// A scripted model answered the title request (no tools) with the agent's call.
		{"a title answered with a call first", []*tape.Thread{calls("main"), offered("agent")}, "agent"},
		{"a title answered with a call last", []*tape.Thread{offered("agent"), calls("t1")}, "agent"},
		{"no request lists its tools (imported): any call", []*tape.Thread{talks("a"), calls("b"), calls("c")}, "b"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tp := tape.New(tape.ProviderAnthropic, time.Unix(0, 0))
			tp.Threads = tc.threads
			got := ""
			if m := tp.Main(); m != nil {
				got = m.ID
			}
			require.Equal(t, tc.want, got)
		})
	}
}
