package conformance

import (
	"fmt"
	"maps"
	"path/filepath"
	"strings"

	"github.com/tapebox/tapebox/tape"
	"github.com/tapebox/tapebox/testkit/fakeprovider"
)

// Case is one tool variant to run through a harness: the directory it starts from and the
// tool calls the fake model asks for, one per turn (earlier calls set the stage: Claude
// Code edits only files it has read).
type Case struct {
	Name   string
	Before []File
	// Calls builds the calls for the case's absolute working directory.
	Calls func(cwd string) []tape.ToolCall
	// Sub is a subagent thread's script, for cases whose call spawns one; its Marker is
	// found in the spawning call's prompt.
	Sub *fakeprovider.Thread
}

func file(path, content string) File { return File{Path: path, Mode: "0644", Content: content} }

func call(name string, input map[string]any) tape.ToolCall { return fakeprovider.Call(name, input) }

// afterRead is a case on the file f: the model reads it, as Claude Code requires before a
// file is changed, then calls tool on it with input and f's absolute path as file_path.
func afterRead(name string, f File, tool string, input map[string]any) Case {
	return Case{Name: name, Before: []File{f}, Calls: func(cwd string) []tape.ToolCall {
		p := filepath.Join(cwd, f.Path)
		in := maps.Clone(input)
		in["file_path"] = p
		return []tape.ToolCall{call("Read", map[string]any{"file_path": p}), call(tool, in)}
	}}
}

