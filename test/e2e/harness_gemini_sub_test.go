package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/tape"
	"github.com/tapebox/tapebox/testkit/fakeprovider"
)

// TestRealGeminiSubagent records real Gemini CLI 0.61.0 whose model hands a task to its
// generalist subagent (invoke_agent): the subagent's own conversation reads a file and runs a
// command together, edits the file, and ends with complete_task, whose answer is the
// invoke_agent call's result in the main conversation. The tape must hold the subagent's
// thread linked to the invoke_agent call, and replay in executor mode in a fresh container
// and locally, and in simulator mode with the real CLI again, each identical with the same
// end state.
func TestRealGeminiSubagent(t *testing.T) {
	r := newRig(t)
	c := geminiSubagentCase()
	needHarness(t, c.harness)
	// The recording's home is kept (GEMINI_CLI_HOME), so that the CLI's own session files,
	// the subagents' among them, can be read after it.
	var recHome string
	command := c.command
	c.command = func(t *testing.T, home string) ([]string, []string) {
		if recHome == "" {
			recHome = home
		}
		argv, env := command(t, home)
		return argv, append(env, "GEMINI_CLI_HOME="+home)
	}
	recPath := replayReal(t, r, c)
	rec, err := tape.LoadFile(recPath)
	require.NoError(t, err)
	t.Run("import-cli-sessions", func(t *testing.T) {
		harnessDir := filepath.Join(recHome, ".gemini", "tmp")
		subs, err := filepath.Glob(filepath.Join(harnessDir, "*", "chats", "*-*-*-*-*", "*.jsonl"))
		require.NoError(t, err)
		require.Len(t, subs, 3, "Gemini CLI wrote one session file per subagent, under its session's id")
		imp := importOne(t, r, "gemini-cli", harnessDir)
		assert.Equal(t, threadShapes(t, rec), threadShapes(t, imp), "the CLI's session files import as the recording's threads, calls and results")
		c.fresh(t)
		repPath := filepath.Join(t.TempDir(), "replay.json")
		impPath := filepath.Join(t.TempDir(), "imported.json")
		b, err := tape.Marshal(imp)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(impPath, b, 0o644))
		code, _, errOut := r.run(t, t.TempDir(), cleanEnv(), "replay", "--tape", impPath, "--sandbox", "local:"+c.cwd, "--output", repPath, "--speed", "0")
		require.Equal(t, 0, code, "tapebox replay of the imported tape\n%s", errOut)
		checkSameState(t, geminiSubState, localState(t, c.cwd), "replay of the imported tape")
	})
	t.Run("export-import", func(t *testing.T) {
		export := t.TempDir()
		code, out, errOut := r.run(t, t.TempDir(), cleanEnv(), "export", "--to", "gemini-cli", "--out", export, recPath)
		require.Equal(t, 0, code, "tapebox export --to gemini-cli\n%s%s", out, errOut)
		back := importOne(t, r, "gemini-cli", export)
		assert.Equal(t, threadShapes(t, rec), threadShapes(t, back), "the export imports back as the recording's threads, calls and results")
		for _, th := range rec.Threads[1:] {
			bt := back.ChildOf(th.Parent.ThreadID, th.Parent.ToolCallID)
			require.NotNil(t, bt, "the export's subagent of call %s", th.Parent.ToolCallID)
		}
	})
	t.Run("fork-inside-subagent", func(t *testing.T) { forkGeminiSubagent(t, r, c, recPath) })
}

// importOne imports the session files under dir with tapebox import --from format: one
// tape, valid.
func importOne(t *testing.T, r *rig, format, dir string) *tape.Tape {
	t.Helper()
	out := t.TempDir()
	code, stdout, errOut := r.run(t, t.TempDir(), cleanEnv(), "import", "--from", format, "--out", out, dir)
	require.Equal(t, 0, code, "tapebox import --from %s\n%s%s", format, stdout, errOut)
	tapes, err := filepath.Glob(filepath.Join(out, "*.json"))
	require.NoError(t, err)
	require.Len(t, tapes, 1, "one session, one tape")
	code, vout, verr := r.run(t, t.TempDir(), cleanEnv(), "validate", tapes[0])
	require.Equal(t, 0, code, "%s%s", vout, verr)
	tp, err := tape.LoadFile(tapes[0])
	require.NoError(t, err)
	return tp
}

