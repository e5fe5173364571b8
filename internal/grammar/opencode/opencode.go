// Package opencode is the seeded grammar of OpenCode's tool calls (opencode 1.18, a model
// that is not a GPT, so edit and write are offered and apply_patch is not): read (offsets
// and limits past the end, every file class of package grammar, directories, missing
// paths, relative and absolute), bash (exits, stderr, no output, workdir, output past
// 2000 lines and 51200 bytes, timeouts, background jobs), write (new deep directories,
// over files, directories and read-only files), edit (unique, not unique, replaceAll, not
// found, no change, creating with an empty oldString, files not read first, and inputs
// for each of opencode's matchers: exact, trimmed lines, block anchors, collapsed
// whitespace, indentation, escapes, trimmed ends, context), glob, grep, todowrite, and
// tools the request does not offer (apply_patch, list, patch). GenerateGPT draws for a GPT
// model, which opencode offers apply_patch in place of edit and write: patches (patch.go)
// take the edits' and writes' share, and edit and write are tools not offered.
package opencode

import (
	"fmt"
	"math/rand/v2"
	"path"
	"strings"

	"github.com/tapebox/tapebox/internal/grammar"
	"github.com/tapebox/tapebox/tape"
	"github.com/tapebox/tapebox/testkit/fakeprovider"
)

// Offered are the tools the generator calls that opencode offers a model that is not a
// GPT (the others are called as tools it does not offer).
var Offered = []string{"bash", "read", "write", "edit", "glob", "grep", "todowrite"}

// NotOffered are the tools the generator calls that the request does not offer.
var NotOffered = []string{"apply_patch", "list", "patch", "Read", "multiedit"}

// OfferedGPT are the tools the generator calls that opencode offers a GPT model.
var OfferedGPT = []string{"bash", "read", "apply_patch", "glob", "grep", "todowrite"}

// NotOfferedGPT are the tools GenerateGPT calls that a GPT model's request does not offer.
var NotOfferedGPT = []string{"edit", "write", "list", "patch", "Read", "multiedit"}

type gen struct {
	r *rand.Rand
	// gpt draws for a GPT model: apply_patch in place of edit and write.
	gpt     bool
	cwd     string
	seq     grammar.Sequence
	dirs    []string
	touched map[string]bool
	bg      int
}

// Generate returns a sequence of n calls drawn from r for a harness that runs in cwd (the
// absolute paths a model sends are under it).
func Generate(r *rand.Rand, n int, cwd string) grammar.Sequence {
	return generate(&gen{r: r, cwd: cwd, touched: map[string]bool{}}, n)
}

// GenerateGPT is Generate for a GPT model (an id with "gpt-", not "gpt-4" nor "oss"):
// opencode then offers apply_patch in place of edit and write, and the calls that would
// have been edits and writes are patches (OfferedGPT).
func GenerateGPT(r *rand.Rand, n int, cwd string) grammar.Sequence {
	return generate(&gen{r: r, cwd: cwd, touched: map[string]bool{}, gpt: true}, n)
}

func generate(g *gen, n int) grammar.Sequence {
	r := g.r
	g.seq.Before = grammar.Workspace(r)
	g.dirs = grammar.Dirs(g.seq.Before)
	for len(g.seq.Calls) < n {
		switch w := r.IntN(100); {
		case w < 20:
			g.read()
		case w < 42:
			g.bash()
		case w < 78 && g.gpt:
			g.patch()
		case w < 66:
			g.edit()
		case w < 78:
			g.write()
		case w < 85:
			g.glob()
		case w < 93:
			g.grep()
		case w < 96:
			g.todo()
		default:
			g.unknown()
		}
	}
	g.seq.Cut(n)
	g.waitForJobs()
	return g.seq
}

