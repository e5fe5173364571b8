package opencode

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/tapebox/tapebox/executor/action"
	"github.com/tapebox/tapebox/executor/harness"
	"github.com/tapebox/tapebox/tape"
)

// searchLimit is the number of files glob lists and of lines grep shows.
const searchLimit = 100

type globInput struct {
	Pattern string  `json:"pattern"`
	Path    *string `json:"path"`
}

// walk is how opencode's ripgrep walks: .gitignore honoured, hidden files skipped by glob
// and searched by grep, .git never entered, nor the executor's state.
func (s *session) walk(hidden bool, globs ...string) action.WalkOptions {
	return action.WalkOptions{Hidden: hidden, Globs: globs, SkipDirs: []string{".git"}, SkipPaths: []string{s.env.State.Path}}
}

// glob is opencode's GlobTool: `rg --files --glob=PATTERN` under path, the first 100
// files as absolute paths.
func (s *session) glob(ctx context.Context, call tape.ToolCall, rec *tape.ToolResult) tape.ToolResult {
	var in globInput
	if err := harness.Decode(call, &in); err != nil {
		return fail(call, err.Error())
	}
	dir := s.env.Cwd
	if in.Path != nil {
		dir = s.path(*in.Path)
	}
	st, err := os.Stat(dir)
	if err != nil {
		// ripgrep cannot start in a directory that is not there.
		return fail(call, errRipgrep)
	}
	if !st.IsDir() {
		return fail(call, "glob path must be a directory: "+dir)
	}
	files, err := action.Glob(ctx, action.GlobRequest{Root: dir, Pattern: in.Pattern, Walk: s.walk(false)})
	if err != nil {
		return fail(call, err.Error())
	}
	if len(files) == 0 {
		return ok(call, "No files found")
	}
	var lines []string
	for _, f := range files {
		lines = append(lines, filepath.Join(dir, f.Rel))
	}
	rgSort(dir, lines, func(l string) string { return l })
	truncated := len(lines) > searchLimit
	if truncated {
		lines = lines[:searchLimit]
	}
	lines = recordedOrder(lines, rec, 0)
	if truncated {
		lines = append(lines, "", fmt.Sprintf("(Results are truncated: showing first %d results. Consider using a more specific path or pattern.)", searchLimit))
	}
	return ok(call, strings.Join(lines, "\n"))
}

// recordedOrder puts lines in the order of the recorded result when that result lists the
// same lines (from its line skip on): ripgrep's parallel walk lists files in an order
// that differs between runs, so the recording's order is as good as any other.
func recordedOrder(lines []string, rec *tape.ToolResult, skip int) []string {
	text := harness.RecordedText(rec)
	if text == "" {
		return lines
	}
	got := strings.Split(text, "\n")
	if len(got) < skip+len(lines) {
		return lines
	}
	got = got[skip : skip+len(lines)]
	want := map[string]int{}
	for _, l := range lines {
		want[l]++
	}
	for _, l := range got {
		if want[l] == 0 {
			return lines
		}
		want[l]--
	}
	return got
}

// errRipgrep is opencode's error when ripgrep could not run (its working directory is
// missing).
const errRipgrep = "ripgrep execution failed"

type grepInput struct {
	Pattern string  `json:"pattern"`
	Path    *string `json:"path"`
	Include *string `json:"include"`
}

// grep is opencode's GrepTool: ripgrep's matches under path (hidden files included), the
// first 100 lines, grouped by file: "Found N matches", then "PATH:" and "  Line N: TEXT"
// (the line with its end, as ripgrep's JSON gives it).
func (s *session) grep(ctx context.Context, call tape.ToolCall, rec *tape.ToolResult) tape.ToolResult {
	var in grepInput
	if err := harness.Decode(call, &in); err != nil {
		return fail(call, err.Error())
	}
	if in.Pattern == "" {
		return fail(call, "pattern is required")
	}
	target := s.env.Cwd
	if in.Path != nil {
		target = s.path(*in.Path)
	}
	// A path that is not a directory (a file, or nothing) searches the directory it is in,
	// all of it: opencode 1.18 runs ripgrep there with no file named.
	root := target
	if st, err := os.Stat(target); err != nil || !st.IsDir() {
		root = filepath.Dir(target)
	}
	if _, err := os.Stat(root); err != nil {
		return fail(call, errRipgrep)
	}
	var globs []string
	if in.Include != nil && *in.Include != "" {
		globs = append(globs, *in.Include)
	}
	found, err := action.Grep(ctx, action.GrepRequest{Root: root, Pattern: in.Pattern, Walk: s.walk(true, globs...)})
	if err != nil {
		if msg := rgPatternError(in.Pattern); msg != "" {
			return fail(call, msg)
		}
		return fail(call, err.Error())
	}
	type hit struct {
		path string
		n    int
		text string
	}
	var hits []hit
	re, _ := regexp.Compile(in.Pattern)
	for _, f := range found {
		data, _ := os.ReadFile(f.Path)
		lines := strings.SplitAfter(strings.TrimPrefix(string(data), bom), "\n") // ripgrep drops a BOM
		offsets := make([]int, len(lines))
		for i := 1; i < len(lines); i++ {
			offsets[i] = offsets[i-1] + len(lines[i-1])
		}
		for _, l := range f.Lines {
			if !l.Match {
				continue
			}
			text := l.Text
			if l.N-1 < len(lines) {
				text = lines[l.N-1]
				if rgRecordLen(f.Rel, text, l.N, offsets[l.N-1], re) > maxRecord {
					return fail(call, errRecord)
				}
			}
			if utf16Len(text) > 2000 {
				text = strings.TrimSuffix(utf16Prefix(text, 2000), "\uFFFD") + "..."
			}
			hits = append(hits, hit{filepath.Join(root, f.Rel), l.N, text})
		}
	}
	if len(hits) == 0 {
		return ok(call, "No files found")
	}
	rgSort(root, hits, func(h hit) string { return h.path })
	// ripgrep searches files in parallel: the recording's order of the same files is as
	// good as any other.
	if order := recordedFiles(rec); order != nil {
		pos := map[string]int{}
		for _, h := range hits {
			if _, seen := pos[h.path]; !seen {
				pos[h.path] = len(pos)
			}
		}
		if len(order) == len(pos) && allKnown(order, pos) {
			sort.SliceStable(hits, func(i, j int) bool { return order[hits[i].path] < order[hits[j].path] })
		}
	}
	truncated := len(hits) > searchLimit
	if truncated {
		hits = hits[:searchLimit]
	}
	more := ""
	if truncated {
		more = " (more matches available)"
	}
	out := []string{fmt.Sprintf("Found %d matches%s", len(hits), more)}
	last := ""
	for _, h := range hits {
		if h.path != last {
			if last != "" {
				out = append(out, "")
			}
			last = h.path
			out = append(out, h.path+":")
		}
		out = append(out, fmt.Sprintf("  Line %d: %s", h.n, h.text))
	}
	if truncated {
		out = append(out, "", "(Results truncated. Consider using a more specific path or pattern.)")
	}
	return ok(call, strings.Join(out, "\n"))
}

