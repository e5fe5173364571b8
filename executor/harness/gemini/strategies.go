package gemini

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// The replace tool's strategies after the exact one (packages/core/src/tools/edit.ts,
// calculateReplacement): flexible (lines compared trimmed, the new text re-indented),
// regex (the old_string's tokens with any whitespace between, from the start of a line),
// fuzzy (a window of lines within a weighted Levenshtein distance of 10 %). Each returns
// the new content and the occurrences it found, or ok false when it found none.

// edited is what a strategy found: the new content, the occurrences, and for a fuzzy
// match the CLI's feedback sentence.
type edited struct {
	content  string
	n        int
	feedback string
}

// jsLines is content.match(/.*(?:\n|$)/g).slice(0, -1): the lines with their "\n". JS's
// "." stops at "\r", U+2028 and U+2029 too, where neither "\n" nor the end follows: the
// text from the line's start to such a character is in no match, and the CLI's strategies,
// which join the lines back, drop it.
func jsLines(content string) []string {
	var out []string
	start := 0
	for i, r := range content {
		switch r {
		case '\n':
			out = append(out, content[start:i+1])
			start = i + 1
		case '\r', 0x2028, 0x2029:
			start = i + utf8.RuneLen(r)
		}
	}
	if start < len(content) {
		out = append(out, content[start:])
	}
	return out
}

// lineStarts are where JS's multiline "^" matches: the start, and after each "\n", "\r",
// U+2028 and U+2029 (RE2's only after "\n").
func lineStarts(s string) []int {
	out := []int{0}
	for i, r := range s {
		switch r {
		case '\n', '\r', 0x2028, 0x2029:
			out = append(out, i+utf8.RuneLen(r))
		}
	}
	return out
}

// jsSpace is JS's \s (WhiteSpace and LineTerminator): what trim() removes.
func jsSpace(r rune) bool {
	switch r {
	case '\t', '\n', '\v', '\f', '\r', ' ', 0xa0, 0xfeff, 0x2028, 0x2029:
		return true
	}
	return unicode.Is(unicode.Zs, r)
}

func jsTrim(s string) string      { return strings.TrimFunc(s, jsSpace) }
func jsTrimStart(s string) string { return strings.TrimLeftFunc(s, jsSpace) }
func jsTrimEnd(s string) string   { return strings.TrimRightFunc(s, jsSpace) }

// indentOf is line.match(/^([ \t]*)/)[1].
func indentOf(line string) string {
	return line[:len(line)-len(strings.TrimLeft(line, " \t"))]
}

// applyIndentation is the CLI's applyIndentation: lines re-indented from the first line's
// indentation to target, blank lines emptied.
func applyIndentation(lines []string, target string) []string {
	if len(lines) == 0 {
		return nil
	}
	ref := indentOf(lines[0])
	out := make([]string, len(lines))
	for i, l := range lines {
		switch {
		case jsTrim(l) == "":
			out[i] = ""
		case strings.HasPrefix(l, ref):
			out[i] = target + l[len(ref):]
		default:
			out[i] = target + jsTrimStart(l)
		}
	}
	return out
}

// restoreTrailingNewline gives modified the trailing "\n" original had, or takes it away.
func restoreTrailingNewline(original, modified string) string {
	had := strings.HasSuffix(original, "\n")
	switch {
	case had && !strings.HasSuffix(modified, "\n"):
		return modified + "\n"
	case !had && strings.HasSuffix(modified, "\n"):
		return strings.TrimSuffix(modified, "\n")
	}
	return modified
}

// flexible is calculateFlexibleReplacement. rawNew is the new_string as the call sent it.
func flexible(current, oldS, newS, rawNew string) (edited, bool) {
	src := jsLines(current)
	search := strings.Split(oldS, "\n")
	for i := range search {
		search[i] = jsTrim(search[i])
	}
	repl := strings.Split(newS, "\n")
	n := 0
	for i := 0; i <= len(src)-len(search); i++ {
		win := src[i : i+len(search)]
		match := true
		for j, l := range win {
			if jsTrim(l) != search[j] {
				match = false
				break
			}
		}
		if !match {
			continue
		}
		n++
		text := strings.Join(applyIndentation(repl, indentOf(win[0])), "\n")
		if rawNew != "" && strings.HasSuffix(win[len(win)-1], "\n") && !strings.HasSuffix(text, "\n") {
			text += "\n"
		}
		src = slices.Replace(src, i, i+len(search), text)
	}
	if n == 0 {
		return edited{}, false
	}
	return edited{content: restoreTrailingNewline(current, strings.Join(src, "")), n: n}, true
}

// jsSpaceClass is JS's \s in RE2 syntax (RE2's \s is ASCII only).
const jsSpaceClass = `[\t\n\v\f\r \x{a0}\x{1680}\x{2000}-\x{200a}\x{2028}\x{2029}\x{202f}\x{205f}\x{3000}\x{feff}]`

