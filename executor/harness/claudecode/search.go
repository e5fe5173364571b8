package claudecode

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
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
		Walk: action.WalkOptions{Hidden: true, NoIgnore: true, SkipPaths: []string{s.env.State.Path}, GlobBase: s.globBase()}})
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

// globBase is the directory a glob of Glob or Grep is matched from (see
// action.WalkOptions.GlobBase): Claude Code 2.0 runs rg in its own working directory, the
// session's first, with the searched directory as an argument, so that "src/*" searched in
// src (or after a cd into it) lists src's files (seeds 21053, 21129). Claude Code 2.1 has
// no Glob or Grep tool; other recordings keep the searched directory.
func (s *session) globBase() string {
	if s.before("2.1") {
		return s.env.Cwd
	}
	return ""
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
	given := in.HeadLimit
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
		Walk: action.WalkOptions{Hidden: true, SkipDirs: vcsDirs, Globs: splitGlobs(in.Glob), SkipPaths: []string{s.env.State.Path}, GlobBase: s.globBase()},
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
	if s.before("2.1") {
		return harness.Text(call, s.grep20(files, in, given, mode, isDir, ctxLines > 0, abs, rec), false)
	}
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
		return harness.Text(call, fmt.Sprintf("%s\nFound %d total %s across %d %s.%s", body, total,
			pluralOcc(total), len(files), pluralize(len(files), "file"), pg), false)
	}
	byModTime(files)
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

// byModTime sorts files as Grep lists them: the last modified first, ties by path.
func byModTime(files []action.GrepFile) {
	sort.SliceStable(files, func(i, j int) bool {
		if !files[i].ModTime.Equal(files[j].ModTime) {
			return files[i].ModTime.After(files[j].ModTime)
		}
		return files[i].Path < files[j].Path
	})
}

// grep20 words Grep's result as Claude Code 2.0 does: every output cut at 20000
// characters with a count of the lines left out (content and counts before their notes,
// the file list with its header), pagination shown whenever head_limit or offset is given
// ("limit: 5, offset: 0"), the total of a count over the lines shown, and a blank line
// before each note. given is the head_limit the call gave (2.0 has no default).
func (s *session) grep20(files []action.GrepFile, in grepInput, given *int, mode string, isDir, breaks, abs bool, rec *tape.ToolResult) string {
	pg := ""
	if given != nil || in.Offset > 0 {
		limit := "undefined"
		if given != nil {
			limit = strconv.Itoa(*given)
		}
		pg = "limit: " + limit + ", offset: " + strconv.Itoa(in.Offset)
	}
	switch mode {
	case "content":
		lines := joinGroups(recordedGroups(s.contentLines(files, in, isDir, breaks, abs), rec), breaks)
		shown, _, _ := page(lines, in.HeadLimit, in.Offset)
		body := cut20(strings.Join(shown, "\n"))
		if body == "" {
			body = "No matches found"
		}
		if pg != "" {
			body += "\n\n[Showing results with pagination = " + pg + "]"
		}
		return body
	case "count":
		counted, _, _ := page(files, in.HeadLimit, in.Offset)
		shown := make([]string, 0, len(counted))
		total := 0
		for _, f := range counted {
			shown = append(shown, fmt.Sprintf("%s:%d", s.display(f.Path, abs), f.Count))
			total += f.Count
		}
		body := cut20(strings.Join(recordedOrder(shown, rec), "\n"))
		if body == "" {
			body = "No matches found"
		}
		if pg != "" {
			pg = " with pagination = " + pg
		}
		return fmt.Sprintf("%s\n\nFound %d total %s across %d %s.%s", body, total, pluralOcc(total), len(shown), pluralize(len(shown), "file"), pg)
	}
	byModTime(files)
	shown, _, _ := page(files, in.HeadLimit, in.Offset)
	if len(shown) == 0 {
		return "No files found"
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
	return cut20(b.String())
}

// grepCut20 is where Claude Code 2.0 cuts a Grep result, in UTF-16 units.
const grepCut20 = 20000

// cut20 cuts s after grepCut20 UTF-16 units, as Claude Code 2.0 cuts a Grep result: the
// head, a blank line and the count of the lines after the cut (found by
// internal/fidelity, seed 21128).
func cut20(s string) string {
	if utf16Len(s) <= grepCut20 {
		return s
	}
	cut := unitIndex(s, grepCut20)
	return fmt.Sprintf("%s\n\n... [%d lines truncated] ...", s[:cut], strings.Count(s[cut:], "\n")+1)
}

func pluralOcc(n int) string {
	if n == 1 {
		return "occurrence"
	}
	return "occurrences"
}

func (s *session) grepContent(files []action.GrepFile, in grepInput, isDir, breaks, abs bool) string {
	lines := joinGroups(s.contentLines(files, in, isDir, breaks, abs), breaks)
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

// contentLines are Grep's content lines, one group per file (a "--" within a group
// marks a gap between runs of context).
func (s *session) contentLines(files []action.GrepFile, in grepInput, isDir, breaks, abs bool) [][]string {
	numbers := in.LineNums == nil || *in.LineNums
	var groups [][]string
	for _, f := range files {
		var lines []string
		prev := -1
		for _, l := range f.Lines {
			if breaks && prev >= 0 && l.N > prev+1 {
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
		if len(lines) > 0 {
			groups = append(groups, lines)
		}
	}
	return groups
}

// joinGroups joins the groups of contentLines, with a "--" between two files' lines when
// context lines are shown, as rg does.
func joinGroups(groups [][]string, breaks bool) []string {
	var lines []string
	for i, g := range groups {
		if breaks && i > 0 {
			lines = append(lines, "--")
		}
		lines = append(lines, g...)
	}
	return lines
}

// recordedGroups orders the files' groups of content lines as the recorded result
// does, where it shows them (the others follow, in the order they have). Claude Code 2.0
// runs rg without --sort for content, and rg's threads print the files in the order they
// finish searching them, which depends on their scheduling on the recording's machine,
// not on the sandbox (found by internal/fidelity, seed 21221). The lines of each group
// are still the executor's own.
func recordedGroups(groups [][]string, rec *tape.ToolResult) [][]string {
	if len(groups) < 2 || rec == nil {
		return groups
	}
	at := map[string]int{}
	for i, l := range strings.Split(harness.RecordedText(rec), "\n") {
		if _, ok := at[l]; !ok {
			at[l] = i
		}
	}
	pos := func(g []string) int {
		if i, ok := at[g[0]]; ok {
			return i
		}
		return math.MaxInt
	}
	out := slices.Clone(groups)
	slices.SortStableFunc(out, func(a, b []string) int { return cmp.Compare(pos(a), pos(b)) })
	return out
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
