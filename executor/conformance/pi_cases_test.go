package conformance

import (
	"context"
	"path/filepath"
	"strings"

	"github.com/tapebox/tapebox/internal/testutil/realharness"
	"github.com/tapebox/tapebox/tape"
)

// runPi runs Pi with ls and grep enabled beside its default tools (read, bash, edit,
// write). grep needs ripgrep on the PATH (Pi offline downloads none; ci-setup.sh installs it).
func runPi(ctx context.Context, o realharness.Options) (realharness.Result, error) {
	o.Args = append(o.Args, "--tools", "read,bash,edit,write,ls,grep")
	return realharness.RunPi(ctx, o)
}

// one is a case of a single call of tool with input, on the files before.
func one(name string, before []File, tool string, input map[string]any) Case {
	return Case{Name: name, Before: before, Calls: func(string) []tape.ToolCall { return []tape.ToolCall{call(tool, input)} }}
}

// piCases covers the tools the pi coding agent 0.73.1 enables by default (read, bash, edit,
// write), ls and grep, each with its success, truncation and error paths.
var piCases = []Case{
	one("bash-output", nil, "bash", map[string]any{"command": `printf 'line 1\nline 2\nline 3\n'`}),
	one("bash-no-output", nil, "bash", map[string]any{"command": "touch made.txt"}),
	one("bash-fail", nil, "bash", map[string]any{"command": "echo about to fail; exit 1"}),
	one("bash-fail-no-output", nil, "bash", map[string]any{"command": "exit 7"}),
	// Pi reads stdout and stderr from two pipes: the sleep orders them.
	one("bash-stderr", nil, "bash", map[string]any{"command": "echo to stdout; sleep 0.2; echo to stderr >&2"}),
	one("bash-killed", nil, "bash", map[string]any{"command": "echo before the signal; kill -KILL $$"}),
	one("bash-long-output", nil, "bash", map[string]any{"command": "seq 1 3000"}),
	one("bash-bytes-limit", nil, "bash", map[string]any{"command": "for i in $(seq 1 1500); do echo \"$i aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\"; done"}),
	one("bash-long-line", nil, "bash", map[string]any{"command": `echo first; head -c 60000 /dev/zero | tr '\0' b`}),
	one("bash-fail-long-output", nil, "bash", map[string]any{"command": "seq 1 2500; exit 2"}),
	one("bash-timeout", nil, "bash", map[string]any{"command": "echo before; sleep 5; echo never", "timeout": 1}),
	one("bash-invalid-utf8", nil, "bash", map[string]any{"command": `printf 'bad \342\202 x \377 end\n'`}),
	one("bash-unicode", nil, "bash", map[string]any{"command": "echo héllo 🙂"}),
	one("bash-missing-command", nil, "bash", map[string]any{"timeout": 3}),
	one("read-whole", []File{file("notes.txt", "alpha\nbeta\ngamma")}, "read", map[string]any{"path": "notes.txt"}),
	{Name: "read-absolute", Before: []File{file("notes.txt", "one\ntwo\nthree\n")}, Calls: func(cwd string) []tape.ToolCall {
		return []tape.ToolCall{call("read", map[string]any{"path": filepath.Join(cwd, "notes.txt")})}
	}},
	one("read-offset-limit", []File{file("notes.txt", "alpha\nbeta\ngamma\ndelta\nepsilon\n")}, "read", map[string]any{"path": "notes.txt", "offset": 2, "limit": 2}),
	one("read-offset", []File{file("notes.txt", "alpha\nbeta\ngamma\n")}, "read", map[string]any{"path": "notes.txt", "offset": 3}),
	one("read-offset-past-end", []File{file("notes.txt", "alpha\nbeta\ngamma\n")}, "read", map[string]any{"path": "notes.txt", "offset": 10}),
	one("read-missing", nil, "read", map[string]any{"path": "missing.txt"}),
	one("read-empty", []File{file("empty.txt", "")}, "read", map[string]any{"path": "empty.txt"}),
	one("read-directory", []File{{Path: "sub", Mode: "0755", Dir: true}}, "read", map[string]any{"path": "sub"}),
	one("read-many-lines", []File{file("many.txt", manyLines(2500))}, "read", map[string]any{"path": "many.txt"}),
	one("read-bytes-limit", []File{file("wide.txt", strings.Repeat(strings.Repeat("w", 99)+"\n", 1000))}, "read", map[string]any{"path": "wide.txt"}),
	one("read-long-line", []File{file("line.txt", "short\n"+strings.Repeat("x", 60000)+"\nend\n")}, "read", map[string]any{"path": "line.txt", "offset": 2}),
	one("read-limit-zero", []File{file("notes.txt", "alpha\nbeta\ngamma\n")}, "read", map[string]any{"path": "notes.txt", "limit": 0}),
	one("read-limit-negative", []File{file("notes.txt", "alpha\nbeta\ngamma\n")}, "read", map[string]any{"path": "notes.txt", "limit": -1}),
	one("read-at-path", []File{file("notes.txt", "at\n")}, "read", map[string]any{"path": "@notes.txt"}),
	one("read-no-path", nil, "read", map[string]any{"offset": 1}),
	one("read-string-offset", []File{file("notes.txt", "alpha\nbeta\ngamma\n")}, "read", map[string]any{"path": "notes.txt", "offset": "2", "limit": 1}),
	one("write-new", nil, "write", map[string]any{"path": "notes.txt", "content": "first line\nsecond line\n"}),
	{Name: "write-new-subdir", Calls: func(cwd string) []tape.ToolCall {
		return []tape.ToolCall{call("write", map[string]any{"path": filepath.Join(cwd, "deep", "er", "notes.txt"), "content": "nested\n"})}
	}},
	one("write-overwrite", []File{file("notes.txt", "old content\n")}, "write", map[string]any{"path": "notes.txt", "content": "new content\n"}),
	one("write-unicode", nil, "write", map[string]any{"path": "hello.txt", "content": "héllo wörld 🙂\n"}),
	one("write-directory", []File{{Path: "sub", Mode: "0755", Dir: true}}, "write", map[string]any{"path": "sub", "content": "x"}),
	one("write-under-file", []File{file("plain.txt", "x\n")}, "write", map[string]any{"path": "plain.txt/inner.txt", "content": "x"}),
	one("write-no-content", nil, "write", map[string]any{"path": "notes.txt"}),
	one("edit", []File{file("notes.txt", "alpha\nbeta\ngamma\n")}, "edit", map[string]any{"path": "notes.txt", "edits": []any{map[string]any{"oldText": "beta", "newText": "BETA"}}}),
	one("edit-multi", []File{file("code.go", "func a() {\n\treturn 1\n}\n\nfunc b() {\n\treturn 2\n}\n")}, "edit", map[string]any{"path": "code.go", "edits": []any{
		map[string]any{"oldText": "\treturn 2", "newText": "\treturn 20"},
		map[string]any{"oldText": "\treturn 1\n}", "newText": "\tx := 10\n\treturn x\n}"},
	}}),
	one("edit-not-found", []File{file("notes.txt", "alpha\nbeta\n")}, "edit", map[string]any{"path": "notes.txt", "edits": []any{map[string]any{"oldText": "no such text", "newText": "x"}}}),
	one("edit-multi-not-found", []File{file("notes.txt", "alpha\nbeta\n")}, "edit", map[string]any{"path": "notes.txt", "edits": []any{
		map[string]any{"oldText": "alpha", "newText": "A"},
		map[string]any{"oldText": "gamma", "newText": "G"},
	}}),
	one("edit-not-unique", []File{file("notes.txt", "same\nsame\n")}, "edit", map[string]any{"path": "notes.txt", "edits": []any{map[string]any{"oldText": "same", "newText": "other"}}}),
	one("edit-overlap", []File{file("notes.txt", "alpha beta gamma\n")}, "edit", map[string]any{"path": "notes.txt", "edits": []any{
		map[string]any{"oldText": "beta gamma", "newText": "x"},
		map[string]any{"oldText": "alpha beta", "newText": "y"},
	}}),
	one("edit-no-change", []File{file("notes.txt", "alpha\n")}, "edit", map[string]any{"path": "notes.txt", "edits": []any{map[string]any{"oldText": "alpha", "newText": "alpha"}}}),
	one("edit-empty-old", []File{file("notes.txt", "alpha\n")}, "edit", map[string]any{"path": "notes.txt", "edits": []any{map[string]any{"oldText": "", "newText": "x"}}}),
	one("edit-missing-file", nil, "edit", map[string]any{"path": "gone.txt", "edits": []any{map[string]any{"oldText": "a", "newText": "b"}}}),
	one("edit-crlf", []File{file("dos.txt", "one\r\ntwo\r\nthree\r\n")}, "edit", map[string]any{"path": "dos.txt", "edits": []any{map[string]any{"oldText": "two\nthree", "newText": "2\n3"}}}),
	one("edit-fuzzy", []File{file("quote.txt", "say \u201chello\u201d   \nbye\n")}, "edit", map[string]any{"path": "quote.txt", "edits": []any{map[string]any{"oldText": "say \"hello\"\nbye", "newText": "say hi\nbye"}}}),
	one("edit-legacy", []File{file("notes.txt", "alpha\nbeta\n")}, "edit", map[string]any{"path": "notes.txt", "oldText": "alpha", "newText": "ALPHA"}),
	one("edit-edits-string", []File{file("notes.txt", "alpha\nbeta\n")}, "edit", map[string]any{"path": "notes.txt", "edits": `[{"oldText":"beta","newText":"BETA"}]`}),
	one("edit-no-edits", []File{file("notes.txt", "alpha\n")}, "edit", map[string]any{"path": "notes.txt", "edits": []any{}}),
	one("edit-missing-new", []File{file("notes.txt", "alpha\n")}, "edit", map[string]any{"path": "notes.txt", "edits": []any{map[string]any{"oldText": "alpha"}}}),
	one("grep-dir", []File{file("a.txt", "alpha\nbeta\n"), file("sub/c.go", "package c\n\nfunc Beta() {}\n")}, "grep", map[string]any{"pattern": "func"}),
	one("grep-file", []File{file("a.txt", "alpha\nbeta\r\ngamma\n")}, "grep", map[string]any{"pattern": "a$", "path": "a.txt"}),
	one("grep-none", []File{file("a.txt", "alpha\n")}, "grep", map[string]any{"pattern": "zzz"}),
	one("grep-missing-path", nil, "grep", map[string]any{"pattern": "x", "path": "nowhere"}),
	one("grep-context", []File{file("five.txt", "one\ntwo\nthree\nfour\nfive\n")}, "grep", map[string]any{"pattern": "three|five", "context": 1}),
	one("grep-literal-ignore-case", []File{file("dots.txt", "A.B\naxb\na.b\n")}, "grep", map[string]any{"pattern": "a.b", "literal": true, "ignoreCase": true}),
	one("grep-glob", []File{file("x.go", "package x\n"), file("x.md", "package notes\n")}, "grep", map[string]any{"pattern": "package", "glob": "*.md"}),
	one("grep-limit", []File{file("many.txt", "hit 1\nhit 2\nhit 3\n")}, "grep", map[string]any{"pattern": "hit", "limit": 2}),
	one("grep-long-line", []File{file("wide.txt", strings.Repeat("w", 600)+"\n")}, "grep", map[string]any{"pattern": "w+"}),
	one("grep-hidden-and-ignore", []File{file(".hidden", "needle\n"), file(".ignore", "skipped.txt\n"), file("skipped.txt", "needle\n")}, "grep", map[string]any{"pattern": "needle"}),
	one("grep-no-pattern", nil, "grep", map[string]any{"path": "."}),
	one("ls", []File{
		file("b.txt", "b"), file("a_b", "x"), file("a.b", "x"), file("A-c", "x"), file("ab", "x"), file(".hidden", "x"),
		{Path: "dir", Mode: "0755", Dir: true}, file("dir/inner.txt", "x"),
	}, "ls", map[string]any{}),
	one("ls-mixed", []File{
		file("Zeta", "x"), file("alpha10", "x"), file("alpha9", "x"), file("_under", "x"), file("-dash", "x"), file("~tilde", "x"),
		file("$dollar", "x"), file("#hash", "x"), file("a b", "x"), file("a,b", "x"), file("a;b", "x"), file("(paren)", "x"), file("MiXed", "x"),
	}, "ls", map[string]any{}),
	one("ls-unicode", []File{
		file("é-return.txt", "x"), file("end.txt", "x"), file("Ωmega", "x"), file("日本語.txt", "x"), file("🙂.txt", "x"),
		file("naïve", "x"), file("nb", "x"), file("e\u0301x", "x"), file("ex", "x"), file("Zürich", "x"), file("zz", "x"), file("1st", "x"),
	}, "ls", map[string]any{}),
	{Name: "not-offered", Calls: func(string) []tape.ToolCall {
		return []tape.ToolCall{call("find", map[string]any{"pattern": "*.txt"}), call("Read", map[string]any{"file_path": "x"})}
	}},
	one("ls-limit", []File{file("a.txt", "a"), file("b.txt", "b"), file("c.txt", "c")}, "ls", map[string]any{"path": ".", "limit": 2}),
	one("ls-empty", []File{{Path: "sub", Mode: "0755", Dir: true}}, "ls", map[string]any{"path": "sub"}),
	one("ls-missing", nil, "ls", map[string]any{"path": "nowhere"}),
	one("ls-file", []File{file("plain.txt", "x")}, "ls", map[string]any{"path": "plain.txt"}),
}
