package opencode

import (
	"context"
	"errors"
	"os"
	"regexp"
	"strings"

	"github.com/tapebox/tapebox/executor/action"
	"github.com/tapebox/tapebox/executor/harness"
	"github.com/tapebox/tapebox/tape"
)

const bom = "\uFEFF"

type writeInput struct {
	Content  string `json:"content"`
	FilePath string `json:"filePath"`
}

// write is opencode's WriteTool: the file written whole (its directories made), keeping a
// byte order mark the file or the content had.
func (s *session) write(_ context.Context, call tape.ToolCall, _ *tape.ToolResult) tape.ToolResult {
	var in writeInput
	if err := harness.Decode(call, &in); err != nil {
		return fail(call, err.Error())
	}
	p := s.path(in.FilePath)
	hadBOM := false
	if exists(p) {
		old, err := os.ReadFile(p)
		if err != nil {
			return fail(call, fsError("readFile", p, err))
		}
		hadBOM = strings.HasPrefix(string(old), bom)
	}
	content, withBOM := strings.CutPrefix(in.Content, bom)
	if err := writeWithDirs(p, content, hadBOM || withBOM); err != nil {
		return fail(call, err.Error())
	}
	return ok(call, "Wrote file successfully.")
}

type editInput struct {
	FilePath   string  `json:"filePath"`
	OldString  *string `json:"oldString"`
	NewString  *string `json:"newString"`
	ReplaceAll bool    `json:"replaceAll"`
}

// The edit tool's errors.
const (
	errIdentical = "No changes to apply: oldString and newString are identical."
	errEmptyOld  = "oldString cannot be empty when editing an existing file. Provide the exact text to replace, or use write for an intentional full-file replacement."
	errNotFound  = "Could not find oldString in the file. It must match exactly, including whitespace, indentation, and line endings."
	errMultiple  = "Found multiple matches for oldString. Provide more surrounding context to make the match unique."
	errTooLarge  = "Refusing replacement because the matched span is much larger than oldString. Re-read the file and provide the full exact oldString for the intended replacement."
)

