package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/tape"
	"github.com/tapebox/tapebox/testkit/fakeprovider"
)

// openCodeRepoCase: real OpenCode edits files that existed before it started. Its calls
// name relative paths, which OpenCode resolves against its working directory, so that a
// fork in a fresh directory makes the same calls.
func openCodeRepoCase() realCase {
	c := repoCase(openCodeCase(), "opencode-repo", "/tmp/tapebox-rh-opencode-repo", "[rh-opencode-repo]", 4)
	call := fakeprovider.Call
	c.script = func() fakeprovider.Script {
		return fakeprovider.Script{Threads: []fakeprovider.Thread{
			{Name: "main", Marker: "[rh-opencode-repo]", Turns: []fakeprovider.Turn{
				{Text: "Reading the repository.", Calls: []tape.ToolCall{
					call("read", map[string]any{"filePath": "README.md"}),
					call("read", map[string]any{"filePath": "greet.sh"}),
				}},
				{Calls: []tape.ToolCall{
					call("edit", map[string]any{"filePath": "greet.sh", "oldString": "hello", "newString": "Hello"}),
					call("edit", map[string]any{"filePath": "README.md", "oldString": "NAME.", "newString": "NAME: it prints Hello, NAME."}),
				}},
				{Calls: []tape.ToolCall{call("bash", map[string]any{"command": "head -1 src/names.txt | xargs ./greet.sh | tee out.txt", "description": "run the script"})}},
				{Text: "Done: the greeting is capitalised and documented."},
			}},
			openCodeTitle(),
		}}
	}
	base := c.check
	c.check = func(t *testing.T, rec *tape.Tape, state map[string]string) {
		agent := agentThread(t, rec)
		main := *rec
		main.Threads = []*tape.Thread{agent}
		base(t, &main, state)
	}
	return c
}

// openCodeTitle is the thread OpenCode's title request (its small model, beside the agent's
// first call) is answered from.
func openCodeTitle() fakeprovider.Thread {
	return fakeprovider.Thread{Name: "title", Marker: "You are a title generator", Turns: []fakeprovider.Turn{{Text: "Greeter edits"}}}
}

// agentThread is the thread of a tape whose first request offers tools (OpenCode's title
// request offers none).
func agentThread(t *testing.T, rec *tape.Tape) *tape.Thread {
	t.Helper()
	for _, th := range rec.Threads {
		if len(th.Steps) > 0 && len(th.Steps[0].Request.Tools) > 0 && th.Parent == nil {
			return th
		}
	}
	t.Fatalf("no thread of %s offers tools", rec.Meta.TapeID)
	return nil
}

// forkMoreCase is a repo case, the other continuation from step 2 on, and how its live
// requests name the model.
type forkMoreCase struct {
	forkCase
	// modelIn says whether a live request (its path and body) asks for model.
	modelIn func(q fakeprovider.Request, model string) bool
}

func geminiForkCase() forkMoreCase {
	c := geminiRepoCase()
	call := fakeprovider.Call
	return forkMoreCase{
		forkCase: forkCase{realCase: c,
			other: func() fakeprovider.Script {
				return fakeprovider.Script{Threads: []fakeprovider.Thread{{Name: "main", Marker: "[rh-gemini-repo]", Turns: []fakeprovider.Turn{
					never, never,
					{Calls: []tape.ToolCall{call("run_shell_command", map[string]any{"command": "tail -1 src/names.txt | xargs ./greet.sh | tee out.txt"})}},
					{Text: "Done another way: greeted lin."},
				}}}}
			},
			check: forkRepoCheck,
		},
		// The Gemini API names the model in the path: /v1beta/models/MODEL:streamGenerateContent.
		modelIn: func(q fakeprovider.Request, model string) bool {
			var body map[string]json.RawMessage
			if json.Unmarshal(q.Body, &body) != nil {
				return false
			}
			_, inBody := body["model"]
			return strings.Contains(q.Path, "/models/"+model+":") && !inBody
		},
	}
}

