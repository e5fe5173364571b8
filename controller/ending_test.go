package controller_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/compare"
	"github.com/tapebox/tapebox/controller"
	"github.com/tapebox/tapebox/tape"
)

// subagentTape is a Gemini CLI tape whose main thread invokes its generalist, whose thread
// ends with complete_task beside a write_file in one answer, as real Gemini CLI 0.61.0
// records it: neither call got a result in any request (the CLI ended the subagent there).
// ending, when set, is a recorded result for the complete_task call: one the CLI refused,
// and sent back, so that the subagent went on.
func subagentTape(ending *tape.ToolResult) *tape.Tape {
	tp := tape.New(tape.ProviderGemini, time.Unix(0, 0))
	tp.Meta.Harness, tp.Meta.HarnessVersion = "gemini-cli", "0.61.0"
	text := func(s string) []tape.Block { return []tape.Block{{Type: tape.BlockText, Text: s}} }
	in := func(v any) json.RawMessage { b, _ := json.Marshal(v); return b }
	main := &tape.Thread{ID: "main", Steps: []*tape.Step{
		{
			Response:    tape.Response{Status: 200, StopReason: "STOP"},
			ToolCalls:   []tape.ToolCall{{ID: "gemini-a-0", Name: "invoke_agent", Input: in(map[string]string{"agent_name": "generalist", "prompt": "write out.txt"})}},
			ToolResults: []tape.ToolResult{{ToolCallID: "gemini-a-0", Content: text("Subagent 'generalist' finished.\nResult:\n{\"response\": \"done\"}")}},
		},
		{Response: tape.Response{Status: 200, StopReason: "STOP", Content: text("Done.")}},
	}}
	last := &tape.Step{
		Response: tape.Response{Status: 200, StopReason: "STOP"},
		ToolCalls: []tape.ToolCall{
			{ID: "gemini-b-0", Name: "write_file", Input: in(map[string]string{"file_path": "out.txt", "content": "x\n"})},
			{ID: "gemini-b-1", Name: "complete_task", Input: in(map[string]any{"result": map[string]string{"response": "done"}})},
		},
	}
	if ending != nil {
		last.ToolResults = []tape.ToolResult{*ending}
	}
	sub := &tape.Thread{ID: "t1", Parent: &tape.Parent{ThreadID: "main", ToolCallID: "gemini-a-0"}, Steps: []*tape.Step{last}}
	tp.Threads = []*tape.Thread{main, sub}
	return tp
}

// TestReplayEndingCall: Gemini CLI's complete_task ends a subagent's thread, and the CLI
// sends no result of that answer. A replay writes none either (before, the executor answered
// complete_task with an error and write_file with its result, and compare said DIFFERS), yet
// runs the write_file for its effect on the workspace. A recording whose complete_task did
// get a result (the CLI refused it) replays that result.
func TestReplayEndingCall(t *testing.T) {
	t.Run("ended", func(t *testing.T) {
		rec := subagentTape(nil)
		sb := localSandbox(t)
		out := filepath.Join(t.TempDir(), "replay.json")
		res, err := controller.Replay(t.Context(), rec, sb, controller.Options{Cwd: sb.Cwd(), Output: out, Logf: t.Logf})
		require.NoError(t, err)
		assert.Equal(t, 1, res.ToolCalls, "write_file ran; complete_task went nowhere")
		got, err := os.ReadFile(filepath.Join(sb.Cwd(), "out.txt"))
		require.NoError(t, err)
		assert.Equal(t, "x\n", string(got))
		rep, err := tape.LoadFile(out)
		require.NoError(t, err)
		require.Len(t, rep.Threads, 2)
		require.Len(t, rep.Threads[1].Steps, 1)
		assert.Empty(t, rep.Threads[1].Steps[0].ToolResults)
		r := compare.Compare(rec, rep)
		assert.True(t, r.Identical, "%+v", r.Differences)

		// A replay that wrote a result the recording lacks differs.
		rep.Threads[1].Steps[0].ToolResults = []tape.ToolResult{{ToolCallID: "gemini-b-1", Content: []tape.Block{{Type: tape.BlockText, Text: "Result submitted and task completed."}}}}
		assert.False(t, compare.Compare(rec, rep).Identical)
	})
	t.Run("refused", func(t *testing.T) {
		refused := tape.ToolResult{ToolCallID: "gemini-b-1", IsError: true,
			Content: []tape.Block{{Type: tape.BlockText, Text: `Missing required "result" argument. You must provide your findings when calling complete_task.`}}}
		rec := subagentTape(&refused)
		sb := localSandbox(t)
		out := filepath.Join(t.TempDir(), "replay.json")
		_, err := controller.Replay(t.Context(), rec, sb, controller.Options{Cwd: sb.Cwd(), Output: out, Logf: t.Logf})
		require.NoError(t, err)
		rep, err := tape.LoadFile(out)
		require.NoError(t, err)
		got := rep.Threads[1].Steps[0].ToolResults
		require.Len(t, got, 2, "a recorded result of the ending call: the thread did not end there, every call answers")
		r := compare.Compare(rec, rep)
		assert.False(t, r.Identical, "the recording holds no result for write_file, the replay does")
		var fields []string
		for _, d := range r.Differences {
			fields = append(fields, d.CallID+" "+d.Field)
		}
		assert.Equal(t, []string{"gemini-b-0 tool_result"}, fields)
	})
}
