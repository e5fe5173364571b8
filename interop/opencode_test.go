package interop

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/internal/testutil/tapegen"
	"github.com/tapebox/tapebox/schema"
	"github.com/tapebox/tapebox/tape"
)

// openCodeFixtures are what `opencode export` (OpenCode 1.18.33) printed for test/e2e's
// opencode case, recorded against the fake provider: the agent's session (seven model
// calls: parallel calls, an edit, a failing command, a task, reads, a todo list) and the
// task's subagent session (two).
const openCodeFixtures = "testdata/opencode"

// TestImportOpenCode reads the real exports: one tape, the subagent's session a thread
// linked to the task call that started it, every step's conversation, answer, results,
// usage and stop reason as OpenCode sent and got them.
func TestImportOpenCode(t *testing.T) {
	tapes, err := Import(OpenCode, openCodeFixtures)
	require.NoError(t, err)
	require.Len(t, tapes, 1, "the subagent's session is a thread of its parent's tape")
	tp := tapes[0]
	assert.Equal(t, "opencode", tp.Meta.Harness)
	assert.Equal(t, "1.18.33", tp.Meta.HarnessVersion)
	assert.Equal(t, tape.ProviderAnthropic, tp.Meta.Provider)
	assert.Equal(t, "claude-sonnet-4-5", tp.Meta.Model)
	assert.Equal(t, "/tmp/tapebox-rh-opencode", tp.Meta.Cwd)
	assert.Equal(t, map[string]string{"session_id": "ses_dae1c6218ffelqdmEFteYlUJTV"}, tp.Meta.Task)
	assert.Equal(t, hexFrom(32, "opencode", "ses_dae1c6218ffelqdmEFteYlUJTV"), tp.Meta.TapeID)
	assert.Equal(t, map[string]string{LabelImportedFrom: "opencode", LabelForm: FormNormalized, LabelSource: "session.json", LabelTiming: TimingEntries}, tp.Meta.Labels)
	require.Len(t, tp.Threads, 2)
	main, sub := tp.Threads[0], tp.Threads[1]
	require.Len(t, main.Steps, 7)
	require.Len(t, sub.Steps, 2)
	assert.Equal(t, &tape.Parent{ThreadID: "main", ToolCallID: "toolu_fake_main_3_0"}, sub.Parent)
	assert.Equal(t, []string{"main/0 write", "main/0 bash", "main/1 edit", "main/2 bash", "main/3 task", "main/4 read", "main/4 glob", "main/4 grep", "main/5 todowrite", "t1/0 bash"}, importedCalls(tp))
	s0 := main.Steps[0]
	assert.Equal(t, []tape.Message{{Role: "user", Content: []tape.Block{{Type: tape.BlockText, Text: `"[rh-opencode] Keep notes, have a helper count the lines, and search them."`}}}}, s0.Request.Messages)
	assert.Equal(t, "tool_use", s0.Response.StopReason)
	assert.Equal(t, tape.Usage{InputTokens: 7640, OutputTokens: 47}, s0.Response.Usage)
	assert.Equal(t, "ready\n", s0.ToolResults[1].Text())
	assert.Equal(t, "about to fail\n", main.Steps[2].ToolResults[0].Text())
	assert.Contains(t, main.Steps[3].ToolResults[0].Text(), "notes.txt has 3 lines.")
	assert.Equal(t, "end_turn", main.Steps[6].Response.StopReason)
	assert.Equal(t, "Done: notes edited, lines counted.", main.Steps[6].Response.Text())
	last := main.Steps[6].Request.Messages
	require.Len(t, last, 13, "the prompt, then six calls and their results")
	assert.Equal(t, "user", last[12].Role)
	assert.Equal(t, tape.BlockToolResult, last[12].Content[0].Type)
	assert.Equal(t, "3\n", sub.Steps[0].ToolResults[0].Text())
	for i, s := range main.Steps {
		assert.LessOrEqual(t, s.Timing.RequestAt, s.Timing.FirstByteAt, "step %d", i)
		assert.LessOrEqual(t, s.Timing.FirstByteAt, s.Timing.LastByteAt, "step %d", i)
	}
	data, err := tape.Marshal(tp)
	require.NoError(t, err)
	require.NoError(t, schema.Validate(data), "the imported tape validates")
	require.NoError(t, Synthesize(tp))
	data, err = tape.Marshal(tp)
	require.NoError(t, err)
	require.NoError(t, schema.Validate(data), "the synthesized tape validates")

	// The subagent's session alone is a tape of its own.
	alone, err := Import(OpenCode, filepath.Join(openCodeFixtures, "subagent.json"))
	require.NoError(t, err)
	require.Len(t, alone, 1)
	assert.Equal(t, []string{"main/0 bash"}, importedCalls(alone[0]))
	assert.Nil(t, alone[0].Threads[0].Parent)
}

func importedCalls(tp *tape.Tape) []string {
	var out []string
	for _, th := range tp.Threads {
		for i, s := range th.Steps {
			for _, c := range s.ToolCalls {
				out = append(out, th.ID+"/"+string(rune('0'+i))+" "+c.Name)
			}
		}
	}
	return out
}

