package fidelity

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"regexp"
	"slices"
	"strings"

	"github.com/tapebox/tapebox/internal/testutil/realharness"
)

// Claude is the grammar of Claude Code's tools: Read, Write, Edit, Bash, Glob, Grep and
// tools a request may not offer, on a workspace of odd files (empty, large, binary,
// non-UTF-8, CRLF, long lines, no trailing newline, symlinks, unicode and spaces in names).
var Claude = Grammar{
	Harness:  "claude-code",
	Generate: claudeGenerate,
	Simplify: SimplifyStrings("content", "new_string", "old_string"),
	Classes:  claudeClasses,
}

// claudeClasses are the divergences of Claude Code the executor does not reproduce, each
// with its reason.
var claudeClasses = []Class{
	{Name: "sandbox without capabilities: read-only files", Text: regexp.MustCompile(`permission denied|^readonly\.txt: `),
		Reason: "every sandbox (local bubblewrap and Docker alike) drops all capabilities, CAP_DAC_OVERRIDE too, by design (docs/design.md's trust model); Claude Code ran as root with them and wrote files whose mode is read-only"},
	{Name: "search order: modification times", Field: "tool_result", Text: regexp.MustCompile(`^(/|Found [0-9]+ files?\n|[^\n]+:[0-9]+\n)`),
		Reason: "Glob, and Grep's file list and counts (2.0), put files in order of modification time; the files a replay restores from the snapshot do not keep the order in which the recording's files were made one by one (the set of files is compared and identical)",
		Match:  sameLines},
	{Name: "shell snapshot: grep is ugrep", Tool: "Bash", Text: regexp.MustCompile(`(?m)^(\./|ugrep: )`),
		Reason: "Claude Code 2.1's shell snapshot makes grep its embedded ugrep; the executor runs GNU grep with the ugrep options it has (-I, --exclude-dir, a lone . dropped), not ugrep's .gitignore handling, encoding or messages"},
	{Name: "timing: a kill late on a loaded machine", Tool: "Bash", Text: regexp.MustCompile(`^Exit code 143\nCommand timed out after [0-9]+s\n.`),
		Reason: "the recording shows output the command wrote after its timeout (Claude Code's kill came late on a machine loaded many times over); the replay kills it on time"},
	{Name: "2.0: side requests", Version: "2.0.", Field: "step", Text: regexp.MustCompile(`not reachable from the main thread`),
		Reason: "Claude Code 2.0 asks a model on the side (a Bash command's prefix, the files it reads, subagent warm-ups); a replay plays only the main thread and the threads its spawning calls start, and these are no tool calls and change no file"},
	{Name: "background command against the replay's pace", Field: "end_state", Text: regexp.MustCompile(`^((made\.txt|newlink|ü file\.txt|a(/b(/c(/d)?)?)?): missing|notes\.txt: extra)`),
		Reason: "a command run in the background (run_in_background) finished within the recorded run, whose harness took seconds between turns; the replay answers the calls after it in milliseconds and takes its end state before the command ran: a file it makes is missing, notes.txt it removes is extra (where the recording's news of the command's output shows that it had written it, the replay waits for it: TestClaudeCode20NewsWaits)"},
}

