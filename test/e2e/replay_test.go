package e2e

import (
	"context"
	"encoding/json"
	"flag"
	"net/http/httptest"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/compare"
	"github.com/tapebox/tapebox/controller"
	"github.com/tapebox/tapebox/gateway"
	"github.com/tapebox/tapebox/internal/testutil/dockertest"
	"github.com/tapebox/tapebox/sandbox"
	"github.com/tapebox/tapebox/tape"
	"github.com/tapebox/tapebox/testkit/fakeprovider"
	"github.com/tapebox/tapebox/testkit/miniagent"
)

var update = flag.Bool("update", false, "rebuild the hand-built tapes in ../../testdata/replay")

// handTape is a tape whose tool results are written by hand, in the exact format of the
// harness it imitates (see /work/shared/captures/README.md), so a replay that matches it
// proves the executor formats results as that harness does.
type handTape struct {
	name     string
	provider tape.Provider
	harness  string
	cwd      string
	prompt   string
	tools    []miniagent.Tool
	script   fakeprovider.Script
	results  map[string]tape.ToolResult // by the call's position "thread/turn/index"
	// files are the sandbox's expected end state (relative to cwd); "" means absent.
	files map[string]string
}

func text(s string, isErr bool) tape.ToolResult {
	return tape.ToolResult{Content: []tape.Block{{Type: tape.BlockText, Text: s}}, IsError: isErr}
}

func claudeTape() handTape {
	const cwd = "/tmp/tapebox-e2e-claude"
	call := fakeprovider.Call
	return handTape{
		name: "claude-code", provider: tape.ProviderAnthropic, harness: "claude-code", cwd: cwd,
		prompt: "Write notes, edit them, run a background job, and have a helper read the notes.",
		tools: []miniagent.Tool{
			{Name: "Bash", Schema: `{"type":"object"}`}, {Name: "Write", Schema: `{"type":"object"}`},
			{Name: "Edit", Schema: `{"type":"object"}`}, {Name: "Read", Schema: `{"type":"object"}`},
			{Name: "Agent", Schema: `{"type":"object"}`},
		},
		script: fakeprovider.Script{Threads: []fakeprovider.Thread{
			{Name: "main", Turns: []fakeprovider.Turn{
				{Text: "Writing the notes and preparing logs.", Calls: []tape.ToolCall{
					call("Write", map[string]string{"file_path": cwd + "/notes.txt", "content": "alpha\nbeta\n"}),
					call("Bash", map[string]string{"command": "mkdir -p logs && echo ready", "description": "make logs/"}),
				}},
				{Calls: []tape.ToolCall{call("Edit", map[string]any{"file_path": cwd + "/notes.txt", "old_string": "beta", "new_string": "gamma", "replace_all": false})}},
				{Calls: []tape.ToolCall{call("Bash", map[string]any{"command": "sleep 0.3; echo bg-done > logs/bg.txt", "run_in_background": true})}},
				{Calls: []tape.ToolCall{call("Agent", map[string]string{"description": "read notes", "prompt": "SUBTASK-E2E: read notes.txt and report", "subagent_type": "general-purpose"})}},
				{Calls: []tape.ToolCall{call("Bash", map[string]string{"command": "sleep 1; cat logs/bg.txt"})}},
				{Calls: []tape.ToolCall{call("Bash", map[string]string{"command": "cat notes.txt; exit 2"})}},
				{Text: "Done."},
			}},
			{Name: "sub", Marker: "SUBTASK-E2E", Turns: []fakeprovider.Turn{
				{Calls: []tape.ToolCall{call("Read", map[string]string{"file_path": cwd + "/notes.txt"})}},
				{Text: "notes.txt says alpha, gamma."},
			}},
		}},
		results: map[string]tape.ToolResult{
			"main/0/0": {Content: []tape.Block{{Type: tape.BlockText, Text: "File created successfully at: " + cwd + "/notes.txt (file state is current in your context — no need to Read it back)"}}},
			"main/0/1": text("ready", false),
			"main/1/0": text("The file "+cwd+"/notes.txt has been updated successfully.", false),
			"main/2/0": text("Command running in background with ID: bq7x2k9m1. Output is being written to: /tmp/claude-0/-tmp-tapebox-e2e-claude/5c1d0e2a-1111-4c4c-9d9d-0123456789ab/tasks/bq7x2k9m1.output. You will be notified when it completes. To check interim output, use Read on that file path.", false),
			"main/4/0": text("bg-done", false),
			"main/5/0": text("Exit code 2\nalpha\ngamma", true),
			"sub/0/0":  text("1\talpha\n2\tgamma\n3\t", false),
		},
		files: map[string]string{"notes.txt": "alpha\ngamma\n", "logs/bg.txt": "bg-done\n"},
	}
}

