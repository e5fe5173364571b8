// Package pi is the seeded grammar of the pi coding agent's tool calls: read (offsets and
// limits past the end, every file class of package grammar, directories, missing and
// absolute paths), bash (exits, stderr, output past 2000 lines and 50 KB, timeouts,
// background jobs), edit (several edits, not unique, not found, overlapping, CRLF and
// fuzzy matches, the older oldText form), write (new deep directories, over files and
// directories), ls, grep, and tools the request does not offer.
package pi

import (
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/tapebox/tapebox/internal/grammar"
	"github.com/tapebox/tapebox/tape"
	"github.com/tapebox/tapebox/testkit/fakeprovider"
)

// Offered are the tools the differential test gives Pi (--tools): its defaults, ls and grep.
var Offered = []string{"read", "bash", "edit", "write", "ls", "grep"}

type gen struct {
	r       *rand.Rand
	seq     grammar.Sequence
	dirs    []string
	touched map[string]bool
	bg      int
}

// Generate returns a sequence of n calls drawn from r.
func Generate(r *rand.Rand, n int) grammar.Sequence {
	g := &gen{r: r, touched: map[string]bool{}}
	g.seq.Before = grammar.Workspace(r)
	g.dirs = grammar.Dirs(g.seq.Before)
	for len(g.seq.Calls) < n {
		switch w := r.IntN(100); {
		case w < 22:
			g.read()
		case w < 44:
			g.bash()
		case w < 66:
			g.edit()
		case w < 78:
			g.write()
		case w < 85:
			g.ls()
		case w < 96:
			g.grep()
		default:
			g.unknown()
		}
	}
	g.seq.Cut(n)
	return g.seq
}

func (g *gen) add(call tape.ToolCall, classes ...string) { g.seq.Add(call, classes...) }

// known returns the regular files of the start no call has changed yet.
func (g *gen) known() []grammar.File { return grammar.Untouched(g.seq.Before, g.touched) }

// path returns a path to read or search: a known file, a symlink, a directory, a missing
// path, sometimes absolute or with Pi's "@" prefix.
func (g *gen) path() (string, grammar.File, string) {
	r := g.r
	p, f, class := grammar.PickPath(r, g.known(), g.seq.Before, 80)
	switch r.IntN(20) {
	case 0:
		p, class = "@"+p, class+"+at"
	case 1:
		p, class = "./"+p, class+"+dot"
	}
	return p, f, class
}

func (g *gen) read() {
	r := g.r
	p, _, class := g.path()
	in := map[string]any{"path": p}
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
	switch r.IntN(20) {
	case 0:
		cmd, class = `printf 'line 1\nline 2\n'`, "output"
	case 1:
		cmd, class = "printf "+q(grammar.Line(r)), "no-trailing-newline"
	case 2:
		cmd, class = fmt.Sprintf("seq 1 %d", grammar.Pick(r, 1999, 2000, 2001, 30000)), "many-lines"
	case 3:
		cmd, class = fmt.Sprintf(`head -c %d /dev/zero | tr '\0' x; echo`, grammar.Pick(r, 51199, 51200, 51201, 120000)), "long-line"
	case 4:
		cmd, class = fmt.Sprintf("yes %s | head -n %d", grammar.Pick(r, "abcdefghijklmnopqrstuvwxyz", "0123456789"), grammar.Pick(r, 1000, 3000)), "over-50KB"
	case 5:
		cmd, class = fmt.Sprintf("echo failing; exit %d", grammar.Pick(r, 1, 2, 127)), "non-zero-exit"
	case 6:
		cmd, class = "echo to stderr >&2", "stderr"
	case 7:
		cmd, class = "echo out; sleep 0.1; echo err >&2; sleep 0.1; echo out again", "both-streams"
	case 8:
		p, _, _ := g.path()
		cmd, class = "cat "+q(strings.TrimPrefix(p, "@")), "cat"
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
		g.add(fakeprovider.Call("bash", map[string]any{"command": cmd, "timeout": 1}), class)
		return
	case 14:
		g.bg++
		out := fmt.Sprintf("bg-%d.txt", g.bg)
		g.touched[out] = true
		cmd, class = fmt.Sprintf("(sleep 0.3; echo done > %s) >/dev/null 2>&1 & echo started", out), "background-job"
	case 15:
		cmd, class = "sleep 0.6; ls -1 | grep '^bg-' || true", "background-wait"
	case 16:
		cmd, class = "no_such_command_"+grammar.Word(r), "command-not-found"
	case 17:
		p, _, _ := g.path()
		p = strings.TrimPrefix(p, "@")
		g.touched[p] = true
		cmd, class = "rm -f "+q(p)+"; echo removed", "rm"
	case 18:
		cmd, class = "true", "no-output"
	default:
		cmd, class = "ls -1A | LC_ALL=C sort", "ls"
	}
	in := map[string]any{"command": cmd}
	if grammar.Chance(r, 0.1) {
		in["timeout"] = grammar.Pick(r, 5, 30)
		class += "+timeout"
	}
	g.add(fakeprovider.Call("bash", in), class)
}

