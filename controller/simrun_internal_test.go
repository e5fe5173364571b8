package controller

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
