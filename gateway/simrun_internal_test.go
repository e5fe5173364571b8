package gateway

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/tape"
)

// TestSimRunRecordsOutOfOrder: a harness can ask for step n+1 before the handler that served
// step n has written it; the replay tape still holds the steps in order and the run ends.
func TestSimRunRecordsOutOfOrder(t *testing.T) {
	rec := tape.New(tape.ProviderAnthropic, time.Unix(0, 0))
	rec.Meta.Harness = "claude-code"
	mk := func(text string) *tape.Step {
		return &tape.Step{Request: tape.Request{Raw: json.RawMessage(`{}`)}, Response: tape.Response{Status: 200,
			Content: []tape.Block{{Type: tape.BlockText, Text: text}}}}
	}
	rec.Threads = []*tape.Thread{{ID: "main", Steps: []*tape.Step{mk("a"), mk("b"), mk("c")}}}
	sim, err := NewSimulator(rec, SimulatorOptions{})
	require.NoError(t, err)
	r, err := sim.run("x")
	require.NoError(t, err)
	r.record(0, 0, mk("a"))
	r.record(0, 2, mk("c"))
	require.False(t, r.isDone())
	r.record(0, 1, mk("b"))
	require.True(t, r.isDone())
	out := sim.RunTape("x")
	var got []string
	for _, s := range out.Main().Steps {
		got = append(got, s.Response.Text())
	}
	require.Equal(t, []string{"a", "b", "c"}, got)
}

// TestImportedOpening: a thread of an imported tape matches a request whose opening holds
// its prompt among blocks the session file did not keep; a recorded tape's does not.
func TestImportedOpening(t *testing.T) {
	text := func(s ...string) tape.Message {
		m := tape.Message{Role: "user"}
		for _, x := range s {
			m.Content = append(m.Content, tape.Block{Type: tape.BlockText, Text: x})
		}
		return m
	}
	imported := &tape.Request{Messages: []tape.Message{text("fix the bug")}}
	sent := sigOf(&tape.Request{Messages: []tape.Message{text("<system-reminder>today is Monday</system-reminder>", "fix the bug")}})
	rec := sigOf(imported)
	if got := rec.score(sent); got >= 4 {
		t.Errorf("a recorded thread's opening scored %d against a longer one; want < 4", got)
	}
	rec.prompt = lastUserText(imported)
	if got := rec.score(sent); got < 4 {
		t.Errorf("an imported thread whose prompt the request holds scored %d; want >= 4", got)
	}
	other := sigOf(&tape.Request{Messages: []tape.Message{text("<system-reminder>x</system-reminder>", "write docs")}})
	if got := rec.score(other); got >= 4 {
		t.Errorf("an imported thread scored %d against a request with another prompt; want < 4", got)
	}
}
