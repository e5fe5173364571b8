package claudecode

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/tapebox/tapebox/executor/action"
	"github.com/tapebox/tapebox/executor/harness"
	"github.com/tapebox/tapebox/tape"
)

const (
	globLimit      = 100
	grepHeadLimit  = 250
	grepMaxColumns = 500
)

// vcsDirs are never searched by Grep.
var vcsDirs = []string{".git", ".svn", ".hg", ".bzr", ".jj", ".sl"}

// absolutePaths reports whether a recorded listing shows absolute paths (older versions)
// rather than paths relative to the working directory.
var absLine = regexp.MustCompile(`(?m)^/`)

func absolutePaths(rec *tape.ToolResult) bool {
	return rec != nil && !rec.IsError && absLine.MatchString(rec.Text())
}

// display words a path as Claude Code lists it: relative to the working directory unless
// that climbs out of it.
func (s *session) display(abs string, absolute bool) string {
	if absolute {
		return abs
	}
	rel, err := filepath.Rel(s.currentDir(), abs)
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		return abs
	}
	return rel
}

type globInput struct {
	Pattern string `json:"pattern"`
	Path    string `json:"path"`
}

func (s *session) glob(ctx context.Context, call tape.ToolCall, rec *tape.ToolResult) tape.ToolResult {
	var in globInput
	if r, ok := decode(call, &in, "pattern"); !ok {
		return r
	}
	root := s.currentDir()
	if in.Path != "" {
		root = s.env.Path(in.Path)
		st, err := os.Stat(root)
		if errors.Is(err, fs.ErrNotExist) && s.before("2.1") {
			return asRecorded(harness.Text(call, "Directory does not exist: "+in.Path, true), rec)
		}
		if errors.Is(err, fs.ErrNotExist) {
			return asRecorded(harness.Text(call, fmt.Sprintf("Directory does not exist: %s. Note: your current working directory is %s.", in.Path, s.currentDir()), true), rec)
		}
		if err == nil && !st.IsDir() {
			return asRecorded(harness.Text(call, "Path is not a directory: "+in.Path, true), rec)
		}
	}
	files, err := action.Glob(ctx, action.GlobRequest{Root: root, Pattern: in.Pattern,
		Walk: action.WalkOptions{Hidden: true, NoIgnore: true, SkipPaths: []string{s.env.State.Path}}})
	if err != nil {
		return harness.Text(call, err.Error(), true)
	}
	if len(files) == 0 {
		return harness.Text(call, "No files found", false)
	}
	abs := absolutePaths(rec)
	n := min(len(files), globLimit)
	lines := make([]string, 0, n+1)
	for _, f := range files[:n] {
		lines = append(lines, s.display(f.Path, abs))
	}
	lines = recordedOrder(lines, rec)
	if len(files) > globLimit {
		if strings.Contains(harness.RecordedText(rec), "(Results are truncated.") {
			lines = append(lines, "(Results are truncated. Consider using a more specific path or pattern.)")
		} else {
			lines = append(lines, fmt.Sprintf("(Showing %d of %d matching files; %d more are not listed. Narrow the pattern or path to see the rest.)", n, len(files), len(files)-n))
		}
	}
	return harness.Text(call, strings.Join(lines, "\n"), false)
}

type grepInput struct {
	Pattern    string `json:"pattern"`
	Path       string `json:"path"`
	Glob       string `json:"glob"`
	Type       string `json:"type"`
	OutputMode string `json:"output_mode"`
	Before     *int   `json:"-B"`
	After      *int   `json:"-A"`
	Context    *int   `json:"-C"`
	Context2   *int   `json:"context"`
	LineNums   *bool  `json:"-n"`
	IgnoreCase bool   `json:"-i"`
	Only       bool   `json:"-o"`
	HeadLimit  *int   `json:"head_limit"`
	Offset     int    `json:"offset"`
	Multiline  bool   `json:"multiline"`
}