// regexStrategy is calculateRegexReplacement: the old_string split into tokens around
// ( ) : [ ] { } > < = and whitespace, matched with any whitespace between them from the
// start of a line, each match re-indented; only the first unless allowMultiple.
func regexStrategy(current, oldS, newS string, allowMultiple bool) (edited, bool) {
	s := oldS
	for _, d := range []string{"(", ")", ":", "[", "]", "{", "}", ">", "<", "="} {
		s = strings.ReplaceAll(s, d, " "+d+" ")
	}
	tokens := strings.FieldsFunc(s, jsSpace)
	if len(tokens) == 0 {
		return edited{}, false
	}
	for i, t := range tokens {
		tokens[i] = regexp.QuoteMeta(t)
	}
	re, err := regexp.Compile(`\A([ \t]*)` + strings.Join(tokens, jsSpaceClass+`*`))
	if err != nil {
		return edited{}, false
	}
	// The global matches: from each line start at or after the last match's end.
	var ms [][]int
	last := 0
	for _, at := range lineStarts(current) {
		if at < last {
			continue
		}
		if m := re.FindStringSubmatchIndex(current[at:]); m != nil {
			for k := range m {
				m[k] += at
			}
			ms = append(ms, m)
			last = m[1]
		}
	}
	if len(ms) == 0 {
		return edited{}, false
	}
	n := len(ms)
	lines := strings.Split(newS, "\n")
	if !allowMultiple {
		ms = ms[:1]
	}
	var b strings.Builder
	last = 0
	for _, m := range ms {
		b.WriteString(current[last:m[0]])
		b.WriteString(strings.Join(applyIndentation(lines, current[m[2]:m[3]]), "\n"))
		last = m[1]
	}
	b.WriteString(current[last:])
	return edited{content: restoreTrailingNewline(current, b.String()), n: n}, true
}

// units is s in UTF-16 code units, as JS strings index it.
func units(s string) []uint16 { return utf16.Encode([]rune(s)) }

// levenshtein is fast-levenshtein's get over UTF-16 code units.
func levenshtein(a, b []uint16) int {
	if len(a) == 0 {
		return len(b)
	}
	if len(b) == 0 {
		return len(a)
	}
	prev := make([]int, len(b)+1)
	for i := range prev {
		prev[i] = i
	}
	next := 0
	for i := range a {
		next = i + 1
		for j := range b {
			cur := next
			cost := 1
			if a[i] == b[j] {
				cost = 0
			}
			next = min(prev[j]+cost, cur+1, prev[j+1]+1)
			prev[j] = cur
		}
		prev[len(b)] = next
	}
	return next
}

func stripJSSpace(s string) string {
	return strings.Map(func(r rune) rune {
		if jsSpace(r) {
			return -1
		}
		return r
	}, s)
}

// fuzzy is calculateFuzzyReplacement: windows of as many lines as the old_string has,
// scored by Levenshtein distance with whitespace differences weighing a tenth, those within
// 10 % of its length taken best first where they do not overlap. rawOld is the old_string
// as the call sent it.
func fuzzy(current, oldS, newS, rawOld string) (edited, bool) {
	const threshold, penalty = 0.1, 0.1
	if utf16Len(rawOld) < 10 {
		return edited{}, false
	}
	src := jsLines(strings.ReplaceAll(current, "\r\n", "\n")) // again: "\r\r\n" read as "\r\n"
	search := jsLines(oldS)
	if float64(len(src))*float64(utf16Len(rawOld))*float64(utf16Len(rawOld)) > 4e8 || len(search) == 0 {
		return edited{}, false
	}
	for i := range search {
		search[i] = jsTrimEnd(search[i])
	}
	N := len(search)
	block := strings.Join(search, "\n")
	bu, bs := units(block), units(stripJSSpace(block))
	type cand struct {
		i     int
		score float64
	}
	var cands []cand
	for i := 0; i <= len(src)-N; i++ {
		win := make([]string, N)
		for j, l := range src[i : i+N] {
			win[j] = jsTrimEnd(l)
		}
		text := strings.Join(win, "\n")
		tu := units(text)
		if float64(abs(len(tu)-len(bu)))/float64(len(bu)) > threshold/penalty {
			continue
		}
		raw := levenshtein(tu, bu)
		norm := levenshtein(units(stripJSSpace(text)), bs)
		score := (float64(norm) + float64(raw-norm)*penalty) / float64(len(bu))
		if score <= threshold {
			cands = append(cands, cand{i, score})
		}
	}
	if len(cands) == 0 {
		return edited{}, false
	}
	slices.SortStableFunc(cands, func(x, y cand) int {
		switch {
		case x.score < y.score:
			return -1
		case x.score > y.score:
			return 1
		}
		return x.i - y.i
	})
	var sel []cand
	for _, c := range cands {
		if !slices.ContainsFunc(sel, func(m cand) bool { return abs(m.i-c.i) < N }) {
			sel = append(sel, c)
		}
	}
	starts := make([]int, len(sel))
	for k, m := range sel {
		starts[k] = m.i
	}
	slices.Sort(starts)
	ranges := make([]string, len(starts))
	for k, s := range starts {
		ranges[k] = fmt.Sprint(s + 1)
		if N > 1 {
			ranges[k] = fmt.Sprintf("%d-%d", s+1, s+N)
		}
	}
	lines := strings.Split(newS, "\n")
	for k := len(starts) - 1; k >= 0; k-- {
		i := starts[k]
		text := strings.Join(applyIndentation(lines, indentOf(src[i])), "\n")
		if strings.HasSuffix(src[i+N-1], "\n") {
			text += "\n"
		}
		src = slices.Replace(src, i, i+N, text)
	}
	s := ""
	if len(ranges) > 1 {
		s = "s"
	}
	return edited{content: restoreTrailingNewline(current, strings.Join(src, "")), n: len(sel),
		feedback: fmt.Sprintf("Applied fuzzy match at line%s %s.", s, strings.Join(ranges, ", "))}, true
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}