// rgSort orders items (files under root, by the path key gives) as ripgrep lists a small
// tree: depth first, each directory's entries in the reverse of the order the directory
// holds them (its walker takes them from a stack). A file the walk does not reach keeps
// its place after the others.
func rgSort[T any](root string, items []T, key func(T) string) {
	if len(items) < 2 {
		return
	}
	rank := map[string]int{}
	budget := 100000
	var visit func(dir string)
	visit = func(dir string) {
		f, err := os.Open(dir)
		if err != nil {
			return
		}
		names, _ := f.Readdirnames(-1)
		f.Close()
		for i := len(names) - 1; i >= 0 && budget > 0; i-- {
			budget--
			p := filepath.Join(dir, names[i])
			if st, err := os.Lstat(p); err == nil && st.IsDir() {
				visit(p)
				continue
			}
			rank[p] = len(rank)
		}
	}
	visit(root)
	sort.SliceStable(items, func(i, j int) bool {
		ri, oki := rank[key(items[i])]
		rj, okj := rank[key(items[j])]
		if oki != okj {
			return oki
		}
		return ri < rj
	})
}

// recordedFiles is the order of the files a recorded grep result lists ("PATH:" lines at
// the start of the result or after an empty line), or nil.
func recordedFiles(rec *tape.ToolResult) map[string]int {
	text := harness.RecordedText(rec)
	if !strings.HasPrefix(text, "Found ") {
		return nil
	}
	lines := strings.Split(text, "\n")
	order := map[string]int{}
	for i := 1; i < len(lines); i++ {
		l := lines[i]
		if (i == 1 || lines[i-1] == "") && strings.HasSuffix(l, ":") && !strings.HasPrefix(l, "  Line ") {
			if _, seen := order[strings.TrimSuffix(l, ":")]; !seen {
				order[strings.TrimSuffix(l, ":")] = len(order)
			}
		}
	}
	return order
}

func allKnown(order, pos map[string]int) bool {
	for p := range pos {
		if _, ok := order[p]; !ok {
			return false
		}
	}
	return true
}

// todo is one item of todowrite, its fields in opencode's order.
type todo struct {
	Content  string `json:"content"`
	Status   string `json:"status"`
	Priority string `json:"priority"`
}

// todowrite is opencode's TodoWriteTool: the list as JSON.stringify(todos, null, 2).
func (s *session) todowrite(_ context.Context, call tape.ToolCall, _ *tape.ToolResult) tape.ToolResult {
	var in struct {
		Todos []todo `json:"todos"`
	}
	if err := harness.Decode(call, &in); err != nil {
		return fail(call, err.Error())
	}
	return ok(call, stringifyTodos(in.Todos))
}

// stringifyTodos is JSON.stringify(todos, null, 2).
func stringifyTodos(todos []todo) string {
	if len(todos) == 0 {
		return "[]"
	}
	b := []byte("[")
	for i, t := range todos {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, "\n  {\n    \"content\": "...)
		b = appendJSString(b, t.Content)
		b = append(b, ",\n    \"status\": "...)
		b = appendJSString(b, t.Status)
		b = append(b, ",\n    \"priority\": "...)
		b = appendJSString(b, t.Priority)
		b = append(b, "\n  }"...)
	}
	return string(append(b, "\n]"...))
}

// appendJSString appends s quoted as JSON.stringify quotes it: \" \\ \b \f \n \r \t,
// other control characters as \u00xx, everything else as it is.
func appendJSString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case '"', '\\':
			b = append(b, '\\', c)
		case '\b':
			b = append(b, '\\', 'b')
		case '\f':
			b = append(b, '\\', 'f')
		case '\n':
			b = append(b, '\\', 'n')
		case '\r':
			b = append(b, '\\', 'r')
		case '\t':
			b = append(b, '\\', 't')
		default:
			if c < 0x20 {
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&15])
			} else {
				b = append(b, c)
			}
		}
	}
	return append(b, '"')
}