// splitGlobs splits Grep's glob parameter as Claude Code does: on whitespace, then on
// commas unless the piece has braces.
func splitGlobs(g string) []string {
	var out []string
	for _, p := range strings.Fields(g) {
		if strings.Contains(p, "{") && strings.Contains(p, "}") {
			out = append(out, p)
			continue
		}
		for _, q := range strings.Split(p, ",") {
			if q != "" {
				out = append(out, q)
			}
		}
	}
	return out
}

// page applies head_limit (default 250, 0 for none) and offset; limited says whether
// items were left out at the end.
func page[T any](items []T, headLimit *int, offset int) (out []T, limit int, limited bool) {
	if offset > len(items) {
		offset = len(items)
	}
	if headLimit != nil && *headLimit == 0 {
		return items[offset:], 0, false
	}
	n := grepHeadLimit
	if headLimit != nil {
		n = *headLimit
	}
	end := min(offset+n, len(items))
	return items[offset:end], n, len(items)-offset > n
}

func pagination(limit int, limited bool, offset int) string {
	var p []string
	if limited {
		p = append(p, "limit: "+strconv.Itoa(limit))
	}
	if offset > 0 {
		p = append(p, "offset: "+strconv.Itoa(offset))
	}
	return strings.Join(p, ", ")
}