// waitForJobs makes the last call wait for the background jobs started after the last
// wait: a job's file then meets the end state of the recording and of the replay alike
// (the replay runs without the harness's time between turns; the calls in between may
// see the file or not: class background race).
func (g *gen) waitForJobs() {
	pending := false
	for _, cs := range g.seq.Classes {
		for _, c := range cs {
			switch {
			case strings.HasPrefix(c, "background-job"):
				pending = true
			case strings.HasPrefix(c, "background-wait"):
				pending = false
			}
		}
	}
	if !pending || len(g.seq.Calls) == 0 {
		return
	}
	last := len(g.seq.Calls) - 1
	g.seq.Calls[last] = fakeprovider.Call("bash", map[string]any{"command": waitCommand, "description": "step"})
	g.seq.Classes[last] = []string{"background-wait"}
}

// waitCommand waits out the background jobs (each writes its file 0.3 s after it starts).
const waitCommand = "sleep 0.6; ls -1 | grep '^bg-' || true"

func (g *gen) add(call tape.ToolCall, classes ...string) { g.seq.Add(call, classes...) }

// known returns the regular files of the start no call has changed yet.
func (g *gen) known() []grammar.File { return grammar.Untouched(g.seq.Before, g.touched) }

// abs returns p as the model sends it: mostly absolute (the tools ask for absolute paths),
// sometimes relative.
func (g *gen) abs(p string) (string, string) {
	if g.r.IntN(6) == 0 {
		if g.r.IntN(3) == 0 {
			return "./" + p, "+relative"
		}
		return p, "+relative"
	}
	return path.Join(g.cwd, p), ""
}

// path returns a path to read or search: a known file, any entry of the start, a missing
// path.
func (g *gen) path() (string, string) {
	r := g.r
	p, _, class := grammar.PickPath(r, g.known(), g.seq.Before, 82)
	a, c := g.abs(p)
	return a, class + c
}

func (g *gen) read() {
	r := g.r
	p, class := g.path()
	in := map[string]any{"filePath": p}
	if grammar.Chance(r, 0.3) {
		in["offset"] = grammar.Pick(r, 1, 2, 3, 10, 1999, 2001, 5000, 100000)
		class += "+offset"
	}
	if grammar.Chance(r, 0.25) {
		in["limit"] = grammar.Pick(r, 1, 2, 5, 100, 2500)
		class += "+limit"
	}
	g.add(fakeprovider.Call("read", in), class)
}

func q(s string) string { return grammar.ShellQuote(s) }