// claudeCases covers the tools Claude Code 2.1.332 offers by default (Bash, Read, Write,
// Edit, Agent) in each variant.
var claudeCases = []Case{
	{Name: "bash-output", Calls: func(string) []tape.ToolCall {
		return []tape.ToolCall{call("Bash", map[string]any{"command": `printf 'line 1\nline 2\nline 3\n'`, "description": "print three lines"})}
	}},
	{Name: "bash-no-output", Calls: func(string) []tape.ToolCall {
		return []tape.ToolCall{call("Bash", map[string]any{"command": "touch made.txt", "description": "make a file"})}
	}},
	{Name: "bash-fail", Calls: func(string) []tape.ToolCall {
		return []tape.ToolCall{call("Bash", map[string]any{"command": "echo about to fail; exit 1", "description": "fail"})}
	}},
	{Name: "bash-stderr", Calls: func(string) []tape.ToolCall {
		return []tape.ToolCall{call("Bash", map[string]any{"command": "echo to stdout; echo to stderr >&2", "description": "print to both streams"})}
	}},
	{Name: "bash-fail-stderr", Calls: func(string) []tape.ToolCall {
		return []tape.ToolCall{call("Bash", map[string]any{"command": "echo some output; echo broken >&2; exit 3", "description": "fail with stderr"})}
	}},
	{Name: "bash-long-output", Calls: func(string) []tape.ToolCall {
		return []tape.ToolCall{call("Bash", map[string]any{"command": "seq 1 20000", "description": "print a lot"})}
	}},
	{Name: "bash-background", Calls: func(string) []tape.ToolCall {
		// The second call waits for the first, so the end state does not race the exit.
		return []tape.ToolCall{
			call("Bash", map[string]any{"command": "echo background done > bg.txt; sleep 0.2", "description": "run in background", "run_in_background": true}),
			call("Bash", map[string]any{"command": "sleep 1; cat bg.txt", "description": "wait for it"}),
		}
	}},
	{Name: "bash-background-read", Calls: func(string) []tape.ToolCall {
		// The model reads the task's output file at the path the harness made up.
		return []tape.ToolCall{
			call("Bash", map[string]any{"command": "echo hi from the background", "description": "background echo", "run_in_background": true}),
			call("Bash", map[string]any{"command": "sleep 1", "description": "wait"}),
			call("Read", map[string]any{"file_path": "<<background output file:0>>"}),
		}
	}},
	{Name: "bash-output-30000", Calls: func(string) []tape.ToolCall {
		return []tape.ToolCall{call("Bash", map[string]any{"command": `head -c 30000 /dev/zero | tr '\0' a`, "description": "30000 characters"})}
	}},
	{Name: "bash-output-30001", Calls: func(string) []tape.ToolCall {
		return []tape.ToolCall{call("Bash", map[string]any{"command": `head -c 30001 /dev/zero | tr '\0' a`, "description": "30001 characters"})}
	}},
	{Name: "bash-long-line", Calls: func(string) []tape.ToolCall {
		return []tape.ToolCall{call("Bash", map[string]any{"command": `head -c 50000 /dev/zero | tr '\0' b; echo; echo tail`, "description": "one long line"})}
	}},
	{Name: "bash-timeout", Calls: func(string) []tape.ToolCall {
		return []tape.ToolCall{call("Bash", map[string]any{"command": "echo before; sleep 5; echo never", "description": "time out", "timeout": 1000})}
	}},
	{Name: "read-whole", Before: []File{file("notes.txt", "alpha\nbeta\ngamma")}, Calls: func(cwd string) []tape.ToolCall {
		return []tape.ToolCall{call("Read", map[string]any{"file_path": filepath.Join(cwd, "notes.txt")})}
	}},
	{Name: "read-trailing-newline", Before: []File{file("notes.txt", "one\ntwo\nthree\nfour\nfive\n")}, Calls: func(cwd string) []tape.ToolCall {
		return []tape.ToolCall{call("Read", map[string]any{"file_path": filepath.Join(cwd, "notes.txt")})}
	}},
	{Name: "read-offset-limit", Before: []File{file("notes.txt", "alpha\nbeta\ngamma\ndelta\nepsilon\n")}, Calls: func(cwd string) []tape.ToolCall {
		return []tape.ToolCall{call("Read", map[string]any{"file_path": filepath.Join(cwd, "notes.txt"), "offset": 2, "limit": 2})}
	}},
	{Name: "read-missing", Calls: func(cwd string) []tape.ToolCall {
		return []tape.ToolCall{call("Read", map[string]any{"file_path": filepath.Join(cwd, "missing.txt")})}
	}},
	{Name: "read-empty", Before: []File{file("empty.txt", "")}, Calls: func(cwd string) []tape.ToolCall {
		return []tape.ToolCall{call("Read", map[string]any{"file_path": filepath.Join(cwd, "empty.txt")})}
	}},
	{Name: "read-offset-past-end", Before: []File{file("notes.txt", "alpha\nbeta\ngamma\n")}, Calls: func(cwd string) []tape.ToolCall {
		return []tape.ToolCall{call("Read", map[string]any{"file_path": filepath.Join(cwd, "notes.txt"), "offset": 10})}
	}},
	{Name: "read-long-line", Before: []File{file("wide.txt", "short\n"+strings.Repeat("w", 2500)+"\nend\n")}, Calls: func(cwd string) []tape.ToolCall {
		return []tape.ToolCall{call("Read", map[string]any{"file_path": filepath.Join(cwd, "wide.txt")})}
	}},
	{Name: "read-many-lines", Before: []File{file("many.txt", manyLines(2500))}, Calls: func(cwd string) []tape.ToolCall {
		return []tape.ToolCall{call("Read", map[string]any{"file_path": filepath.Join(cwd, "many.txt")})}
	}},
	{Name: "read-directory", Before: []File{{Path: "sub", Mode: "0755", Dir: true}}, Calls: func(cwd string) []tape.ToolCall {
		return []tape.ToolCall{call("Read", map[string]any{"file_path": filepath.Join(cwd, "sub")})}
	}},
	{Name: "write-new", Calls: func(cwd string) []tape.ToolCall {
		return []tape.ToolCall{call("Write", map[string]any{"file_path": filepath.Join(cwd, "notes.txt"), "content": "first line\nsecond line\n"})}
	}},
	{Name: "write-new-subdir", Calls: func(cwd string) []tape.ToolCall {
		return []tape.ToolCall{call("Write", map[string]any{"file_path": filepath.Join(cwd, "deep", "er", "notes.txt"), "content": "nested\n"})}
	}},
	afterRead("write-overwrite", file("notes.txt", "old content\n"), "Write", map[string]any{"content": "new content\n"}),
	afterRead("edit", file("notes.txt", "alpha\nbeta\ngamma\n"), "Edit", map[string]any{"old_string": "beta", "new_string": "BETA"}),
	afterRead("edit-replace-all", file("notes.txt", "cat dog cat\ncat\n"), "Edit", map[string]any{"old_string": "cat", "new_string": "bird", "replace_all": true}),
	afterRead("edit-not-found", file("notes.txt", "alpha\nbeta\n"), "Edit", map[string]any{"old_string": "no such text", "new_string": "x"}),
	afterRead("edit-not-unique", file("notes.txt", "same\nsame\n"), "Edit", map[string]any{"old_string": "same", "new_string": "other"}),
	{Name: "edit-create-file", Calls: func(cwd string) []tape.ToolCall {
		return []tape.ToolCall{call("Edit", map[string]any{"file_path": filepath.Join(cwd, "fresh.txt"), "old_string": "", "new_string": "made by Edit\n"})}
	}},
	afterRead("edit-no-change", file("notes.txt", "alpha\n"), "Edit", map[string]any{"old_string": "alpha", "new_string": "alpha"}),
	afterRead("edit-multiline", file("code.go", "func a() {\n\treturn 1\n}\n"), "Edit", map[string]any{"old_string": "\treturn 1\n}", "new_string": "\tx := 2\n\treturn x\n}"}),
	{Name: "agent", Calls: func(string) []tape.ToolCall {
		return []tape.ToolCall{call("Agent", map[string]any{
			"description":       "answer a question",
			"prompt":            "[conformance:agent-sub] Say which tests pass.",
			"subagent_type":     "general-purpose",
			"run_in_background": false,
		})}
	}, Sub: &fakeprovider.Thread{Name: "sub", Marker: "[conformance:agent-sub]", Turns: []fakeprovider.Turn{{Text: "All tests pass."}}}},
}

