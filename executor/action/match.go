package action

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
)

// globRegexp translates a glob in the syntax ripgrep and .gitignore use (*, ?, [...],
// [!...], **, {a,b}, \x) into a regular expression source matching a whole "/"-separated
// path.
func globRegexp(g string) (string, error) {
	var b strings.Builder
	depth := 0
	for i := 0; i < len(g); i++ {
		c := g[i]
		switch c {
		case '*':
			if i+1 < len(g) && g[i+1] == '*' {
				atStart := i == 0 || g[i-1] == '/'
				j := i + 2
				switch {
				case atStart && j < len(g) && g[j] == '/':
					b.WriteString(`(?:.*/)?`)
					i = j
				case atStart && j == len(g):
					b.WriteString(`.*`)
					i = j - 1
				default:
					b.WriteString(`[^/]*`)
					i++
				}
				continue
			}
			b.WriteString(`[^/]*`)
		case '?':
			b.WriteString(`[^/]`)
		case '[':
			j := i + 1
			if j < len(g) && (g[j] == '!' || g[j] == '^') {
				j++
			}
			if j < len(g) && g[j] == ']' {
				j++
			}
			for j < len(g) && g[j] != ']' {
				j++
			}
			if j >= len(g) {
				return "", fmt.Errorf("glob %q: unclosed [", g)
			}
			class := g[i+1 : j]
			b.WriteByte('[')
			if strings.HasPrefix(class, "!") || strings.HasPrefix(class, "^") {
				b.WriteByte('^')
				class = class[1:]
			}
			b.WriteString(strings.ReplaceAll(class, `\`, `\\`))
			b.WriteByte(']')
			i = j
		case '{':
			depth++
			b.WriteString(`(?:`)
		case '}':
			if depth == 0 {
				b.WriteString(`\}`)
				continue
			}
			depth--
			b.WriteByte(')')
		case ',':
			if depth > 0 {
				b.WriteByte('|')
			} else {
				b.WriteByte(',')
			}
		case '\\':
			if i+1 < len(g) {
				i++
				b.WriteString(regexp.QuoteMeta(g[i : i+1]))
			} else {
				b.WriteString(`\\`)
			}
		default:
			b.WriteString(regexp.QuoteMeta(g[i : i+1]))
		}
	}
	if depth != 0 {
		return "", fmt.Errorf("glob %q: unclosed {", g)
	}
	return b.String(), nil
}

// pattern is one line of an ignore file, or one --glob.
type pattern struct {
	re      *regexp.Regexp
	negate  bool
	dirOnly bool
}

// compilePattern compiles a gitignore-style pattern. Without a "/" (other than a trailing
// one) it matches a name at any depth; with one it is anchored to base.
func compilePattern(line string, fold bool) (*pattern, error) {
	p := &pattern{}
	if strings.HasPrefix(line, "!") {
		p.negate = true
		line = line[1:]
	}
	if strings.HasSuffix(line, "/") && !strings.HasSuffix(line, `\/`) {
		p.dirOnly = true
		line = strings.TrimRight(line, "/")
	}
	if line == "" {
		return nil, nil
	}
	anchored := strings.Contains(line, "/")
	line = strings.TrimPrefix(line, "/")
	src, err := globRegexp(line)
	if err != nil {
		return nil, err
	}
	if !anchored && !strings.HasPrefix(line, "**") {
		src = `(?:.*/)?` + src
	}
	prefix := "^"
	if fold {
		prefix = "(?i)^"
	}
	p.re, err = regexp.Compile(prefix + src + "$")
	if err != nil {
		return nil, fmt.Errorf("glob %q: %w", line, err)
	}
	return p, nil
}

// ignoreFile is the patterns of one ignore file, relative to its directory.
type ignoreFile struct {
	base     string // directory, "/"-separated, relative to the walk root ("" for the root)
	outside  string // for files above the root: the root's path relative to this file's dir
	patterns []*pattern
}

// match returns whether rel (relative to the walk root) is ignored (+1), whitelisted (-1)
// or not decided (0) by this file.
func (f *ignoreFile) match(rel string, isDir bool) int {
	p := rel
	switch {
	case f.outside != "":
		p = path.Join(f.outside, rel)
	case f.base != "":
		if !strings.HasPrefix(rel, f.base+"/") {
			return 0
		}
		p = rel[len(f.base)+1:]
	}
	switch pt := lastMatch(f.patterns, p, isDir); {
	case pt == nil:
		return 0
	case pt.negate:
		return -1
	}
	return 1
}

// lastMatch returns the last of ps that matches p (a directory when isDir), nil when none
// does: in an ignore file as among --glob filters, the last matching pattern wins.
func lastMatch(ps []*pattern, p string, isDir bool) *pattern {
	for i := len(ps) - 1; i >= 0; i-- {
		if pt := ps[i]; (!pt.dirOnly || isDir) && pt.re.MatchString(p) {
			return pt
		}
	}
	return nil
}

func loadIgnoreFile(file string) []*pattern {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil
	}
	var ps []*pattern
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSuffix(line, "\r")
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		line = strings.TrimRight(line, " ")
		if p, err := compilePattern(line, false); err == nil && p != nil {
			ps = append(ps, p)
		}
	}
	return ps
}

// gitRoot returns the nearest directory at or above dir holding .git, or "".
func gitRoot(dir string) string {
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, ".git")); err == nil {
			return d
		}
		if filepath.Dir(d) == d {
			return ""
		}
	}
}

// Overrides are --glob filters: a file matched by a whitelist glob is searched whatever
// the ignore rules say; with any whitelist glob, other files are skipped; a "!" glob
// excludes files and prunes directories. The last matching glob wins.
type overrides struct {
	patterns  []*pattern
	whitelist bool
}

func compileOverrides(globs []string, fold bool) (*overrides, error) {
	o := &overrides{}
	for _, g := range globs {
		p, err := compilePattern(g, fold)
		if err != nil {
			return nil, err
		}
		if p == nil {
			continue
		}
		if !p.negate {
			o.whitelist = true
		}
		o.patterns = append(o.patterns, p)
	}
	return o, nil
}

// decide returns +1 (take), -1 (skip) or 0 (let the ignore rules decide).
func (o *overrides) decide(rel string, isDir bool) int {
	if o == nil || len(o.patterns) == 0 {
		return 0
	}
	switch p := lastMatch(o.patterns, rel, isDir); {
	case p == nil && o.whitelist && !isDir:
		return -1
	case p == nil:
		return 0
	case p.negate:
		return -1
	case isDir:
		return 0
	}
	return 1
}