// threadShapes describes each thread of a tape by where it was spawned (the main thread's
// step and call index, whatever the call's id and the thread's) and, step by step, its calls
// with their inputs and results.
func threadShapes(t *testing.T, tp *tape.Tape) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, th := range tp.Threads {
		where := "main"
		if th.Parent != nil {
			ref, call, ok := tp.ParentCall(th)
			require.True(t, ok, "thread %s: its parent call is in the tape", th.ID)
			k := slices.IndexFunc(ref.Step.ToolCalls, func(c tape.ToolCall) bool { return c.ID == call.ID })
			where = fmt.Sprintf("%s step %d call %d", ref.Thread.ID, ref.Index, k)
		} else if th != tp.Main() {
			continue // a side request
		}
		var steps []string
		for _, st := range th.Steps {
			var b strings.Builder
			for _, c := range st.ToolCalls {
				var in any
				require.NoError(t, json.Unmarshal(c.Input, &in))
				fmt.Fprintf(&b, "%s %v => ", c.Name, in)
				if r, ok := st.ToolResult(c.ID); ok {
					fmt.Fprintf(&b, "%q (error %v); ", r.Text(), r.IsError)
				} else {
					b.WriteString("no result; ")
				}
			}
			steps = append(steps, b.String())
		}
		out[where] = steps
	}
	return out
}

