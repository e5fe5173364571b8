package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/internal/testutil/realharness"
	"github.com/tapebox/tapebox/tape"
	"github.com/tapebox/tapebox/tape/provider"
	"github.com/tapebox/tapebox/testkit/fakeprovider"
)

// realCase is a task for one real harness: the scripted model, where it runs, how to start
// the harness, and what its recording must hold.
type realCase struct {
	name     string // the subtest's name and the kept tapes' stem; empty: harness
	harness  string // realharness.Claude or realharness.Codex
	version  string // pinned in harnesses/package.json
	provider tape.Provider
	// cwd is the absolute working directory; results hold absolute paths, so every replay
	// (container, local, simulator) runs at this same path.
	cwd string
	// scratch are the harness's own directories outside cwd (where Claude Code keeps
	// background task output): removed before every run, so that no run reads what an
	// earlier one left.
	scratch []string
	script  func() fakeprovider.Script
	// command returns the harness's command line, run in cwd with HOME=home, and the
	// variables it needs besides its provider's base URL.
	command func(t *testing.T, home string) (argv, env []string)
	// baseURL is the variable that points the command at a provider root (what tapebox
	// record sets for it, and what a simulator run sets by hand).
	baseURL func(root string) string
	// check looks at the recording and the end state the harness left.
	check func(t *testing.T, rec *tape.Tape, state map[string]string)
	// repo, when set, is what the working directory holds before the harness starts (path ->
	// contents; a path ending in "*" is made executable, without the star): a repository
	// the agent works on. Only the recording gets it; every replay starts from the tape's
	// snapshot of it.
	repo map[string]string
}

// TestRealHarnesses records real Claude Code and real Codex CLI through tapebox record
// against the scripted provider (issue 5), replays each tape in executor mode in a fresh
// container and locally, and replays it in simulator mode with the same harness (issue 6).
// Every replay must end in the files the harness left and compare identical. The official
// SDKs, streaming and not, replay against the simulator too. (One top-level test, so that
// the tapebox binary is built once.)
func TestRealHarnesses(t *testing.T) {
	r := newRig(t)
	for _, c := range []realCase{claudeCase(), codexCase(), codexSubagentCase(), claudeRepoCase(), codexRepoCase(), geminiCase(), geminiRepoCase()} {
		if c.name == "" {
			c.name = c.harness
		}
		t.Run(c.name, func(t *testing.T) {
			needHarness(t, c.harness)
			recPath := replayReal(t, r, c)
			if c.repo != nil {
				t.Run("executor/docker-cli", func(t *testing.T) { repoReplays(t, r, c, recPath) })
			}
		})
	}
	t.Run("codex-concurrent-runs", func(t *testing.T) { codexConcurrentRuns(t, r) })
	t.Run("official-sdks", func(t *testing.T) { officialSDKs(t, r) })
}

// fresh empties the working directory and removes the harness's scratch directories.
func (c realCase) fresh(t *testing.T) {
	t.Helper()
	freshDir(t, c.cwd)
	for _, d := range c.scratch {
		require.NoError(t, os.RemoveAll(d))
		t.Cleanup(func() { os.RemoveAll(d) })
	}
}

// recordReal runs the harness through tapebox record against the scripted provider and
// checks the tape: it validates, names the harness and its version, ended complete, holds
// one step per model call and the tool results the harness sent. It returns the tape's path
// and the end state of the working directory.
// replayReal records c with the real harness, then replays the tape in executor mode in a
// fresh container and locally, and in simulator mode with the harness again: each replay
// must end in the files the harness left and compare identical. It returns the recording.
func replayReal(t *testing.T, r *rig, c realCase) string {
	recPath, state := recordReal(t, r, c)
	t.Run("executor/docker", func(t *testing.T) {
		rec, err := tape.LoadFile(recPath)
		require.NoError(t, err)
		repPath, got := dockerReplay(t, recPath, rec, c.cwd, c.replayUser())
		keep(t, repPath, c.name+".docker.json")
		checkSameState(t, state, got, "docker replay")
		report := r.requireIdentical(t, recPath, repPath)
		t.Logf("docker: compare identical, %d steps, %d identifiers", report.StepsCompared, len(report.Identifiers))
	})
	t.Run("executor/local", func(t *testing.T) {
		c.fresh(t)
		repPath := filepath.Join(t.TempDir(), "replay-local.json")
		code, _, errOut := r.run(t, t.TempDir(), cleanEnv(), "replay", "--tape", recPath, "--sandbox", "local:"+c.cwd,
			"--output", repPath, "--speed", "0")
		require.Equal(t, 0, code, "tapebox replay --sandbox local:%s\n%s", c.cwd, errOut)
		keep(t, repPath, c.name+".local.json")
		checkSameState(t, state, localState(t, c.cwd), "local replay")
		r.requireIdentical(t, recPath, repPath)
	})
	t.Run("simulator", func(t *testing.T) {
		simulateReal(t, r, c, recPath, state)
	})
	return recPath
}

