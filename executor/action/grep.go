package action

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strings"
)

// GrepRequest searches file contents with a regular expression, the way ripgrep does:
// Go's RE2 syntax (close to Rust's regex crate), one line at a time unless Multiline.
type GrepRequest struct {
	// Root is a file or a directory.
	Root    string
	Pattern string
	// IgnoreCase is rg -i; Multiline is rg -U --multiline-dotall.
	IgnoreCase bool
	Multiline  bool
	// Type restricts the search to a file type (rg --type), such as "go" or "py".
	Type string
	// Before and After are context lines around each match (rg -B, -A; -C sets both).
	Before, After int
	// OnlyMatching reports each match rather than its line (rg -o).
	OnlyMatching bool
	Walk         WalkOptions
}

// GrepLine is a line of a file's output: a matching line, a context line, or (with
// OnlyMatching) one match.
type GrepLine struct {
	// N is the 1-based line number.
	N     int
	Text  string
	Match bool
}

// GrepFile is a file with at least one match.
type GrepFile struct {
	FileEntry
	// Count is the number of matching lines (rg -c).
	Count int
	// Lines are in order, context included; a gap in N is where rg prints "--".
	Lines []GrepLine
}

// FileTypes maps rg --type names to globs (a subset of ripgrep's table).
var FileTypes = map[string][]string{
	"c":          {"*.c", "*.h", "*.H"},
	"cpp":        {"*.C", "*.cc", "*.cpp", "*.cxx", "*.c++", "*.h", "*.hh", "*.hpp", "*.hxx", "*.inl"},
	"cs":         {"*.cs"},
	"css":        {"*.css", "*.scss"},
	"go":         {"*.go"},
	"html":       {"*.htm", "*.html", "*.ejs"},
	"java":       {"*.java", "*.jsp"},
	"js":         {"*.js", "*.jsx", "*.mjs", "*.cjs", "*.vue"},
	"json":       {"*.json", "composer.lock"},
	"kotlin":     {"*.kt", "*.kts"},
	"lua":        {"*.lua"},
	"make":       {"*.mk", "*.mak", "Makefile", "makefile", "GNUmakefile"},
	"markdown":   {"*.markdown", "*.md", "*.mdown", "*.mdwn", "*.mkd", "*.mkdn", "*.mdx"},
	"md":         {"*.markdown", "*.md", "*.mdown", "*.mdwn", "*.mkd", "*.mkdn", "*.mdx"},
	"php":        {"*.php", "*.php3", "*.php4", "*.php5", "*.phtml"},
	"py":         {"*.py", "*.pyi"},
	"python":     {"*.py", "*.pyi"},
	"rb":         {"*.rb", "Gemfile", "*.gemspec", "Rakefile"},
	"ruby":       {"*.rb", "Gemfile", "*.gemspec", "Rakefile"},
	"rust":       {"*.rs"},
	"scala":      {"*.scala", "*.sbt"},
	"sh":         {"*.bash", "*.sh", "*.zsh", ".bashrc", ".zshrc", ".profile"},
	"sql":        {"*.sql", "*.psql"},
	"swift":      {"*.swift"},
	"toml":       {"*.toml", "Cargo.lock"},
	"ts":         {"*.ts", "*.tsx", "*.cts", "*.mts"},
	"typescript": {"*.ts", "*.tsx", "*.cts", "*.mts"},
	"txt":        {"*.txt"},
	"xml":        {"*.xml", "*.xsd", "*.xsl", "*.svg"},
	"yaml":       {"*.yaml", "*.yml"},
}