// forkGeminiSubagent forks the recording at step 1 of the first subagent's thread, in a
// fresh directory, onto a second provider that continues the subagent another way: the main
// thread's first two steps and the subagent's first are served (the real CLI runs their
// calls, invoke_agent included), the rest is live, and the fork ends in the other
// continuation's files.
func forkGeminiSubagent(t *testing.T, r *rig, c realCase, recPath string) {
	rec, err := tape.LoadFile(recPath)
	require.NoError(t, err)
	main := rec.Main()
	agent := rec.ChildOf(main.ID, main.Steps[1].ToolCalls[0].ID)
	require.NotNil(t, agent)
	call := fakeprovider.Call
	second := fakeprovider.New(fakeprovider.Script{Threads: []fakeprovider.Thread{
		{Name: "main", Marker: "[rh-gemini-sub]", Turns: []fakeprovider.Turn{never, never, {Text: "Done another way."}}},
		{Name: "agent", Marker: "[rh-gemini-agent]", Turns: []fakeprovider.Turn{
			never,
			{Calls: []tape.ToolCall{call("run_shell_command", map[string]any{"command": "sed -i s/gamma/GAMMA/ notes.txt && echo other"})}},
			{Calls: []tape.ToolCall{call("complete_task", map[string]any{"result": map[string]any{"response": "gamma is now GAMMA."}})}},
		}},
	}})
	require.NoError(t, second.Start())
	t.Cleanup(func() { second.Close() })
	c.fresh(t)
	require.NoError(t, os.Remove(c.cwd)) // the recording's directory: the fork must not make it
	forkPath := filepath.Join(t.TempDir(), "fork.json")
	argv, env := c.command(t, t.TempDir())
	args := append([]string{"fork", "--tape", recPath, "--thread", agent.ID, "--at", "1", "--upstream", second.URL(),
		"--output", forkPath, "--json", "--"}, argv...)
	code, out, errOut := r.run(t, t.TempDir(), cleanEnv(env...), args...)
	if code != 0 || second.Err() != nil {
		dumpRequests(t, second)
		t.Fatalf("tapebox fork: exit %d, provider: %v\nstdout:\n%s\nstderr:\n%s", code, second.Err(), clipText(out, 4000), clipText(errOut, 8000))
	}
	keep(t, forkPath, c.name+".fork.json")
	var sum struct {
		forkSummary
		Workdir string `json:"workdir"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &sum), out)
	assert.Equal(t, "complete", sum.Ended, sum.Detail)
	assert.NoDirExists(t, c.cwd, "the recording's directory was never made")
	assert.Equal(t, map[string]int{main.ID: 2, agent.ID: 1}, sum.Served)
	assert.Equal(t, map[string]string{"notes.txt": "alpha\nbeta\nGAMMA\n", "count.txt": "3\n"}, localState(t, sum.Workdir),
		"the served steps ran (notes.txt written, lines counted), then the live subagent's command")

	ft, err := tape.LoadFile(forkPath)
	require.NoError(t, err)
	require.Len(t, ft.Threads, 2)
	fm := ft.Main()
	require.Len(t, fm.Steps, 3)
	fa := ft.ChildOf(fm.ID, fm.Steps[1].ToolCalls[0].ID)
	require.NotNil(t, fa, "the fork's subagent thread is linked to the served invoke_agent call")
	assert.Equal(t, agent.ID, fa.ID)
	require.Len(t, fa.Steps, 3)
	moved := func(b []byte) string { return strings.ReplaceAll(string(b), rec.Meta.Cwd, sum.Workdir) }
	assert.Equal(t, moved(agent.Steps[0].Response.Raw), string(fa.Steps[0].Response.Raw), "the subagent's step 0 is the recording's")
	assert.Contains(t, string(fa.Steps[1].ToolCalls[0].Input), "s/gamma/GAMMA/", "step 1 is the other continuation's")
	assert.Empty(t, fa.Steps[2].ToolResults, "complete_task ended the forked subagent too")
	require.Len(t, fm.Steps[1].ToolResults, 1)
	assert.Contains(t, fm.Steps[1].ToolResults[0].Text(), "gamma is now GAMMA.", "the served invoke_agent call got the live subagent's answer")
	assert.Equal(t, "Done another way.", fm.Steps[2].Response.Text())
	live := 0
	for _, q := range second.Requests() {
		if q.Endpoint == fakeprovider.EndpointGemini {
			live++
		}
	}
	assert.Equal(t, live, ft.Totals().Steps-sum.ServedSteps, "the second provider receives exactly the live steps")

	vcode, vout, verr := r.run(t, t.TempDir(), cleanEnv(), "validate", forkPath)
	assert.Equal(t, 0, vcode, "the fork tape validates\n%s%s", vout, verr)
	_, text, _ := r.run(t, t.TempDir(), cleanEnv(), "compare", recPath, forkPath)
	assert.Contains(t, text, "FORK at thread "+agent.ID+" step 1")
	t.Logf("fork at thread %s step 1: %d served, %d live\n%s", agent.ID, sum.ServedSteps, sum.LiveSteps, text)
}

// geminiSubState is the end state of geminiSubagentCase.
var geminiSubState = map[string]string{"notes.txt": "alpha\nBETA\ngamma\n", "count.txt": "3\n", "pair/": "", "pair/a.txt": "a\n", "pair/b.txt": "b\n"}

// geminiSubagentCase is geminiCase with subagents: the main conversation writes notes.txt,
// invokes the generalist with a task, then two generalists at once, and reads the file the
// first subagent edited.
func geminiSubagentCase() realCase {
	c := geminiCase()
	const cwd = "/tmp/tapebox-rh-gemini-sub"
	c.name, c.cwd = "gemini-cli-subagent", cwd
	call := fakeprovider.Call
	const (
		task  = "[rh-gemini-agent] Count the lines of notes.txt into count.txt and capitalise beta."
		pairA = "[rh-gemini-pair-a] Write a into pair/a.txt."
		pairB = "[rh-gemini-pair-b] Write b into pair/b.txt."
	)
	c.script = func() fakeprovider.Script {
		return fakeprovider.Script{Threads: []fakeprovider.Thread{
			{Name: "main", Marker: "[rh-gemini-sub]", Turns: []fakeprovider.Turn{
				{Text: "Writing the notes first.", Calls: []tape.ToolCall{
					call("write_file", map[string]any{"file_path": cwd + "/notes.txt", "content": "alpha\nbeta\ngamma\n"}),
				}},
				{Calls: []tape.ToolCall{call("invoke_agent", map[string]any{"agent_name": "generalist", "prompt": task})}},
				// Two subagents at once: the CLI runs the calls of one answer together.
				{Calls: []tape.ToolCall{
					call("invoke_agent", map[string]any{"agent_name": "generalist", "prompt": pairA}),
					call("invoke_agent", map[string]any{"agent_name": "generalist", "prompt": pairB}),
				}},
				{Calls: []tape.ToolCall{call("read_file", map[string]any{"file_path": "notes.txt"})}},
				{Text: "Done: the subagents counted and edited the notes."},
			}},
			{Name: "agent", Marker: "[rh-gemini-agent]", Turns: []fakeprovider.Turn{
				{Text: "Looking at the notes.", Calls: []tape.ToolCall{
					call("read_file", map[string]any{"file_path": "notes.txt"}),
					call("run_shell_command", map[string]any{"command": "wc -l < notes.txt > count.txt; cat count.txt", "description": "count lines"}),
				}},
				{Calls: []tape.ToolCall{call("replace", map[string]any{"file_path": cwd + "/notes.txt", "old_string": "beta", "new_string": "BETA", "instruction": "capitalise beta"})}},
				{Calls: []tape.ToolCall{call("complete_task", map[string]any{"result": map[string]any{"response": "notes.txt has 3 lines; beta is now BETA."}})}},
			}},
			{Name: "pair-a", Marker: "[rh-gemini-pair-a]", Turns: []fakeprovider.Turn{
				{Calls: []tape.ToolCall{call("run_shell_command", map[string]any{"command": "mkdir -p pair && echo a > pair/a.txt && echo wrote a"})}},
				{Calls: []tape.ToolCall{call("complete_task", map[string]any{"result": map[string]any{"response": "wrote pair/a.txt"}})}},
			}},
			// The last answer writes a file beside complete_task: the CLI runs both and
			// sends the model neither result.
			{Name: "pair-b", Marker: "[rh-gemini-pair-b]", Turns: []fakeprovider.Turn{
				{Calls: []tape.ToolCall{
					call("write_file", map[string]any{"file_path": cwd + "/pair/b.txt", "content": "b\n"}),
					call("complete_task", map[string]any{"result": map[string]any{"response": "wrote pair/b.txt"}}),
				}},
			}},
		}}
	}
	command := c.command
	c.command = func(t *testing.T, home string) ([]string, []string) {
		argv, env := command(t, home)
		argv[len(argv)-1] = "[rh-gemini-sub] Have generalists count and edit the notes, and write a pair of files."
		return argv, env
	}
	c.check = func(t *testing.T, rec *tape.Tape, state map[string]string) {
		require.Len(t, rec.Threads, 4)
		main := rec.Main()
		require.Len(t, main.Steps, 5)
		res := func(th *tape.Thread, step, i int) tape.ToolResult {
			require.Greater(t, len(th.Steps[step].ToolResults), i, "thread %s step %d has no result %d", th.ID, step, i)
			return th.Steps[step].ToolResults[i]
		}
		// Each subagent's thread is linked to its invoke_agent call, found by its prompt.
		child := func(step, i int) *tape.Thread {
			require.Greater(t, len(main.Steps[step].ToolCalls), i)
			call := main.Steps[step].ToolCalls[i]
			require.Equal(t, "invoke_agent", call.Name)
			th := rec.ChildOf(main.ID, call.ID)
			require.NotNil(t, th, "the thread invoke_agent %s started", call.ID)
			prompt := jsonField(t, call.Input, "prompt")
			assert.Contains(t, firstUser(th.Steps[0].Request), prompt, "thread %s is the subagent invoke_agent %s asked for", th.ID, call.ID)
			return th
		}
		agent, a, b := child(1, 0), child(2, 0), child(2, 1)
		require.Len(t, agent.Steps, 3)
		require.Len(t, a.Steps, 2)
		require.Len(t, b.Steps, 1)

		assert.Equal(t, "Subagent 'generalist' finished.\nTermination Reason: GOAL\nResult:\n{\n  \"response\": \"notes.txt has 3 lines; beta is now BETA.\"\n}", res(main, 1, 0).Text())
		assert.Contains(t, res(main, 2, 0).Text(), `"response": "wrote pair/a.txt"`)
		assert.Contains(t, res(main, 2, 1).Text(), `"response": "wrote pair/b.txt"`)
		assert.Equal(t, "alpha\nBETA\ngamma\n", res(main, 3, 0).Text(), "the main thread reads what its subagent edited")
		assert.Equal(t, "alpha\nbeta\ngamma\n", res(agent, 0, 0).Text())
		assert.Regexp(t, `^<untrusted_context>\nOutput: 3\nProcess Group PGID: \d+\n</untrusted_context>$`, res(agent, 0, 1).Text())
		assert.Equal(t, "Successfully modified file: "+cwd+"/notes.txt (1 replacements). Here is the updated code:\nalpha\nBETA\ngamma\n", res(agent, 1, 0).Text())
		assert.Equal(t, "complete_task", agent.Steps[2].ToolCalls[0].Name)
		assert.Empty(t, agent.Steps[2].ToolResults, "the CLI ends the subagent on complete_task and sends no result")
		assert.Empty(t, b.Steps[0].ToolResults, "nor a result of the call beside it")
		assert.Equal(t, geminiSubState, state)
	}
	return c
}

// jsonField is the string field key of a JSON object.
func jsonField(t *testing.T, obj []byte, key string) string {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal(obj, &m))
	s, _ := m[key].(string)
	return s
}