func recordReal(t *testing.T, r *rig, c realCase) (string, map[string]string) {
	t.Helper()
	return recordRealHome(t, r, c, t.TempDir())
}

// recordRealHome is recordReal with the harness's home directory given, for tests that read
// what the harness itself wrote there (its session transcript).
func recordRealHome(t *testing.T, r *rig, c realCase, home string) (string, map[string]string) {
	t.Helper()
	recPath, state, _ := recordRealServer(t, r, c, home)
	return recPath, state
}

// recordRealServer is recordRealHome that also returns the scripted provider (serving until
// the test ends): the test of a fork counts its requests.
func recordRealServer(t *testing.T, r *rig, c realCase, home string) (string, map[string]string, *fakeprovider.Server) {
	t.Helper()
	c.fresh(t)
	writeRepo(t, c.cwd, c.repo)
	srv := fakeprovider.New(c.script())
	require.NoError(t, srv.Start())
	t.Cleanup(func() { srv.Close() })
	argv, env := c.command(t, home)
	recPath := filepath.Join(t.TempDir(), "recording.json")
	args := append([]string{"record", "--output", recPath, "--upstream", srv.URL(), "--task", "id=real-" + c.name, "--"}, argv...)
	start := time.Now()
	code, out, errOut := r.run(t, c.cwd, cleanEnv(env...), args...)
	if code != 0 || srv.Err() != nil {
		dumpRequests(t, srv)
		t.Fatalf("tapebox record -- %s: exit %d, fake provider: %v\nstdout:\n%s\nstderr:\n%s", filepath.Base(argv[0]), code, srv.Err(),
			clipText(out, 6000), clipText(errOut, 6000))
	}
	t.Logf("recorded %s in %v", c.harness, time.Since(start).Round(time.Millisecond))
	state := localState(t, c.cwd)

	code, vout, verr := r.run(t, t.TempDir(), cleanEnv(), "validate", recPath)
	require.Equal(t, 0, code, "tapebox validate %s\n%s%s", recPath, vout, verr)
	rec, err := tape.LoadFile(recPath)
	require.NoError(t, err)
	assert.Equal(t, c.harness, rec.Meta.Harness, "meta.harness detected from the traffic")
	assert.Equal(t, c.version, rec.Meta.HarnessVersion, "meta.harness_version")
	assert.Equal(t, c.provider, rec.Meta.Provider)
	assert.Equal(t, c.cwd, rec.Meta.Cwd, "meta.cwd: where tapebox record ran the harness")
	if main := rec.Main(); main != nil && len(main.Steps) > 0 {
		assert.Equal(t, c.cwd, provider.Cwd(&main.Steps[0].Request),
			"the harness names its working directory in its first request (what a gateway without record learns)")
	}
	require.NotNil(t, rec.Meta.Ended)
	assert.Equal(t, tape.EndComplete, rec.Meta.Ended.Reason, rec.Meta.Ended.Detail)

	calls := 0
	for _, q := range srv.Requests() {
		if q.Endpoint == fakeprovider.EndpointMessages || q.Endpoint == fakeprovider.EndpointResponses || q.Endpoint == fakeprovider.EndpointGemini {
			calls++
		}
	}
	totals := rec.Totals()
	assert.Equal(t, calls, totals.Steps, "one step per model call the harness made")
	checked := 0
	if c.provider != tape.ProviderGemini {
		// The Gemini CLI names its calls itself (the API sends no ids): its case's check
		// reads the results, and the gateway's tests hold them against what it sent.
		checked = requireResultsAsSent(t, rec, srv)
	}
	t.Logf("tape: %d threads, %d steps, %d tool calls, %d results as the harness sent them: %s",
		len(rec.Threads), totals.Steps, len(callsOf(rec)), checked, strings.Join(callsOf(rec), ", "))
	c.check(t, rec, state)
	keep(t, recPath, c.name+".json")
	return recPath, state, srv
}