func (g *gen) bash() {
	r := g.r
	var cmd, class string
	in := map[string]any{"description": "step"}
	switch r.IntN(22) {
	case 0:
		cmd, class = `printf 'line 1\nline 2\n'`, "output"
	case 1:
		cmd, class = "printf "+q(grammar.Line(r)), "no-trailing-newline"
	case 2:
		cmd, class = fmt.Sprintf("seq 1 %d", grammar.Pick(r, 1999, 2000, 2001, 30000)), "many-lines"
	case 3:
		cmd, class = fmt.Sprintf(`head -c %d /dev/zero | tr '\0' x; echo`, grammar.Pick(r, 51199, 51200, 51201, 120000)), "long-line"
	case 4:
		cmd, class = fmt.Sprintf("yes %s | head -n %d", grammar.Pick(r, "abcdefghijklmnopqrstuvwxyz", "0123456789"), grammar.Pick(r, 1000, 3000, 9000)), "over-51200-bytes"
	case 5:
		cmd, class = fmt.Sprintf("echo failing; exit %d", grammar.Pick(r, 1, 2, 127)), "non-zero-exit"
	case 6:
		cmd, class = "echo to stderr >&2", "stderr"
	case 7:
		cmd, class = "echo out; sleep 0.1; echo err >&2; sleep 0.1; echo out again", "both-streams"
	case 8:
		p, _ := g.path()
		cmd, class = "cat "+q(p), "cat"
	case 9:
		cmd, class = `printf 'caf\xe9 \xff\n'`, "non-utf8-output"
	case 10:
		cmd, class = `printf 'a\r\nb\r\n'`, "crlf-output"
	case 11:
		cmd, class = "echo héllo 🙂", "unicode-output"
	case 12:
		d := "deep/" + grammar.Word(r) + "/" + grammar.Word(r)
		g.touched[d] = true
		cmd, class = "mkdir -p "+q(d)+" && touch "+q(d+"/f")+" && ls "+q(d), "deep-new-dir"
	case 13:
		cmd, class = "echo before; sleep 3; echo never", "timeout"
		in["timeout"] = grammar.Pick(r, 500, 1000)
	case 14:
		g.bg++
		out := fmt.Sprintf("bg-%d.txt", g.bg)
		g.touched[out] = true
		cmd, class = fmt.Sprintf("(sleep 0.3; echo done > %s) >/dev/null 2>&1 & echo started", out), "background-job"
	case 15:
		cmd, class = waitCommand, "background-wait"
	case 16:
		cmd, class = "no_such_command_"+grammar.Word(r), "command-not-found"
	case 17:
		p, _ := g.path()
		g.touched[strings.TrimPrefix(strings.TrimPrefix(p, g.cwd+"/"), "./")] = true
		cmd, class = "rm -f "+q(p)+"; echo removed", "rm"
	case 18:
		cmd, class = "true", "no-output"
	case 19:
		cmd, class = "pwd", "pwd"
	case 20:
		// One stream (2>&1): the errors and the status written within the same instant on two
		// pipes reach opencode in either order (class stdout/stderr interleaving).
		cmd, class = "{ chmod 000 locked.txt 2>/dev/null; echo secret > locked.txt; chmod 000 locked.txt; cat locked.txt; echo status $?; } 2>&1", "permission-denied"
		g.touched["locked.txt"] = true
	default:
		cmd, class = "ls -1A | LC_ALL=C sort", "ls"
	}
	in["command"] = cmd
	if len(g.dirs) > 0 && grammar.Chance(r, 0.12) {
		in["workdir"] = grammar.Pick(r, g.dirs...)
		class += "+workdir"
	} else if grammar.Chance(r, 0.04) {
		in["workdir"] = "no/such/dir"
		class += "+missing-workdir"
	}
	if _, ok := in["timeout"]; !ok && grammar.Chance(r, 0.08) {
		in["timeout"] = grammar.Pick(r, 5000, 30000)
		class += "+timeout"
	}
	g.add(fakeprovider.Call("bash", in), class)
}

// pieces returns the lines of f worth editing, without their line ends.
func pieces(f grammar.File) []string {
	var out []string
	for _, l := range strings.Split(f.Content, "\n") {
		if strings.TrimSpace(l) != "" && len(l) < 300 {
			out = append(out, strings.TrimSuffix(l, "\r"))
		}
	}
	return out
}

// allLines returns f's lines without their line ends (empty ones kept).
func allLines(f grammar.File) []string {
	ls := strings.Split(strings.ReplaceAll(f.Content, "\r\n", "\n"), "\n")
	return ls
}

var words = []string{"alpha", "beta", "gamma", "x", "end", "line"}

// reindent changes the indentation of every line of s.
func reindent(s, by string) string {
	ls := strings.Split(s, "\n")
	for i, l := range ls {
		if strings.TrimSpace(l) != "" {
			ls[i] = by + strings.TrimLeft(l, " \t")
		}
	}
	return strings.Join(ls, "\n")
}