func openCodeForkCase() forkMoreCase {
	c := openCodeRepoCase()
	call := fakeprovider.Call
	return forkMoreCase{
		forkCase: forkCase{realCase: c,
			other: func() fakeprovider.Script {
				return fakeprovider.Script{Threads: []fakeprovider.Thread{
					{Name: "main", Marker: "[rh-opencode-repo]", Turns: []fakeprovider.Turn{
						never, never,
						{Calls: []tape.ToolCall{call("bash", map[string]any{"command": "tail -1 src/names.txt | xargs ./greet.sh | tee out.txt", "description": "greet the last name"})}},
						{Text: "Done another way: greeted lin."},
					}},
					openCodeTitle(),
				}}
			},
			check: forkRepoCheck,
		},
		modelIn: func(q fakeprovider.Request, model string) bool {
			return strings.Contains(string(q.Body), `"model":"`+model+`"`)
		},
	}
}

// forkRepoCheck: the other continuation ran on the served prefix's edits.
func forkRepoCheck(t *testing.T, state map[string]string) {
	assert.Equal(t, "Hello, lin\n", state["out.txt"], "the other continuation ran, on the served prefix's edit of greet.sh")
	assert.Equal(t, "# Greeter\n\nRun ./greet.sh NAME: it prints Hello, NAME.\n", state["README.md"], "the served edit (step 1) is in the workspace")
}