// simulateReal serves the tape in simulator mode and runs the same harness against it in a
// fresh directory at the same path: it must make the same tool calls, end in the same files,
// and the replay tape must compare identical.
func simulateReal(t *testing.T, r *rig, c realCase, recPath string, state map[string]string) {
	t.Helper()
	c.fresh(t)
	require.NoError(t, os.Remove(c.cwd)) // the simulator restores the workspace into a missing or empty directory
	repPath := filepath.Join(t.TempDir(), "replay-sim.json")
	sim, root := r.simulator(t, recPath, repPath, "--workspace", c.cwd)
	argv, env := c.command(t, t.TempDir())
	h := startProc(t, c.cwd, cleanEnv(append(env, c.baseURL(root))...), argv[0], argv[1:]...)
	code := h.wait(t, 3*time.Minute)
	simCode := sim.wait(t, time.Minute)
	keep(t, repPath, c.name+".sim.json")
	checkSameState(t, state, localState(t, c.cwd), "simulator replay")
	rec, err := tape.LoadFile(recPath)
	require.NoError(t, err)
	rep, err := tape.LoadFile(repPath)
	require.NoError(t, err)
	checkServedIdentifiers(t, rec, rep)
	if code != 0 || simCode != 0 {
		t.Fatalf("%s against the simulator: exit %d; simulator: exit %d\n%s\nsimulator log:\n%s\n%s output (end):\n%s",
			c.harness, code, simCode, r.compareText(t, recPath, repPath), clipText(sim.stderr(), 6000), c.harness, tail(h.stdout()+h.stderr(), 800))
	}
	r.requireIdentical(t, recPath, repPath)
	assert.Equal(t, callsOf(rec), callsOf(rep), "the harness made the recorded tool calls")
	assert.Equal(t, c.cwd, rep.Meta.Cwd, "a simulator replay tape's meta.cwd: where the harness ran, as its first request says")
}

// keep copies a tape into $TAPEBOX_E2E_KEEP, when set, to look at after the test.
func keep(t *testing.T, path, name string) {
	t.Helper()
	if dir := os.Getenv("TAPEBOX_E2E_KEEP"); dir != "" {
		copyFile(t, path, filepath.Join(dir, name))
	}
}

// dumpRequests logs what the harness sent the fake provider, for a failing recording.
func dumpRequests(t *testing.T, srv *fakeprovider.Server) {
	t.Helper()
	for _, q := range srv.Requests() {
		t.Logf("%s %s?%s thread=%q step=%d attempt=%d: %s", q.Method, q.Path, q.Query, q.Thread, q.Step, q.Attempt, clipText(string(q.Body), 1500))
	}
}

var (
	claudeTaskPath = regexp.MustCompile(`Output is being written to: (\S+\.output)`)
	codexSession   = regexp.MustCompile(`Process running with session ID (\d+)`)
)

