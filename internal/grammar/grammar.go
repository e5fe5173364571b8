package grammar

import (
	"fmt"
	"math/rand/v2"
	"path"
	"slices"
	"strings"

	"github.com/tapebox/tapebox/tape"
)

// File is one entry of a sequence's starting directory: a regular file, a directory (Dir)
// or a symbolic link (Link, its target as written).
type File struct {
	Path    string
	Mode    string // octal permission bits, "0644"
	Dir     bool
	Link    string
	Content string
	// Class names the content's shape ("crlf", "binary"), for the grammars and reports.
	Class string
}

// Sequence is one generated run: the directory it starts from and the calls the model
// makes, one a turn. A call's input may hold "<<field:step>>" placeholders for an
// identifier the harness made up in the result of an earlier step (see
// executor/conformance).
type Sequence struct {
	Seed   uint64
	Before []File
	Calls  []tape.ToolCall
	// Classes names, per call, the input classes the grammar drew it from.
	Classes [][]string
}

// Add appends a call and the input classes it was drawn from.
func (s *Sequence) Add(call tape.ToolCall, classes ...string) {
	s.Calls = append(s.Calls, call)
	s.Classes = append(s.Classes, classes)
}

// Cut keeps the first n calls (a grammar's step may add more than one).
func (s *Sequence) Cut(n int) {
	s.Calls, s.Classes = s.Calls[:n], s.Classes[:n]
}

// New returns the random source of a seed: PCG, seeded (seed, 0).
func New(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 0)) }

// Pick returns one element of xs.
func Pick[T any](r *rand.Rand, xs ...T) T { return xs[r.IntN(len(xs))] }

// Chance is true with probability p.
func Chance(r *rand.Rand, p float64) bool { return r.Float64() < p }

// words are the ASCII words texts and names are made of.
var words = []string{"alpha", "beta", "gamma", "delta", "func", "return", "value", "main", "notes", "todo", "x", "data", "config", "item", "list", "end"}

// unicodeWords are the non-ASCII ones: accents, CJK, emoji, right-to-left, a combining mark.
var unicodeWords = []string{"héllo", "wörld", "日本語", "🙂", "naïve", "שלום", "e\u0301", "ß", "Ω"}

// Word returns a word; now and then a non-ASCII one.
func Word(r *rand.Rand) string {
	if Chance(r, 0.15) {
		return Pick(r, unicodeWords...)
	}
	return Pick(r, words...)
}

// Line returns a line of text (no line end) of a few words, sometimes indented or with
// trailing spaces.
func Line(r *rand.Rand) string {
	n := 1 + r.IntN(6)
	ws := make([]string, n)
	for i := range ws {
		ws[i] = Word(r)
	}
	s := strings.Join(ws, " ")
	switch r.IntN(8) {
	case 0:
		s = "\t" + s
	case 1:
		s = "    " + s
	case 2:
		s += "  "
	}
	return s
}

// Lines returns n lines joined by "\n" with a final "\n".
func Lines(r *rand.Rand, n int) string {
	var b strings.Builder
	for range n {
		b.WriteString(Line(r))
		b.WriteByte('\n')
	}
	return b.String()
}

// Content classes, as Content names them.
var Classes = []string{"text", "empty", "no-final-newline", "crlf", "mixed-eol", "long-line", "many-lines", "huge", "binary", "latin1", "unicode", "numbered", "blank-lines"}

// Content returns a file content of a class drawn at random, and the class.
func Content(r *rand.Rand) (string, string) {
	c := Pick(r, Classes...)
	return ContentOf(r, c), c
}

// ContentOf returns a file content of class c.
func ContentOf(r *rand.Rand, c string) string {
	switch c {
	case "empty":
		return ""
	case "no-final-newline":
		return strings.TrimSuffix(Lines(r, 1+r.IntN(5)), "\n")
	case "crlf":
		return strings.ReplaceAll(Lines(r, 1+r.IntN(8)), "\n", "\r\n")
	case "mixed-eol":
		ls := strings.SplitAfter(Lines(r, 2+r.IntN(6)), "\n")
		for i := range ls {
			if i%2 == 1 {
				ls[i] = strings.ReplaceAll(ls[i], "\n", "\r\n")
			}
		}
		return strings.Join(ls, "")
	case "long-line":
		return Line(r) + "\n" + strings.Repeat(Pick(r, "w", "ab", "é"), 20000+r.IntN(60000)) + "\n" + Line(r) + "\n"
	case "many-lines":
		return Numbered(1500 + r.IntN(4000))
	case "huge":
		return strings.Repeat(strings.Repeat("h", 99)+"\n", 2000+r.IntN(3000))
	case "binary":
		b := make([]byte, 16+r.IntN(600))
		for i := range b {
			b[i] = byte(r.IntN(256))
		}
		b[r.IntN(len(b))] = 0
		return string(b)
	case "latin1":
		return "caf\xe9 cr\xe8me\n" + Lines(r, 1+r.IntN(3)) + "na\xefve \xff\n"
	case "unicode":
		return "héllo wörld 🙂\n日本語のテキスト\n" + Lines(r, 1+r.IntN(3))
	case "numbered":
		return Numbered(5 + r.IntN(40))
	case "blank-lines":
		return "\n\n" + Lines(r, 2) + "\n\n" + Lines(r, 1) + "\n"
	}
	return Lines(r, 1+r.IntN(12))
}

