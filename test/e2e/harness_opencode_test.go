package e2e

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/internal/testutil/realharness"
	"github.com/tapebox/tapebox/tape"
	"github.com/tapebox/tapebox/testkit/fakeprovider"
)

// TestRealOpenCode records the real opencode (harnesses/node_modules) through tapebox
// record -- opencode run, which points opencode's anthropic provider at the gateway with a
// temporary config: parallel calls (write and bash; read, glob and grep), an edit, a
// failing command, a todo list, and a task subagent that runs a command of its own. The
// tape replays in executor mode in a fresh container and locally, and in simulator mode
// with opencode again; every replay ends in the files opencode left and compares identical.
func TestRealOpenCode(t *testing.T) {
	r := newRig(t)
	c := openCodeCase()
	c.name = c.harness
	needHarness(t, c.harness)
	replayReal(t, r, c)
}

func openCodeCase() realCase {
	const cwd = "/tmp/tapebox-rh-opencode"
	call := fakeprovider.Call
	return realCase{
		harness: realharness.OpenCode, version: "1.18.33", provider: tape.ProviderAnthropic, cwd: cwd,
		script: func() fakeprovider.Script {
			return fakeprovider.Script{Threads: []fakeprovider.Thread{
				{Name: "main", Marker: "[rh-opencode]", Turns: []fakeprovider.Turn{
					{Text: "Writing the notes and preparing logs.", Calls: []tape.ToolCall{
						call("write", map[string]any{"filePath": cwd + "/notes.txt", "content": "alpha\nbeta\ngamma\n"}),
						call("bash", map[string]any{"command": "mkdir -p logs && echo ready", "description": "make logs/"}),
					}},
					{Calls: []tape.ToolCall{call("edit", map[string]any{"filePath": cwd + "/notes.txt", "oldString": "beta", "newString": "BETA"})}},
					{Calls: []tape.ToolCall{call("bash", map[string]any{"command": "echo about to fail; exit 1", "description": "fail on purpose"})}},
					{Calls: []tape.ToolCall{call("task", map[string]any{"description": "count lines", "subagent_type": "general",
						"prompt": "[rh-opencode-sub] Count the lines of notes.txt into logs/count.txt."})}},
					{Calls: []tape.ToolCall{
						call("read", map[string]any{"filePath": cwd + "/notes.txt"}),
						call("glob", map[string]any{"pattern": "**/*.txt"}),
						// One file matches: ripgrep searches files in parallel, so the real
						// opencode lists two matching files in either order, and the
						// simulator run (the real harness again) differed from the
						// recording now and then.
						call("grep", map[string]any{"pattern": "BETA"}),
					}},
					{Calls: []tape.ToolCall{call("todowrite", map[string]any{"todos": []any{
						map[string]any{"content": "edit notes", "status": "completed", "priority": "high"},
						map[string]any{"content": "count lines", "status": "completed", "priority": "medium"},
					}})}},
					{Text: "Done: notes edited, lines counted."},
				}},
				{Name: "sub", Marker: "[rh-opencode-sub]", Turns: []fakeprovider.Turn{
					{Calls: []tape.ToolCall{call("bash", map[string]any{"command": "wc -l < notes.txt > logs/count.txt && cat logs/count.txt", "description": "count"})}},
					{Text: "notes.txt has 3 lines."},
				}},
				// opencode asks its small model for the session's title beside the agent's
				// first call: its own thread, plain text.
				{Name: "title", Marker: "You are a title generator", Turns: []fakeprovider.Turn{{Text: "Notes and line counts"}}},
			}}
		},
		command: func(t *testing.T, home string) ([]string, []string) {
			bin, err := realharness.OpenCodePath()
			require.NoError(t, err)
			return []string{bin, "run", "--model", "anthropic/claude-sonnet-4-5",
					"[rh-opencode] Keep notes, have a helper count the lines, and search them."},
				append([]string{"HOME=" + home, "ANTHROPIC_API_KEY=sk-test"}, realharness.OpenCodeEnv...)
		},
		// What record writes in a file, the simulator run gets inline.
		baseURL: func(root string) string {
			return `OPENCODE_CONFIG_CONTENT={"provider":{"anthropic":{"options":{"baseURL":"` + root + `/v1"}}}}`
		},
		check: func(t *testing.T, rec *tape.Tape, state map[string]string) {
			main := rec.Main()
			require.NotNil(t, main)
			assert.Equal(t, "claude-sonnet-4-5", rec.Meta.Model, "the agent's model, whether or not the title request to the small model came first")
			var agent, sub *tape.Thread
			for _, th := range rec.Threads {
				for _, s := range th.Steps {
					if strings.Contains(s.Request.System, "[rh-opencode-sub]") || strings.Contains(firstUser(s.Request), "[rh-opencode-sub]") {
						sub = th
					} else if len(s.Request.Tools) > 0 && sub != th {
						agent = th
					}
					break
				}
			}
			require.NotNil(t, agent, "the agent's thread")
			require.NotNil(t, sub, "the subagent's thread")
			require.NotNil(t, sub.Parent, "the subagent is linked to its task call")
			assert.Equal(t, tape.Parent{ThreadID: agent.ID, ToolCallID: "toolu_fake_main_3_0"}, *sub.Parent)
			require.Len(t, agent.Steps, 7)
			require.Len(t, sub.Steps, 2)
			res := func(th *tape.Thread, step, i int) tape.ToolResult {
				require.Greater(t, len(th.Steps[step].ToolResults), i, "thread %s step %d has no result %d", th.ID, step, i)
				return th.Steps[step].ToolResults[i]
			}
			assert.Equal(t, "Wrote file successfully.", res(agent, 0, 0).Text())
			assert.Equal(t, "ready\n", res(agent, 0, 1).Text())
			assert.Equal(t, "Edit applied successfully.", res(agent, 1, 0).Text())
			assert.Equal(t, "about to fail\n", res(agent, 2, 0).Text(), "opencode reports a failing command's output alone")
			assert.Regexp(t, `^<task id="ses_[A-Za-z0-9]+" state="completed">\n<task_result>\nnotes.txt has 3 lines.\n</task_result>\n</task>$`, res(agent, 3, 0).Text())
			assert.Equal(t, "<path>"+cwd+"/notes.txt</path>\n<type>file</type>\n<content>\n1: alpha\n2: BETA\n3: gamma\n\n(End of file - total 3 lines)\n</content>", res(agent, 4, 0).Text())
			assert.Equal(t, "3\n", res(sub, 0, 0).Text())
			assert.Equal(t, map[string]string{"notes.txt": "alpha\nBETA\ngamma\n", "logs/": "", "logs/count.txt": "3\n"}, state)
		},
	}
}

// firstUser is the text of a request's first user message.
func firstUser(req tape.Request) string {
	for _, m := range req.Messages {
		if m.Role == "user" {
			var b strings.Builder
			for _, blk := range m.Content {
				b.WriteString(blk.Text)
			}
			return b.String()
		}
	}
	return ""
}