func claudeCase() realCase {
	const cwd = "/tmp/tapebox-rh-claude"
	call := fakeprovider.Call
	return realCase{
		harness: realharness.Claude, version: "2.1.332", provider: tape.ProviderAnthropic, cwd: cwd,
		scratch: []string{fmt.Sprintf("/tmp/claude-%d/-tmp-tapebox-rh-claude", os.Getuid())},
		script: func() fakeprovider.Script {
			return fakeprovider.Script{Threads: []fakeprovider.Thread{
				{Name: "main", Marker: "[rh-claude]", Turns: []fakeprovider.Turn{
					// Parallel calls: a file and a directory.
					{Text: "Writing the notes and preparing logs.", Calls: []tape.ToolCall{
						call("Write", map[string]any{"file_path": cwd + "/notes.txt", "content": "alpha\nbeta\ngamma\n"}),
						call("Bash", map[string]any{"command": "mkdir -p logs && echo ready", "description": "make logs/"}),
					}},
					{Calls: []tape.ToolCall{call("Edit", map[string]any{"file_path": cwd + "/notes.txt", "old_string": "beta", "new_string": "BETA"})}},
					{Calls: []tape.ToolCall{call("Bash", map[string]any{"command": "echo bg-started; sleep 0.5; echo bg-done > logs/bg.txt",
						"description": "slow job", "run_in_background": true})}},
					{Calls: []tape.ToolCall{call("Bash", map[string]any{"command": "echo about to fail; exit 1", "description": "fail on purpose"})}},
					{Calls: []tape.ToolCall{call("Agent", map[string]any{"description": "count lines", "subagent_type": "general-purpose",
						"prompt": "[rh-claude-sub] Count the lines of notes.txt into logs/count.txt.", "run_in_background": false})}},
					{Calls: []tape.ToolCall{call("Bash", map[string]any{"command": "sleep 1; cat logs/bg.txt", "description": "wait for the job"})}},
					// The model reads the background task's output file at the path the harness made up.
					afterResult(tape.ProviderAnthropic, "toolu_fake_main_2_0", func(text string) (fakeprovider.Turn, error) {
						m := claudeTaskPath.FindStringSubmatch(text)
						if m == nil {
							return fakeprovider.Turn{}, fmt.Errorf("no task output path in %s", text)
						}
						return fakeprovider.Turn{Calls: []tape.ToolCall{call("Read", map[string]any{"file_path": m[1]})}}, nil
					}),
					{Text: "Done: notes edited, job finished, lines counted."},
				}},
				{Name: "sub", Marker: "[rh-claude-sub]", Turns: []fakeprovider.Turn{
					{Calls: []tape.ToolCall{call("Read", map[string]any{"file_path": cwd + "/notes.txt"})}},
					{Calls: []tape.ToolCall{call("Bash", map[string]any{"command": "wc -l < notes.txt > logs/count.txt && cat logs/count.txt", "description": "count"})}},
					{Text: "notes.txt has 3 lines."},
				}},
			}}
		},
		command: func(t *testing.T, home string) ([]string, []string) {
			bin, err := realharness.ClaudePath()
			require.NoError(t, err)
			return []string{bin, "--dangerously-skip-permissions", "--output-format", "stream-json", "--verbose",
					"-p", "[rh-claude] Keep notes, run a slow job, and have a helper count the lines."},
				[]string{"HOME=" + home, "ANTHROPIC_API_KEY=sk-test", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1", "IS_SANDBOX=1"}
		},
		baseURL: func(root string) string { return "ANTHROPIC_BASE_URL=" + root },
		check: func(t *testing.T, rec *tape.Tape, state map[string]string) {
			require.Len(t, rec.Threads, 2, "main and the subagent")
			main := rec.Main()
			require.NotNil(t, main)
			sub := rec.Children(main)
			require.Len(t, sub, 1, "one subagent thread")
			require.NotNil(t, sub[0].Parent)
			assert.Equal(t, tape.Parent{ThreadID: main.ID, ToolCallID: "toolu_fake_main_4_0"}, *sub[0].Parent, "subagent linked to its Agent call")
			require.Len(t, sub[0].Steps, 3)
			require.Len(t, main.Steps, 8)
			res := func(th *tape.Thread, step, i int) tape.ToolResult {
				require.Greater(t, len(th.Steps[step].ToolResults), i, "thread %s step %d has no result %d", th.ID, step, i)
				return th.Steps[step].ToolResults[i]
			}
			assert.Equal(t, "File created successfully at: "+cwd+"/notes.txt (file state is current in your context — no need to Read it back)", res(main, 0, 0).Text())
			assert.Equal(t, "ready", res(main, 0, 1).Text())
			// The note follows because the harness wrote the file in this session.
			assert.Equal(t, "The file "+cwd+"/notes.txt has been updated successfully. (file state is current in your context — no need to Read it back)", res(main, 1, 0).Text())
			assert.Regexp(t, `^Command running in background with ID: \w+\. Output is being written to: /tmp/claude-0/-tmp-tapebox-rh-claude/`, res(main, 2, 0).Text())
			assert.Equal(t, "Exit code 1\nabout to fail", res(main, 3, 0).Text())
			assert.True(t, res(main, 3, 0).IsError)
			assert.Contains(t, res(main, 4, 0).Text(), "notes.txt has 3 lines.")
			assert.Equal(t, "bg-done", res(main, 5, 0).Text())
			assert.Contains(t, res(main, 6, 0).Text(), "bg-started")
			assert.Equal(t, "3", res(sub[0], 1, 0).Text())
			assert.Equal(t, map[string]string{"notes.txt": "alpha\nBETA\ngamma\n", "logs/": "", "logs/bg.txt": "bg-done\n", "logs/count.txt": "3\n"}, state)
		},
	}
}

func codexCase() realCase {
	const cwd = "/tmp/tapebox-rh-codex"
	call := fakeprovider.Call
	exec := func(cmd string) tape.ToolCall { return call("exec_command", map[string]any{"cmd": cmd}) }
	return realCase{
		harness: realharness.Codex, version: "0.171.0", provider: tape.ProviderOpenAIResponses, cwd: cwd,
		script: func() fakeprovider.Script {
			return fakeprovider.Script{Threads: []fakeprovider.Thread{{Name: "main", Marker: "[rh-codex]", Turns: []fakeprovider.Turn{
				// Parallel calls.
				{Text: "Making the docs.", Calls: []tape.ToolCall{
					exec(`mkdir -p docs && printf 'one\ntwo\nthree\n' > docs/first.txt && echo made`),
					exec("echo hi; pwd"),
				}},
				{Calls: []tape.ToolCall{fakeprovider.Custom("apply_patch", "*** Begin Patch\n*** Add File: docs/second.txt\n+second\n*** Update File: docs/first.txt\n@@\n one\n-two\n+TWO\n three\n*** End Patch\n")}},
				{Calls: []tape.ToolCall{fakeprovider.Custom("apply_patch", "*** Begin Patch\n*** Update File: docs/second.txt\n*** Move to: docs/renamed.txt\n@@\n-second\n+second, renamed\n*** Delete File: docs/first.txt\n*** End Patch\n")}},
				{Calls: []tape.ToolCall{exec("cat docs/renamed.txt; ls docs; exit 3")}},
				// Outlives its yield time: the model polls the session the harness made up.
				{Calls: []tape.ToolCall{call("exec_command", map[string]any{"cmd": "echo early; sleep 0.6; echo late > docs/late.txt; echo late", "yield_time_ms": 200})}},
				pollSession("call_fake_main_4_0"),
				{Text: "Done: docs patched, the slow command finished."},
			}}}}
		},
		command: func(t *testing.T, home string) ([]string, []string) {
			bin, err := realharness.CodexPath()
			require.NoError(t, err)
			codexHome := filepath.Join(home, ".codex")
			require.NoError(t, os.MkdirAll(codexHome, 0o755))
			// The wrapper turns @BASE_URL@ into $TAPEBOX_GATEWAY_URL/v1: the gateway's port is
			// known only inside tapebox record.
			require.NoError(t, os.WriteFile(filepath.Join(codexHome, "config.toml.in"), []byte(realharness.CodexConfigTOML("@BASE_URL@", "")), 0o644))
			wrapper, err := filepath.Abs(filepath.Join("testdata", "harness", "codex-gateway.sh"))
			require.NoError(t, err)
			env := []string{"HOME=" + home, "CODEX_HOME=" + codexHome, "FAKE_OPENAI_KEY=sk-test", "CODEX_MANAGED_BY_NPM=1"}
			if i := strings.Index(bin, "/node_modules/"); i >= 0 {
				env = append(env, "CODEX_MANAGED_PACKAGE_ROOT="+bin[:i]+"/node_modules/@openai/codex")
			}
			return []string{"/bin/sh", wrapper, bin, "exec", "--skip-git-repo-check", "--json",
				"[rh-codex] Make the docs, patch them, and wait for a slow command."}, env
		},
		baseURL: func(root string) string { return "TAPEBOX_GATEWAY_URL=" + root },
		check: func(t *testing.T, rec *tape.Tape, state map[string]string) {
			require.Len(t, rec.Threads, 1)
			main := rec.Main()
			require.Len(t, main.Steps, 7)
			res := func(step, i int) string {
				require.Greater(t, len(main.Steps[step].ToolResults), i, "step %d has no result %d", step, i)
				return main.Steps[step].ToolResults[i].Text()
			}
			assert.Regexp(t, `(?s)^Chunk ID: \w+\nWall time: [\d.]+ seconds\nProcess exited with code 0\n.*Output:\nmade\n$`, res(0, 0))
			assert.Contains(t, res(0, 1), "Output:\nhi\n"+cwd+"\n")
			assert.Contains(t, res(1, 0), "Success. Updated the following files:\nA docs/second.txt\nM docs/first.txt\n")
			assert.Contains(t, res(2, 0), "Success. Updated the following files:\nM docs/renamed.txt\nD docs/first.txt\n")
			assert.Contains(t, res(3, 0), "Process exited with code 3")
			assert.Regexp(t, `Process running with session ID \d+`, res(4, 0))
			assert.Contains(t, res(5, 0), "late")
			assert.Equal(t, map[string]string{"docs/": "", "docs/renamed.txt": "second, renamed\n", "docs/late.txt": "late\n"}, state)
		},
	}
}

// codexSubagentCase is a Codex run with a sub-agent, in multi_agent_v1, the tool set Codex
// 0.171.0 offers by default (docs/codex-subagents.md): the model loads the deferred
// namespace with tool_search, spawns a child that writes a file, waits for it with the
// agent id the spawn returned, and ends. The child's thread must be linked to the spawn
// call, and every replay must reproduce the child's file.
func codexSubagentCase() realCase {
	c := codexCase()
	const cwd = "/tmp/tapebox-rh-codex-sub"
	c.name, c.cwd = "codex-subagent", cwd
	ns := map[string]string{"spawn_agent": "multi_agent_v1", "wait_agent": "multi_agent_v1"}
	call := fakeprovider.Call
	const spawnID = "call_fake_main_1_0"
	c.script = func() fakeprovider.Script {
		return fakeprovider.Script{Threads: []fakeprovider.Thread{
			{Name: "main", Marker: "[rh-codex-sub]", Turns: []fakeprovider.Turn{
				{Items: []map[string]any{{"type": "tool_search_call", "id": "ts_fake_main_0", "call_id": "ts_call_main_0", "status": "completed",
					"execution": "client", "arguments": map[string]any{"query": "spawn a sub-agent", "limit": 8}}}},
				{Calls: []tape.ToolCall{call("spawn_agent", map[string]any{"message": "[rh-codex-child] Write the word child to sub/child.txt, then answer done."})}, Namespaces: ns},
				afterResult(tape.ProviderOpenAIResponses, spawnID, func(text string) (fakeprovider.Turn, error) {
					var out struct {
						AgentID string `json:"agent_id"`
					}
					if err := json.Unmarshal([]byte(text), &out); err != nil || out.AgentID == "" {
						return fakeprovider.Turn{}, fmt.Errorf("no agent id in the spawn output %s", text)
					}
					return fakeprovider.Turn{Calls: []tape.ToolCall{call("wait_agent", map[string]any{"targets": []string{out.AgentID}, "timeout_ms": 30000})}, Namespaces: ns}, nil
				}),
				{Text: "Done: the sub-agent wrote sub/child.txt."},
			}},
			{Name: "child", Marker: "[rh-codex-child]", Turns: []fakeprovider.Turn{
				{Calls: []tape.ToolCall{call("exec_command", map[string]any{"cmd": "mkdir -p sub && echo child > sub/child.txt && echo wrote"})}},
				{Text: "done"},
			}},
		}}
	}
	command := c.command
	c.command = func(t *testing.T, home string) ([]string, []string) {
		argv, env := command(t, home)
		argv[len(argv)-1] = "[rh-codex-sub] Have a sub-agent write sub/child.txt."
		return argv, env
	}
	c.check = func(t *testing.T, rec *tape.Tape, state map[string]string) {
		require.Len(t, rec.Threads, 2)
		main := rec.Main()
		require.Len(t, main.Steps, 4)
		child := rec.Threads[1]
		require.NotNil(t, child.Parent, "the child thread is linked to its spawn call")
		assert.Equal(t, tape.Parent{ThreadID: main.ID, ToolCallID: spawnID}, *child.Parent)
		require.Len(t, child.Steps, 2)
		require.Len(t, main.Steps[1].ToolResults, 1)
		assert.Regexp(t, `^\{"agent_id":"[0-9a-f-]+","nickname":"[^"]+"\}$`, main.Steps[1].ToolResults[0].Text())
		require.Len(t, main.Steps[2].ToolResults, 1)
		assert.Contains(t, main.Steps[2].ToolResults[0].Text(), `"completed":"done"`)
		assert.Contains(t, child.Steps[0].ToolResults[0].Text(), "Output:\nwrote\n")
		assert.Equal(t, map[string]string{"sub/": "", "sub/child.txt": "child\n"}, state)
	}
	return c
}

// jsonNumber is an integer id as the model writes it in a tool call's JSON.
type jsonNumber string

// MarshalJSON writes the number without quotes.
func (n jsonNumber) MarshalJSON() ([]byte, error) {
	if strings.Trim(string(n), "0123456789") != "" || n == "" {
		return nil, fmt.Errorf("not an integer: %q", string(n))
	}
	return []byte(n), nil
}
