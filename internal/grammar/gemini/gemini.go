// Package gemini is the seeded grammar of Gemini CLI's tool calls: read_file (line ranges
// past the end, every file class of package grammar, directories, missing paths),
// run_shell_command (exits, stderr, escapes, no output, dir_path, long output, output past
// the truncation limit, background jobs, is_background, binary output),
// write_file (new deep directories, overwrites, CRLF files, a directory, a path under a
// file), replace (unique, several, allow_multiple, not found, no change, creating with an
// empty old_string, and old_strings with indentation, spacing or a character wrong, which the
// CLI's flexible, regex and fuzzy strategies match), list_directory, glob (dot files,
// braces, classes, case, extglobs, a directory, a file, missing and outside paths),
// grep_search (no match, many past the limit, case, words, Unicode, empty lines, a bad
// pattern, names only, include and exclude filters, context, limits, no_ignore, files in
// the directories the CLI leaves out, .gitignore and .geminiignore files), write_todos, and
// tools the request does not offer (read_many_files, save_memory).
package gemini

import (
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/tapebox/tapebox/internal/grammar"
	"github.com/tapebox/tapebox/tape"
	"github.com/tapebox/tapebox/testkit/fakeprovider"
)

type gen struct {
	r       *rand.Rand
	seq     grammar.Sequence
	dirs    []string
	touched map[string]bool
}

// Generate returns a sequence of n calls drawn from r.
func Generate(r *rand.Rand, n int) grammar.Sequence {
	g := &gen{r: r, touched: map[string]bool{}}
	g.seq.Before = grammar.Workspace(r)
	g.dirs = grammar.Dirs(g.seq.Before)
	for len(g.seq.Calls) < n {
		switch w := r.IntN(100); {
		case w < 20:
			g.read()
		case w < 40:
			g.shell()
		case w < 61:
			g.replace()
		case w < 72:
			g.write()
		case w < 78:
			g.list()
		case w < 86:
			g.glob()
		case w < 96:
			g.grep()
		default:
			g.other()
		}
	}
	g.seq.Cut(n)
	return g.seq
}

func (g *gen) add(call tape.ToolCall, classes ...string) { g.seq.Add(call, classes...) }

// known returns the regular files of the start no call has changed yet.
func (g *gen) known() []grammar.File { return grammar.Untouched(g.seq.Before, g.touched) }

// path returns a path to read: a known file, any entry of the start, or a missing path,
// sometimes with "./" before it.
func (g *gen) path() (string, string) {
	r := g.r
	p, _, class := grammar.PickPath(r, g.known(), g.seq.Before, 82)
	if r.IntN(10) == 0 {
		p, class = "./"+p, class+"+dot"
	}
	return p, class
}

func (g *gen) read() {
	r := g.r
	p, class := g.path()
	in := map[string]any{"file_path": p}
	if grammar.Chance(r, 0.25) {
		in["start_line"] = grammar.Pick(r, 1, 2, 3, 10, 1999, 2001, 5000)
		class += "+start"
	}
	if grammar.Chance(r, 0.25) {
		in["end_line"] = grammar.Pick(r, 1, 2, 5, 100, 2500)
		class += "+end"
	}
	g.add(fakeprovider.Call("read_file", in), class)
}

func q(s string) string { return grammar.ShellQuote(s) }

func (g *gen) shell() {
	r := g.r
	var cmd, class string
	in := map[string]any{"description": "step"}
	switch r.IntN(20) {
	case 0:
		cmd, class = `printf 'line 1\nline 2\n'`, "output"
	case 1:
		cmd, class = "printf "+q(grammar.Line(r)), "no-trailing-newline"
	case 2:
		cmd, class = fmt.Sprintf("seq 1 %d", grammar.Pick(r, 10, 2000, 3000)), "many-lines"
	case 3:
		cmd, class = fmt.Sprintf("echo failing; exit %d", grammar.Pick(r, 1, 2, 127)), "non-zero-exit"
	case 4:
		cmd, class = "echo to stderr >&2", "stderr"
	case 5:
		cmd, class = "echo out; sleep 0.1; echo err >&2; sleep 0.1; echo out again", "both-streams"
	case 6:
		p, _ := g.path()
		cmd, class = "cat "+q(p), "cat"
	case 7:
		cmd, class = `printf '\033[1;31mred\033[0m plain\n'`, "ansi-escapes"
	case 8:
		cmd, class = `printf '  padded  \n\n'`, "surrounding-space"
	case 9:
		cmd, class = "echo héllo 🙂", "unicode-output"
	case 10:
		d := "deep/" + grammar.Word(r) + "/" + grammar.Word(r)
		g.touched[d] = true
		cmd, class = "mkdir -p "+q(d)+" && touch "+q(d+"/f")+" && ls "+q(d), "deep-new-dir"
	case 11:
		cmd, class = "no_such_command_"+grammar.Word(r), "command-not-found"
	case 12:
		p, _ := g.path()
		g.touched[strings.TrimPrefix(p, "./")] = true
		cmd, class = "rm -f "+q(p)+"; echo removed", "rm"
	case 13:
		cmd, class = "true", "no-output"
	case 14:
		cmd, class = "pwd", "pwd"
	case 15:
		cmd, class = fmt.Sprintf("seq 1 %d", grammar.Pick(r, 9000, 40000)), "past-truncation"
	case 16:
		cmd, class = "sleep 0.3 & echo started", "background-job"
	case 17:
		cmd, class = "echo bg; sleep 0.2", "is_background"
		in["is_background"] = true
	case 18:
		p, _ := g.path()
		cmd, class = "wc -c < "+q(p)+" 2>&1; head -c 300 "+q(p)+" | od -c | head -5", "binary-output"
	default:
		cmd, class = "ls -1A | LC_ALL=C sort", "ls"
	}
	in["command"] = cmd
	if len(g.dirs) > 0 && grammar.Chance(r, 0.15) {
		in["dir_path"] = grammar.Pick(r, g.dirs...)
		class += "+dir_path"
	}
	g.add(fakeprovider.Call("run_shell_command", in), class)
}

