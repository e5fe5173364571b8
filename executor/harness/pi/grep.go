package pi

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf16"

	"github.com/tapebox/tapebox/executor/action"
	"github.com/tapebox/tapebox/executor/harness"
	"github.com/tapebox/tapebox/tape"
)

// grepLineMax is GREP_MAX_LINE_LENGTH: a longer line is cut, in UTF-16 code units.
const grepLineMax = 500

// grep is Pi's grep tool, which runs `rg --json --line-number --color=never --hidden` and
// formats its matches itself ("path:N: text", context lines "path-N- text"). The search
// here is action.Grep's, with ripgrep's file rules; where the recording lists the same
// lines in another order (ripgrep's parallel walk), the recording's order is kept.
func (s *session) grep(ctx context.Context, call tape.ToolCall, rec *tape.ToolResult) tape.ToolResult {
	a := parseArgs(call)
	pattern, _ := a.str("pattern", true)
	path := a.optional("path", ".")
	glob, _ := a.str("glob", false)
	ignoreCase := a.flag("ignoreCase")
	literal := a.flag("literal")
	context, _ := a.num("context")
	limitF, hasLimit := a.num("limit")
	if r, bad := a.failed(call); bad {
		return r
	}
	if strings.Contains(harness.RecordedText(rec), "ripgrep (rg) is not available") {
		return harness.Replay(call, rec) // the recording's machine had no ripgrep
	}
	root := s.resolve(path)
	st, err := os.Stat(root)
	if err != nil {
		return fail(call, "Path not found: "+root)
	}
	limit := 100
	if hasLimit {
		limit = max(1, int(limitF))
	}
	if literal {
		pattern = regexp.QuoteMeta(pattern)
	}
	req := action.GrepRequest{Root: root, Pattern: pattern, IgnoreCase: ignoreCase, Walk: action.WalkOptions{Hidden: true}}
	if glob != "" {
		req.Walk.Globs = []string{glob}
	}
	files, err := action.Grep(ctx, req)
	if err != nil {
		if rec != nil && rec.IsError {
			return harness.Replay(call, rec) // ripgrep's own words for a pattern it refuses
		}
		return fail(call, err.Error())
	}
	rel := func(p string) string {
		if st.IsDir() {
			if r, err := filepath.Rel(root, p); err == nil && r != "." && !strings.HasPrefix(r, "..") {
				return r
			}
		}
		return filepath.Base(p)
	}
	ctxLines := max(0, int(context))
	// Every match, as the lines it shows (with its context lines); the limit is applied
	// after, so that under it the recording's choice among them can be followed.
	type block struct {
		lines []string
		cut   bool
	}
	var blocks []block
	for _, f := range files {
		var lines []string
		if ctxLines > 0 {
			b, _ := os.ReadFile(f.Path)
			lines = strings.Split(normalizeToLF(action.LossyUTF8(b)), "\n")
		}
		for _, l := range f.Lines {
			if !l.Match {
				continue
			}
			name := rel(f.Path)
			var bl block
			if ctxLines == 0 {
				text, c := clipLine(strings.ReplaceAll(action.LossyUTF8([]byte(l.Text)), "\r", ""))
				bl = block{[]string{name + ":" + strconv.Itoa(l.N) + ": " + text}, c}
			} else {
				for n := max(1, l.N-ctxLines); n <= min(len(lines), l.N+ctxLines); n++ {
					text, c := clipLine(strings.ReplaceAll(lines[n-1], "\r", ""))
					bl.cut = bl.cut || c
					sep := "-"
					if n == l.N {
						sep = ":"
					}
					bl.lines = append(bl.lines, name+sep+strconv.Itoa(n)+sep+" "+text)
				}
			}
			blocks = append(blocks, bl)
		}
	}
	if len(blocks) == 0 {
		return ok(call, "No matches found")
	}
	count := min(len(blocks), limit)
	chosen := blocks[:count]
	if len(blocks) > limit {
		// ripgrep's parallel walk decides which matches fill the limit, differently from
		// run to run: the ones the recording shows, in its order, when they are matches here.
		keys := make([][]string, len(blocks))
		for i, b := range blocks {
			keys[i] = b.lines
		}
		if pick := recordedChoice(keys, rec, limit); pick != nil {
			chosen = chosen[:0:0]
			for _, i := range pick {
				chosen = append(chosen, blocks[i])
			}
		}
	}
	var out []string
	cut := false
	for _, b := range chosen {
		out = append(out, b.lines...)
		cut = cut || b.cut
	}
	out = recordedOrder(out, rec)
	t := truncateHead(strings.Join(out, "\n"), int(^uint(0)>>1), maxBytes)
	text := t.content
	var notices []string
	if count >= limit {
		notices = append(notices, fmt.Sprintf("%d matches limit reached. Use limit=%d for more, or refine pattern", limit, limit*2))
	}
	if t.truncated {
		notices = append(notices, formatSize(maxBytes)+" limit reached")
	}
	if cut {
		notices = append(notices, fmt.Sprintf("Some lines truncated to %d chars. Use read tool to see full lines", grepLineMax))
	}
	if len(notices) > 0 {
		text += "\n\n[" + strings.Join(notices, ". ") + "]"
	}
	return ok(call, text)
}

// flag reads an optional boolean parameter ("true"/"false" and 1/0 convert, as
// Value.Convert does).
func (a *args) flag(name string) bool {
	v, present := a.vals[name]
	if !present {
		return false
	}
	switch s := string(v); s {
	case "true", `"true"`, "1":
		return true
	case "false", `"false"`, "0":
		return false
	}
	a.errors = append(a.errors, name+": must be boolean")
	return false
}

// clipLine is Pi's truncateLine: a line over grepLineMax UTF-16 code units is cut there
// and marked (a character cut in half is dropped, as Pi's provider drops the lone
// surrogate).
func clipLine(s string) (string, bool) {
	n := 0
	for i, r := range s {
		if n += utf16.RuneLen(r); n > grepLineMax {
			return s[:i] + "... [truncated]", true
		}
	}
	return s, false
}

// recordedOrder returns the recording's order of lines when it lists the same lines.
func recordedOrder(lines []string, rec *tape.ToolResult) []string {
	if rec == nil || rec.IsError || len(lines) < 2 {
		return lines
	}
	body, _, _ := strings.Cut(rec.Text(), "\n\n[")
	got := strings.Split(body, "\n")
	if len(got) != len(lines) {
		return lines
	}
	a, b := slices.Clone(lines), slices.Clone(got)
	slices.Sort(a)
	slices.Sort(b)
	if !slices.Equal(a, b) {
		return lines
	}
	return got
}

// recordedChoice returns which of blocks (each the lines of one match), limit of them in
// the recording's order, make up the recorded result's lines exactly; nil when they do not.
func recordedChoice(blocks [][]string, rec *tape.ToolResult, limit int) []int {
	if rec == nil || rec.IsError {
		return nil
	}
	body, _, _ := strings.Cut(rec.Text(), "\n\n[")
	got := strings.Split(body, "\n")
	used := make([]bool, len(blocks))
	var pick []int
	for p := 0; p < len(got); {
		found := -1
		for i, b := range blocks {
			if !used[i] && p+len(b) <= len(got) && slices.Equal(got[p:p+len(b)], b) {
				found = i
				break
			}
		}
		if found < 0 {
			return nil
		}
		used[found] = true
		pick = append(pick, found)
		p += len(blocks[found])
	}
	if len(pick) != limit {
		return nil
	}
	return pick
}
