// Package codex is the seeded grammar of the Codex CLI's tool calls: exec_command (with
// and without a tty, short commands, sessions, workdirs, output past every limit),
// write_stdin (typing, polling, unknown sessions), apply_patch (adds, deletes, updates of
// several hunks with context headers and end-of-file markers, moves, patches that fail
// halfway through, on files of every class of package grammar), the older shell tool and
// tools the request does not offer.
package codex

import (
	"fmt"
	"math/rand/v2"
	"path"
	"strings"

	"github.com/tapebox/tapebox/internal/grammar"
	"github.com/tapebox/tapebox/tape"
	"github.com/tapebox/tapebox/testkit/fakeprovider"
)

// Tools are the tools the grammar calls, in the order Generate's weights name them.
var Tools = []string{"exec_command", "write_stdin", "apply_patch", "shell", "unknown"}

// gen is one sequence being generated: the files as the grammar knows them.
type gen struct {
	r       *rand.Rand
	seq     grammar.Sequence
	files   map[string]grammar.File // regular files whose content the grammar still knows
	dirs    []string
	touched map[string]bool
	bg      int
}

// Generate returns a sequence of n calls drawn from r.
func Generate(r *rand.Rand, n int) grammar.Sequence {
	g := &gen{r: r, files: map[string]grammar.File{}, touched: map[string]bool{}}
	g.seq.Before = grammar.Workspace(r)
	for _, f := range g.seq.Before {
		switch {
		case f.Dir:
			g.dirs = append(g.dirs, f.Path)
		case f.Link == "":
			g.files[f.Path] = f
		}
	}
	for len(g.seq.Calls) < n {
		switch w := r.IntN(100); {
		case w < 42:
			g.exec()
		case w < 52:
			g.session()
		case w < 86:
			g.patch()
		case w < 93:
			g.shell()
		default:
			g.unknown()
		}
	}
	g.seq.Cut(n)
	return g.seq
}

func (g *gen) add(call tape.ToolCall, classes ...string) { g.seq.Add(call, classes...) }

// anyFile returns a known file's path, or a missing one.
func (g *gen) anyFile() (string, grammar.File, bool) {
	if k := g.knownFiles(); len(k) > 0 && grammar.Chance(g.r, 0.85) {
		f := k[g.r.IntN(len(k))]
		return f.Path, f, true
	}
	if len(g.seq.Before) > 0 && grammar.Chance(g.r, 0.5) {
		f := g.seq.Before[g.r.IntN(len(g.seq.Before))]
		return f.Path, f, false
	}
	return "missing-" + grammar.Word(g.r) + ".txt", grammar.File{}, false
}

// knownFiles returns the untouched regular files in a stable order.
func (g *gen) knownFiles() []grammar.File {
	var out []grammar.File
	for _, f := range g.seq.Before {
		if k, ok := g.files[f.Path]; ok && !g.touched[f.Path] {
			out = append(out, k)
		}
	}
	return out
}

func q(s string) string { return grammar.ShellQuote(s) }

