package e2e

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/internal/testutil/realharness"
	"github.com/tapebox/tapebox/tape"
	"github.com/tapebox/tapebox/testkit/fakeprovider"
)

// geminiCase is real Gemini CLI 0.61.0 on the Gemini API: parallel calls (a file written,
// a command run, a directory listed), an edit, a failing command, a file read and a file
// that is not there, a command the CLI refuses (a command substitution). The fake provider sends its calls without ids, as the Gemini API
// does: the CLI makes its own up.
func geminiCase() realCase {
	const cwd = "/tmp/tapebox-rh-gemini"
	call := fakeprovider.Call
	return realCase{
		harness: realharness.Gemini, version: "0.61.0", provider: tape.ProviderGemini, cwd: cwd,
		script: func() fakeprovider.Script {
			return fakeprovider.Script{Threads: []fakeprovider.Thread{{Name: "main", Marker: "[rh-gemini]", Turns: []fakeprovider.Turn{
				{Text: "Writing the notes and preparing logs.", Calls: []tape.ToolCall{
					call("write_file", map[string]any{"file_path": cwd + "/notes.txt", "content": "alpha\nbeta\ngamma\n"}),
					call("run_shell_command", map[string]any{"command": "mkdir -p logs && echo ready", "description": "make logs/"}),
				}},
				{Calls: []tape.ToolCall{call("replace", map[string]any{"file_path": cwd + "/notes.txt", "old_string": "beta", "new_string": "BETA", "instruction": "capitalise beta"})}},
				{Calls: []tape.ToolCall{call("run_shell_command", map[string]any{"command": "echo about to fail; echo oops >&2; exit 3", "description": "fail on purpose"})}},
				{Calls: []tape.ToolCall{
					call("list_directory", map[string]any{"dir_path": "."}),
					call("read_file", map[string]any{"file_path": "notes.txt"}),
					call("read_file", map[string]any{"file_path": "missing.txt"}),
				}},
				{Calls: []tape.ToolCall{call("write_file", map[string]any{"file_path": "notes.txt", "content": "alpha\nBETA\ngamma\ndelta\n"})}},
				{Calls: []tape.ToolCall{call("run_shell_command", map[string]any{"command": "wc -l < notes.txt > logs/count.txt; cat logs/count.txt"})}},
				// The CLI refuses a command substitution: nothing runs, who.txt is never made.
				{Calls: []tape.ToolCall{call("run_shell_command", map[string]any{"command": "echo $(whoami) > who.txt"})}},
				{Text: "Done: notes written, edited and counted."},
			}}}}
		},
		command: func(t *testing.T, home string) ([]string, []string) {
			bin, err := realharness.GeminiPath()
			require.NoError(t, err)
			settings := filepath.Join(home, ".gemini", "settings.json")
			require.NoError(t, os.MkdirAll(filepath.Dir(settings), 0o755))
			require.NoError(t, os.WriteFile(settings, []byte(realharness.GeminiSettingsJSON), 0o644))
			return []string{bin, "--yolo", "--output-format", "json", "-m", "gemini-2.5-pro",
					"-p", "[rh-gemini] Keep notes, fail once, and count the lines."},
				[]string{"HOME=" + home, "GEMINI_API_KEY=sk-test", "GEMINI_CLI_TRUST_WORKSPACE=true", "GEMINI_CLI_NO_RELAUNCH=true"}
		},
		baseURL: func(root string) string { return "GOOGLE_GEMINI_BASE_URL=" + root },
		check: func(t *testing.T, rec *tape.Tape, state map[string]string) {
			require.Len(t, rec.Threads, 1)
			main := rec.Main()
			require.Len(t, main.Steps, 8)
			res := func(step, i int) tape.ToolResult {
				require.Greater(t, len(main.Steps[step].ToolResults), i, "step %d has no result %d", step, i)
				return main.Steps[step].ToolResults[i]
			}
			assert.Equal(t, "Successfully created and wrote to new file: "+cwd+"/notes.txt. Here is the updated code:\nalpha\nbeta\ngamma\n", res(0, 0).Text())
			assert.Regexp(t, `^<untrusted_context>\nOutput: ready\nProcess Group PGID: \d+\n</untrusted_context>$`, res(0, 1).Text())
			assert.Equal(t, "Successfully modified file: "+cwd+"/notes.txt (1 replacements). Here is the updated code:\nalpha\nBETA\ngamma\n", res(1, 0).Text())
			assert.Regexp(t, `^<untrusted_context>\nOutput: about to fail\noops\nExit Code: 3\nProcess Group PGID: \d+\n</untrusted_context>$`, res(2, 0).Text())
			assert.False(t, res(2, 0).IsError, "a failing command is an output, not an error")
			assert.Equal(t, "Directory listing for "+cwd+":\n[DIR] logs\nnotes.txt (17 bytes)", res(3, 0).Text())
			assert.Equal(t, "alpha\nBETA\ngamma\n", res(3, 1).Text())
			assert.Equal(t, "File not found: "+cwd+"/missing.txt", res(3, 2).Text())
			assert.True(t, res(3, 2).IsError)
			assert.Equal(t, "Command injection detected: command substitution syntax ($(), backticks, <() or >()) found in command arguments. On PowerShell, @() array subexpressions and $() subexpressions are also blocked. This is a security risk and the command was blocked.", res(6, 0).Text())
			assert.Equal(t, map[string]string{"notes.txt": "alpha\nBETA\ngamma\ndelta\n", "logs/": "", "logs/count.txt": "4\n"}, state)
		},
	}
}

// geminiRepoCase: real Gemini CLI edits files that existed before it started.
func geminiRepoCase() realCase {
	c := repoCase(geminiCase(), "gemini-cli-repo", "/tmp/tapebox-rh-gemini-repo", "[rh-gemini-repo]", 4)
	call := fakeprovider.Call
	c.script = func() fakeprovider.Script {
		return fakeprovider.Script{Threads: []fakeprovider.Thread{{Name: "main", Marker: "[rh-gemini-repo]", Turns: []fakeprovider.Turn{
			{Text: "Reading the repository.", Calls: []tape.ToolCall{
				call("read_file", map[string]any{"file_path": "README.md"}),
				call("read_file", map[string]any{"file_path": "greet.sh"}),
			}},
			{Calls: []tape.ToolCall{
				call("replace", map[string]any{"file_path": "greet.sh", "old_string": "hello", "new_string": "Hello", "instruction": "capitalise"}),
				call("replace", map[string]any{"file_path": "README.md", "old_string": "NAME.", "new_string": "NAME: it prints Hello, NAME.", "instruction": "document"}),
			}},
			{Calls: []tape.ToolCall{call("run_shell_command", map[string]any{"command": "head -1 src/names.txt | xargs ./greet.sh | tee out.txt"})}},
			{Text: "Done: the greeting is capitalised and documented."},
		}}}}
	}
	return c
}
