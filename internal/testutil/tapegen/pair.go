package tapegen

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/tape"
)

// Pair builds a recording of harness h whose step 0 runs one Bash call with result
// result0, and whose later steps run one call each with the given inputs (JSON).
func Pair(h, result0 string, later ...string) *tape.Tape {
	tp := tape.New(tape.ProviderAnthropic, time.Unix(0, 0))
	tp.Meta.Harness = h
	tp.Meta.Ended = &tape.Ended{Reason: tape.EndComplete}
	th := &tape.Thread{ID: "main"}
	step := func(i int, name, input, result string) *tape.Step {
		id := fmt.Sprintf("toolu_%02d", i)
		return &tape.Step{
			Response:    tape.Response{Status: 200, StopReason: "tool_use"},
			ToolCalls:   []tape.ToolCall{{ID: id, Name: name, Input: json.RawMessage(input)}},
			ToolResults: []tape.ToolResult{{ToolCallID: id, Content: []tape.Block{{Type: tape.BlockText, Text: result}}}},
			Timing:      tape.Timing{RequestAt: float64(10 * i), FirstByteAt: float64(10*i + 1), LastByteAt: float64(10*i + 2)},
		}
	}
	th.Steps = append(th.Steps, step(0, "Bash", `{"command":"run"}`, result0))
	for i, in := range later {
		th.Steps = append(th.Steps, step(i+1, "Bash", in, "ok"))
	}
	th.Steps = append(th.Steps, &tape.Step{Response: tape.Response{Status: 200, StopReason: "end_turn"}})
	tp.Threads = []*tape.Thread{th}
	return tp
}

// ReplayOf copies rec with step 0's result replaced and the later inputs replaced.
func ReplayOf(t testing.TB, rec *tape.Tape, result0 string, later ...string) *tape.Tape {
	t.Helper()
	b, err := tape.Marshal(rec)
	require.NoError(t, err)
	rep, err := tape.Unmarshal(b)
	require.NoError(t, err)
	rep.Meta.TapeID = "replay"
	rep.Threads[0].Steps[0].ToolResults[0].Content[0].Text = result0
	for i, in := range later {
		rep.Threads[0].Steps[i+1].ToolCalls[0].Input = json.RawMessage(in)
	}
	return rep
}
