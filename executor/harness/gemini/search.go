package gemini

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/tapebox/tapebox/executor/action"
	"github.com/tapebox/tapebox/executor/harness"
	"github.com/tapebox/tapebox/tape"
)

// ignoreFileNames are the files whose rules the CLI's file discovery (.geminiignore, and
// .gitignore in a git repository) or ripgrep (.ignore, .rgignore, and .gitignore in a git
// repository) apply; a search that could meet one replays its recorded result.
var ignoreFileNames = []string{".geminiignore", ".ignore", ".rgignore", ".gitignore"}

// coreExcludes are the directories the CLI's glob never enters (COMMON_IGNORE_PATTERNS).
var coreExcludes = []string{"node_modules", ".git", "bower_components", ".svn", ".hg"}

// grepExcludes are the --glob '!…' filters the CLI gives ripgrep: COMMON_IGNORE_PATTERNS,
// COMMON_DIRECTORY_EXCLUDES, "*.log" and "*.tmp".
var grepExcludes = []string{
	"!**/node_modules/**", "!**/.git/**", "!**/bower_components/**", "!**/.svn/**", "!**/.hg/**",
	"!**/.vscode/**", "!**/.idea/**", "!**/dist/**", "!**/build/**", "!**/coverage/**", "!**/__pycache__/**",
	"!*.log", "!*.tmp",
}

// ignoreFilesUnder says whether an ignore file in force lies in root's tree, or in the
// working directory or a directory above it. Outside a git repository (no .git in the
// working directory or above it: the CLI's isGitRepository, ripgrep's own test), a
// .gitignore is just a file to both.
func (s *session) ignoreFilesUnder(ctx context.Context, root string) bool {
	names := ignoreFileNames[:3]
	for d := s.env.Cwd; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, ".git")); err == nil {
			names = ignoreFileNames
			break
		}
		if filepath.Dir(d) == d {
			break
		}
	}
	for d := s.env.Cwd; ; d = filepath.Dir(d) {
		for _, n := range names {
			if _, err := os.Lstat(filepath.Join(d, n)); err == nil {
				return true
			}
		}
		if filepath.Dir(d) == d {
			break
		}
	}
	if st, err := os.Stat(root); err != nil || !st.IsDir() {
		return false
	}
	found := false
	_ = action.Walk(ctx, root, action.WalkOptions{Hidden: true, NoIgnore: true, Globs: names,
		SkipDirs: coreExcludes, SkipPaths: []string{s.env.State.Path}}, func(action.FileEntry) error {
		found = true
		return errStop
	})
	return found
}

var errStop = errors.New("stop")

type globArgs struct {
	Pattern             *string `json:"pattern"`
	DirPath             string  `json:"dir_path"`
	CaseSensitive       bool    `json:"case_sensitive"`
	RespectGitIgnore    *bool   `json:"respect_git_ignore"`
	RespectGeminiIgnore *bool   `json:"respect_gemini_ignore"`
}

// extglob is minimatch's pattern syntax beyond ripgrep's globs (+(a|b) and the like),
// and brace ranges ({1..3}): such a pattern replays.
var extglob = regexp.MustCompile(`[?*+@!]\(|\.\.`)

// glob is the CLI's GlobTool: node-glob's files (dot files included, case-insensitive
// unless case_sensitive, symbolic links left out: the CLI keeps the entries whose real
// path its ignore filter returned, which a link's is not), newest first.
func (s *session) glob(ctx context.Context, call tape.ToolCall, rec *tape.ToolResult) tape.ToolResult {
	var a globArgs
	if !args(call, &a) || a.Pattern == nil || filepath.IsAbs(*a.Pattern) || extglob.MatchString(*a.Pattern) {
		return replay(call, rec)
	}
	dir, inside := s.resolve(cmpOr(a.DirPath, "."))
	if !inside {
		return replay(call, rec)
	}
	st, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fail(call, "Search path does not exist "+dir)
	case err != nil:
		return replay(call, rec)
	case !st.IsDir():
		return fail(call, "Search path is not a directory: "+dir)
	case jsTrim(*a.Pattern) == "":
		return fail(call, "The 'pattern' parameter cannot be empty.")
	}
	if (a.RespectGitIgnore != nil && !*a.RespectGitIgnore) || (a.RespectGeminiIgnore != nil && !*a.RespectGeminiIgnore) || s.ignoreFilesUnder(ctx, dir) {
		return replay(call, rec)
	}
	pattern := *a.Pattern
	if _, err := os.Stat(filepath.Join(dir, pattern)); err == nil {
		pattern = globEscape(pattern) // the CLI escapes a pattern that names an existing path
	}
	pattern = strings.TrimPrefix(pattern, "./")
	var files []action.FileEntry
	err = action.Walk(ctx, dir, action.WalkOptions{Hidden: true, NoIgnore: true, Globs: []string{"/" + pattern},
		GlobFold: !a.CaseSensitive, SkipDirs: coreExcludes, SkipPaths: []string{s.env.State.Path}}, func(e action.FileEntry) error {
		files = append(files, e)
		return nil
	})
	if err != nil {
		return replay(call, rec)
	}
	if len(files) == 0 {
		return ok(call, "No files found matching pattern \""+*a.Pattern+"\" within "+dir)
	}
	paths := globOrder(files, time.Now())
	paths = recordedOrder(paths, rec)
	return ok(call, fmt.Sprintf("Found %d file(s) matching \"%s\" within %s, sorted by modification time (newest first):\n%s",
		len(paths), *a.Pattern, dir, strings.Join(paths, "\n")))
}

