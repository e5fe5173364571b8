package conformance

import (
	"context"
	"path/filepath"
	"strings"

	"github.com/tapebox/tapebox/internal/realharness"
	"github.com/tapebox/tapebox/tape"
)

// runPi runs Pi with ls enabled beside its default tools (read, bash, edit, write).
func runPi(ctx context.Context, o realharness.Options) (realharness.Result, error) {
	o.Args = append(o.Args, "--tools", "read,bash,edit,write,ls")
	return realharness.RunPi(ctx, o)
}

// piCases covers the tools the pi coding agent 0.73.1 enables by default (read, bash, edit,
// write) and ls, each with its success, truncation and error paths.
var piCases = []Case{
	{Name: "bash-output", Calls: func(string) []tape.ToolCall {
		return []tape.ToolCall{call("bash", map[string]any{"command": `printf 'line 1\nline 2\nline 3\n'`})}
	}},
	{Name: "bash-no-output", Calls: func(string) []tape.ToolCall {
		return []tape.ToolCall{call("bash", map[string]any{"command": "touch made.txt"})}
	}},
	{Name: "bash-fail", Calls: func(string) []tape.ToolCall {
		return []tape.ToolCall{call("bash", map[string]any{"command": "echo about to fail; exit 1"})}
	}},
	{Name: "bash-fail-no-output", Calls: func(string) []tape.ToolCall {
		return []tape.ToolCall{call("bash", map[string]any{"command": "exit 7"})}
	}},
	{Name: "bash-stderr", Calls: func(string) []tape.ToolCall {
		// Pi reads stdout and stderr from two pipes: the sleep orders them.
		return []tape.ToolCall{call("bash", map[string]any{"command": "echo to stdout; sleep 0.2; echo to stderr >&2"})}
	}},
	{Name: "bash-killed", Calls: func(string) []tape.ToolCall {
		return []tape.ToolCall{call("bash", map[string]any{"command": "echo before the signal; kill -KILL $$"})}
	}},
	{Name: "bash-long-output", Calls: func(string) []tape.ToolCall {
		return []tape.ToolCall{call("bash", map[string]any{"command": "seq 1 3000"})}
	}},
	{Name: "bash-bytes-limit", Calls: func(string) []tape.ToolCall {
		return []tape.ToolCall{call("bash", map[string]any{"command": "for i in $(seq 1 1500); do echo \"$i aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\"; done"})}
	}},
	{Name: "bash-long-line", Calls: func(string) []tape.ToolCall {
		return []tape.ToolCall{call("bash", map[string]any{"command": `echo first; head -c 60000 /dev/zero | tr '\0' b`})}
	}},
	{Name: "bash-fail-long-output", Calls: func(string) []tape.ToolCall {
		return []tape.ToolCall{call("bash", map[string]any{"command": "seq 1 2500; exit 2"})}
	}},
	{Name: "bash-timeout", Calls: func(string) []tape.ToolCall {
		return []tape.ToolCall{call("bash", map[string]any{"command": "echo before; sleep 5; echo never", "timeout": 1})}
	}},
	{Name: "bash-missing-command", Calls: func(string) []tape.ToolCall {
		return []tape.ToolCall{call("bash", map[string]any{"timeout": 3})}
	}},
	{Name: "read-whole", Before: []File{file("notes.txt", "alpha\nbeta\ngamma")}, Calls: func(string) []tape.ToolCall {
		return []tape.ToolCall{call("read", map[string]any{"path": "notes.txt"})}
	}},
	{Name: "read-absolute", Before: []File{file("notes.txt", "one\ntwo\nthree\n")}, Calls: func(cwd string) []tape.ToolCall {
		return []tape.ToolCall{call("read", map[string]any{"path": filepath.Join(cwd, "notes.txt")})}
	}},
	{Name: "read-offset-limit", Before: []File{file("notes.txt", "alpha\nbeta\ngamma\ndelta\nepsilon\n")}, Calls: func(string) []tape.ToolCall {
		return []tape.ToolCall{call("read", map[string]any{"path": "notes.txt", "offset": 2, "limit": 2})}
	}},
	{Name: "read-offset", Before: []File{file("notes.txt", "alpha\nbeta\ngamma\n")}, Calls: func(string) []tape.ToolCall {
		return []tape.ToolCall{call("read", map[string]any{"path": "notes.txt", "offset": 3})}
	}},
	{Name: "read-offset-past-end", Before: []File{file("notes.txt", "alpha\nbeta\ngamma\n")}, Calls: func(string) []tape.ToolCall {
		return []tape.ToolCall{call("read", map[string]any{"path": "notes.txt", "offset": 10})}
	}},
	{Name: "read-missing", Calls: func(string) []tape.ToolCall {
		return []tape.ToolCall{call("read", map[string]any{"path": "missing.txt"})}
	}},
	{Name: "read-empty", Before: []File{file("empty.txt", "")}, Calls: func(string) []tape.ToolCall {
		return []tape.ToolCall{call("read", map[string]any{"path": "empty.txt"})}
	}},
	{Name: "read-directory", Before: []File{{Path: "sub", Mode: "0755", Dir: true}}, Calls: func(string) []tape.ToolCall {
		return []tape.ToolCall{call("read", map[string]any{"path": "sub"})}
	}},
	{Name: "read-many-lines", Before: []File{file("many.txt", manyLines(2500))}, Calls: func(string) []tape.ToolCall {
		return []tape.ToolCall{call("read", map[string]any{"path": "many.txt"})}
	}},
	{Name: "read-bytes-limit", Before: []File{file("wide.txt", strings.Repeat(strings.Repeat("w", 99)+"\n", 1000))}, Calls: func(string) []tape.ToolCall {
		return []tape.ToolCall{call("read", map[string]any{"path": "wide.txt"})}
	}},
	{Name: "read-long-line", Before: []File{file("line.txt", "short\n"+strings.Repeat("x", 60000)+"\nend\n")}, Calls: func(string) []tape.ToolCall {
		return []tape.ToolCall{call("read", map[string]any{"path": "line.txt", "offset": 2})}
	}},
	{Name: "read-no-path", Calls: func(string) []tape.ToolCall {
		return []tape.ToolCall{call("read", map[string]any{"offset": 1})}
	}},
	{Name: "read-string-offset", Before: []File{file("notes.txt", "alpha\nbeta\ngamma\n")}, Calls: func(string) []tape.ToolCall {
		return []tape.ToolCall{call("read", map[string]any{"path": "notes.txt", "offset": "2", "limit": 1})}
	}},
	{Name: "write-new", Calls: func(string) []tape.ToolCall {
		return []tape.ToolCall{call("write", map[string]any{"path": "notes.txt", "content": "first line\nsecond line\n"})}
	}},
	{Name: "write-new-subdir", Calls: func(cwd string) []tape.ToolCall {
		return []tape.ToolCall{call("write", map[string]any{"path": filepath.Join(cwd, "deep", "er", "notes.txt"), "content": "nested\n"})}
	}},
	{Name: "write-overwrite", Before: []File{file("notes.txt", "old content\n")}, Calls: func(string) []tape.ToolCall {
		return []tape.ToolCall{call("write", map[string]any{"path": "notes.txt", "content": "new content\n"})}
	}},
	{Name: "write-unicode", Calls: func(string) []tape.ToolCall {
		return []tape.ToolCall{call("write", map[string]any{"path": "hello.txt", "content": "héllo wörld 🙂\n"})}
	}},
	{Name: "write-directory", Before: []File{{Path: "sub", Mode: "0755", Dir: true}}, Calls: func(string) []tape.ToolCall {
		return []tape.ToolCall{call("write", map[string]any{"path": "sub", "content": "x"})}
	}},
	{Name: "write-under-file", Before: []File{file("plain.txt", "x\n")}, Calls: func(string) []tape.ToolCall {
		return []tape.ToolCall{call("write", map[string]any{"path": "plain.txt/inner.txt", "content": "x"})}
	}},
	{Name: "write-no-content", Calls: func(string) []tape.ToolCall {
		return []tape.ToolCall{call("write", map[string]any{"path": "notes.txt"})}
	}},
	{Name: "edit", Before: []File{file("notes.txt", "alpha\nbeta\ngamma\n")}, Calls: func(string) []tape.ToolCall {
		return []tape.ToolCall{call("edit", map[string]any{"path": "notes.txt", "edits": []any{map[string]any{"oldText": "beta", "newText": "BETA"}}})}
	}},
	{Name: "edit-multi", Before: []File{file("code.go", "func a() {\n\treturn 1\n}\n\nfunc b() {\n\treturn 2\n}\n")}, Calls: func(string) []tape.ToolCall {
		return []tape.ToolCall{call("edit", map[string]any{"path": "code.go", "edits": []any{
			map[string]any{"oldText": "\treturn 2", "newText": "\treturn 20"},
			map[string]any{"oldText": "\treturn 1\n}", "newText": "\tx := 10\n\treturn x\n}"},
		}})}
	}},
	{Name: "edit-not-found", Before: []File{file("notes.txt", "alpha\nbeta\n")}, Calls: func(string) []tape.ToolCall {
		return []tape.ToolCall{call("edit", map[string]any{"path": "notes.txt", "edits": []any{map[string]any{"oldText": "no such text", "newText": "x"}}})}
	}},
	{Name: "edit-multi-not-found", Before: []File{file("notes.txt", "alpha\nbeta\n")}, Calls: func(string) []tape.ToolCall {
		return []tape.ToolCall{call("edit", map[string]any{"path": "notes.txt", "edits": []any{
			map[string]any{"oldText": "alpha", "newText": "A"},
			map[string]any{"oldText": "gamma", "newText": "G"},
		}})}
	}},
	{Name: "edit-not-unique", Before: []File{file("notes.txt", "same\nsame\n")}, Calls: func(string) []tape.ToolCall {
		return []tape.ToolCall{call("edit", map[string]any{"path": "notes.txt", "edits": []any{map[string]any{"oldText": "same", "newText": "other"}}})}
	}},
	{Name: "edit-overlap", Before: []File{file("notes.txt", "alpha beta gamma\n")}, Calls: func(string) []tape.ToolCall {
		return []tape.ToolCall{call("edit", map[string]any{"path": "notes.txt", "edits": []any{
			map[string]any{"oldText": "beta gamma", "newText": "x"},
			map[string]any{"oldText": "alpha beta", "newText": "y"},
		}})}
	}},
	{Name: "edit-no-change", Before: []File{file("notes.txt", "alpha\n")}, Calls: func(string) []tape.ToolCall {
		return []tape.ToolCall{call("edit", map[string]any{"path": "notes.txt", "edits": []any{map[string]any{"oldText": "alpha", "newText": "alpha"}}})}
	}},
	{Name: "edit-empty-old", Before: []File{file("notes.txt", "alpha\n")}, Calls: func(string) []tape.ToolCall {
		return []tape.ToolCall{call("edit", map[string]any{"path": "notes.txt", "edits": []any{map[string]any{"oldText": "", "newText": "x"}}})}
	}},
	{Name: "edit-missing-file", Calls: func(string) []tape.ToolCall {
		return []tape.ToolCall{call("edit", map[string]any{"path": "gone.txt", "edits": []any{map[string]any{"oldText": "a", "newText": "b"}}})}
	}},
	{Name: "edit-crlf", Before: []File{file("dos.txt", "one\r\ntwo\r\nthree\r\n")}, Calls: func(string) []tape.ToolCall {
		return []tape.ToolCall{call("edit", map[string]any{"path": "dos.txt", "edits": []any{map[string]any{"oldText": "two\nthree", "newText": "2\n3"}}})}
	}},
	{Name: "edit-fuzzy", Before: []File{file("quote.txt", "say \u201chello\u201d   \nbye\n")}, Calls: func(string) []tape.ToolCall {
		return []tape.ToolCall{call("edit", map[string]any{"path": "quote.txt", "edits": []any{map[string]any{"oldText": "say \"hello\"\nbye", "newText": "say hi\nbye"}}})}
	}},
	{Name: "edit-legacy", Before: []File{file("notes.txt", "alpha\nbeta\n")}, Calls: func(string) []tape.ToolCall {
		return []tape.ToolCall{call("edit", map[string]any{"path": "notes.txt", "oldText": "alpha", "newText": "ALPHA"})}
	}},
	{Name: "edit-edits-string", Before: []File{file("notes.txt", "alpha\nbeta\n")}, Calls: func(string) []tape.ToolCall {
		return []tape.ToolCall{call("edit", map[string]any{"path": "notes.txt", "edits": `[{"oldText":"beta","newText":"BETA"}]`})}
	}},
	{Name: "edit-no-edits", Before: []File{file("notes.txt", "alpha\n")}, Calls: func(string) []tape.ToolCall {
		return []tape.ToolCall{call("edit", map[string]any{"path": "notes.txt", "edits": []any{}})}
	}},
	{Name: "edit-missing-new", Before: []File{file("notes.txt", "alpha\n")}, Calls: func(string) []tape.ToolCall {
		return []tape.ToolCall{call("edit", map[string]any{"path": "notes.txt", "edits": []any{map[string]any{"oldText": "alpha"}}})}
	}},
	{Name: "ls", Before: []File{
		file("b.txt", "b"), file("a_b", "x"), file("a.b", "x"), file("A-c", "x"), file("ab", "x"), file(".hidden", "x"),
		{Path: "dir", Mode: "0755", Dir: true}, file("dir/inner.txt", "x"),
	}, Calls: func(string) []tape.ToolCall {
		return []tape.ToolCall{call("ls", map[string]any{})}
	}},
	{Name: "ls-limit", Before: []File{file("a.txt", "a"), file("b.txt", "b"), file("c.txt", "c")}, Calls: func(string) []tape.ToolCall {
		return []tape.ToolCall{call("ls", map[string]any{"path": ".", "limit": 2})}
	}},
	{Name: "ls-empty", Before: []File{{Path: "sub", Mode: "0755", Dir: true}}, Calls: func(string) []tape.ToolCall {
		return []tape.ToolCall{call("ls", map[string]any{"path": "sub"})}
	}},
	{Name: "ls-missing", Calls: func(string) []tape.ToolCall {
		return []tape.ToolCall{call("ls", map[string]any{"path": "nowhere"})}
	}},
	{Name: "ls-file", Before: []File{file("plain.txt", "x")}, Calls: func(string) []tape.ToolCall {
		return []tape.ToolCall{call("ls", map[string]any{"path": "plain.txt"})}
	}},
}