// command returns a short shell command and its class; mutating ones mark their paths.
func (g *gen) command() (string, string) {
	r := g.r
	switch r.IntN(24) {
	case 0:
		return `printf 'line 1\nline 2\nline 3\n'`, "output"
	case 1:
		return "printf " + q(grammar.Line(r)), "no-trailing-newline"
	case 2:
		return fmt.Sprintf("seq 1 %d", grammar.Pick(r, 10, 2000, 9000, 12000, 40000, 100000)), "long-output"
	case 3:
		return fmt.Sprintf(`head -c %d /dev/zero | tr '\0' %s; echo; echo tail`, grammar.Pick(r, 100, 39999, 40000, 40001, 70000), grammar.Pick(r, "a", "b")), "long-line"
	case 4:
		return fmt.Sprintf("echo about to fail; exit %d", grammar.Pick(r, 1, 2, 3, 127, 255)), "non-zero-exit"
	case 5:
		return "echo to stderr >&2", "stderr"
	case 6:
		return "echo first to stderr >&2; sleep 0.2; echo then stdout; exit 4", "stderr+exit"
	case 7:
		p, _, _ := g.anyFile()
		return "cat " + q(p), "cat"
	case 8:
		p, _, _ := g.anyFile()
		return "wc -c " + q(p) + "; wc -l < " + q(p), "wc"
	case 9:
		p, _, _ := g.anyFile()
		return "head -c 300 " + q(p) + " | od -c | head -20", "binary-dump"
	case 10:
		return `printf 'caf\xe9 \xff\xfe bytes\n'`, "non-utf8-output"
	case 11:
		return `printf 'a\r\nb\r\nc'`, "crlf-output"
	case 12:
		return "echo héllo 🙂 日本語", "unicode-output"
	case 13:
		d := "deep/" + strings.Join([]string{grammar.Word(r), grammar.Word(r), grammar.Word(r)}, "/")
		g.touched[d] = true
		return "mkdir -p " + q(d) + " && echo made > " + q(d+"/f.txt") + " && ls " + q(d), "deep-new-dir"
	case 14:
		p, _, _ := g.anyFile()
		g.touched[p] = true
		return "rm " + q(p) + "; echo rm=$?", "rm"
	case 15:
		p, _, _ := g.anyFile()
		g.touched[p] = true
		to := "moved " + grammar.Word(r) + ".txt"
		g.touched[to] = true
		return "mv " + q(p) + " " + q(to) + " && cat " + q(to) + " | head -3", "mv"
	case 16:
		p, _, _ := g.anyFile()
		g.touched[p] = true
		return "chmod " + grammar.Pick(r, "600", "755", "444") + " " + q(p) + "; stat -c %a " + q(p), "chmod"
	case 17:
		return "ls -1A | sort", "ls"
	case 18:
		return "find . -type f | LC_ALL=C sort | head -50", "find"
	case 19:
		g.bg++
		out := fmt.Sprintf("bg-%d.txt", g.bg)
		g.touched[out] = true
		return fmt.Sprintf("(sleep 0.3; echo done > %s) >/dev/null 2>&1 & echo started", out), "background-job"
	case 20:
		return "sleep 0.6; ls -1 | grep '^bg-' || true", "background-wait"
	case 21:
		p := "new " + grammar.Word(r) + ".txt"
		g.touched[p] = true
		return "printf " + q(grammar.Lines(r, 3)) + " > " + q(p) + " && cat " + q(p), "write-file"
	case 22:
		return "no_such_command_" + grammar.Word(r), "command-not-found"
	}
	return "true", "no-output"
}

func (g *gen) exec() {
	r := g.r
	cmd, class := g.command()
	in := map[string]any{"cmd": cmd}
	classes := []string{class}
	if grammar.Chance(r, 0.2) && len(g.dirs) > 0 {
		in["workdir"] = grammar.Pick(r, g.dirs...)
		classes = append(classes, "workdir")
	} else if grammar.Chance(r, 0.05) {
		in["workdir"] = grammar.Pick(r, "no/such/dir", "/no/such/absolute/dir")
		classes = append(classes, "odd-workdir")
	}
	if grammar.Chance(r, 0.15) {
		in["max_output_tokens"] = grammar.Pick(r, 1, 10, 50, 500, 20000)
		classes = append(classes, "max_output_tokens")
	}
	if grammar.Chance(r, 0.15) {
		in["tty"] = true
		classes = append(classes, "tty")
	}
	if grammar.Chance(r, 0.1) {
		in["login"] = false
		classes = append(classes, "no-login")
	}
	if grammar.Chance(r, 0.05) {
		in["yield_time_ms"] = grammar.Pick(r, 0, 100, 60000)
		classes = append(classes, "yield")
	}
	g.add(fakeprovider.Call("exec_command", in), classes...)
}