// sameLines says whether the two sides of a difference hold the same lines in another
// order.
func sameLines(d Divergence) bool {
	if d.Recorded == d.Replayed {
		return false
	}
	a, b := strings.Split(d.Recorded, "\n"), strings.Split(d.Replayed, "\n")
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

// ClaudeScratch returns where Claude Code keeps a run's background task output for cwd:
// /tmp/claude-<uid>/<cwd with / and . as -> (2.1), /tmp/claude/<the same> (2.0).
func ClaudeScratch(cwd string) []string {
	slug := strings.NewReplacer("/", "-", ".", "-", " ", "-").Replace(cwd)
	return []string{fmt.Sprintf("/tmp/claude-%d/%s", os.Getuid(), slug), "/tmp/claude/" + slug}
}

// claudeFiles is the starting workspace every Claude sequence draws from: each file is
// kept with probability 3/4, so that calls meet missing paths too.
func claudeFiles(r *rand.Rand) []File {
	var many strings.Builder
	for i := range 2500 + r.IntN(1000) {
		fmt.Fprintf(&many, "line %d: %s\n", i+1, strings.Repeat("x", r.IntN(40)))
	}
	long := strings.Repeat("abcdefghij", 250+r.IntN(100)) + "\nshort\n"
	bin := make([]byte, 64+r.IntN(512))
	for i := range bin {
		bin[i] = byte(r.UintN(256))
	}
	bin[3] = 0
	all := []File{
		{Path: "notes.txt", Data: []byte("alpha\nbeta\ngamma\nbeta\ndelta\n")},
		{Path: "empty.txt", Data: []byte{}},
		{Path: "crlf.txt", Data: []byte("one\r\ntwo\r\nthree\r\n")},
		{Path: "notrail.txt", Data: []byte("no newline at the end")},
		{Path: "latin1.txt", Data: []byte("caf\xe9 cr\xe8me br\xfbl\xe9e\n")},
		{Path: "many.log", Data: []byte(many.String())},
		{Path: "long.txt", Data: []byte(long)},
		{Path: "blob.bin", Data: bin},
		{Path: "dir with space/ünï cødé.txt", Data: []byte("unicode name\n")},
		{Path: "src/main.go", Data: []byte("package main\n\nfunc main() {\n\tprintln(\"hi\")\n}\n")},
		{Path: "src/util.go", Data: []byte("package main\n\n// TODO: tidy\nfunc helper() int { return 42 }\n")},
		{Path: "readonly.txt", Data: []byte("do not touch\n"), Mode: 0o444},
		{Path: "run.sh", Data: []byte("#!/bin/sh\necho run \"$@\"\n"), Mode: 0o755},
		{Path: "emptydir", Dir: true},
		{Path: "link.txt", Link: "notes.txt"},
		{Path: "dangling", Link: "nowhere.txt"},
	}
	var out []File
	for _, f := range all {
		if r.IntN(4) > 0 {
			out = append(out, f)
		}
	}
	return out
}

// claudeGenerate draws 4 to 14 calls over claudeFiles.
func claudeGenerate(r *rand.Rand, cwd string) ([]File, []Call) {
	files := claudeFiles(r)
	names := []string{"notes.txt", "empty.txt", "crlf.txt", "notrail.txt", "latin1.txt", "many.log", "long.txt",
		"blob.bin", "dir with space/ünï cødé.txt", "src/main.go", "readonly.txt", "link.txt", "dangling", "missing.txt", "emptydir", "src"}
	abs := func(p string) string { return cwd + "/" + p }
	pick := func() string { return names[r.IntN(len(names))] }
	n := 4 + r.IntN(11)
	var calls []Call
	for range n {
		calls = append(calls, claudeCall(r, abs, pick))
	}
	return files, calls
}

// claudeCall draws one call.
func claudeCall(r *rand.Rand, abs func(string) string, pick func() string) Call {
	switch k := r.IntN(100); {
	case k < 22:
		return claudeRead(r, abs, pick)
	case k < 36:
		return claudeWrite(r, abs, pick)
	case k < 54:
		return claudeEdit(r, abs, pick)
	case k < 88:
		return claudeBash(r)
	case k < 94:
		return claudeSearch(r, abs)
	default:
		tools := []string{"NotebookEdit", "MultiEdit", "LS", "WebFetch"}
		t := tools[r.IntN(len(tools))]
		var in map[string]any
		switch t {
		case "NotebookEdit":
			in = map[string]any{"notebook_path": abs("nb.ipynb"), "new_source": "print(1)", "cell_type": "code", "edit_mode": "insert"}
		case "MultiEdit":
			in = map[string]any{"file_path": abs(pick()), "edits": []map[string]any{{"old_string": "alpha", "new_string": "ALPHA"}}}
		case "LS":
			in = map[string]any{"path": abs("src")}
		default:
			in = map[string]any{"url": "http://127.0.0.1:9/", "prompt": "summarize"}
		}
		return NewCall("tool-not-offered", t, in)
	}
}

func claudeRead(r *rand.Rand, abs func(string) string, pick func() string) Call {
	p := pick()
	in := map[string]any{"file_path": abs(p)}
	class := "read:" + fileClass(p)
	switch r.IntN(6) {
	case 0:
		in["offset"] = 1 + r.IntN(4000)
		class = "read:offset"
	case 1:
		in["limit"] = 1 + r.IntN(5)
		in["offset"] = 1 + r.IntN(3)
		class = "read:offset-limit"
	case 2:
		in["offset"] = 100000
		class = "read:offset-past-end"
	}
	return NewCall(class, "Read", in)
}

func claudeWrite(r *rand.Rand, abs func(string) string, pick func() string) Call {
	contents := []string{"", "hello\n", "no newline", "crlf\r\nline two\r\n", "ünïcødé ✓\n", strings.Repeat("long line ", 300) + "\n", "tab\tseparated\n"}
	content := contents[r.IntN(len(contents))]
	var p, class string
	switch r.IntN(5) {
	case 0:
		p, class = fmt.Sprintf("deep/new/dir%d/file.txt", r.IntN(3)), "write:deep-new-dir"
	case 1:
		p, class = "new file ✓.txt", "write:unicode-name"
	case 2:
		p, class = "out.txt", "write:new"
	default:
		p = pick()
		class = "write:existing-" + fileClass(p)
	}
	return NewCall(class, "Write", map[string]any{"file_path": abs(p), "content": content})
}

func claudeEdit(r *rand.Rand, abs func(string) string, pick func() string) Call {
	type edit struct{ class, file, old, new string }
	edits := []edit{
		{"edit:unique", "notes.txt", "gamma", "GAMMA"},
		{"edit:not-unique", "notes.txt", "beta", "BETA"},
		{"edit:not-found", "notes.txt", "omega", "OMEGA"},
		{"edit:crlf", "crlf.txt", "two", "TWO"},
		{"edit:crlf-multiline", "crlf.txt", "one\ntwo", "1\n2"},
		{"edit:no-trailing-newline", "notrail.txt", "the end", "the finish"},
		{"edit:same-string", "notes.txt", "alpha", "alpha"},
		{"edit:create-empty-old", "created.txt", "", "brand new\n"},
		{"edit:missing-file", "missing.txt", "x", "y"},
		{"edit:directory", "src", "x", "y"},
		{"edit:unicode-name", "dir with space/ünï cødé.txt", "unicode", "UNICODE"},
		{"edit:go", "src/main.go", "\"hi\"", "\"hello\""},
		{"edit:symlink", "link.txt", "delta", "DELTA"},
		{"edit:non-utf8", "latin1.txt", "cr", "CR"},
		{"edit:empty-file", "empty.txt", "", "filled\n"},
	}
	e := edits[r.IntN(len(edits))]
	in := map[string]any{"file_path": abs(e.file), "old_string": e.old, "new_string": e.new}
	if r.IntN(4) == 0 {
		in["replace_all"] = true
		e.class += "+replace_all"
	}
	return NewCall(e.class, "Edit", in)
}

func claudeBash(r *rand.Rand) Call {
	type cmd struct{ class, command string }
	cmds := []cmd{
		{"bash:echo", "echo hello"},
		{"bash:exit-code", fmt.Sprintf("echo failing; exit %d", 1+r.IntN(3))},
		{"bash:stderr", "echo out; echo err >&2"},
		{"bash:stderr-exit", "ls no-such-file"},
		{"bash:no-trailing-newline", "printf 'no newline'"},
		{"bash:empty-output", "true"},
		{"bash:long-output", fmt.Sprintf("seq 1 %d", 5000+r.IntN(20000))},
		{"bash:long-line", fmt.Sprintf("head -c %d /dev/zero | tr '\\0' x", 20000+r.IntN(20000))},
		{"bash:cat", "cat notes.txt"},
		{"bash:cat-binary", "cat blob.bin | od -c | head -5"},
		{"bash:non-utf8-output", "printf 'caf\\351\\n'"},
		{"bash:cd", "cd src && pwd"},
		{"bash:pwd", "pwd"},
		{"bash:mkdir-deep", "mkdir -p a/b/c/d && echo made"},
		{"bash:write-file", "printf 'x\\ny\\n' > made.txt && wc -l made.txt"},
		{"bash:rm", "rm -f notes.txt && echo removed"},
		{"bash:ls", "ls -1"},
		{"bash:ls-missing", "ls -1 missing-dir"},
		{"bash:chmod", "chmod 600 notes.txt 2>&1; echo done"},
		{"bash:symlink", "ln -sf notes.txt newlink && readlink newlink"},
		{"bash:unicode-name", "touch 'ü file.txt' && ls -1 | grep ü"},
		{"bash:crlf-output", "printf 'a\\r\\nb\\r\\n'"},
		{"bash:grep", "grep -rn beta . | sort"},
		{"bash:exec", "sh run.sh one two"},
		{"bash:stdin", "cat"},
		{"bash:empty-stderr-fail", "false"},
		{"bash:sleep", "sleep 0.2; echo slept"},
	}
	c := cmds[r.IntN(len(cmds))]
	in := map[string]any{"command": c.command, "description": "run " + c.class}
	switch r.IntN(12) {
	case 0:
		in["run_in_background"] = true
		c.class = "bash:background"
	case 1:
		in["command"] = "sleep 3; echo late"
		in["timeout"] = 1000
		c.class = "bash:timeout"
	}
	return NewCall(c.class, "Bash", in)
}

func claudeSearch(r *rand.Rand, abs func(string) string) Call {
	if r.IntN(2) == 0 {
		patterns := []string{"**/*.go", "*.txt", "src/*", "**/*", "nothing-*"}
		in := map[string]any{"pattern": patterns[r.IntN(len(patterns))]}
		if r.IntN(3) == 0 {
			in["path"] = abs("src")
		}
		return NewCall("glob", "Glob", in)
	}
	patterns := []string{"beta", "TODO", "^package", "nothing-matches", "x{30}"}
	in := map[string]any{"pattern": patterns[r.IntN(len(patterns))]}
	modes := []string{"files_with_matches", "content", "count"}
	if r.IntN(2) == 0 {
		in["output_mode"] = modes[r.IntN(len(modes))]
	}
	if r.IntN(3) == 0 {
		in["-n"] = true
	}
	return NewCall("grep", "Grep", in)
}

// fileClass names the input class of a workspace path of claudeFiles.
func fileClass(p string) string {
	switch p {
	case "notes.txt", "src/main.go":
		return "text"
	case "empty.txt":
		return "empty"
	case "crlf.txt":
		return "crlf"
	case "notrail.txt":
		return "no-trailing-newline"
	case "latin1.txt":
		return "non-utf8"
	case "many.log":
		return "many-lines"
	case "long.txt":
		return "long-lines"
	case "blob.bin":
		return "binary"
	case "dir with space/ünï cødé.txt":
		return "unicode-name"
	case "readonly.txt":
		return "read-only"
	case "link.txt":
		return "symlink"
	case "dangling":
		return "dangling-symlink"
	case "missing.txt":
		return "missing"
	case "emptydir", "src":
		return "directory"
	}
	return "other"
}

// SimplifyStrings returns a Grammar.Simplify that shortens the named string fields of a
// call's JSON input: each to its first half, then to "x". Other fields are left alone
// (a path or a command cut in half no longer means the same).
func SimplifyStrings(fields ...string) func(Call) []Call {
	return func(c Call) []Call {
		var in map[string]any
		if json.Unmarshal(c.Input, &in) != nil {
			return nil
		}
		var out []Call
		for _, f := range fields {
			s, ok := in[f].(string)
			if !ok || len(s) <= 1 {
				continue
			}
			for _, v := range []string{s[:len(s)/2], "x"} {
				m := map[string]any{}
				for k, x := range in {
					m[k] = x
				}
				m[f] = v
				out = append(out, NewCall(c.Class, c.Tool, m))
			}
		}
		return out
	}
}

// Claude Code versions the generator runs: the pinned one (harnesses/package.json's
// @anthropic-ai/claude-code, a native binary) and an older one pinned beside it under an
// npm alias (claude-code-2.0.77, a node script), whose request still offered Glob and Grep.
const (
	ClaudeVersion    = "2.1.332"
	ClaudeOldVersion = "2.0.77"
)

// ClaudeTargets returns Claude Code at ClaudeVersion and ClaudeOldVersion.
func ClaudeTargets() []Target {
	old := func(ctx context.Context, o realharness.Options) (realharness.Result, error) {
		bin, err := realharness.ClaudeOlder(ClaudeOldVersion)
		if err != nil {
			return realharness.Result{}, err
		}
		o.Bin = bin
		return realharness.RunClaude(ctx, o)
	}
	return []Target{
		{Harness: realharness.Claude, Version: ClaudeVersion, Run: realharness.RunClaude, Scratch: ClaudeScratch},
		{Harness: realharness.Claude, Version: ClaudeOldVersion, Run: old, Scratch: ClaudeScratch},
	}
}