// Numbered is "line 1\n" ... "line n\n".
func Numbered(n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "line %d\n", i)
	}
	return b.String()
}

// Name returns a file name: plain, with spaces, unicode, dots, a leading dash or dot.
func Name(r *rand.Rand) string {
	base := Pick(r, words...)
	switch r.IntN(10) {
	case 0:
		base = "my " + base
	case 1:
		base = Pick(r, unicodeWords...) + "-" + base
	case 2:
		base = "." + base
	case 3:
		base = base + " " + Pick(r, words...)
	}
	return base + Pick(r, ".txt", ".txt", ".go", ".md", "", ".tar.gz", ".json")
}

// Workspace returns a starting directory of 3 to 9 entries of every class and the paths
// of its regular files.
func Workspace(r *rand.Rand) []File {
	var files []File
	seen := map[string]bool{}
	add := func(f File) {
		if seen[f.Path] || seen[path.Dir(f.Path)+"/"] {
			return
		}
		for d := path.Dir(f.Path); d != "."; d = path.Dir(d) {
			if seen[d] && !slices.ContainsFunc(files, func(g File) bool { return g.Path == d && g.Dir }) {
				return // a file where a parent directory would be
			}
		}
		seen[f.Path] = true
		files = append(files, f)
	}
	n := 3 + r.IntN(7)
	for range n {
		p := Name(r)
		if Chance(r, 0.3) {
			p = Pick(r, "src", "sub", "docs", "my dir", "a/b") + "/" + p
		}
		content, class := Content(r)
		mode := "0644"
		switch r.IntN(12) {
		case 0:
			mode = "0755"
		case 1:
			mode = "0444"
		case 2:
			mode = "0600"
		}
		add(File{Path: p, Mode: mode, Content: content, Class: class})
	}
	if Chance(r, 0.5) {
		add(File{Path: Pick(r, "emptydir", "sub/inner", "dir with space"), Mode: "0755", Dir: true, Class: "dir"})
	}
	if Chance(r, 0.4) && len(files) > 0 {
		target := files[r.IntN(len(files))]
		if !target.Dir {
			add(File{Path: "link-" + Pick(r, words...), Mode: "0777", Link: target.Path, Class: "symlink"})
		}
	}
	if Chance(r, 0.15) {
		add(File{Path: "dangling", Mode: "0777", Link: "no/such/target", Class: "dangling-symlink"})
	}
	return files
}

// Regular returns the regular files of fs.
func Regular(fs []File) []File {
	var out []File
	for _, f := range fs {
		if !f.Dir && f.Link == "" {
			out = append(out, f)
		}
	}
	return out
}

// Untouched returns the regular files of fs whose paths touched does not hold: the files of
// a sequence's start that no call has changed yet.
func Untouched(fs []File, touched map[string]bool) []File {
	var out []File
	for _, f := range Regular(fs) {
		if !touched[f.Path] {
			out = append(out, f)
		}
	}
	return out
}

// Dirs returns the paths of the directories among fs, in order.
func Dirs(fs []File) []string {
	var out []string
	for _, f := range fs {
		if f.Dir {
			out = append(out, f.Path)
		}
	}
	return out
}

// PickPath draws a path to read or search, as the grammars share it: one of known (the
// start's files no call has changed yet) 70 times in 100, else any entry of before (class
// "dir" for a directory) below entries in 100, else a missing file. f is the known file
// drawn, if it was one.
func PickPath(r *rand.Rand, known, before []File, entries int) (p string, f File, class string) {
	switch w := r.IntN(100); {
	case w < 70 && len(known) > 0:
		f = known[r.IntN(len(known))]
		return f.Path, f, f.Class
	case w < entries && len(before) > 0:
		e := before[r.IntN(len(before))]
		class = e.Class
		if e.Dir {
			class = "dir"
		}
		return e.Path, File{}, class
	default:
		return "missing-" + Word(r) + ".txt", File{}, "missing"
	}
}

// ShellQuote quotes s for a POSIX shell.
func ShellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