// Grep searches and returns the files with matches, sorted by path. Binary files (a NUL
// byte) are skipped.
func Grep(ctx context.Context, req GrepRequest) ([]GrepFile, error) {
	src := req.Pattern
	if req.Multiline {
		src = "(?s)" + src
	}
	if req.IgnoreCase {
		src = "(?i)" + src
	}
	re, err := regexp.Compile(src)
	if err != nil {
		return nil, fmt.Errorf("grep: regex parse error: %w", err)
	}
	var typeFilter *overrides
	if req.Type != "" {
		globs, ok := FileTypes[req.Type]
		if !ok {
			return nil, fmt.Errorf("grep: unrecognized file type: %s", req.Type)
		}
		if typeFilter, err = compileOverrides(globs, false); err != nil {
			return nil, err
		}
	}
	var out []GrepFile
	err = Walk(ctx, req.Root, req.Walk, func(e FileEntry) error {
		if typeFilter != nil && typeFilter.decide(e.Rel, false) != 1 {
			return nil
		}
		b, err := os.ReadFile(e.Path)
		if err != nil || bytes.IndexByte(b, 0) >= 0 {
			return nil
		}
		// ripgrep sniffs a UTF-8 byte order mark and searches the text after it: lines,
		// offsets and "^" start there.
		b = bytes.TrimPrefix(b, []byte("\xef\xbb\xbf"))
		if f, ok := grepFile(re, string(b), req); ok {
			f.FileEntry = e
			out = append(out, f)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("grep %s: %w", req.Root, err)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, nil
}

func grepFile(re *regexp.Regexp, text string, req GrepRequest) (GrepFile, bool) {
	lines := strings.Split(text, "\n")
	if strings.HasSuffix(text, "\n") || text == "" {
		lines = lines[:len(lines)-1] // an empty file has no line, not one empty line (rg -c '^$' finds none)
	}
	matched := make([]bool, len(lines))
	// matches per line, for OnlyMatching
	var only map[int][]string
	if req.OnlyMatching {
		only = map[int][]string{}
	}
	count := 0
	if req.Multiline {
		starts := make([]int, len(lines)) // byte offset of each line
		off := 0
		for i, l := range lines {
			starts[i] = off
			off += len(l) + 1
		}
		lineAt := func(pos int) int {
			return sort.Search(len(starts), func(i int) bool { return starts[i] > pos }) - 1
		}
		for _, m := range re.FindAllStringIndex(text, -1) {
			if m[0] >= len(text) && len(lines) > 0 && m[0] == m[1] {
				continue
			}
			first, last := lineAt(m[0]), lineAt(max(m[0], m[1]-1))
			for i := first; i <= last && i < len(lines); i++ {
				if i >= 0 {
					matched[i] = true
				}
			}
			if only != nil && first >= 0 {
				only[first] = append(only[first], text[m[0]:m[1]])
			}
		}
	} else {
		for i, l := range lines {
			if only != nil {
				for _, m := range re.FindAllString(l, -1) {
					if m != "" {
						only[i] = append(only[i], m)
					}
				}
				matched[i] = len(only[i]) > 0
				continue
			}
			matched[i] = re.MatchString(l)
		}
	}
	f := GrepFile{}
	for i := range lines {
		if matched[i] {
			count++
		}
	}
	if count == 0 {
		return f, false
	}
	f.Count = count
	show := make([]int8, len(lines)) // 0 none, 1 context, 2 match
	for i := range lines {
		if !matched[i] {
			continue
		}
		show[i] = 2
		for j := max(0, i-req.Before); j <= min(len(lines)-1, i+req.After); j++ {
			if show[j] == 0 {
				show[j] = 1
			}
		}
	}
	for i, s := range show {
		switch {
		case s == 2 && only != nil:
			for _, m := range only[i] {
				f.Lines = append(f.Lines, GrepLine{N: i + 1, Text: m, Match: true})
			}
		case s == 2:
			f.Lines = append(f.Lines, GrepLine{N: i + 1, Text: strings.TrimSuffix(lines[i], "\r"), Match: true})
		case s == 1 && only == nil:
			f.Lines = append(f.Lines, GrepLine{N: i + 1, Text: strings.TrimSuffix(lines[i], "\r")})
		}
	}
	return f, true
}