// codexCases covers Codex 0.171.0's exec_command and apply_patch (a freeform tool).
var codexCases = []Case{
	{Name: "exec-output", Calls: func(string) []tape.ToolCall {
		return []tape.ToolCall{call("exec_command", map[string]any{"cmd": `printf 'line 1\nline 2\nline 3\n'`})}
	}},
	{Name: "exec-no-output", Calls: func(string) []tape.ToolCall {
		return []tape.ToolCall{call("exec_command", map[string]any{"cmd": "touch made.txt"})}
	}},
	{Name: "exec-fail", Calls: func(string) []tape.ToolCall {
		return []tape.ToolCall{call("exec_command", map[string]any{"cmd": "echo about to fail; exit 1"})}
	}},
	{Name: "exec-stderr", Calls: func(string) []tape.ToolCall {
		// Codex reads stdout and stderr from two pipes: the sleep orders them.
		return []tape.ToolCall{call("exec_command", map[string]any{"cmd": "echo to stderr >&2; sleep 0.2; echo to stdout"})}
	}},
	{Name: "exec-long-output", Calls: func(string) []tape.ToolCall {
		return []tape.ToolCall{call("exec_command", map[string]any{"cmd": "seq 1 20000"})}
	}},
	{Name: "exec-workdir", Before: []File{{Path: "sub", Mode: "0755", Dir: true}}, Calls: func(string) []tape.ToolCall {
		return []tape.ToolCall{call("exec_command", map[string]any{"cmd": "pwd", "workdir": "sub"})}
	}},
	{Name: "exec-max-output-tokens", Calls: func(string) []tape.ToolCall {
		return []tape.ToolCall{call("exec_command", map[string]any{"cmd": "seq 1 3000", "max_output_tokens": 50})}
	}},
	{Name: "exec-session", Calls: func(string) []tape.ToolCall {
		// A command outlives its yield time; the model polls its session.
		return []tape.ToolCall{
			call("exec_command", map[string]any{"cmd": "echo early; sleep 1; echo late", "yield_time_ms": 250}),
			call("write_stdin", map[string]any{"session_id": "<<exec session id:0>>", "chars": "", "yield_time_ms": 5000}),
		}
	}},
	{Name: "exec-session-stdin", Calls: func(string) []tape.ToolCall {
		return []tape.ToolCall{
			call("exec_command", map[string]any{"cmd": "read x; echo got $x", "tty": true, "yield_time_ms": 250}),
			call("write_stdin", map[string]any{"session_id": "<<exec session id:0>>", "chars": "hello\n", "yield_time_ms": 2000}),
		}
	}},
	{Name: "patch-add", Calls: func(string) []tape.ToolCall {
		return []tape.ToolCall{fakeprovider.Custom("apply_patch", "*** Begin Patch\n*** Add File: docs/first.txt\n+hello\n+world\n*** End Patch")}
	}},
	{Name: "patch-update", Before: []File{file("notes.txt", "alpha\nbeta\ngamma\n")}, Calls: func(string) []tape.ToolCall {
		return []tape.ToolCall{fakeprovider.Custom("apply_patch", "*** Begin Patch\n*** Update File: notes.txt\n@@\n alpha\n-beta\n+BETA\n gamma\n*** End Patch")}
	}},
	{Name: "patch-delete", Before: []File{file("old.txt", "bye\n")}, Calls: func(string) []tape.ToolCall {
		return []tape.ToolCall{fakeprovider.Custom("apply_patch", "*** Begin Patch\n*** Delete File: old.txt\n*** End Patch")}
	}},
	{Name: "patch-move", Before: []File{file("docs/first.txt", "one\ntwo\n")}, Calls: func(string) []tape.ToolCall {
		return []tape.ToolCall{fakeprovider.Custom("apply_patch", "*** Begin Patch\n*** Update File: docs/first.txt\n*** Move to: docs/renamed.txt\n@@\n one\n-two\n+TWO\n*** End Patch")}
	}},
	{Name: "patch-multi", Before: []File{
		file("a.txt", "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n"),
		file("gone.txt", "x\n"),
	}, Calls: func(string) []tape.ToolCall {
		return []tape.ToolCall{fakeprovider.Custom("apply_patch", "*** Begin Patch\n"+
			"*** Update File: a.txt\n@@\n 1\n-2\n+two\n 3\n@@\n 8\n-9\n+nine\n 10\n"+
			"*** Add File: b.txt\n+new file\n"+
			"*** Delete File: gone.txt\n"+
			"*** End Patch")}
	}},
	{Name: "patch-add-existing", Before: []File{file("there.txt", "old\n")}, Calls: func(string) []tape.ToolCall {
		return []tape.ToolCall{fakeprovider.Custom("apply_patch", "*** Begin Patch\n*** Add File: there.txt\n+new\n*** End Patch")}
	}},
	{Name: "patch-end-of-file", Before: []File{file("tail.txt", "a\nb\nlast\n")}, Calls: func(string) []tape.ToolCall {
		return []tape.ToolCall{fakeprovider.Custom("apply_patch", "*** Begin Patch\n*** Update File: tail.txt\n@@\n b\n-last\n+LAST\n+appended\n*** End of File\n*** End Patch")}
	}},
	{Name: "patch-update-missing", Calls: func(string) []tape.ToolCall {
		return []tape.ToolCall{fakeprovider.Custom("apply_patch", "*** Begin Patch\n*** Update File: nowhere.txt\n@@\n-a\n+b\n*** End Patch")}
	}},
	{Name: "patch-delete-missing", Calls: func(string) []tape.ToolCall {
		return []tape.ToolCall{fakeprovider.Custom("apply_patch", "*** Begin Patch\n*** Delete File: nowhere.txt\n*** End Patch")}
	}},
	{Name: "patch-invalid", Calls: func(string) []tape.ToolCall {
		return []tape.ToolCall{fakeprovider.Custom("apply_patch", "this is not a patch")}
	}},
	// Codex 0.171 ends the lines it adds as the file's first line ends and keeps the end of
	// each context line (issue 29: the executor wrote "\n").
	{Name: "patch-crlf", Before: []File{file("dos.txt", "one\r\ntwo\r\nthree\r\nfour\r\n")}, Calls: func(string) []tape.ToolCall {
		return []tape.ToolCall{fakeprovider.Custom("apply_patch", "*** Begin Patch\n*** Update File: dos.txt\n@@\n one\n-two\n+TWO\n+2.5\n three\n@@\n-four\n+FOUR\n*** End of File\n*** End Patch")}
	}},
	{Name: "patch-mixed-eol", Before: []File{file("mixed.txt", "main\nconfig  \r\nfunc x\ngamma\r\nlast")}, Calls: func(string) []tape.ToolCall {
		return []tape.ToolCall{fakeprovider.Custom("apply_patch", "*** Begin Patch\n*** Update File: mixed.txt\n@@\n func x\n+added\n gamma\n*** End Patch")}
	}},
	{Name: "patch-non-utf8", Before: []File{file("latin1.txt", "caf\xe9 cr\xe8me\nplain\n"), file("keep.txt", "x\n")}, Calls: func(string) []tape.ToolCall {
		return []tape.ToolCall{
			fakeprovider.Custom("apply_patch", "*** Begin Patch\n*** Update File: latin1.txt\n@@\n-plain\n+PLAIN\n*** End Patch"),
			fakeprovider.Custom("apply_patch", "*** Begin Patch\n*** Delete File: keep.txt\n*** Delete File: latin1.txt\n*** End Patch"),
		}
	}},
	{Name: "patch-empty", Calls: func(string) []tape.ToolCall {
		return []tape.ToolCall{fakeprovider.Custom("apply_patch", "*** Begin Patch\n*** End Patch")}
	}},
	{Name: "exec-workdir-missing", Before: []File{file("plain.txt", "x\n")}, Calls: func(string) []tape.ToolCall {
		return []tape.ToolCall{
			call("exec_command", map[string]any{"cmd": "pwd", "workdir": "no/such/dir"}),
			call("exec_command", map[string]any{"cmd": "pwd", "workdir": "plain.txt"}),
		}
	}},
	{Name: "exec-tty-workdir-missing", Calls: func(string) []tape.ToolCall {
		return []tape.ToolCall{call("exec_command", map[string]any{"cmd": "pwd; echo ran", "workdir": "no/such/dir", "tty": true})}
	}},
	{Name: "exec-background-killed", Calls: func(string) []tape.ToolCall {
		// Codex kills the process group of a command that has exited: the job never writes.
		return []tape.ToolCall{
			call("exec_command", map[string]any{"cmd": "(sleep 0.3; echo done > bg.txt) >/dev/null 2>&1 & echo started"}),
			call("exec_command", map[string]any{"cmd": "sleep 0.8; ls"}),
		}
	}},
	{Name: "patch-directory", Before: []File{{Path: "sub", Mode: "0755", Dir: true}}, Calls: func(string) []tape.ToolCall {
		return []tape.ToolCall{
			fakeprovider.Custom("apply_patch", "*** Begin Patch\n*** Delete File: sub\n*** End Patch"),
			fakeprovider.Custom("apply_patch", "*** Begin Patch\n*** Update File: sub\n@@\n-a\n+b\n*** End Patch"),
		}
	}},
	{Name: "exec-non-utf8-output", Calls: func(string) []tape.ToolCall {
		return []tape.ToolCall{
			call("exec_command", map[string]any{"cmd": `printf 'caf\xe9 cr\xe8me a\xe2\x82x \xf0\x9f\x99y \xed\xa0\x80 \xff\xfe end\n'`}),
			call("exec_command", map[string]any{"cmd": `for i in $(seq 128 255); do printf "\\$(printf %o $i)"; done; printf '%0.s\xe9x' $(seq 1 20000)`, "max_output_tokens": 200}),
		}
	}},
	{Name: "exec-max-output-tokens-over-default", Calls: func(string) []tape.ToolCall {
		return []tape.ToolCall{call("exec_command", map[string]any{"cmd": `head -c 39999 /dev/zero | tr '\0' a; echo; echo tail`, "max_output_tokens": 20000})}
	}},
	{Name: "not-offered", Calls: func(string) []tape.ToolCall {
		return []tape.ToolCall{
			call("shell", map[string]any{"command": []string{"bash", "-lc", "touch made-by-shell.txt"}}),
			call("shell_command", map[string]any{"command": "touch made.txt"}),
			call("no_such_tool", map[string]any{}),
		}
	}},
	{Name: "patch-fail", Before: []File{file("renamed.txt", "one\ntwo\n")}, Calls: func(string) []tape.ToolCall {
		return []tape.ToolCall{fakeprovider.Custom("apply_patch", "*** Begin Patch\n*** Update File: renamed.txt\n@@\n-this line is not in the file\n+replacement\n*** End Patch")}
	}},
}

// manyLines is "line 1\n" ... "line n\n".
func manyLines(n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "line %d\n", i)
	}
	return b.String()
}
