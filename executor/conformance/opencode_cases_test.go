package conformance

import (
	"context"
	"path/filepath"
	"strings"

	"github.com/tapebox/tapebox/internal/testutil/realharness"
	"github.com/tapebox/tapebox/tape"
	"github.com/tapebox/tapebox/testkit/fakeprovider"
)

// at is a case of one call of tool whose input names paths under the case's directory:
// each key of rel gets the absolute path of its value.
func at(name string, before []File, tool string, input map[string]any, rel map[string]string) Case {
	return Case{Name: name, Before: before, Calls: func(cwd string) []tape.ToolCall {
		in := map[string]any{}
		for k, v := range input {
			in[k] = v
		}
		for k, v := range rel {
			in[k] = filepath.Join(cwd, v)
		}
		return []tape.ToolCall{call(tool, in)}
	}}
}

func fp(rel string) map[string]string { return map[string]string{"filePath": rel} }

// runOpenCode runs opencode with a title given, so that it asks its small model for none:
// one request fewer in a run that takes some 20 seconds to start.
func runOpenCode(ctx context.Context, o realharness.Options) (realharness.Result, error) {
	o.Args = append(o.Args, "--title", "conformance")
	return realharness.RunOpenCode(ctx, o)
}

// openCodeCases covers the tools opencode 1.18.33 offers an Anthropic model (bash, read,
// write, edit, glob, grep, todowrite; task), each with its success, limit and error paths.
var openCodeCases = []Case{
	one("bash-output", nil, "bash", map[string]any{"command": `printf 'line 1\nline 2\nline 3\n'`, "description": "print"}),
	one("bash-fail", nil, "bash", map[string]any{"command": "echo about to fail; exit 3", "description": "fail"}),
	one("bash-stderr", nil, "bash", map[string]any{"command": "echo to stdout; sleep 0.2; echo to stderr >&2", "description": "both"}),
	one("bash-timeout", nil, "bash", map[string]any{"command": "echo before; sleep 5; echo never", "timeout": 1000, "description": "slow"}),
	one("bash-workdir", []File{{Path: "sub", Mode: "0755", Dir: true}}, "bash", map[string]any{"command": "pwd", "workdir": "sub", "description": "where"}),
	one("bash-long-output", nil, "bash", map[string]any{"command": "seq 1 3000", "description": "many lines"}),
	at("read-whole", []File{file("notes.txt", "alpha\nbeta\ngamma")}, "read", nil, fp("notes.txt")),
	at("read-offset-limit", []File{file("notes.txt", "alpha\nbeta\ngamma\ndelta\nepsilon\n")}, "read", map[string]any{"offset": 2, "limit": 2}, fp("notes.txt")),
	at("read-offset-past-end", []File{file("notes.txt", "alpha\nbeta\n")}, "read", map[string]any{"offset": 10}, fp("notes.txt")),
	at("read-missing", nil, "read", nil, fp("missing.txt")),
	at("read-missing-near", []File{file("Notes.md", "x\n")}, "read", nil, fp("notes")),
	at("read-directory", []File{file("b.txt", "b"), file("A.txt", "a"), {Path: "sub", Mode: "0755", Dir: true}, file(".hidden", "h")}, "read", nil, fp(".")),
	at("read-bytes-limit", []File{file("wide.txt", strings.Repeat(strings.Repeat("w", 99)+"\n", 1000))}, "read", nil, fp("wide.txt")),
	at("read-long-line", []File{file("line.txt", "short\n"+strings.Repeat("x", 3000)+"\nend\n")}, "read", nil, fp("line.txt")),
	at("read-binary", []File{file("blob.txt", "a\x00b")}, "read", nil, fp("blob.txt")),
	at("write-new-subdir", nil, "write", map[string]any{"content": "nested\n"}, fp("deep/er/notes.txt")),
	at("write-overwrite", []File{file("notes.txt", "old content\n")}, "write", map[string]any{"content": "new content\n"}, fp("notes.txt")),
	at("write-keeps-bom", []File{file("bom.txt", "\uFEFFold\n")}, "write", map[string]any{"content": "new\n"}, fp("bom.txt")),
	at("edit", []File{file("notes.txt", "alpha\nbeta\ngamma\n")}, "edit", map[string]any{"oldString": "beta", "newString": "BETA"}, fp("notes.txt")),
	at("edit-not-found", []File{file("notes.txt", "alpha\nbeta\n")}, "edit", map[string]any{"oldString": "no such text", "newString": "x"}, fp("notes.txt")),
	at("edit-not-unique", []File{file("notes.txt", "same\nsame\n")}, "edit", map[string]any{"oldString": "same", "newString": "other"}, fp("notes.txt")),
	at("edit-replace-all", []File{file("notes.txt", "same\nsame\n")}, "edit", map[string]any{"oldString": "same", "newString": "other", "replaceAll": true}, fp("notes.txt")),
	at("edit-missing-file", nil, "edit", map[string]any{"oldString": "a", "newString": "b"}, fp("missing.txt")),
	at("edit-create", nil, "edit", map[string]any{"oldString": "", "newString": "made by edit\n"}, fp("fresh.txt")),
	at("edit-crlf", []File{file("dos.txt", "one\r\ntwo\r\nthree\r\n")}, "edit", map[string]any{"oldString": "one\ntwo", "newString": "ONE\nTWO"}, fp("dos.txt")),
	at("edit-trimmed-lines", []File{file("code.go", "func a() {\n\treturn 1\n}\n")}, "edit", map[string]any{"oldString": "  return 1\n}", "newString": "\treturn 2\n}"}, fp("code.go")),
	at("edit-indentation", []File{file("code.py", "def f():\n    if x:\n        return 1\n")}, "edit", map[string]any{"oldString": "if x:\n    return 1", "newString": "if y:\n    return 2"}, fp("code.py")),
	one("glob", []File{file("a.go", "package a\n"), file("sub/b.go", "package b\n"), file("c.txt", "c")}, "glob", map[string]any{"pattern": "**/*.go"}),
	one("glob-none", []File{file("c.txt", "c")}, "glob", map[string]any{"pattern": "*.nothing"}),
	at("glob-path-file", []File{file("a.go", "package a\n")}, "glob", map[string]any{"pattern": "*.go"}, map[string]string{"path": "a.go"}),
	one("grep", []File{file("sub/a.go", "package x\nfunc A() {}\nfunc B() {}\n"), file("b.txt", "nothing\n")}, "grep", map[string]any{"pattern": "func"}),
	one("grep-none", []File{file("b.txt", "nothing\n")}, "grep", map[string]any{"pattern": "nomatchzzz"}),
	one("grep-include", []File{file("a.go", "hit\n"), file("b.txt", "hit\n")}, "grep", map[string]any{"pattern": "hit", "include": "*.go"}),
	at("grep-file", []File{file("a.txt", "one hit\ntwo\nhit three\n")}, "grep", map[string]any{"pattern": "hit"}, map[string]string{"path": "a.txt"}),
	one("todowrite", nil, "todowrite", map[string]any{"todos": []any{
		map[string]any{"content": "one <a> & b", "status": "pending", "priority": "high"},
		map[string]any{"status": "completed", "content": "two", "priority": "low"},
	}}),
	{Name: "task", Calls: func(string) []tape.ToolCall {
		return []tape.ToolCall{call("task", map[string]any{
			"description":   "answer a question",
			"prompt":        "[conformance:task-sub] Say which tests pass.",
			"subagent_type": "general",
		})}
	}, Sub: &fakeprovider.Thread{Name: "sub", Marker: "[conformance:task-sub]", Turns: []fakeprovider.Turn{{Text: "All tests pass."}}}},
}
