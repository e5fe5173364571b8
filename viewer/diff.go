package viewer

import (
	"encoding/json"
	"regexp"
	"strings"

	"github.com/pmezard/go-difflib/difflib"
)

// Edit is one piece of an inline diff: Op is "=" (both sides), "-" (recorded only), "+"
// (replayed only) or "~" (Text is a count of equal lines left out). It is encoded as the
// pair [op, text].
type Edit struct {
	Op   string
	Text string
}

// MarshalJSON encodes e as [op, text].
func (e Edit) MarshalJSON() ([]byte, error) { return json.Marshal([2]string{e.Op, e.Text}) }

// diffLimit is the size past which two texts are shown as removed and added whole:
// difflib's matcher is quadratic in the worst case.
const diffLimit = 256 << 10

// wordLimit is the size of a changed block past which it is not refined word by word.
const wordLimit = 8 << 10

// contextLines is how many equal lines are kept on each side of a change.
const contextLines = 3

// InlineDiff diffs recorded text a against replayed text b: line by line, and word by word
// inside a changed block of lines that is small enough, with long equal runs folded.
func InlineDiff(a, b string) []Edit {
	var out edits
	if a == b {
		out.add("=", a)
		return out
	}
	if len(a)+len(b) > diffLimit {
		out.add("-", a)
		out.add("+", b)
		return out
	}
	al, bl := splitLines(a), splitLines(b)
	m := difflib.NewMatcher(al, bl)
	for _, oc := range m.GetOpCodes() {
		x := strings.Join(al[oc.I1:oc.I2], "")
		y := strings.Join(bl[oc.J1:oc.J2], "")
		switch oc.Tag {
		case 'e':
			out.equalLines(al[oc.I1:oc.I2])
		case 'd':
			out.add("-", x)
		case 'i':
			out.add("+", y)
		case 'r':
			if len(x)+len(y) > wordLimit {
				out.add("-", x)
				out.add("+", y)
				continue
			}
			xw, yw := words(x), words(y)
			wm := difflib.NewMatcher(xw, yw)
			for _, w := range wm.GetOpCodes() {
				switch w.Tag {
				case 'e':
					out.add("=", strings.Join(xw[w.I1:w.I2], ""))
				case 'd':
					out.add("-", strings.Join(xw[w.I1:w.I2], ""))
				case 'i':
					out.add("+", strings.Join(yw[w.J1:w.J2], ""))
				case 'r':
					out.add("-", strings.Join(xw[w.I1:w.I2], ""))
					out.add("+", strings.Join(yw[w.J1:w.J2], ""))
				}
			}
		}
	}
	return out
}

type edits []Edit

// add appends text under op, merged with the previous edit when that has the same op.
func (e *edits) add(op, text string) {
	if text == "" {
		return
	}
	if n := len(*e); n > 0 && (*e)[n-1].Op == op && op != "~" {
		(*e)[n-1].Text += text
		return
	}
	*e = append(*e, Edit{Op: op, Text: text})
}

// equalLines adds a run of equal lines, folding its middle when it is long.
func (e *edits) equalLines(lines []string) {
	if len(lines) <= 2*contextLines+1 {
		e.add("=", strings.Join(lines, ""))
		return
	}
	head, tail := contextLines, contextLines
	if len(*e) == 0 {
		head = 0 // nothing before: no context needed
	}
	e.add("=", strings.Join(lines[:head], ""))
	e.add("~", itoa(len(lines)-head-tail))
	e.add("=", strings.Join(lines[len(lines)-tail:], ""))
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}

func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	l := strings.SplitAfter(s, "\n")
	if l[len(l)-1] == "" {
		l = l[:len(l)-1]
	}
	return l
}

var wordRE = regexp.MustCompile(`\w+|\s+|[^\w\s]+`)

func words(s string) []string { return wordRE.FindAllString(s, -1) }