func (s *session) grep(ctx context.Context, call tape.ToolCall, rec *tape.ToolResult) tape.ToolResult {
	var in grepInput
	if r, ok := decode(call, &in, "pattern"); !ok {
		return r
	}
	if in.Offset < 0 || (in.HeadLimit != nil && *in.HeadLimit < 0) {
		return asRecorded(toolUseError(call, "head_limit and offset must be whole numbers of 0 or more."), rec)
	}
	if in.HeadLimit == nil && s.before("2.1") {
		unlimited := 0 // Claude Code 2.0 has no default head_limit (seed 8086)
		in.HeadLimit = &unlimited
	}
	mode := in.OutputMode
	if mode == "" {
		mode = "files_with_matches"
	}
	root := s.currentDir()
	if in.Path != "" {
		root = s.env.Path(in.Path)
		if _, err := os.Stat(root); err != nil {
			return asRecorded(harness.Text(call, fmt.Sprintf("Path does not exist: %s. Note: your current working directory is %s.", in.Path, s.currentDir()), true), rec)
		}
	}
	st, _ := os.Stat(root)
	isDir := st != nil && st.IsDir()
	req := action.GrepRequest{
		Root: root, Pattern: in.Pattern, IgnoreCase: in.IgnoreCase, Multiline: in.Multiline, Type: in.Type,
		Walk: action.WalkOptions{Hidden: true, SkipDirs: vcsDirs, Globs: splitGlobs(in.Glob), SkipPaths: []string{s.env.State.Path}},
	}
	ctxLines := 0
	if mode == "content" {
		req.OnlyMatching = in.Only
		c := in.Context2
		if c == nil || *c == 0 {
			c = in.Context
		}
		if c != nil && *c > 0 {
			req.Before, req.After = *c, *c
		} else {
			if in.Before != nil {
				req.Before = *in.Before
			}
			if in.After != nil {
				req.After = *in.After
			}
		}
		ctxLines = req.Before + req.After
	}
	files, err := action.Grep(ctx, req)
	if err != nil {
		return harness.Text(call, err.Error(), true)
	}
	abs := absolutePaths(rec)
	switch mode {
	case "content":
		return harness.Text(call, s.grepContent(files, in, isDir, ctxLines > 0, abs), false)
	case "count":
		lines := make([]string, 0, len(files))
		total := 0
		for _, f := range files {
			lines = append(lines, fmt.Sprintf("%s:%d", s.display(f.Path, abs), f.Count))
			total += f.Count
		}
		shown, limit, limited := page(lines, in.HeadLimit, in.Offset)
		body := strings.Join(recordedOrder(shown, rec), "\n")
		if body == "" {
			body = "No matches found"
			if total > 0 {
				body = "No entries at this offset"
			}
		}
		pg := pagination(limit, limited, in.Offset)
		if pg != "" {
			pg = " with pagination = " + pg
		}
		sep := "\n"
		if s.before("2.1") {
			sep = "\n\n" // Claude Code 2.0 leaves a blank line before the total
		}
		return harness.Text(call, fmt.Sprintf("%s%sFound %d total %s across %d %s.%s", body, sep, total,
			pluralOcc(total), len(files), pluralize(len(files), "file"), pg), false)
	}
	sort.SliceStable(files, func(i, j int) bool {
		if !files[i].ModTime.Equal(files[j].ModTime) {
			return files[i].ModTime.After(files[j].ModTime)
		}
		return files[i].Path < files[j].Path
	})
	shown, limit, limited := page(files, in.HeadLimit, in.Offset)
	pg := pagination(limit, limited, in.Offset)
	if len(shown) == 0 {
		if in.Offset > 0 && len(files) > 0 {
			return harness.Text(call, "No entries at this offset. [Showing results with pagination = "+pg+"]", false)
		}
		return harness.Text(call, "No files found", false)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Found %d %s", len(shown), pluralize(len(shown), "file"))
	if pg != "" {
		b.WriteString(" " + pg)
	}
	names := make([]string, len(shown))
	for i, f := range shown {
		names[i] = s.display(f.Path, abs)
	}
	for _, name := range recordedOrder(names, rec) {
		b.WriteString("\n" + name)
	}
	return harness.Text(call, b.String(), false)
}

func pluralOcc(n int) string {
	if n == 1 {
		return "occurrence"
	}
	return "occurrences"
}

func (s *session) grepContent(files []action.GrepFile, in grepInput, isDir, breaks, abs bool) string {
	numbers := in.LineNums == nil || *in.LineNums
	var lines []string
	for _, f := range files {
		prev := -1
		for _, l := range f.Lines {
			if breaks && len(lines) > 0 && (prev < 0 || l.N > prev+1) && lines[len(lines)-1] != "--" {
				lines = append(lines, "--")
			}
			prev = l.N
			sep := "-"
			text := l.Text
			if l.Match {
				sep = ":"
			}
			if len(text) > grepMaxColumns {
				if l.Match {
					text = "[Omitted long matching line]"
				} else {
					text = "[Omitted long context line]"
				}
			}
			var b strings.Builder
			if isDir {
				b.WriteString(s.display(f.Path, abs) + sep)
			}
			if numbers {
				b.WriteString(strconv.Itoa(l.N) + sep)
			}
			b.WriteString(text)
			lines = append(lines, b.String())
		}
	}
	shown, limit, limited := page(lines, in.HeadLimit, in.Offset)
	body := strings.Join(shown, "\n")
	if body == "" {
		body = "No matches found"
		if in.Offset > 0 && len(lines) > 0 {
			body = "No entries at this offset"
		}
	}
	if pg := pagination(limit, limited, in.Offset); pg != "" {
		body += "\n[Showing results with pagination = " + pg + "]"
	}
	return body
}

// recordedOrder returns lines in the order the recorded result lists them, when it lists
// the same lines: Glob and Grep order files by modification time, which a workspace
// restored from a snapshot does not keep (it keeps the files and their contents, compared
// as ever). Otherwise lines are returned as they are.
func recordedOrder(lines []string, rec *tape.ToolResult) []string {
	if len(lines) < 2 || rec == nil {
		return lines
	}
	want := make(map[string]int, len(lines))
	for _, l := range lines {
		want[l]++
	}
	rl := strings.Split(harness.RecordedText(rec), "\n")
	k := 0
	for k < len(rl) && want[rl[k]] == 0 {
		k++
	}
	if len(rl)-k < len(lines) {
		return lines
	}
	got := rl[k : k+len(lines)]
	for _, l := range got {
		if want[l] == 0 {
			return lines
		}
		want[l]--
	}
	return got
}
