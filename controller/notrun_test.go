package controller_test

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/compare"
	"github.com/tapebox/tapebox/controller"
	"github.com/tapebox/tapebox/tape"
)

// TestCompareNamesCallsNotRun: a tape from a stranger whose call names a tool the executor
// only copies ("all 40 tests pass" from an MCP tool) replays to a result equal to the
// recorded one; the report says that call was not run, and the one Bash call that ran is not
// listed, even though the recording claims its result was copied too.
func TestCompareNamesCallsNotRun(t *testing.T) {
	rec := bashTape([]string{"echo ran"}, []string{"ran"})
	rec.Threads[0].Steps[0].ToolResults[0].CopiedFromTape = true // a claim the replay ignores
	in, _ := json.Marshal(map[string]string{"command": "make test"})
	rec.Threads[0].Steps = append([]*tape.Step{{
		Response:    tape.Response{Status: 200, StopReason: "tool_use"},
		ToolCalls:   []tape.ToolCall{{ID: "toolu_ci", Name: "mcp__ci__run_tests", Input: in}},
		ToolResults: []tape.ToolResult{{ToolCallID: "toolu_ci", Content: []tape.Block{{Type: tape.BlockText, Text: "all 40 tests pass"}}}},
	}}, rec.Threads[0].Steps...)

	sb := localSandbox(t)
	out := filepath.Join(t.TempDir(), "replay.json")
	_, err := controller.Replay(t.Context(), rec, sb, controller.Options{Cwd: sb.Cwd(), Output: out, Logf: t.Logf})
	require.NoError(t, err)
	rep, err := tape.LoadFile(out)
	require.NoError(t, err)

	r := compare.Compare(rec, rep)
	require.True(t, r.Identical, "%+v", r.Differences)
	assert.Equal(t, []compare.NotRun{{Thread: "main", Step: 0, ToolCallID: "toolu_ci", Tool: "mcp__ci__run_tests"}}, r.NotRun)
	assert.Equal(t, 2, r.ResultsReplayed)
	var text bytes.Buffer
	r.WriteText(&text)
	assert.Contains(t, text.String(), "IDENTICAL, 1 of 2 tool results not run")
	assert.Contains(t, text.String(), "not run: 1 of 2 tool results were copied from the recording")
	assert.Contains(t, text.String(), "mcp__ci__run_tests x1")

	// A replay in which every call ran says IDENTICAL alone.
	rep.Threads[0].Steps[0].ToolResults[0].CopiedFromTape = false
	r = compare.Compare(rec, rep)
	assert.Empty(t, r.NotRun)
	text.Reset()
	r.WriteText(&text)
	assert.Contains(t, text.String(), ": IDENTICAL\n")
	assert.NotContains(t, text.String(), "not run")
}
