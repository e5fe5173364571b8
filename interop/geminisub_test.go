package interop

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/schema"
	"github.com/tapebox/tapebox/tape"
)

// geminiSubFixture is the chats folder real Gemini CLI 0.61.0 wrote for test/e2e's
// gemini-cli-subagent case: the main session (five model calls: a write, invoke_agent, two
// invoke_agent calls at once, a read) and, under chats/<session>/, one file per subagent
// (kind "subagent"), each named by the agentId of the invoke_agent call that ran it.
const geminiSubFixture = "testdata/gemini-cli/subagents/chats"

const (
	geminiSubSession = "e70c575b-d77d-412b-90d3-be0a6f9fb1ce"
	geminiSubAgent   = "4ad1bcbf-6a72-49f0-b9c0-e447233a5bbe" // the first invoke_agent's
	geminiSubPairA   = "1a9d592d-538b-4f6b-8368-a83f869a54c0"
	geminiSubPairB   = "79dd9d8e-4f40-405b-bbc6-a02bf2207645"
)

// callNames are a thread's tool calls, step by step ("a+b" for calls of one answer).
func callNames(th *tape.Thread) []string {
	var out []string
	for _, s := range th.Steps {
		var n []string
		for _, c := range s.ToolCalls {
			n = append(n, c.Name)
		}
		out = append(out, strings.Join(n, "+"))
	}
	return out
}

// requireGeminiSubTape checks the tape of the fixture's session: its main thread and one
// thread per subagent, each linked to the invoke_agent call that ran it, in the order of
// the calls; the answer a subagent ended with (complete_task, with a write_file beside it in
// the last) holds no result, as the CLI sent none.
func requireGeminiSubTape(t *testing.T, tp *tape.Tape) {
	t.Helper()
	require.Len(t, tp.Threads, 4)
	main := tp.Main()
	require.Equal(t, "main", main.ID)
	assert.Equal(t, []string{"write_file", "invoke_agent", "invoke_agent+invoke_agent", "read_file", ""}, callNames(main))
	spawns := []tape.ToolCall{main.Steps[1].ToolCalls[0], main.Steps[2].ToolCalls[0], main.Steps[2].ToolCalls[1]}
	prompts := []string{"[rh-gemini-agent]", "[rh-gemini-pair-a]", "[rh-gemini-pair-b]"}
	calls := [][]string{{"read_file+run_shell_command", "replace", "complete_task"}, {"run_shell_command", "complete_task"}, {"write_file+complete_task"}}
	for i, th := range tp.Threads[1:] {
		require.NotNil(t, th.Parent, "thread %s", th.ID)
		assert.Equal(t, tape.Parent{ThreadID: "main", ToolCallID: spawns[i].ID}, *th.Parent, "thread %s is the subagent of the %d-th invoke_agent", th.ID, i)
		assert.Same(t, th, tp.ChildOf("main", spawns[i].ID))
		assert.Contains(t, th.Steps[0].Request.Messages[0].Content[0].Text, prompts[i])
		assert.Equal(t, calls[i], callNames(th), "thread %s", th.ID)
		assert.Empty(t, th.Steps[len(th.Steps)-1].ToolResults, "thread %s: the answer it ended with got no result", th.ID)
	}
	agent := tp.Threads[1]
	require.Len(t, agent.Steps[0].ToolResults, 2)
	assert.Equal(t, "alpha\nbeta\ngamma\n", agent.Steps[0].ToolResults[0].Text())
	assert.Contains(t, agent.Steps[1].ToolResults[0].Text(), "Successfully modified file: /tmp/tapebox-rh-gemini-sub/notes.txt (1 replacements).")
	assert.Contains(t, main.Steps[1].ToolResults[0].Text(), `"response": "notes.txt has 3 lines; beta is now BETA."`)
	// The subagents ran while their call did: their steps' times fall inside its step's.
	for _, th := range tp.Threads[1:] {
		ref, _, ok := tp.ParentCall(th)
		require.True(t, ok)
		next := main.Steps[ref.Index+1].Timing.RequestAt
		assert.GreaterOrEqual(t, th.Steps[0].Timing.RequestAt, ref.Step.Timing.LastByteAt, "thread %s starts after its call", th.ID)
		assert.LessOrEqual(t, th.Steps[len(th.Steps)-1].Timing.LastByteAt, next, "thread %s ends before its call's result is sent", th.ID)
	}
	b, err := tape.Marshal(tp)
	require.NoError(t, err)
	require.NoError(t, schema.Validate(b))
}

// TestImportGeminiCLISubagents reads the real folder: one tape, whose subagents are threads
// of it; and a subagent's file read without its session is a tape of its own, as before.
func TestImportGeminiCLISubagents(t *testing.T) {
	for _, f := range []Format{GeminiCLI, Auto} {
		tapes, err := Import(f, geminiSubFixture)
		require.NoError(t, err, f)
		require.Len(t, tapes, 1, "%s: the subagents' files are threads of their session's tape", f)
		tp := tapes[0]
		assert.Equal(t, map[string]string{"session_id": geminiSubSession}, tp.Meta.Task)
		assert.Equal(t, "/tmp/tapebox-rh-gemini-sub", tp.Meta.Cwd)
		assert.Equal(t, TimingEntries, tp.Meta.Labels[LabelTiming])
		requireGeminiSubTape(t, tp)
	}

	alone, err := Import(GeminiCLI, filepath.Join(geminiSubFixture, geminiSubSession, geminiSubPairB+".jsonl"))
	require.NoError(t, err)
	require.Len(t, alone, 1)
	require.Len(t, alone[0].Threads, 1)
	assert.Nil(t, alone[0].Main().Parent)
	assert.Equal(t, map[string]string{"session_id": geminiSubPairB, "kind": "subagent"}, alone[0].Meta.Task)

	// The subagents' folder without its session file: three tapes.
	tapes, err := Import(GeminiCLI, filepath.Join(geminiSubFixture, geminiSubSession))
	require.NoError(t, err)
	assert.Len(t, tapes, 3)
}

