package gemini

import "strings"

// snippet is the CLI's getDiffContextSnippet: the lines of newContent that a line diff
// (jsdiff's diffLines) marks added, and the places of removed lines, each with context
// lines around it, merged where they touch, "..." for what is left out; the whole of
// newContent when original is empty or nothing changed.
func snippet(original, newContent string, context int) string {
	if original == "" {
		return newContent
	}
	type rng struct{ start, end int }
	var ranges []rng
	idx := 0
	for _, c := range diffLines(original, newContent) {
		switch c.op {
		case '+':
			ranges = append(ranges, rng{idx, idx + c.count})
			idx += c.count
		case '-':
			ranges = append(ranges, rng{idx, idx})
		default:
			idx += c.count
		}
	}
	if len(ranges) == 0 {
		return newContent
	}
	newLines := splitLines(newContent)
	var merged []rng
	for _, r := range ranges {
		e := rng{max(0, r.start-context), min(len(newLines), r.end+context)}
		if n := len(merged); n > 0 && e.start <= merged[n-1].end {
			merged[n-1].end = max(merged[n-1].end, e.end)
			continue
		}
		merged = append(merged, e)
	}
	var parts []string
	last := 0
	for _, r := range merged {
		if r.start > last {
			parts = append(parts, "...")
		}
		parts = append(parts, strings.Join(newLines[r.start:r.end], "\n"))
		last = r.end
	}
	if last < len(newLines) {
		parts = append(parts, "...")
	}
	return strings.Join(parts, "\n")
}

// change is a run of a line diff: op ' ' (kept), '-' (removed) or '+' (added), over count
// lines.
type change struct {
	op    byte
	count int
}

// lineTokens splits text as jsdiff's line tokenizer does: each line with its newline
// ("\n" or "\r\n"), the last without one when the text does not end in a newline.
func lineTokens(s string) []string {
	var out []string
	for s != "" {
		i := strings.IndexByte(s, '\n')
		if i < 0 {
			out = append(out, s)
			break
		}
		out = append(out, s[:i+1])
		s = s[i+1:]
	}
	return out
}

// diffLines is a shortest line diff of a and b, removals before additions in each changed
// run, as jsdiff reports it. The common head and tail are kept first; what lies between
// is aligned by a longest common subsequence (up to 4M cells; past that, the middle is
// one removal and one addition).
func diffLines(a, b string) []change {
	x, y := lineTokens(a), lineTokens(b)
	head := 0
	for head < len(x) && head < len(y) && x[head] == y[head] {
		head++
	}
	tail := 0
	for tail < len(x)-head && tail < len(y)-head && x[len(x)-1-tail] == y[len(y)-1-tail] {
		tail++
	}
	var out []change
	add := func(op byte, n int) {
		if n == 0 {
			return
		}
		if k := len(out); k > 0 && out[k-1].op == op {
			out[k-1].count += n
			return
		}
		out = append(out, change{op, n})
	}
	add(' ', head)
	mx, my := x[head:len(x)-tail], y[head:len(y)-tail]
	if len(mx)*len(my) > 4<<20 || len(mx) == 0 || len(my) == 0 {
		add('-', len(mx))
		add('+', len(my))
	} else {
		// lcs[i][j] is the LCS length of mx[i:] and my[j:].
		w := len(my) + 1
		lcs := make([]int32, (len(mx)+1)*w)
		for i := len(mx) - 1; i >= 0; i-- {
			for j := len(my) - 1; j >= 0; j-- {
				if mx[i] == my[j] {
					lcs[i*w+j] = lcs[(i+1)*w+j+1] + 1
				} else {
					lcs[i*w+j] = max(lcs[(i+1)*w+j], lcs[i*w+j+1])
				}
			}
		}
		i, j := 0, 0
		var del, ins int
		flush := func() {
			add('-', del)
			add('+', ins)
			del, ins = 0, 0
		}
		for i < len(mx) || j < len(my) {
			switch {
			case i < len(mx) && j < len(my) && mx[i] == my[j]:
				flush()
				add(' ', 1)
				i++
				j++
			case j >= len(my) || (i < len(mx) && lcs[(i+1)*w+j] >= lcs[i*w+j+1]):
				del++
				i++
			default:
				ins++
				j++
			}
		}
		flush()
	}
	add(' ', tail)
	return out
}