// TestImportOpenCodeParts: a failed tool is an error result, a pending one has none,
// reasoning is thinking, parts the model is not sent as they are are counted lost, an
// OpenAI session is a Responses tape with its results in tool messages.
func TestImportOpenCodeParts(t *testing.T) {
	session := `{"info":{"id":"ses_1","directory":"/w","version":"1.18.33","time":{"created":1796670201000}},"messages":[
{"info":{"id":"msg_1","role":"user","time":{"created":1796670202000}},"parts":[{"type":"text","text":"go"},{"type":"file","url":"x"}]},
{"info":{"id":"msg_2","role":"assistant","providerID":"openai","modelID":"gpt-5","finish":"tool-calls","time":{"created":1796670203000,"completed":1796670204000},"error":{"name":"x"}},
 "parts":[{"type":"reasoning","text":"hm"},{"type":"tool","tool":"bash","callID":"c1","state":{"status":"error","input":{"command":"false"},"error":"boom"}},
          {"type":"tool","tool":"bash","callID":"c2","state":{"status":"pending","input":{}}},{"type":"patch","hash":"h"}]}]}`
	p := filepath.Join(t.TempDir(), "s.json")
	require.NoError(t, os.WriteFile(p, []byte(session), 0o644))
	tapes, err := Import(OpenCode, p)
	require.NoError(t, err)
	tp := tapes[0]
	assert.Equal(t, tape.ProviderOpenAIResponses, tp.Meta.Provider)
	assert.Equal(t, "model call errors (1), parts the model is not sent (2)", tp.Meta.Labels[LabelLost])
	s := tp.Main().Steps[0]
	assert.Equal(t, "completed", s.Response.StopReason)
	assert.Equal(t, tape.BlockThinking, s.Response.Content[0].Type)
	require.Len(t, s.ToolCalls, 2)
	require.Len(t, s.ToolResults, 1, "the pending call has no result")
	assert.Equal(t, tape.ToolResult{ToolCallID: "c1", Content: []tape.Block{{Type: tape.BlockText, Text: "boom"}}, IsError: true}, s.ToolResults[0])
}

// TestImportOpenCodeErrors: a file that is not an OpenCode export is an error naming the
// file and, where there is one, the JSON pointer.
func TestImportOpenCodeErrors(t *testing.T) {
	for _, tc := range []struct{ name, data, want string }{
		{"not JSON", `{oops`, "not an OpenCode session export"},
		{"no id", `{"info":{},"messages":[]}`, "/info/id: missing"},
		{"a role", `{"info":{"id":"s"},"messages":[{"info":{"role":"system"},"parts":[]}]}`, `/messages/0/info/role: "system"`},
		{"a tool part without state", `{"info":{"id":"s"},"messages":[{"info":{"role":"assistant"},"parts":[{"type":"tool","tool":"bash","callID":"c"}]}]}`, "/messages/0/parts/0: a tool part without callID, tool or state"},
		{"a part without type", `{"info":{"id":"s"},"messages":[{"info":{"role":"user"},"parts":[{"text":"x"}]}]}`, "/messages/0/parts/0/type: missing"},
		{"no assistant message", `{"info":{"id":"s"},"messages":[{"info":{"role":"user"},"parts":[]}]}`, "no assistant message"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "s.json")
			require.NoError(t, os.WriteFile(p, []byte(tc.data), 0o644))
			_, err := Import(OpenCode, p)
			require.Error(t, err)
			assert.Contains(t, err.Error(), p)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
	// Two files of one session.
	dir := t.TempDir()
	b, err := os.ReadFile(filepath.Join(openCodeFixtures, "session.json"))
	require.NoError(t, err)
	for _, n := range []string{"a.json", "b.json"} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, n), b, 0o644))
	}
	_, err = Import(OpenCode, dir)
	assert.ErrorContains(t, err, "is exported by "+filepath.Join(dir, "a.json")+" too")
	var v map[string]any
	require.NoError(t, json.Unmarshal(b, &v))
	assert.False(t, strings.Contains(string(b), "sk-"), "no credential in the fixture")
}

// TestImportOpenCodeParents: sessions whose parents go round in a circle, or name
// themselves, are tapes of their own (nothing is dropped, nothing loops).
func TestImportOpenCodeParents(t *testing.T) {
	dir := t.TempDir()
	session := func(id, parent, child string) string {
		return `{"info":{"id":"` + id + `","parentID":"` + parent + `"},"messages":[{"info":{"role":"assistant","providerID":"anthropic"},"parts":[{"type":"tool","tool":"task","callID":"c-` + id + `","state":{"status":"completed","output":"ok","metadata":{"sessionId":"` + child + `"}}}]}]}`
	}
	for name, data := range map[string]string{"a.json": session("a", "b", "b"), "b.json": session("b", "a", "a"), "c.json": session("c", "c", "c")} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644))
	}
	tapes, err := Import(OpenCode, dir)
	require.NoError(t, err)
	require.Len(t, tapes, 3)
	threads := 0
	for _, tp := range tapes {
		threads += len(tp.Threads)
	}
	assert.Equal(t, 5, threads, "a with b as its task's thread, b with a as its, c alone (its task names itself)")
}