// edit is opencode's EditTool: oldString replaced by newString, found exactly or by the
// harness's looser matchers in order (trimmed lines, collapsed whitespace, indentation,
// trimmed ends, every occurrence), in the file's own line ends.
func (s *session) edit(_ context.Context, call tape.ToolCall, _ *tape.ToolResult) tape.ToolResult {
	var in editInput
	if err := harness.Decode(call, &in); err != nil {
		return fail(call, err.Error())
	}
	if in.FilePath == "" {
		return fail(call, "filePath is required")
	}
	oldS, newS := deref(in.OldString), deref(in.NewString)
	if oldS == newS {
		return fail(call, errIdentical)
	}
	p := s.path(in.FilePath)
	if oldS == "" {
		if exists(p) {
			return fail(call, errEmptyOld)
		}
		text, withBOM := strings.CutPrefix(newS, bom)
		if err := writeWithDirs(p, text, withBOM); err != nil {
			return fail(call, err.Error())
		}
		return ok(call, "Edit applied successfully.")
	}
	st, err := os.Stat(p)
	if err != nil {
		return fail(call, "File "+p+" not found")
	}
	if st.IsDir() {
		return fail(call, "Path is a directory, not a file: "+p)
	}
	data, err := os.ReadFile(p)
	if err != nil {
		return fail(call, fsError("readFile", p, err))
	}
	text, hadBOM := strings.CutPrefix(action.LossyUTF8(data), bom)
	eol := "\n"
	if strings.Contains(text, "\r\n") {
		eol = "\r\n"
	}
	conv := func(s string) string {
		s = strings.ReplaceAll(s, "\r\n", "\n")
		if eol == "\n" {
			return s
		}
		return strings.ReplaceAll(s, "\n", eol)
	}
	out, err := replace(text, conv(oldS), conv(newS), in.ReplaceAll)
	if err != nil {
		return fail(call, err.Error())
	}
	out, outBOM := strings.CutPrefix(out, bom)
	if err := writeWithDirs(p, out, hadBOM || outBOM); err != nil {
		return fail(call, err.Error())
	}
	return ok(call, "Edit applied successfully.")
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// replacer yields the spans of content that may stand for find.
type replacer func(content, find string) []string

// replacers are opencode's, in its order: simple, line-trimmed, block-anchor,
// whitespace-normalized, indentation-flexible, escape-normalized, trimmed-boundary,
// context-aware, multi-occurrence.
var replacers = []replacer{exactReplacer, lineTrimmedReplacer, blockAnchorReplacer, whitespaceReplacer, indentReplacer, escapeReplacer, trimmedReplacer, contextAwareReplacer, multiReplacer}

// replace is opencode's replace: the first matcher whose span occurs once wins (every
// occurrence with all).
func replace(content, oldS, newS string, all bool) (string, error) {
	if oldS == newS {
		return "", errors.New(errIdentical)
	}
	if oldS == "" {
		return "", errors.New(errEmptyOld)
	}
	notFound := true
	for _, r := range replacers {
		for _, span := range r(content, oldS) {
			i := strings.Index(content, span)
			if i < 0 {
				continue
			}
			notFound = false
			if tooLarge(span, oldS) {
				return "", errors.New(errTooLarge)
			}
			if all {
				return strings.ReplaceAll(content, span, newS), nil
			}
			if strings.LastIndex(content, span) != i {
				continue
			}
			return content[:i] + newS + content[i+len(span):], nil
		}
	}
	if notFound {
		return "", errors.New(errNotFound)
	}
	return "", errors.New(errMultiple)
}

// tooLarge refuses a span far longer than what the model wrote.
func tooLarge(span, find string) bool {
	r := strings.Count(find, "\n") + 1
	if strings.Count(span, "\n")+1 >= max(r+3, r*2) {
		return true
	}
	if r == 1 {
		return false
	}
	st, ft := len16(strings.TrimSpace(span)), len16(strings.TrimSpace(find))
	return st > max(ft+500, ft*4)
}

func len16(s string) int { return utf16Len(s) }

func exactReplacer(_, find string) []string { return []string{find} }

// lineTrimmedReplacer: the lines of find, each compared trimmed.
func lineTrimmedReplacer(content, find string) []string {
	lines, want := strings.Split(content, "\n"), strings.Split(find, "\n")
	if len(want) > 0 && want[len(want)-1] == "" {
		want = want[:len(want)-1]
	}
	var out []string
	for i := 0; i <= len(lines)-len(want); i++ {
		match := true
		for j := range want {
			if strings.TrimSpace(lines[i+j]) != strings.TrimSpace(want[j]) {
				match = false
				break
			}
		}
		if match {
			out = append(out, strings.Join(lines[i:i+len(want)], "\n"))
		}
	}
	return out
}

var spaces = regexp.MustCompile(`\s+`)

func collapse(s string) string { return strings.TrimSpace(spaces.ReplaceAllString(s, " ")) }

// whitespaceReplacer: lines equal with whitespace collapsed.
func whitespaceReplacer(content, find string) []string {
	norm := collapse(find)
	lines := strings.Split(content, "\n")
	var out []string
	for _, l := range lines {
		if collapse(l) == norm {
			out = append(out, l)
		} else if strings.Contains(collapse(l), norm) {
			words := strings.Fields(find)
			if len(words) > 0 {
				for i, w := range words {
					words[i] = regexp.QuoteMeta(w)
				}
				if re, err := regexp.Compile(strings.Join(words, `\s+`)); err == nil {
					if m := re.FindString(l); m != "" {
						out = append(out, m)
					}
				}
			}
		}
	}
	if want := strings.Split(find, "\n"); len(want) > 1 {
		for i := 0; i <= len(lines)-len(want); i++ {
			block := strings.Join(lines[i:i+len(want)], "\n")
			if collapse(block) == norm {
				out = append(out, block)
			}
		}
	}
	return out
}

// indentReplacer: blocks equal once their common indentation is removed.
func indentReplacer(content, find string) []string {
	strip := func(s string) string {
		ls := strings.Split(s, "\n")
		minIndent := -1
		for _, l := range ls {
			if strings.TrimSpace(l) == "" {
				continue
			}
			n := len(l) - len(strings.TrimLeft(l, " \t\n\v\f\r"))
			if minIndent < 0 || n < minIndent {
				minIndent = n
			}
		}
		if minIndent < 0 {
			return s
		}
		for i, l := range ls {
			if strings.TrimSpace(l) != "" {
				ls[i] = l[minIndent:]
			}
		}
		return strings.Join(ls, "\n")
	}
	norm := strip(find)
	lines, want := strings.Split(content, "\n"), strings.Split(find, "\n")
	var out []string
	for i := 0; i <= len(lines)-len(want); i++ {
		block := strings.Join(lines[i:i+len(want)], "\n")
		if strip(block) == norm {
			out = append(out, block)
		}
	}
	return out
}

var escapes = regexp.MustCompile("\\\\(n|t|r|'|\"|`|\\\\|\n|\\$)")

func unescape(s string) string {
	return escapes.ReplaceAllStringFunc(s, func(m string) string {
		switch m[1] {
		case 'n':
			return "\n"
		case 't':
			return "\t"
		case 'r':
			return "\r"
		default:
			return m[1:]
		}
	})
}

// escapeReplacer: find with its backslash escapes undone.
func escapeReplacer(content, find string) []string {
	u := unescape(find)
	var out []string
	if strings.Contains(content, u) {
		out = append(out, u)
	}
	lines, want := strings.Split(content, "\n"), strings.Split(u, "\n")
	for i := 0; i <= len(lines)-len(want); i++ {
		block := strings.Join(lines[i:i+len(want)], "\n")
		if unescape(block) == u {
			out = append(out, block)
		}
	}
	return out
}

// trimmedReplacer: find without its surrounding whitespace.
func trimmedReplacer(content, find string) []string {
	t := strings.TrimSpace(find)
	if t == find {
		return nil
	}
	var out []string
	if strings.Contains(content, t) {
		out = append(out, t)
	}
	lines, want := strings.Split(content, "\n"), strings.Split(find, "\n")
	for i := 0; i <= len(lines)-len(want); i++ {
		block := strings.Join(lines[i:i+len(want)], "\n")
		if strings.TrimSpace(block) == t {
			out = append(out, block)
		}
	}
	return out
}

// multiReplacer: find once per occurrence.
func multiReplacer(content, find string) []string {
	n := strings.Count(content, find)
	out := make([]string, n)
	for i := range out {
		out[i] = find
	}
	return out
}