// lines returns the lines of f worth replacing.
func lines(f grammar.File) []string {
	var out []string
	for _, l := range strings.Split(f.Content, "\n") {
		if strings.TrimSpace(l) != "" && len(l) < 300 {
			out = append(out, strings.TrimSuffix(l, "\r"))
		}
	}
	return out
}

var words = []string{"alpha", "beta", "gamma", "x", "end", "line"}

func (g *gen) replace() {
	r := g.r
	k := g.known()
	if len(k) == 0 || grammar.Chance(r, 0.08) {
		p, class := "missing-"+grammar.Word(r)+".txt", "replace-missing"
		old := "a"
		if grammar.Chance(r, 0.5) {
			old, class = "", "replace-create"
			g.touched[p] = true
		}
		g.add(fakeprovider.Call("replace", map[string]any{"file_path": p, "old_string": old, "new_string": grammar.Line(r) + "\n", "instruction": "edit"}), class)
		return
	}
	f := k[r.IntN(len(k))]
	g.touched[f.Path] = true
	class := "replace-" + f.Class
	ls := lines(f)
	var old string
	switch {
	case len(ls) == 0 || grammar.Chance(r, 0.1):
		old, class = grammar.Line(r)+" not there", class+"+not-found"
	case grammar.Chance(r, 0.12):
		old, class = grammar.Pick(r, words...), class+"+maybe-not-unique"
	case grammar.Chance(r, 0.2) && len(ls) > 1:
		i := r.IntN(len(ls) - 1)
		old, class = ls[i]+"\n"+ls[i+1], class+"+multiline"
	case grammar.Chance(r, 0.3):
		// As a model gets a line wrong: indentation, spacing, one character.
		l := ls[r.IntN(len(ls))]
		switch r.IntN(3) {
		case 0:
			old, class = "    "+strings.TrimSpace(l), class+"+indented"
		case 1:
			old, class = strings.ReplaceAll(strings.TrimSpace(l), " ", "  "), class+"+spacing"
		default:
			b := []rune(l)
			b[len(b)/2] = 'Q'
			old, class = string(b), class+"+typo"
		}
	default:
		l := ls[r.IntN(len(ls))]
		old = l
		if len(l) > 6 && grammar.Chance(r, 0.3) {
			old, class = l[:len(l)/2], class+"+partial"
		}
	}
	nw := grammar.Line(r)
	if grammar.Chance(r, 0.05) {
		nw, class = old, class+"+no-change"
	}
	in := map[string]any{"file_path": f.Path, "old_string": old, "new_string": nw, "instruction": "edit"}
	if grammar.Chance(r, 0.15) {
		in["allow_multiple"] = true
		class += "+allow_multiple"
	}
	g.add(fakeprovider.Call("replace", in), class)
}