// TestRealHarnessForkGeminiOpenCode records real Gemini CLI and real OpenCode on the
// greeter repository (four steps: reads, edits, a command, an answer), then forks each tape
// at step 2 with tapebox fork, in a fresh temporary directory (the default), onto a second
// fake provider that scripts another continuation with --model other-model. tapebox fork
// sets the harness up as record does (Gemini CLI's GEMINI_CLI_HOME, OpenCode's config). The
// fork tape's steps before 2 are the recording's, the rest the second provider's (and it
// gets exactly those, with the model overridden: in the path for the Gemini API, in the
// body for Anthropic's), meta.forked_from names the recording, the recording's directory
// is never created, and the fork's workspace ends in the other continuation's files.
func TestRealHarnessForkGeminiOpenCode(t *testing.T) {
	r := newRig(t)
	for _, c := range []forkMoreCase{geminiForkCase(), openCodeForkCase()} {
		t.Run(c.name, func(t *testing.T) {
			needHarness(t, c.harness)
			recPath, _, first := recordRealServer(t, r, c.realCase, t.TempDir())
			rec, err := tape.LoadFile(recPath)
			require.NoError(t, err)
			recorded := len(first.Requests())
			agent := agentThread(t, rec)

			second := fakeprovider.New(c.other())
			require.NoError(t, second.Start())
			t.Cleanup(func() { second.Close() })
			c.fresh(t)
			require.NoError(t, os.Remove(c.cwd)) // the recording's directory: the fork must not make it
			forkPath := filepath.Join(t.TempDir(), "fork.json")
			argv, env := c.command(t, t.TempDir())
			args := append([]string{"fork", "--tape", recPath, "--thread", agent.ID, "--at", "2", "--upstream", second.URL(), "--model", "other-model",
				"--output", forkPath, "--json", "--"}, argv...)
			code, out, errOut := r.run(t, t.TempDir(), cleanEnv(env...), args...)
			if code != 0 {
				dumpRequests(t, second)
				t.Fatalf("tapebox fork: exit %d\nstdout:\n%s\nstderr:\n%s", code, clipText(out, 4000), clipText(errOut, 8000))
			}
			keep(t, forkPath, c.name+".fork.json")
			var sum struct {
				forkSummary
				Workdir string `json:"workdir"`
			}
			require.NoError(t, json.Unmarshal([]byte(out), &sum), out)
			assert.Equal(t, "complete", sum.Ended, sum.Detail)

			// The workdir rule: a fresh temporary directory, not the tape's meta.cwd.
			assert.NotEqual(t, rec.Meta.Cwd, sum.Workdir)
			assert.True(t, strings.HasPrefix(sum.Workdir, os.TempDir()+"/"), "the fork ran in a fresh temporary directory: %s", sum.Workdir)
			assert.NoDirExists(t, c.cwd, "the recording's directory was never made")
			assert.Contains(t, errOut, "in "+sum.Workdir)
			c.check(t, localState(t, sum.Workdir))

			assert.Equal(t, recorded, len(first.Requests()), "the recording's provider receives no request during the fork")
			var live []fakeprovider.Request
			for _, q := range second.Requests() {
				if q.Endpoint == fakeprovider.EndpointMessages || q.Endpoint == fakeprovider.EndpointGemini {
					live = append(live, q)
				}
			}
			require.NotEmpty(t, live)
			assert.NoError(t, second.Err())
			for _, q := range live {
				assert.True(t, c.modelIn(q, "other-model"), "a live request asks for the overridden model: %s %s", q.Path, clipText(string(q.Body), 300))
			}
			ft, err := tape.LoadFile(forkPath)
			require.NoError(t, err)
			require.NotNil(t, ft.Meta.ForkedFrom)
			assert.Equal(t, rec.Meta.TapeID, ft.Meta.ForkedFrom.TapeID)
			assert.Equal(t, map[string]string{"model": "other-model"}, ft.Meta.ForkedFrom.Overrides)
			assert.Equal(t, 2, sum.Served[agent.ID])
			assert.Equal(t, len(live), ft.Totals().Steps-sum.ServedSteps, "the second provider receives exactly the live steps")
			assert.Equal(t, rec.Meta.Harness, ft.Meta.Harness)

			fa := ft.Thread(agent.ID)
			require.NotNil(t, fa, "the fork tape has the agent's thread %s", agent.ID)
			require.Len(t, fa.Steps, 4)
			// The served steps are the recording's, the paths under its meta.cwd naming the
			// fork's directory (which the fork tape's meta.cwd names).
			assert.Equal(t, sum.Workdir, ft.Meta.Cwd, "the fork tape's meta.cwd is where the fork ran")
			moved := func(b []byte) string { return strings.ReplaceAll(string(b), rec.Meta.Cwd, sum.Workdir) }
			for i := range 2 {
				assert.Equal(t, moved(agent.Steps[i].Response.Raw), string(fa.Steps[i].Response.Raw), "step %d's answer is the recording's", i)
				want, err := json.Marshal(agent.Steps[i].ToolCalls)
				require.NoError(t, err)
				got, err := json.Marshal(fa.Steps[i].ToolCalls)
				require.NoError(t, err)
				assert.Equal(t, moved(want), string(got), "step %d's calls are the recording's", i)
				want, err = json.Marshal(agent.Steps[i].ToolResults)
				require.NoError(t, err)
				got, err = json.Marshal(fa.Steps[i].ToolResults)
				require.NoError(t, err)
				assert.Equal(t, moved(want), string(got), "step %d's results are the recording's", i)
			}
			assert.NotEqual(t, agent.Steps[2].ToolCalls[0].Input, fa.Steps[2].ToolCalls[0].Input, "step 2 is the other continuation's")
			assert.Contains(t, string(fa.Steps[2].ToolCalls[0].Input), "tail -1 src/names.txt")
			assert.Equal(t, "Done another way: greeted lin.", fa.Steps[3].Response.Text())
			assert.Contains(t, tape.BodyModel(fa.Steps[3].Request.Raw)+fa.Steps[3].Request.Path, "other-model")

			vcode, vout, verr := r.run(t, t.TempDir(), cleanEnv(), "validate", forkPath)
			assert.Equal(t, 0, vcode, "the fork tape validates\n%s%s", vout, verr)
			_, text, _ := r.run(t, t.TempDir(), cleanEnv(), "compare", recPath, forkPath)
			assert.Contains(t, text, "FORK at thread "+agent.ID+" step 2")
			assert.Contains(t, text, "common prefix: 2 steps of thread "+agent.ID, "compare knows the fork's directory stands for the recording's")
			t.Logf("fork of %s at step 2 in %s: %d served, %d live, reached after %.0f ms (the recording: %.0f ms)\n%s",
				c.name, sum.Workdir, sum.ServedSteps, sum.LiveSteps, sum.ToForkMS, sum.RecordedToFork, text)
		})
	}
}