// session starts a command that outlives its yield, then polls or types into it.
func (g *gen) session() {
	r := g.r
	step := len(g.seq.Calls)
	ph := fmt.Sprintf("<<exec session id:%d>>", step)
	switch r.IntN(5) {
	case 0:
		g.add(fakeprovider.Call("exec_command", map[string]any{"cmd": "echo early; sleep 1; echo late", "yield_time_ms": 250}), "session")
		g.add(fakeprovider.Call("write_stdin", map[string]any{"session_id": ph, "chars": "", "yield_time_ms": 5000}), "poll")
	case 1:
		g.add(fakeprovider.Call("exec_command", map[string]any{"cmd": "read x; echo got $x; read y; echo then $y", "tty": true, "yield_time_ms": 250}), "session", "tty")
		g.add(fakeprovider.Call("write_stdin", map[string]any{"session_id": ph, "chars": grammar.Word(r) + "\n", "yield_time_ms": 500}), "type", "tty")
		g.add(fakeprovider.Call("write_stdin", map[string]any{"session_id": ph, "chars": "last\n", "yield_time_ms": 3000}), "type", "tty")
	case 2:
		g.add(fakeprovider.Call("exec_command", map[string]any{"cmd": "sleep 0.5; cat; echo closed", "yield_time_ms": 250}), "session", "no-tty")
		g.add(fakeprovider.Call("write_stdin", map[string]any{"session_id": ph, "chars": "typed\n", "yield_time_ms": 3000}), "type", "no-tty")
		g.add(fakeprovider.Call("write_stdin", map[string]any{"session_id": ph, "chars": "", "yield_time_ms": 3000}), "poll", "no-tty")
	case 3:
		g.add(fakeprovider.Call("exec_command", map[string]any{"cmd": "sleep 1; seq 1 30000", "yield_time_ms": 250, "max_output_tokens": 100}), "session", "long-output")
		g.add(fakeprovider.Call("write_stdin", map[string]any{"session_id": ph, "chars": "", "yield_time_ms": 5000, "max_output_tokens": grammar.Pick(r, 20, 1000)}), "poll", "long-output")
	case 4:
		g.add(fakeprovider.Call("write_stdin", map[string]any{"session_id": grammar.Pick(r, 424242, 1, 0), "chars": grammar.Pick(r, "", "x\n")}), "unknown-session")
	}
}

// patch generates an apply_patch call.
func (g *gen) patch() {
	r := g.r
	var b strings.Builder
	b.WriteString("*** Begin Patch\n")
	var classes []string
	n := 1 + r.IntN(3)
	for range n {
		c := g.hunk(&b)
		classes = append(classes, c)
	}
	end := "*** End Patch"
	switch r.IntN(40) {
	case 0:
		end = ""
		classes = append(classes, "no-end")
	case 1:
		end = "*** End Patch\n"
		classes = append(classes, "end-newline")
	case 2:
		classes = append(classes, "empty-patch")
		b.Reset()
		b.WriteString("*** Begin Patch\n")
	case 3:
		classes = append(classes, "not-a-patch")
		b.Reset()
		b.WriteString(grammar.Line(r) + "\n")
	}
	text := b.String() + end
	if grammar.Chance(r, 0.03) {
		text = strings.ReplaceAll(text, "\n", "\r\n")
		classes = append(classes, "crlf-patch")
	}
	g.add(fakeprovider.Custom("apply_patch", text), classes...)
}

// newPath returns a path for a new file: plain, unicode, spaces, deep new directories.
func (g *gen) newPath() string {
	r := g.r
	p := grammar.Name(r)
	switch r.IntN(5) {
	case 0:
		p = "new/" + grammar.Word(r) + "/" + grammar.Word(r) + "/" + p
	case 1:
		if len(g.dirs) > 0 {
			p = grammar.Pick(r, g.dirs...) + "/" + p
		}
	}
	return p
}

// hunk writes one file's hunk and returns its class.
func (g *gen) hunk(b *strings.Builder) string {
	r := g.r
	switch w := r.IntN(100); {
	case w < 18: // add
		p := g.newPath()
		class := "add"
		if grammar.Chance(r, 0.15) {
			if k := g.knownFiles(); len(k) > 0 {
				p, class = k[r.IntN(len(k))].Path, "add-over-existing"
			}
		}
		g.touched[p] = true
		b.WriteString("*** Add File: " + p + "\n")
		for range r.IntN(5) {
			b.WriteString("+" + grammar.Line(r) + "\n")
		}
		if grammar.Chance(r, 0.1) {
			b.WriteString("+\n")
		}
		return class
	case w < 30: // delete
		p, f, _ := g.anyFile()
		class := "delete"
		switch {
		case grammar.Chance(r, 0.1) && len(g.dirs) > 0:
			p, class = grammar.Pick(r, g.dirs...), "delete-dir"
		case f.Path == "":
			class = "delete-missing"
		}
		g.touched[p] = true
		b.WriteString("*** Delete File: " + p + "\n")
		return class
	}
	k := g.knownFiles()
	if len(k) == 0 || grammar.Chance(r, 0.06) {
		p := "missing-" + grammar.Word(r) + ".txt"
		if grammar.Chance(r, 0.3) && len(g.dirs) > 0 {
			p = grammar.Pick(r, g.dirs...)
		}
		b.WriteString("*** Update File: " + p + "\n@@\n-" + grammar.Line(r) + "\n+" + grammar.Line(r) + "\n")
		return "update-missing"
	}
	f := k[r.IntN(len(k))]
	g.touched[f.Path] = true
	b.WriteString("*** Update File: " + f.Path + "\n")
	class := "update-" + f.Class
	if grammar.Chance(r, 0.15) {
		to := g.newPath()
		g.touched[to] = true
		b.WriteString("*** Move to: " + to + "\n")
		class += "+move"
	}
	b.WriteString(g.chunks(f.Content, &class))
	return class
}