// globOrder is the CLI's sortFileEntries: files changed in the last day first, newest
// first, then the others by path (localeCompare). Ties keep node-glob's order, which the
// recording gives (recordedOrder).
func globOrder(files []action.FileEntry, now time.Time) []string {
	day := now.Add(-24 * time.Hour)
	sort.SliceStable(files, func(i, j int) bool {
		ri, rj := files[i].ModTime.After(day), files[j].ModTime.After(day)
		switch {
		case ri && rj:
			return files[i].ModTime.After(files[j].ModTime)
		case ri != rj:
			return ri
		}
		return localeLess(files[i].Path, files[j].Path)
	})
	out := make([]string, len(files))
	for i, f := range files {
		out[i] = f.Path
	}
	return out
}

// globEscape quotes a glob's special characters, as node-glob's escape does.
func globEscape(p string) string {
	var b strings.Builder
	for _, r := range p {
		if strings.ContainsRune(`*?[]{}()!+@\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// recordedOrder returns lines in the recorded result's order when it lists the same
// lines (see the package doc: which of two files the CLI lists first rests on
// modification times a restored workspace does not keep, or on ripgrep's threads).
func recordedOrder(lines []string, rec *tape.ToolResult) []string {
	if len(lines) < 2 || rec == nil {
		return lines
	}
	want := make(map[string]int, len(lines))
	for _, l := range lines {
		want[l]++
	}
	var got []string
	for _, l := range strings.Split(harness.RecordedText(rec), "\n") {
		if want[l] > 0 {
			want[l]--
			got = append(got, l)
		}
	}
	if len(got) != len(lines) {
		return lines
	}
	return got
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

type todo struct {
	Description *string `json:"description"`
	Status      *string `json:"status"`
}

var todoStatuses = map[string]bool{"pending": true, "in_progress": true, "completed": true, "cancelled": true, "blocked": true}

// writeTodos is the CLI's WriteTodosTool: the list echoed back; a list its validation
// refuses replays.
func (s *session) writeTodos(_ context.Context, call tape.ToolCall, rec *tape.ToolResult) tape.ToolResult {
	var a struct {
		Todos *[]todo `json:"todos"`
	}
	if !args(call, &a) || a.Todos == nil {
		return replay(call, rec)
	}
	inProgress := 0
	lines := make([]string, len(*a.Todos))
	for i, t := range *a.Todos {
		if t.Description == nil || t.Status == nil || jsTrim(*t.Description) == "" || !todoStatuses[*t.Status] {
			return replay(call, rec)
		}
		if *t.Status == "in_progress" {
			inProgress++
		}
		lines[i] = fmt.Sprintf("%d. [%s] %s", i+1, *t.Status, *t.Description)
	}
	if inProgress > 1 {
		return replay(call, rec)
	}
	if len(lines) == 0 {
		return ok(call, "Successfully cleared the todo list.")
	}
	return ok(call, "Successfully updated the todo list. The current list is now:\n"+strings.Join(lines, "\n"))
}

type grepArgs struct {
	Pattern       *string `json:"pattern"`
	DirPath       string  `json:"dir_path"`
	Include       string  `json:"include_pattern"`
	Exclude       string  `json:"exclude_pattern"`
	NamesOnly     bool    `json:"names_only"`
	CaseSensitive bool    `json:"case_sensitive"`
	Fixed         bool    `json:"fixed_strings"`
	Context       *int    `json:"context"`
	After         *int    `json:"after"`
	Before        *int    `json:"before"`
	NoIgnore      bool    `json:"no_ignore"`
	MaxPerFile    *int    `json:"max_matches_per_file"`
	TotalMax      *int    `json:"total_max_matches"`
}

// grepMatch is one line of ripgrep's --json output the CLI keeps (its GrepMatch).
type grepMatch struct {
	abs, file string
	n         int
	line      string
	isContext bool
}

// defaultTotalMax is DEFAULT_TOTAL_MAX_MATCHES.
const defaultTotalMax = 100

// errUnsure stops a search the module cannot reproduce; the call replays.
var errUnsure = errors.New("unsure")

// rustOnly are regex constructs whose meaning ripgrep (Rust's regex crate), JavaScript
// (which validates the pattern first) and Go do not share: groups with flags or names,
// lookaround, back references, a line break (which ripgrep refuses).
var rustOnly = regexp.MustCompile(`\(\?|\\[0-9kn]|\n`)

// unicodeClasses are the escapes Rust's regex crate reads as Unicode classes and Go's as
// ASCII ones: a file with other than ASCII in it replays.
var unicodeClasses = regexp.MustCompile(`\\[bBwWdDsS]`)

// compileRegex compiles a pattern as ripgrep would, or says it cannot.
func compileRegex(pattern string, fixed, fold bool) (*regexp.Regexp, bool) {
	src := pattern
	if fixed {
		src = regexp.QuoteMeta(pattern)
	} else if rustOnly.MatchString(pattern) {
		return nil, false
	} else if w, ok := wordBounded(pattern); ok {
		src = w
	}
	if fold {
		src = "(?i)" + src
	}
	re, err := regexp.Compile(src)
	return re, err == nil
}

// boundedWords is \bWORD\b (either \b may be missing), WORD ASCII word characters or
// such words between | in a group or not: the form models write (the tool's own
// description suggests '\bMatchMe\b').
var boundedWords = regexp.MustCompile(`^(\\b)?(\(?)([A-Za-z0-9_]+(?:\|[A-Za-z0-9_]+)*)(\)?)(\\b)?$`)

// unicodeWord is Rust's \w: Alphabetic, marks, decimal digits, connector punctuation and
// the joiners.
const unicodeWord = `\p{L}\p{Nl}\p{M}\p{Nd}\p{Pc}\x{200C}\x{200D}`

// wordBounded rewrites a boundedWords pattern for Go, whose \b knows ASCII words only,
// where ripgrep's knows Unicode ones: a word starts and ends with a word character, so a
// \b before it is "no word character before it", after it "none after it". The CLI keeps
// lines, not the matches in them, so a pattern that takes in those neighbours matches the
// same lines.
func wordBounded(pattern string) (string, bool) {
	m := boundedWords.FindStringSubmatch(pattern)
	if m == nil || (m[1] == "" && m[5] == "") || (m[2] == "") != (m[4] == "") {
		return "", false
	}
	src := "(?:" + m[3] + ")"
	if m[1] != "" {
		src = "(?:^|[^" + unicodeWord + "])" + src
	}
	if m[5] != "" {
		src += "(?:$|[^" + unicodeWord + "])"
	}
	return src, true
}

// grepSearch is the CLI's RipGrepTool (the grep_search it registers when it finds
// ripgrep, its own or the system's): ripgrep's files and lines, the CLI's limit, auto
// context and wording.
func (s *session) grepSearch(ctx context.Context, call tape.ToolCall, rec *tape.ToolResult) tape.ToolResult {
	var a grepArgs
	if !args(call, &a) || a.Pattern == nil || (a.MaxPerFile != nil && *a.MaxPerFile < 1) || (a.TotalMax != nil && *a.TotalMax < 1) ||
		(a.Context != nil && *a.Context < 0) || (a.After != nil && *a.After < 0) || (a.Before != nil && *a.Before < 0) {
		return replay(call, rec)
	}
	re, okRe := compileRegex(*a.Pattern, a.Fixed, !a.CaseSensitive)
	var exclude *regexp.Regexp
	if a.Exclude != "" {
		var okEx bool
		exclude, okEx = compileRegex(a.Exclude, false, !a.CaseSensitive)
		okRe = okRe && okEx
	}
	if !okRe {
		return replay(call, rec) // the CLI's own message for a pattern JavaScript refuses
	}
	pathParam := cmpOr(a.DirPath, ".")
	dir, inside := s.resolve(pathParam)
	if !inside {
		return replay(call, rec)
	}
	st, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fail(call, "Path does not exist: "+dir)
	case err != nil || (!st.IsDir() && !st.Mode().IsRegular()):
		return replay(call, rec)
	}
	if !a.NoIgnore && s.ignoreFilesUnder(ctx, dir) {
		return replay(call, rec)
	}
	totalMax := defaultTotalMax
	if a.TotalMax != nil {
		totalMax = *a.TotalMax
	}
	_, bounded := wordBounded(*a.Pattern)
	g := &grepper{re: re, exclude: exclude, a: &a, totalMax: totalMax, base: dir,
		unicode: (!a.Fixed && unicodeClasses.MatchString(*a.Pattern) && !bounded) || unicodeClasses.MatchString(a.Exclude)}
	// The CLI passes --context, then --after-context and --before-context (each when not
	// 0); in ripgrep 13, -A and -B given after -C override it whole.
	before, after := 0, 0
	switch {
	case (a.After != nil && *a.After > 0) || (a.Before != nil && *a.Before > 0):
		if a.After != nil {
			after = *a.After
		}
		if a.Before != nil {
			before = *a.Before
		}
	case a.Context != nil:
		before, after = *a.Context, *a.Context
	}
	var globs []string
	if a.Include != "" {
		globs = append(globs, a.Include)
	}
	if !a.NoIgnore {
		globs = append(globs, grepExcludes...)
	}
	var files []action.FileEntry
	err = action.Walk(ctx, dir, action.WalkOptions{NoIgnore: true, Globs: globs, GlobBase: s.env.Cwd, SkipPaths: []string{s.env.State.Path}},
		func(e action.FileEntry) error {
			files = append(files, e)
			return nil
		})
	if err != nil {
		return replay(call, rec)
	}
	order := recordedFiles(rec)
	if a.NamesOnly && len(order) > 1 && strings.Contains(harness.RecordedText(rec), "(results limited to") {
		// Only a search the limit cut depends on which file came last.
		order = g.namesOnlyOrder(files, order, before, after)
	}
	all, err := g.search(files, order, before, after)
	if err != nil {
		return replay(call, rec)
	}
	matchCount := 0
	for _, m := range all {
		if !m.isContext {
			matchCount++
		}
	}
	if matchCount >= 1 && matchCount <= 3 && !a.NamesOnly && a.Context == nil && a.After == nil && a.Before == nil {
		// enrichWithRipgrepAutoContext: ripgrep again on the files found, with context.
		n := 15
		if matchCount == 1 {
			n = 50
		}
		var again []action.FileEntry
		seen := map[string]bool{}
		for _, m := range all {
			if !seen[m.abs] {
				seen[m.abs] = true
				again = append(again, action.FileEntry{Path: m.abs})
			}
		}
		if all, err = g.search(again, order, n, n); err != nil {
			return replay(call, rec)
		}
	}
	return ok(call, g.format(all, pathParam))
}

type grepper struct {
	re, exclude *regexp.Regexp
	a           *grepArgs
	totalMax    int
	base        string
	unicode     bool
}

// search is one ripgrep run over files, as the CLI reads its output: each file's lines
// in order, lines ripgrep cannot print as text left out, those exclude matches left out,
// and the run stopped at the limit. Files come in the recording's order (ripgrep searches
// them on four threads, so its order changes from run to run), then in walk order.
func (g *grepper) search(files []action.FileEntry, order map[string]int, before, after int) ([]grepMatch, error) {
	sort.SliceStable(files, func(i, j int) bool {
		oi, ok1 := order[g.display(files[i].Path)]
		oj, ok2 := order[g.display(files[j].Path)]
		switch {
		case ok1 && ok2:
			return oi < oj
		case ok1 != ok2:
			return ok1
		}
		return false
	})
	var out []grepMatch
	found := 0
	for _, f := range files {
		ms, err := g.file(f.Path, before, after)
		if err != nil {
			return nil, err
		}
		for _, m := range ms {
			out = append(out, m)
			if !m.isContext {
				found++
			}
			if found >= g.totalMax {
				return out, nil
			}
		}
	}
	return out, nil
}

// namesOnlyOrder orders the files a names_only recording lists for search. Its list is
// sorted, so it does not tell in which order ripgrep's threads gave the files; but the CLI
// read every file but the last whole before the match limit, so the file with the most
// matches goes last: then the search takes exactly the recorded files whenever some order
// of them could have given the recording (issue 33's fidelity seeds 40108 and 40109 took
// the first file by name, which alone filled the limit).
func (g *grepper) namesOnlyOrder(files []action.FileEntry, order map[string]int, before, after int) map[string]int {
	type counted struct {
		name    string
		matches int
	}
	var cs []counted
	for _, f := range files {
		name := g.display(f.Path)
		if _, ok := order[name]; !ok {
			continue
		}
		ms, err := g.file(f.Path, before, after)
		if err != nil {
			return order
		}
		n := 0
		for _, m := range ms {
			if !m.isContext {
				n++
			}
		}
		cs = append(cs, counted{name, n})
	}
	sort.SliceStable(cs, func(i, j int) bool {
		if cs[i].matches != cs[j].matches {
			return cs[i].matches < cs[j].matches
		}
		return order[cs[i].name] < order[cs[j].name]
	})
	out := make(map[string]int, len(cs))
	for i, c := range cs {
		out[c.name] = i
	}
	return out
}

// display is the path the CLI shows for a file: relative to the searched path, the
// file's name when that is the file itself.
func (g *grepper) display(abs string) string {
	rel, err := filepath.Rel(g.base, abs)
	if err != nil || rel == "." {
		return filepath.Base(abs)
	}
	return rel
}

// file is ripgrep's output for one file.
func (g *grepper) file(path string, before, after int) ([]grepMatch, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, nil
	}
	switch {
	case hasPrefix(b, "\xff\xfe"), hasPrefix(b, "\xfe\xff"):
		return nil, errUnsure // ripgrep decodes UTF-16
	case bytes.IndexByte(b, 0) >= 0:
		// Binary: ripgrep stops at the NUL byte. Whether it prints a match before it
		// first rests on its buffers and literal search (seen with ripgrep 13: "  \n…\0"
		// matched by " $" is printed, "ab  \n…\0" is not).
		for _, l := range strings.Split(string(b[:bytes.IndexByte(b, 0)]), "\n") {
			if g.re.MatchString(l) {
				return nil, errUnsure
			}
		}
		return nil, nil
	}
	b = bytes.TrimPrefix(b, []byte("\xef\xbb\xbf"))
	if g.unicode && !isASCII(b) {
		return nil, errUnsure
	}
	if !utf8Valid(path) {
		return nil, nil // ripgrep names the file in bytes, which the CLI skips
	}
	text := string(b)
	if text == "" {
		return nil, nil // no lines: "^$" matches none
	}
	lines := strings.Split(text, "\n")
	if strings.HasSuffix(text, "\n") {
		lines = lines[:len(lines)-1]
	}
	show := make([]int8, len(lines)) // 0 none, 1 context, 2 match
	matches := 0
	// last is the last line ripgrep prints: with --max-count, the last match's
	// after-context (where a matching line is printed as a match, and counted by the CLI,
	// but widens nothing).
	last := len(lines) - 1
	limited := false
	for i, l := range lines {
		if limited && i > last {
			break
		}
		if !g.re.MatchString(l) {
			continue
		}
		show[i] = 2
		if limited {
			continue
		}
		matches++
		for j := max(0, i-before); j <= min(len(lines)-1, i+after); j++ {
			if show[j] == 0 {
				show[j] = 1
			}
		}
		if g.a.MaxPerFile != nil && matches == *g.a.MaxPerFile {
			limited, last = true, min(len(lines)-1, i+after)
		}
	}
	var out []grepMatch
	display := g.display(path)
	for i, sh := range show {
		if sh == 0 || i > last {
			continue
		}
		if !utf8Valid(lines[i]) {
			continue // ripgrep's "bytes": the CLI skips the line
		}
		line := jsTrimEnd(lines[i])
		if g.exclude != nil && g.exclude.MatchString(line) {
			continue
		}
		out = append(out, grepMatch{abs: path, file: display, n: i + 1, line: line, isContext: sh == 1})
	}
	return out, nil
}

// format is the CLI's formatGrepResults.
func (g *grepper) format(all []grepMatch, pathParam string) string {
	a := g.a
	where := `in path "` + pathParam + `"`
	filter := ""
	if a.Include != "" {
		filter = ` (filter: "` + a.Include + `")`
	}
	if len(all) == 0 {
		return `No matches found for pattern "` + *a.Pattern + `" ` + where + filter + "."
	}
	groups := map[string][]grepMatch{}
	var keys []string
	matchCount := 0
	for _, m := range all {
		if _, ok := groups[m.file]; !ok {
			keys = append(keys, m.file)
		}
		groups[m.file] = append(groups[m.file], m)
		if !m.isContext {
			matchCount++
		}
	}
	keys = jsKeyOrder(keys)
	limited := ""
	if matchCount >= g.totalMax {
		limited = fmt.Sprintf(" (results limited to %d matches for performance)", g.totalMax)
	}
	var b strings.Builder
	if a.NamesOnly {
		sorted := append([]string(nil), keys...)
		sort.Slice(sorted, func(i, j int) bool { return utf16Less(sorted[i], sorted[j]) })
		fmt.Fprintf(&b, "Found %d files with matches for pattern \"%s\" %s%s%s:\n%s", len(sorted), *a.Pattern, where, filter, limited, strings.Join(sorted, "\n"))
		return jsTrim(b.String())
	}
	term := "matches"
	if matchCount == 1 {
		term = "match"
	}
	fmt.Fprintf(&b, "Found %d %s for pattern \"%s\" %s%s%s:\n---\n", matchCount, term, *a.Pattern, where, filter, limited)
	for _, k := range keys {
		ms := groups[k]
		sort.SliceStable(ms, func(i, j int) bool { return ms[i].n < ms[j].n })
		b.WriteString("File: " + k + "\n")
		for _, m := range ms {
			sep := ":"
			if m.isContext {
				sep = "-"
			}
			line := jsTrimEnd(m.line)
			if r := []rune(line); len(r) > maxLineLen {
				line = string(r[:maxLineLen]) + "... [truncated]"
			}
			fmt.Fprintf(&b, "L%d%s %s\n", m.n, sep, line)
		}
		b.WriteString("---\n")
	}
	return jsTrim(b.String())
}

// recordedFiles are the files a recorded grep_search result names ("File: NAME", or a
// bare name where names_only lists them), by their place in it.
func recordedFiles(rec *tape.ToolResult) map[string]int {
	order := map[string]int{}
	if rec == nil {
		return order
	}
	for i, l := range strings.Split(harness.RecordedText(rec), "\n") {
		name, _ := strings.CutPrefix(l, "File: ")
		if _, seen := order[name]; !seen {
			order[name] = i
		}
	}
	return order
}

// jsKeyOrder is the order of a JavaScript object's keys inserted in keys' order: the
// ones that are array indices first, by value.
func jsKeyOrder(keys []string) []string {
	var idx, rest []string
	for _, k := range keys {
		if arrayIndex(k) {
			idx = append(idx, k)
		} else {
			rest = append(rest, k)
		}
	}
	sort.SliceStable(idx, func(i, j int) bool {
		if len(idx[i]) != len(idx[j]) {
			return len(idx[i]) < len(idx[j])
		}
		return idx[i] < idx[j]
	})
	return append(idx, rest...)
}

// arrayIndex says whether k is a canonical array index ("0", "17", not "017").
func arrayIndex(k string) bool {
	if k == "" || len(k) > 10 || (len(k) > 1 && k[0] == '0') {
		return false
	}
	n := 0
	for _, c := range k {
		if c < '0' || c > '9' {
			return false
		}
		n = n*10 + int(c-'0')
	}
	return n < 1<<32-1
}

// utf16Less is JavaScript's default sort order: by UTF-16 code units.
func utf16Less(a, b string) bool {
	ua, ub := utf16.Encode([]rune(a)), utf16.Encode([]rune(b))
	for i := 0; i < len(ua) && i < len(ub); i++ {
		if ua[i] != ub[i] {
			return ua[i] < ub[i]
		}
	}
	return len(ua) < len(ub)
}

func hasPrefix(b []byte, p string) bool { return len(b) >= len(p) && string(b[:len(p)]) == p }

func isASCII(b []byte) bool {
	for _, c := range b {
		if c >= 0x80 {
			return false
		}
	}
	return true
}

func utf8Valid(s string) bool { return utf8.ValidString(s) }