// TestOpenCodeRoundTrip: the import of the real exports, exported again and imported, makes
// the same threads, conversation, calls, results and usage; the subagent's session names
// its parent, and the task call names the subagent's session.
func TestOpenCodeRoundTrip(t *testing.T) {
	tapes, err := Import(OpenCode, openCodeFixtures)
	require.NoError(t, err)
	tp := tapes[0]
	files, err := Export(tp, OpenCode, Options{})
	require.NoError(t, err)
	require.Len(t, files, 2)
	assert.Equal(t, "ses_dae1c6218ffelqdmEFteYlUJTV.json", files[0].Path, "the session id it was imported from")
	dir := t.TempDir()
	for _, f := range files {
		require.NoError(t, os.WriteFile(filepath.Join(dir, f.Path), f.Data, 0o644))
	}
	assert.Contains(t, string(files[1].Data), `"parentID": "ses_dae1c6218ffelqdmEFteYlUJTV"`)
	assert.Contains(t, string(files[0].Data), `"sessionId": "`+strings.TrimSuffix(files[1].Path, ".json")+`"`)
	back, err := Import(OpenCode, dir)
	require.NoError(t, err)
	require.Len(t, back, 1)
	assert.Equal(t, tp.Meta.Task, back[0].Meta.Task)
	assert.Equal(t, tp.Meta.Cwd, back[0].Meta.Cwd)
	require.Len(t, back[0].Threads, len(tp.Threads))
	for k, th := range tp.Threads {
		bt := back[0].Threads[k]
		assert.Equal(t, th.Parent, bt.Parent)
		require.Len(t, bt.Steps, len(th.Steps))
		for i, s := range th.Steps {
			b := bt.Steps[i]
			assert.Equal(t, s.Request.Messages, b.Request.Messages, "thread %s step %d request", th.ID, i)
			assert.Equal(t, s.Response.Content, b.Response.Content, "thread %s step %d answer", th.ID, i)
			assert.Equal(t, s.Response.Usage, b.Response.Usage, "thread %s step %d usage", th.ID, i)
			assert.Equal(t, s.Response.StopReason, b.Response.StopReason, "thread %s step %d stop", th.ID, i)
			assert.Equal(t, s.ToolCalls, b.ToolCalls, "thread %s step %d calls", th.ID, i)
			assert.Equal(t, s.ToolResults, b.ToolResults, "thread %s step %d results", th.ID, i)
		}
	}
	tp.Meta.Provider = tape.ProviderGemini
	_, err = Export(tp, OpenCode, Options{})
	assert.ErrorContains(t, err, "OpenCode sessions here hold Anthropic Messages or OpenAI Responses")
}

// TestOpenCodeExportGenerated: generated Claude Code and Codex tapes (subagents, long
// results, runs cut short; tapes nobody picked) export to OpenCode sessions that import
// again with the same tool calls, inputs and results in every session.
func TestOpenCodeExportGenerated(t *testing.T) {
	type call struct{ id, name, input, result string }
	calls := func(th *tape.Thread) []call {
		var out []call
		for _, s := range th.Steps {
			for _, c := range s.ToolCalls {
				r, _ := s.ToolResult(c.ID)
				var in any
				require.NoError(t, json.Unmarshal(input(c.Input), &in))
				b, err := json.Marshal(in)
				require.NoError(t, err)
				out = append(out, call{c.ID, c.Name, string(b), resultText(r)})
			}
		}
		return out
	}
	exported := 0
	for i := range 40 {
		tp := tapegen.Tape(tapegen.Options{Seed: 33, Lean: true, MeanSteps: 6, MeanToolOutput: 300}, i)
		tp.Meta.Cwd = "/work"
		files, err := Export(tp, OpenCode, Options{})
		if err != nil {
			continue // a provider OpenCode's sessions do not hold, or no thread with a call
		}
		exported++
		dir := t.TempDir()
		for _, f := range files {
			require.True(t, filepath.IsLocal(f.Path))
			require.NoError(t, os.WriteFile(filepath.Join(dir, f.Path), f.Data, 0o644))
		}
		back, err := Import(OpenCode, dir)
		require.NoError(t, err, "tape %d", i)
		auto, err := Import(Auto, dir)
		require.NoError(t, err, "tape %d: --from auto tells the exports", i)
		assert.Equal(t, back, auto, "tape %d: --from auto reads them as --from opencode does", i)
		got := map[string][]call{}
		for _, b := range back {
			for _, th := range b.Threads {
				if th.Parent == nil {
					got[b.Meta.Task["session_id"]] = calls(th)
				}
			}
		}
		for _, th := range tp.Threads {
			if th.Parent != nil || len(calls(th)) == 0 {
				continue
			}
			assert.Equal(t, calls(th), got[OpenCodeSessionID(tp, th)], "tape %d thread %s", i, th.ID)
		}
	}
	assert.Greater(t, exported, 10, "most generated tapes export")
}