func codexTape() handTape {
	const cwd = "/tmp/tapebox-e2e-codex"
	call := fakeprovider.Call
	exec := func(cmd string) tape.ToolCall { return call("exec_command", map[string]any{"cmd": cmd}) }
	out := func(chunk, wall, status string, tokens, body string) tape.ToolResult {
		return text("Chunk ID: "+chunk+"\nWall time: "+wall+" seconds\n"+status+"\nOriginal token count: "+tokens+"\nOutput:\n"+body, false)
	}
	return handTape{
		name: "codex", provider: tape.ProviderOpenAIResponses, harness: "codex", cwd: cwd,
		prompt: "Make docs, patch them, wait for a slow command.",
		tools: []miniagent.Tool{
			{Name: "exec_command", Schema: `{"type":"object"}`}, {Name: "write_stdin", Schema: `{"type":"object"}`},
			{Name: "apply_patch", Custom: true},
		},
		script: fakeprovider.Script{Threads: []fakeprovider.Thread{{Name: "main", Turns: []fakeprovider.Turn{
			{Calls: []tape.ToolCall{
				exec("mkdir -p docs && printf 'one\\ntwo\\nthree\\n' > docs/first.txt && echo made"),
				exec("echo hi"),
			}},
			{Calls: []tape.ToolCall{fakeprovider.Custom("apply_patch", "*** Begin Patch\n*** Add File: docs/second.txt\n+second\n*** Update File: docs/first.txt\n@@\n one\n-two\n+TWO\n three\n*** End Patch\n")}},
			{Calls: []tape.ToolCall{fakeprovider.Custom("apply_patch", "*** Begin Patch\n*** Update File: docs/second.txt\n*** Move to: docs/renamed.txt\n@@\n-second\n+second, renamed\n*** Delete File: docs/first.txt\n*** End Patch\n")}},
			{Calls: []tape.ToolCall{call("exec_command", map[string]any{"cmd": "sleep 0.5; echo slow-done", "yield_time_ms": 100})}},
			{Calls: []tape.ToolCall{call("write_stdin", map[string]any{"session_id": 48213, "chars": "", "yield_time_ms": 3000})}},
			{Calls: []tape.ToolCall{exec("cat docs/renamed.txt; ls docs; exit 3")}},
			{Text: "Done."},
		}}}},
		results: map[string]tape.ToolResult{
			"main/0/0": out("8e7254", "0.0021", "Process exited with code 0", "2", "made\n"),
			"main/0/1": out("1fac80", "0.0009", "Process exited with code 0", "1", "hi\n"),
			"main/1/0": text("Exit code: 0\nWall time: 0 seconds\nOutput:\nSuccess. Updated the following files:\nA docs/second.txt\nM docs/first.txt\n", false),
			"main/2/0": text("Exit code: 0\nWall time: 0 seconds\nOutput:\nSuccess. Updated the following files:\nM docs/renamed.txt\nD docs/first.txt\n", false),
			"main/3/0": out("a1b2c3", "0.1004", "Process running with session ID 48213", "0", ""),
			"main/4/0": out("77aa11", "0.4012", "Process exited with code 0", "3", "slow-done\n"),
			"main/5/0": out("0f0f0f", "0.0030", "Process exited with code 3", "7", "second, renamed\nrenamed.txt\n"),
		},
		files: map[string]string{"docs/renamed.txt": "second, renamed\n", "docs/first.txt": "", "docs/second.txt": ""},
	}
}

func tapePath(name string) string {
	return filepath.Join("..", "..", "testdata", "replay", name+".json")
}