// pieces returns a piece of text of f to edit: a line, part of a line or lines.
func (g *gen) pieces(f grammar.File) []string {
	lines := strings.Split(f.Content, "\n")
	var out []string
	for _, l := range lines {
		if strings.TrimSpace(l) != "" && len(l) < 300 {
			out = append(out, strings.TrimSuffix(l, "\r"))
		}
	}
	return out
}

func (g *gen) edit() {
	r := g.r
	k := g.known()
	if len(k) == 0 || grammar.Chance(r, 0.08) {
		p := "missing-" + grammar.Word(r) + ".txt"
		if len(g.dirs) > 0 && grammar.Chance(r, 0.4) {
			p = grammar.Pick(r, g.dirs...)
		}
		g.add(fakeprovider.Call("edit", map[string]any{"path": p, "edits": []any{map[string]any{"oldText": "a", "newText": "b"}}}), "edit-missing")
		return
	}
	f := k[r.IntN(len(k))]
	g.touched[f.Path] = true
	class := "edit-" + f.Class
	lines := g.pieces(f)
	var edits []any
	n := 1 + r.IntN(3)
	used := map[string]bool{}
	for range n {
		var old string
		switch {
		case len(lines) == 0 || grammar.Chance(r, 0.08):
			old, class = grammar.Line(r)+" not there", class+"+not-found"
		case grammar.Chance(r, 0.1):
			old, class = grammar.Pick(r, words...), class+"+maybe-not-unique"
		case grammar.Chance(r, 0.2) && len(lines) > 1:
			i := r.IntN(len(lines) - 1)
			old, class = lines[i]+"\n"+lines[i+1], class+"+multiline"
		default:
			l := lines[r.IntN(len(lines))]
			old = l
			if len(l) > 6 && grammar.Chance(r, 0.3) {
				old, class = l[:len(l)/2], class+"+partial"
			}
			if grammar.Chance(r, 0.1) {
				old, class = strings.TrimRight(old, " \t")+"   ", class+"+fuzzy-trailing"
			}
		}
		if used[old] {
			continue
		}
		used[old] = true
		nw := grammar.Line(r)
		if grammar.Chance(r, 0.05) {
			nw, class = old, class+"+no-change"
		}
		edits = append(edits, map[string]any{"oldText": old, "newText": nw})
	}
	in := map[string]any{"path": f.Path, "edits": edits}
	if len(edits) == 1 && grammar.Chance(r, 0.1) {
		e := edits[0].(map[string]any)
		in = map[string]any{"path": f.Path, "oldText": e["oldText"], "newText": e["newText"]}
		class += "+legacy"
	}
	g.add(fakeprovider.Call("edit", in), class)
}

var words = []string{"alpha", "beta", "gamma", "x", "end", "line"}

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
		p, class = k[r.IntN(len(k))].Path, "overwrite"
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
	g.add(fakeprovider.Call("write", map[string]any{"path": p, "content": content}), class+"+"+cc)
}

func (g *gen) ls() {
	r := g.r
	in := map[string]any{}
	class := "cwd"
	if grammar.Chance(r, 0.4) {
		p, _, c := g.path()
		in["path"], class = p, c
		if len(g.dirs) > 0 && grammar.Chance(r, 0.5) {
			in["path"], class = grammar.Pick(r, g.dirs...), "dir"
		}
	}
	if grammar.Chance(r, 0.2) {
		in["limit"] = grammar.Pick(r, 1, 2, 3)
		class += "+limit"
	}
	g.add(fakeprovider.Call("ls", in), class)
}

func (g *gen) grep() {
	r := g.r
	in := map[string]any{"pattern": grammar.Pick(r, "alpha", "line 1", "^x", "gamma$", "é", "日本", "[0-9]+", "beta|delta", "a.b", "notthere")}
	class := "pattern"
	if grammar.Chance(r, 0.3) {
		p, _, c := g.path()
		in["path"], class = strings.TrimPrefix(p, "@"), "path-"+c
	}
	if grammar.Chance(r, 0.2) {
		in["ignoreCase"] = true
		class += "+ignoreCase"
	}
	if grammar.Chance(r, 0.2) {
		in["literal"] = true
		class += "+literal"
	}
	if grammar.Chance(r, 0.2) {
		in["context"] = grammar.Pick(r, 1, 2)
		class += "+context"
	}
	if grammar.Chance(r, 0.2) {
		in["limit"] = grammar.Pick(r, 1, 3, 200)
		class += "+limit"
	}
	if grammar.Chance(r, 0.15) {
		in["glob"] = grammar.Pick(r, "*.txt", "*.go", "**/*.md")
		class += "+glob"
	}
	g.add(fakeprovider.Call("grep", in), class)
}

// unknown calls a tool the request does not offer.
func (g *gen) unknown() {
	name := grammar.Pick(g.r, "find", "Read", "glob", "apply_patch", "exec_command")
	g.add(fakeprovider.Call(name, map[string]any{"pattern": "*.txt", "path": "."}), "not-offered")
}