func (g *gen) write() {
	r := g.r
	var p, class string
	switch w := r.IntN(10); {
	case w < 4:
		p, class = grammar.Name(r), "new"
	case w < 6 && grammar.Chance(r, 0.3):
		p, class = grammar.Pick(r, "dist/out.txt", "node_modules/pkg/index.txt", "build/line.txt", "debug.log", "x.tmp", ".hidden/line.txt", ".gitignore", "sub/.geminiignore"), "excluded"
	case w < 6:
		p, class = "new/"+grammar.Word(r)+"/"+grammar.Name(r), "deep-new-dir"
	case w < 9 && len(g.known()) > 0:
		k := g.known()
		p, class = k[r.IntN(len(k))].Path, "overwrite"
	case len(g.dirs) > 0 && grammar.Chance(r, 0.4):
		p, class = grammar.Pick(r, g.dirs...), "directory"
	case len(g.known()) > 0 && grammar.Chance(r, 0.3):
		k := g.known()
		p, class = k[r.IntN(len(k))].Path+"/under-a-file.txt", "parent-is-file"
	default:
		p, class = grammar.Name(r), "new"
	}
	g.touched[p] = true
	content, cc := grammar.Content(r)
	if cc == "binary" || cc == "latin1" || cc == "huge" || cc == "long-line" || strings.Contains(content, `\`) {
		content, cc = grammar.Lines(r, 3), "text" // a model writes text through JSON
	}
	g.add(fakeprovider.Call("write_file", map[string]any{"file_path": p, "content": content}), class+"+"+cc)
}

func (g *gen) list() {
	r := g.r
	in := map[string]any{"dir_path": "."}
	class := "cwd"
	if len(g.dirs) > 0 && grammar.Chance(r, 0.5) {
		in["dir_path"], class = grammar.Pick(r, g.dirs...), "dir"
	} else if grammar.Chance(r, 0.15) {
		p, c := g.path()
		in["dir_path"], class = p, c
	}
	g.add(fakeprovider.Call("list_directory", in), class)
}

// glob asks for a pattern: everything, none, dot files, braces, classes, case, a
// directory, a file, a missing path, one outside the working directory.
func (g *gen) glob() {
	r := g.r
	in := map[string]any{"pattern": grammar.Pick(r, "*.txt", "**/*", "**/*", "**/*.go", "*", "*", "src/**", "no-match-*.zzz", "*.TXT",
		"**/*.{txt,md}", "*/*", "**/.*", "sub/*", "my dir/*", "**/*é*", "[a-m]*", "**/*.log", "dist/**", "+(a|b).txt",
		"**/*.md", "docs/*", "**/my*", "*.json", "**/*.MD")}
	class := "glob"
	if grammar.Chance(r, 0.2) {
		in["case_sensitive"], class = true, class+"+case_sensitive"
	}
	switch {
	case len(g.dirs) > 0 && grammar.Chance(r, 0.2):
		in["dir_path"], class = grammar.Pick(r, g.dirs...), class+"+dir_path"
	case grammar.Chance(r, 0.1):
		p, c := g.path()
		in["dir_path"], class = p, class+"+"+c
	case grammar.Chance(r, 0.05):
		in["dir_path"], class = grammar.Pick(r, "/tmp", "..", "nowhere"), class+"+elsewhere"
	}
	g.add(fakeprovider.Call("glob", in), class)
}

// grep asks for a pattern: lines, none, many past the limit, case, words, unicode, empty
// lines, a bad pattern, and the tool's options (names only, include and exclude filters,
// context, limits, ignored files, a directory, a file, paths that are not there).
func (g *gen) grep() {
	r := g.r
	in := map[string]any{"pattern": grammar.Pick(r, "alpha", "alpha|beta", `\bx\b`, "héllo", "^$", "no match at all", "(",
		"ALPHA", "h{5}", "line [0-9]+", "é", "(?i)x", "a.c", "日本", "[0-9]", "return", "e", "data|config|item|list",
		"^[a-z ]+$", "🙂", `\w+ end$`, "ß")}
	class := "grep"
	for _, o := range []struct {
		p     float64
		key   string
		value func() any
	}{
		{0.25, "names_only", func() any { return true }},
		{0.2, "include_pattern", func() any { return grammar.Pick(r, "*.txt", "*.{md,go}", "src/**", "*.log", "**/*.json") }},
		{0.08, "exclude_pattern", func() any { return grammar.Pick(r, "beta", "^line 1") }},
		{0.12, "case_sensitive", func() any { return true }},
		{0.08, "fixed_strings", func() any { return true }},
		{0.08, "context", func() any { return grammar.Pick(r, 0, 1, 2) }},
		{0.06, "after", func() any { return grammar.Pick(r, 0, 1, 3) }},
		{0.06, "before", func() any { return grammar.Pick(r, 1, 2) }},
		{0.1, "no_ignore", func() any { return true }},
		{0.08, "total_max_matches", func() any { return grammar.Pick(r, 1, 2, 5, 1000) }},
		{0.06, "max_matches_per_file", func() any { return grammar.Pick(r, 1, 2) }},
	} {
		if grammar.Chance(r, o.p) {
			in[o.key], class = o.value(), class+"+"+o.key
		}
	}
	switch {
	case len(g.dirs) > 0 && grammar.Chance(r, 0.15):
		in["dir_path"], class = grammar.Pick(r, g.dirs...), class+"+dir_path"
	case grammar.Chance(r, 0.1):
		p, c := g.path()
		in["dir_path"], class = p, class+"+"+c
	case grammar.Chance(r, 0.04):
		in["dir_path"], class = grammar.Pick(r, "/tmp", "nowhere"), class+"+elsewhere"
	}
	g.add(fakeprovider.Call("grep_search", in), class)
}

// other calls tools the request does not offer (read_many_files, save_memory) and
// write_todos.
func (g *gen) other() {
	r := g.r
	switch r.IntN(3) {
	case 0:
		g.add(fakeprovider.Call("read_many_files", map[string]any{"include": []string{"*.txt"}}), "not-offered")
	case 1:
		g.add(fakeprovider.Call("save_memory", map[string]any{"fact": "the answer is 42"}), "not-offered")
	default:
		g.add(fakeprovider.Call("write_todos", map[string]any{"todos": []map[string]any{{"description": "step one", "status": "in_progress"}, {"description": "step two", "status": "pending"}}}), "todos")
	}
}