// build records the hand-built tape through the gateway: the fake provider plays the model,
// the mini harness sends the hand-written results.
func build(t *testing.T, h handTape) {
	fp := fakeprovider.New(h.script)
	up := httptest.NewServer(fp)
	defer up.Close()
	tmp := filepath.Join(t.TempDir(), "run.json")
	// The mini harness names no working directory in its requests: the tape gets the one its
	// hand-written results use, as tapebox gateway --cwd gives it.
	g, err := gateway.New(gateway.Config{Output: tmp, Upstream: up.URL, Harness: h.harness, HarnessVersion: "hand-built", Cwd: h.cwd,
		Task: map[string]string{"id": "e2e-" + h.name}, Labels: map[string]string{"source": "test/e2e"}})
	require.NoError(t, err)
	gw := httptest.NewServer(g)
	defer gw.Close()
	results := func(ctx context.Context, c tape.ToolCall) (tape.ToolResult, bool) {
		for key, r := range h.results {
			parts := strings.Split(key, "/")
			turn, _ := strconv.Atoi(parts[1])
			idx, _ := strconv.Atoi(parts[2])
			want := h.script.Threads[threadIndex(h.script, parts[0])].Turns[turn].Calls[idx]
			if jsonEq(want.Input, c.Input) && want.Name == c.Name {
				return r, true
			}
		}
		t.Errorf("no hand-written result for %s %s", c.Name, c.Input)
		return text("missing", true), true
	}
	_, err = miniagent.Run(t.Context(), miniagent.Config{BaseURL: gw.URL, Provider: h.provider, Stream: true, Prompt: h.prompt,
		Dir: t.TempDir(), APIKey: "sk-hand", Tools: h.tools, RunTool: results})
	require.NoError(t, err)
	require.NoError(t, fp.Err())
	require.NoError(t, g.Finish(tape.EndComplete, ""))
	rec, err := tape.LoadFile(tmp)
	require.NoError(t, err)
	require.NoError(t, tape.Save(tapePath(h.name), rec))
}

func threadIndex(s fakeprovider.Script, name string) int {
	for i, th := range s.Threads {
		if th.Name == name {
			return i
		}
	}
	return 0
}

// TestHandTapesReplay replays the hand-built tapes locally and in a fresh container and
// checks that compare reports identical and the sandbox ends in the expected files.
func TestHandTapesReplay(t *testing.T) {
	for _, h := range []handTape{claudeTape(), codexTape()} {
		if *update {
			build(t, h)
		}
		rec, err := tape.LoadFile(tapePath(h.name))
		require.NoError(t, err, "run with -update to build it")
		t.Run(h.name+"/local", func(t *testing.T) {
			freshDir(t, h.cwd)
			replayAndCheck(t, rec, h, "local:"+h.cwd)
		})
		t.Run(h.name+"/docker", func(t *testing.T) {
			dockertest.Image(t, "tapebox/sandbox:bookworm")
			replayAndCheck(t, rec, h, "docker-image:tapebox/sandbox:bookworm")
		})
	}
}

func replayAndCheck(t *testing.T, rec *tape.Tape, h handTape, spec string) {
	ctx := t.Context()
	sb, err := sandbox.Open(ctx, spec, sandbox.Options{Cwd: h.cwd, InstallExecutor: spec != "local:"+h.cwd})
	require.NoError(t, err)
	defer sb.Close(context.WithoutCancel(ctx))
	out := filepath.Join(t.TempDir(), "replay.json")
	res, err := controller.Replay(ctx, rec, sb, controller.Options{Cwd: sb.Cwd(), Speed: 0, Output: out, Logf: t.Logf})
	require.NoError(t, err)
	rep, err := tape.LoadFile(out)
	require.NoError(t, err)
	report := compare.Compare(rec, rep)
	if !report.Identical {
		var b strings.Builder
		report.WriteText(&b)
		t.Fatalf("replay differs:\n%s", b.String())
	}
	require.Positive(t, res.ToolCalls)
	require.Positive(t, checkMutationsCaught(t, rec, rep))
	snap, err := sb.Snapshot(ctx, sb.Cwd())
	require.NoError(t, err)
	require.NotContains(t, snap, ".tapebox", "the executor keeps its state outside the workspace")
	for p, want := range h.files {
		f, ok := snap[p]
		if want == "" {
			require.False(t, ok, "%s should not exist", p)
			continue
		}
		require.True(t, ok, "%s missing", p)
		require.Equal(t, want, string(f.Data), p)
	}
}

func jsonEq(a, b []byte) bool {
	var x, y any
	return json.Unmarshal(a, &x) == nil && json.Unmarshal(b, &y) == nil && reflect.DeepEqual(x, y)
}