// old returns an oldString for f and its class: what the model copied, or something each
// of opencode's matchers accepts in its own way.
func (g *gen) old(f grammar.File) (string, string) {
	r := g.r
	ls := pieces(f)
	all := allLines(f)
	if len(ls) == 0 || grammar.Chance(r, 0.07) {
		return grammar.Line(r) + " not there", "not-found"
	}
	block := func(n int) string {
		if len(all) < n {
			return ""
		}
		i := r.IntN(len(all) - n + 1)
		b := strings.Join(all[i:i+n], "\n")
		if strings.TrimSpace(b) == "" || len(b) > 2000 {
			return ""
		}
		return b
	}
	l := ls[r.IntN(len(ls))]
	switch r.IntN(14) {
	case 0:
		return grammar.Pick(r, words...), "maybe-not-unique"
	case 1:
		if b := block(2); b != "" {
			return b, "multiline"
		}
	case 2:
		if len(l) > 6 {
			return l[:len(l)/2], "partial"
		}
	case 3: // LineTrimmedReplacer: the lines with other indentation
		if b := block(1 + r.IntN(3)); b != "" {
			return reindent(b, grammar.Pick(r, "  ", "\t", "")), "line-trimmed"
		}
	case 4: // BlockAnchorReplacer: first and last lines right, the middle ones changed
		if b := block(3 + r.IntN(4)); b != "" {
			bl := strings.Split(b, "\n")
			for i := 1; i < len(bl)-1; i++ {
				if grammar.Chance(r, 0.5) {
					bl[i] = bl[i] + grammar.Pick(r, "x", " changed", "")
				}
			}
			return strings.Join(bl, "\n"), "block-anchor"
		}
	case 5: // WhitespaceNormalizedReplacer: runs of spaces collapsed or doubled
		if strings.Contains(strings.TrimSpace(l), " ") {
			return strings.ReplaceAll(strings.TrimSpace(l), " ", grammar.Pick(r, "  ", "\t", " \t ")), "whitespace"
		}
	case 6: // IndentationFlexibleReplacer
		if b := block(2 + r.IntN(3)); b != "" {
			return reindent(b, "        "), "indentation"
		}
	case 7: // EscapeNormalizedReplacer: the line ends written as \n, tabs as \t
		if b := block(2); b != "" {
			return strings.ReplaceAll(strings.ReplaceAll(b, "\t", `\t`), "\n", `\n`), "escaped"
		}
	case 8: // TrimmedBoundaryReplacer
		return grammar.Pick(r, "  ", "\n", " \n", "\t") + l + grammar.Pick(r, "  ", "\n", "\n\n", ""), "trimmed-boundary"
	case 9: // ContextAwareReplacer: anchors with half the middle lines right
		if b := block(4 + r.IntN(3)); b != "" {
			bl := strings.Split(b, "\n")
			bl[1+r.IntN(len(bl)-2)] = grammar.Line(r)
			return strings.Join(bl, "\n"), "context-aware"
		}
	case 10:
		if len(l) > 3 {
			return strings.TrimRight(l, " \t") + "   ", "trailing-space"
		}
	}
	return l, "line"
}

func (g *gen) edit() {
	r := g.r
	k := g.known()
	if len(k) == 0 || grammar.Chance(r, 0.1) {
		p, class := "missing-"+grammar.Word(r)+".txt", "edit-missing"
		old := "a"
		switch {
		case len(g.dirs) > 0 && grammar.Chance(r, 0.3):
			p, class = grammar.Pick(r, g.dirs...), "edit-directory"
		case grammar.Chance(r, 0.5):
			old, class = "", "edit-create"
			if grammar.Chance(r, 0.4) {
				p, class = "new/"+grammar.Word(r)+"/"+p, "edit-create-deep"
			}
			g.touched[p] = true
		case len(k) > 0 && grammar.Chance(r, 0.3):
			f := k[r.IntN(len(k))]
			p, old, class = f.Path, "", "edit-empty-old-existing"
		}
		ap, c := g.abs(p)
		g.add(fakeprovider.Call("edit", map[string]any{"filePath": ap, "oldString": old, "newString": grammar.Line(r) + "\n"}), class+c)
		return
	}
	f := k[r.IntN(len(k))]
	g.touched[f.Path] = true
	old, oc := g.old(f)
	class := "edit-" + f.Class + "+" + oc
	nw := grammar.Line(r)
	switch {
	case grammar.Chance(r, 0.04):
		nw, class = old, class+"+no-change"
	case grammar.Chance(r, 0.1):
		nw, class = "", class+"+delete"
	case grammar.Chance(r, 0.1):
		nw, class = grammar.Line(r)+"\n"+grammar.Line(r), class+"+multiline-new"
	}
	p, c := g.abs(f.Path)
	in := map[string]any{"filePath": p, "oldString": old, "newString": nw}
	if grammar.Chance(r, 0.15) {
		in["replaceAll"] = true
		class += "+replaceAll"
	}
	g.add(fakeprovider.Call("edit", in), class+c)
}