// TestImportGeminiCLISubagentByPrompt: a session whose invoke_agent calls name no agentId
// (the field removed from the real file) links each subagent by the prompt its first
// message holds; a subagent no call asked for stays a tape of its own.
func TestImportGeminiCLISubagentByPrompt(t *testing.T) {
	dir := copyTree(t, geminiSubFixture)
	main := filepath.Join(dir, "session-2026-12-07T21-53-e70c575b.jsonl")
	b, err := os.ReadFile(main)
	require.NoError(t, err)
	stripped := string(b)
	for _, id := range []string{geminiSubAgent, geminiSubPairA, geminiSubPairB} {
		require.Contains(t, stripped, `"agentId":"`+id+`",`)
		stripped = strings.ReplaceAll(stripped, `"agentId":"`+id+`",`, "")
	}
	require.NoError(t, os.WriteFile(main, []byte(stripped), 0o644))
	tapes, err := Import(GeminiCLI, dir)
	require.NoError(t, err)
	require.Len(t, tapes, 1)
	requireGeminiSubTape(t, tapes[0])

	// A fourth subagent file, a copy of pair-b's under another id: no call is left for it.
	extra := strings.ReplaceAll(readString(t, filepath.Join(dir, geminiSubSession, geminiSubPairB+".jsonl")), geminiSubPairB, "00000000-0000-4000-8000-000000000000")
	require.NoError(t, os.WriteFile(filepath.Join(dir, geminiSubSession, "00000000-0000-4000-8000-000000000000.jsonl"), []byte(extra), 0o644))
	tapes, err = Import(GeminiCLI, dir)
	require.NoError(t, err)
	require.Len(t, tapes, 2)
	whole, alone := tapes[0], tapes[1]
	if len(whole.Threads) == 1 {
		whole, alone = alone, whole
	}
	requireGeminiSubTape(t, whole)
	assert.Len(t, alone.Threads, 1)
}

// TestGeminiCLISubagentRoundTrip: the real folder's tape, exported (a session file and one
// file per subagent, the invoke_agent calls naming them) and imported again, is the same
// tape: threads, links, calls, results.
func TestGeminiCLISubagentRoundTrip(t *testing.T) {
	tapes, err := Import(GeminiCLI, geminiSubFixture)
	require.NoError(t, err)
	tp := tapes[0]
	files, err := Export(tp, GeminiCLI, Options{})
	require.NoError(t, err)
	var paths []string
	for _, f := range files {
		paths = append(paths, f.Path+" "+f.Thread)
	}
	assert.Equal(t, []string{
		"tapebox-rh-gemini-sub/chats/session-2026-12-07T21-53-e70c575b.jsonl main",
		"tapebox-rh-gemini-sub/chats/" + geminiSubSession + "/" + uuidFrom("gemini-agent", tp.Meta.TapeID, "t1") + ".jsonl t1",
		"tapebox-rh-gemini-sub/chats/" + geminiSubSession + "/" + uuidFrom("gemini-agent", tp.Meta.TapeID, "t2") + ".jsonl t2",
		"tapebox-rh-gemini-sub/chats/" + geminiSubSession + "/" + uuidFrom("gemini-agent", tp.Meta.TapeID, "t3") + ".jsonl t3",
		"tapebox-rh-gemini-sub/.project_root ",
	}, paths)
	assert.Contains(t, string(files[1].Data), `{"directories":["/tmp/tapebox-rh-gemini-sub"],"kind":"subagent",`)
	assert.Contains(t, string(files[0].Data), `"agentId":"`+uuidFrom("gemini-agent", tp.Meta.TapeID, "t2")+`"`)
	dir := t.TempDir()
	for _, f := range files {
		p := filepath.Join(dir, filepath.FromSlash(f.Path))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, f.Data, 0o644))
	}
	back, err := Import(Auto, dir)
	require.NoError(t, err)
	require.Len(t, back, 1)
	requireGeminiSubTape(t, back[0])
	require.Len(t, back[0].Threads, len(tp.Threads))
	for i, th := range tp.Threads {
		bt := back[0].Threads[i]
		assert.Equal(t, th.ID, bt.ID)
		assert.Equal(t, th.Parent, bt.Parent)
		require.Len(t, bt.Steps, len(th.Steps))
		for j, s := range th.Steps {
			assert.Equal(t, s.Request.Messages, bt.Steps[j].Request.Messages, "thread %s step %d request", th.ID, j)
			assert.Equal(t, s.ToolCalls, bt.Steps[j].ToolCalls, "thread %s step %d calls", th.ID, j)
			assert.Equal(t, s.ToolResults, bt.Steps[j].ToolResults, "thread %s step %d results", th.ID, j)
		}
	}

	// A thread with no spawning call (a side conversation) is not written.
	side := &tape.Thread{ID: "side", Steps: tp.Threads[1].Steps}
	tp.Threads = append(tp.Threads, side)
	files2, err := Export(tp, GeminiCLI, Options{})
	require.NoError(t, err)
	assert.Len(t, files2, len(files))
}

func copyTree(t *testing.T, from string) string {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.CopyFS(dir, os.DirFS(from)))
	return dir
}

func readString(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return string(b)
}