// chunks writes the @@ chunks of an update of content: lines replaced, added and removed
// with some context, a context header, an end-of-file marker; or lines not in the file.
func (g *gen) chunks(content string, class *string) string {
	r := g.r
	lines := strings.Split(strings.TrimSuffix(content, "\n"), "\n")
	// The patch grammar is line based: the "\r" of a CRLF file is part of each line, and
	// a model writes the line without it (it rarely sees it).
	for i := range lines {
		lines[i] = strings.TrimSuffix(lines[i], "\r")
	}
	var b strings.Builder
	if content == "" || grammar.Chance(r, 0.08) {
		*class += "+not-found"
		b.WriteString("@@\n " + grammar.Line(r) + "\n-" + grammar.Line(r) + "\n+" + grammar.Line(r) + "\n")
		return b.String()
	}
	nChunks := 1 + r.IntN(3)
	pos := 0
	for c := 0; c < nChunks && pos < len(lines); c++ {
		at := pos + r.IntN(min(len(lines)-pos, 40))
		ctxBefore := min(at-pos, r.IntN(3))
		header := "@@"
		if grammar.Chance(r, 0.2) && at-ctxBefore-1 >= pos && lines[at-ctxBefore-1] != "" {
			header = "@@ " + lines[at-ctxBefore-1]
			*class += "+context-header"
		}
		b.WriteString(header + "\n")
		for i := at - ctxBefore; i < at; i++ {
			b.WriteString(" " + lines[i] + "\n")
		}
		del := min(len(lines)-at, r.IntN(3))
		for i := at; i < at+del; i++ {
			b.WriteString("-" + lines[i] + "\n")
		}
		for range r.IntN(3) {
			b.WriteString("+" + grammar.Line(r) + "\n")
		}
		if del == 0 && ctxBefore == 0 {
			b.WriteString("+" + grammar.Line(r) + "\n")
		}
		end := at + del
		after := min(len(lines)-end, r.IntN(3))
		for i := end; i < end+after; i++ {
			b.WriteString(" " + lines[i] + "\n")
		}
		if end+after == len(lines) && grammar.Chance(r, 0.5) {
			b.WriteString("*** End of File\n")
			*class += "+eof"
		}
		pos = end + after
	}
	if grammar.Chance(r, 0.07) {
		b.WriteString("@@\n-" + grammar.Line(r) + "\n+x\n")
		*class += "+fails-halfway"
	}
	return b.String()
}

func (g *gen) shell() {
	r := g.r
	cmd, class := g.command()
	in := map[string]any{"command": []string{"bash", "-lc", cmd}}
	if grammar.Chance(r, 0.2) {
		in["timeout_ms"] = grammar.Pick(r, 100, 1000, 5000)
		class += "+timeout_ms"
	}
	if grammar.Chance(r, 0.1) {
		in["command"] = []string{"apply_patch", "*** Begin Patch\n*** Add File: " + path.Join("via-shell", grammar.Word(r)+".txt") + "\n+x\n*** End Patch"}
		class = "apply_patch-argv"
	}
	g.add(fakeprovider.Call("shell", in), class)
}

// unknown calls a tool the request does not offer.
func (g *gen) unknown() {
	r := g.r
	name := grammar.Pick(r, "shell_command", "local_shell", "container.exec", "read_file", "Glob", "grep_files", "list_dir", "no_such_tool")
	g.add(fakeprovider.Call(name, map[string]any{"command": "echo hi", "path": "."}), "not-offered")
}