func (g *gen) write() {
	r := g.r
	var p, class string
	switch w := r.IntN(10); {
	case w < 4:
		p, class = grammar.Name(r), "new"
	case w < 6:
		p, class = "new/"+grammar.Word(r)+"/"+grammar.Word(r)+"/"+grammar.Name(r), "deep-new-dir"
	case w < 8 && len(g.known()) > 0:
		k := g.known()
		f := k[r.IntN(len(k))]
		p, class = f.Path, "overwrite-"+f.Mode
	case w < 9 && len(g.dirs) > 0:
		p, class = grammar.Pick(r, g.dirs...), "directory"
	default:
		p, class = grammar.Name(r), "new"
	}
	g.touched[p] = true
	content, cc := grammar.Content(r)
	if cc == "binary" || cc == "latin1" || cc == "huge" || cc == "long-line" {
		content, cc = grammar.Lines(r, 3), "text" // a model writes text through JSON
	}
	if grammar.Chance(r, 0.04) {
		content, cc = "\uFEFF"+content, cc+"+bom"
	}
	ap, c := g.abs(p)
	g.add(fakeprovider.Call("write", map[string]any{"filePath": ap, "content": content}), class+"+"+cc+c)
}

func (g *gen) glob() {
	r := g.r
	in := map[string]any{"pattern": grammar.Pick(r, "*.txt", "**/*.txt", "**/*.go", "*", "**/*", "src/**", "*.nothing", "**/*.{md,json}", "**/.*", "my dir/*")}
	class := "pattern"
	if grammar.Chance(r, 0.3) {
		switch {
		case len(g.dirs) > 0 && grammar.Chance(r, 0.5):
			in["path"], class = grammar.Pick(r, g.dirs...), "dir"
		default:
			p, c := g.path()
			in["path"], class = p, "path-"+c
		}
	}
	g.add(fakeprovider.Call("glob", in), class)
}

func (g *gen) grep() {
	r := g.r
	in := map[string]any{"pattern": grammar.Pick(r, "alpha", "line 1", "^x", "gamma$", "é", "日本", "[0-9]+", "beta|delta", "a.b", "notthere", "(unclosed", "h{99}")}
	class := "pattern"
	if grammar.Chance(r, 0.3) {
		p, c := g.path()
		in["path"], class = p, "path-"+c
	}
	if grammar.Chance(r, 0.2) {
		in["include"] = grammar.Pick(r, "*.txt", "*.go", "*.{md,json}", "**/*.md")
		class += "+include"
	}
	g.add(fakeprovider.Call("grep", in), class)
}

func (g *gen) todo() {
	r := g.r
	n := r.IntN(4)
	todos := make([]any, 0, n)
	for range n {
		todos = append(todos, map[string]any{
			"content":  grammar.Line(r),
			"status":   grammar.Pick(r, "pending", "in_progress", "completed", "cancelled"),
			"priority": grammar.Pick(r, "high", "medium", "low"),
		})
	}
	class := fmt.Sprintf("todos-%d", n)
	if n == 0 {
		class = "todos-empty"
	}
	g.add(fakeprovider.Call("todowrite", map[string]any{"todos": todos}), class)
}

// unknown calls a tool the request does not offer.
func (g *gen) unknown() {
	name := grammar.Pick(g.r, NotOffered...)
	if g.gpt {
		name = grammar.Pick(g.r, NotOfferedGPT...)
	}
	in := map[string]any{"path": "."}
	switch name {
	case "edit":
		in = map[string]any{"filePath": path.Join(g.cwd, "x.txt"), "oldString": "a", "newString": "b"}
	case "write":
		in = map[string]any{"filePath": path.Join(g.cwd, "written.txt"), "content": "x\n"}
	}
	if name == "apply_patch" || name == "patch" {
		in = map[string]any{"patchText": "*** Begin Patch\n*** Add File: patched.txt\n+hello\n*** End Patch"}
	}
	g.add(fakeprovider.Call(name, in), "not-offered")
}
