package secrets

import (
	"regexp"
	"regexp/syntax"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// reach is what the regular expression of a rule tells about how far a match can reach
// from a keyword inside it: every byte of a match is either a byte that a repetition
// without upper bound can take (one of loose) or one of at most tight other bytes. So a
// match that holds a keyword lies inside the span that extends from the keyword, on each
// side, until the tight+1th byte that is not loose. The scan runs a rule's expression on
// those spans only, not on the whole string, when the string is long and its keywords
// few; the rules whose keywords are frequent words ("s.", "ey", "token") then cost a few
// hundred bytes per occurrence rather than the string.
type reach struct {
	loose [256]bool
	tight int
}

// reachOf analyses expr; ok is false when it cannot be parsed (the rule is then run on
// whole strings).
func reachOf(expr string) (reach, bool) {
	re, err := syntax.Parse(expr, syntax.Perl)
	if err != nil {
		return reach{}, false
	}
	var r reach
	r.tight = r.walk(re.Simplify(), false)
	return r, true
}

// walk returns the most bytes re can match outside repetitions without upper bound, and
// adds the bytes those repetitions can match to loose.
func (r *reach) walk(re *syntax.Regexp, unbounded bool) int {
	switch re.Op {
	case syntax.OpLiteral:
		n := 0
		for _, c := range re.Rune {
			w := utf8.RuneLen(c)
			if re.Flags&syntax.FoldCase != 0 {
				for f := unicode.SimpleFold(c); f != c; f = unicode.SimpleFold(f) {
					w = max(w, utf8.RuneLen(f))
					if unbounded {
						r.addRange(f, f)
					}
				}
			}
			if unbounded {
				r.addRange(c, c)
			}
			n += max(w, 1)
		}
		return n
	case syntax.OpCharClass:
		w := 1
		for i := 0; i+1 < len(re.Rune); i += 2 {
			if unbounded {
				r.addRange(re.Rune[i], re.Rune[i+1])
			}
			w = max(w, utf8.RuneLen(min(re.Rune[i+1], unicode.MaxRune)))
		}
		return w
	case syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		if unbounded {
			r.addRange(0, unicode.MaxRune)
			if re.Op == syntax.OpAnyCharNotNL {
				r.loose['\n'] = false
			}
		}
		return utf8.UTFMax
	case syntax.OpCapture, syntax.OpQuest:
		return r.walk(re.Sub[0], unbounded)
	case syntax.OpStar, syntax.OpPlus:
		r.walk(re.Sub[0], true)
		return 0
	case syntax.OpRepeat:
		if re.Max < 0 {
			r.walk(re.Sub[0], true)
			return 0
		}
		return re.Max * r.walk(re.Sub[0], unbounded)
	case syntax.OpConcat:
		n := 0
		for _, s := range re.Sub {
			n += r.walk(s, unbounded)
		}
		return n
	case syntax.OpAlternate:
		n := 0
		for _, s := range re.Sub {
			n = max(n, r.walk(s, unbounded))
		}
		return n
	}
	return 0 // empty-width assertions, empty match, no match
}

// addRange marks the bytes of the UTF-8 encodings of lo..hi as loose: the ASCII ones
// themselves, and every byte of 0x80 and above when the range goes beyond ASCII.
func (r *reach) addRange(lo, hi rune) {
	for c := lo; c <= hi && c < utf8.RuneSelf; c++ {
		r.loose[c] = true
	}
	if hi >= utf8.RuneSelf {
		for b := utf8.RuneSelf; b < 256; b++ {
			r.loose[b] = true
		}
	}
}

// windowMargin is added on each side of a span: the byte before a match that \b looks at.
const windowMargin = utf8.UTFMax

// spans computes, for keyword occurrences [start, end) given in increasing order of end,
// the spans of text a match holding one of them can lie in, merged where they overlap.
// It is linear in len(text): both edges only move right.
type spans struct {
	r    *reach
	text string
	// left edge: the last tight+1 bytes that are not loose before the keyword's start.
	lpos int
	left ring
	// right edge: the first tight+1 bytes that are not loose from the keyword's end.
	rpos  int
	right ring
	out   [][2]int
}

// ring is a queue of at most a fixed number of offsets.
type ring struct {
	buf        []int
	head, size int
}

func (q *ring) push(v int) {
	if q.size == len(q.buf) {
		q.buf[q.head] = v
		q.head = (q.head + 1) % len(q.buf)
		return
	}
	q.buf[(q.head+q.size)%len(q.buf)] = v
	q.size++
}

func (q *ring) front() int { return q.buf[q.head] }
func (q *ring) back() int  { return q.buf[(q.head+q.size-1)%len(q.buf)] }

func (q *ring) pop() {
	q.head = (q.head + 1) % len(q.buf)
	q.size--
}

func newSpans(r *reach, text string) *spans {
	n := r.tight + 1
	return &spans{r: r, text: text, left: ring{buf: make([]int, n)}, right: ring{buf: make([]int, n)}}
}

// add records the span of a keyword at text[start:end].
func (s *spans) add(start, end int) {
	limit := s.r.tight + 1
	// Left: non-loose bytes before start, the last limit of them.
	for s.lpos < start {
		if !s.r.loose[s.text[s.lpos]] {
			s.left.push(s.lpos)
		}
		s.lpos++
	}
	lo := 0
	if s.left.size == limit {
		lo = s.left.front() + 1
	}
	// Right: non-loose bytes from end on, the first limit of them.
	for s.right.size > 0 && s.right.front() < end {
		s.right.pop()
	}
	s.rpos = max(s.rpos, end)
	for s.right.size < limit && s.rpos < len(s.text) {
		if !s.r.loose[s.text[s.rpos]] {
			s.right.push(s.rpos)
		}
		s.rpos++
	}
	hi := len(s.text)
	if s.right.size == limit {
		hi = s.right.back()
	}
	lo = max(lo-windowMargin, 0)
	hi = min(hi+windowMargin, len(s.text))
	if n := len(s.out); n > 0 && lo <= s.out[n-1][1] {
		s.out[n-1][1] = max(s.out[n-1][1], hi)
		return
	}
	s.out = append(s.out, [2]int{lo, hi})
}

// byteSet is a set of bytes.
type byteSet [256]bool

func allBytes() *byteSet {
	var s byteSet
	for i := range s {
		s[i] = true
	}
	return &s
}

func (s *byteSet) union(o *byteSet) {
	for i, v := range o {
		if v {
			s[i] = true
		}
	}
}

// addRune adds the first byte of r's UTF-8 encoding and, for a letter, of its other
// case; with fold, of each rune it folds to. For a rune beyond ASCII, every byte from
// 0x80.
func (s *byteSet) addRune(r rune, fold bool) {
	add := func(r rune) {
		if r < utf8.RuneSelf {
			s[r] = true
			s[foldByte(byte(r))] = true
			if 'a' <= r && r <= 'z' {
				s[r-'a'+'A'] = true
			}
			return
		}
		// Any lead byte, and any byte that is not valid UTF-8 where it stands, which the
		// regexp reads as U+FFFD: a negated class (the password of url-credentials,
		// [^\s@...]) matches it. Bounds kept simple.
		for b := 0x80; b < 256; b++ {
			s[b] = true
		}
	}
	add(r)
	if fold {
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			add(f)
		}
	}
}

// first returns the bytes a match of re can start with and whether re matches the empty
// string.
func first(re *syntax.Regexp) (*byteSet, bool) {
	s := &byteSet{}
	switch re.Op {
	case syntax.OpLiteral:
		if len(re.Rune) == 0 {
			return s, true
		}
		s.addRune(re.Rune[0], re.Flags&syntax.FoldCase != 0)
		return s, false
	case syntax.OpCharClass:
		for i := 0; i+1 < len(re.Rune); i += 2 {
			for c := re.Rune[i]; c <= re.Rune[i+1] && c < utf8.RuneSelf; c++ {
				s.addRune(c, false)
			}
			if re.Rune[i+1] >= utf8.RuneSelf {
				s.addRune(utf8.RuneSelf, false)
			}
		}
		return s, false
	case syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		return allBytes(), false
	case syntax.OpCapture:
		return first(re.Sub[0])
	case syntax.OpStar, syntax.OpQuest:
		f, _ := first(re.Sub[0])
		return f, true
	case syntax.OpPlus:
		return first(re.Sub[0])
	case syntax.OpRepeat:
		f, n := first(re.Sub[0])
		return f, n || re.Min == 0
	case syntax.OpConcat:
		return firstOfSeq(re.Sub)
	case syntax.OpAlternate:
		nullable := false
		for _, sub := range re.Sub {
			f, n := first(sub)
			s.union(f)
			nullable = nullable || n
		}
		return s, nullable
	case syntax.OpNoMatch:
		return s, false
	}
	return s, true // empty-width assertions, the empty match
}

func firstOfSeq(seq []*syntax.Regexp) (*byteSet, bool) {
	s := &byteSet{}
	for _, sub := range seq {
		f, n := first(sub)
		s.union(f)
		if !n {
			return s, false
		}
	}
	return s, true
}

// followOf returns the bytes that can come right after keyword kw (lower case) in a match
// of re, when every way re can match holds kw as part of a literal; ok is false otherwise
// (the keyword then tells nothing about its neighbours). A keyword at the end of a match
// may be followed by anything.
func followOf(expr, kw string) (*byteSet, bool) {
	re, err := syntax.Parse(expr, syntax.Perl)
	if err != nil {
		return nil, false
	}
	return follow(re.Simplify(), kw, allBytes())
}

// follow is followOf for re, which outer follows.
func follow(re *syntax.Regexp, kw string, outer *byteSet) (*byteSet, bool) {
	switch re.Op {
	case syntax.OpLiteral:
		lit := lowerASCII(string(re.Rune))
		i := strings.Index(lit, kw)
		if i < 0 {
			return nil, false
		}
		rest := []rune(string(re.Rune))[utf8.RuneCountInString(lit[:i+len(kw)]):]
		if len(rest) == 0 {
			return outer, true
		}
		s := &byteSet{}
		s.addRune(rest[0], true)
		// A later occurrence of kw in the literal has its own follower.
		if j := strings.Index(lit[i+1:], kw); j >= 0 {
			return allBytes(), true
		}
		return s, true
	case syntax.OpCapture:
		return follow(re.Sub[0], kw, outer)
	case syntax.OpConcat:
		for i, sub := range re.Sub {
			f, n := firstOfSeq(re.Sub[i+1:])
			next := &byteSet{}
			next.union(f)
			if n {
				next.union(outer)
			}
			if s, ok := follow(sub, kw, next); ok {
				return s, true
			}
		}
		return nil, false
	case syntax.OpAlternate:
		s := &byteSet{}
		for _, sub := range re.Sub {
			f, ok := follow(sub, kw, outer)
			if !ok {
				return nil, false
			}
			s.union(f)
		}
		return s, true
	}
	return nil, false
}

// anchor is what a rule's expression tells when it is a concatenation in which one
// element matches a few fixed strings, each ending with one of the rule's keywords (the
// generic rule: a name, then one of access|auth|api|...|token, then an operator and a
// value). Every match then holds a keyword occurrence where that element ends, which the
// automaton reports; the rest of the expression must match right after it (suffix,
// anchored), and the match starts at most left bytes before that keyword's end. So a
// keyword where suffix does not match calls for nothing, and one where it does calls for
// the span from left bytes before it to the end of suffix's match.
type anchor struct {
	left int
	// suffixes are the rest of the expression after the keyword, ^-anchored: one for
	// each alternative when the keyword ends inside an alternation (Vault's
	// hvs\.X|s\.Y), so that the end of the match is known whichever it takes.
	suffixes []*regexp.Regexp
	// runs[i], when set, is a run of bytes suffixes[i] must start with: min bytes of a
	// set. Most keyword occurrences are not followed by one (Vault's "s." in every
	// "files.go"), and the check costs less than the expression's.
	runs []*leadRun
}

// leadRun is a repetition of at least min bytes of set.
type leadRun struct {
	set byteSet
	min int
}

// leadRunOf returns the run that a match of seq must start with, when seq starts with a
// repetition of an ASCII character class at least twice.
func leadRunOf(seq []*syntax.Regexp) *leadRun {
	if len(seq) == 0 {
		return nil
	}
	re := seq[0]
	for re.Op == syntax.OpCapture {
		re = re.Sub[0]
	}
	if re.Op != syntax.OpRepeat || re.Min < 2 {
		return nil
	}
	class := re.Sub[0]
	for class.Op == syntax.OpCapture {
		class = class.Sub[0]
	}
	if class.Op != syntax.OpCharClass {
		return nil
	}
	r := &leadRun{min: re.Min}
	for i := 0; i+1 < len(class.Rune); i += 2 {
		if class.Rune[i+1] >= utf8.RuneSelf {
			return nil // a rune of several bytes: the run is not counted in bytes
		}
		for c := class.Rune[i]; c <= class.Rune[i+1]; c++ {
			r.set.addRune(c, class.Flags&syntax.FoldCase != 0)
		}
	}
	return r
}

// starts reports whether text starts with the run.
func (r *leadRun) starts(text string) bool {
	if len(text) < r.min {
		return false
	}
	for i := 0; i < r.min; i++ {
		if !r.set[text[i]] {
			return false
		}
	}
	return true
}

// anchorOf analyses expr for the keywords (lower case); ok is false when it does not
// have the shape anchor describes.
func anchorOf(expr string, keywords []string) (*anchor, bool) {
	re, err := syntax.Parse(expr, syntax.Perl)
	if err != nil {
		return nil, false
	}
	seq := flatten([]*syntax.Regexp{re})
	left := 0
	for i, sub := range seq {
		rest := seq[i+1:]
		if j, l, ok := keywordEnd([]*syntax.Regexp{sub}, keywords); ok && j == 0 {
			return compileAnchor(left+l, [][]*syntax.Regexp{rest})
		}
		alt := sub
		for alt.Op == syntax.OpCapture {
			alt = alt.Sub[0]
		}
		if alt.Op == syntax.OpAlternate {
			var tails [][]*syntax.Regexp
			most := 0
			for _, a := range alt.Sub {
				aseq := flatten([]*syntax.Regexp{a})
				j, l, ok := keywordEnd(aseq, keywords)
				if !ok {
					return nil, false
				}
				tails = append(tails, append(slices.Clone(aseq[j+1:]), rest...))
				most = max(most, l)
			}
			return compileAnchor(left+most, tails)
		}
		n := maxLen(sub)
		if n < 0 {
			return nil, false
		}
		left += n
	}
	return nil, false
}

// flatten opens the concatenations of seq, and the captures around them, into one
// sequence (a capture changes nothing of what matches).
func flatten(seq []*syntax.Regexp) []*syntax.Regexp {
	var out []*syntax.Regexp
	for _, re := range seq {
		inner := re
		for inner.Op == syntax.OpCapture {
			inner = inner.Sub[0]
		}
		if inner.Op == syntax.OpConcat {
			out = append(out, flatten(inner.Sub)...)
			continue
		}
		out = append(out, re)
	}
	return out
}

// keywordEnd finds the first element of seq that matches a few fixed strings each ending
// with a keyword, every element up to it bounded: its index and the most bytes up to its
// end.
func keywordEnd(seq []*syntax.Regexp, keywords []string) (int, int, bool) {
	left := 0
	for i, sub := range seq {
		n := maxLen(sub)
		if n < 0 {
			return 0, 0, false
		}
		left += n
		if words, ok := language(sub, 64); ok && len(words) > 0 && allEndWithKeyword(words, keywords) {
			return i, left, true
		}
	}
	return 0, 0, false
}

func compileAnchor(left int, tails [][]*syntax.Regexp) (*anchor, bool) {
	a := &anchor{left: left}
	for _, tail := range tails {
		rest := &syntax.Regexp{Op: syntax.OpConcat, Sub: tail}
		if len(tail) == 0 {
			rest = &syntax.Regexp{Op: syntax.OpEmptyMatch}
		}
		re, err := regexp.Compile(`^(?:` + rest.String() + `)`)
		if err != nil {
			return nil, false
		}
		a.suffixes = append(a.suffixes, re)
		a.runs = append(a.runs, leadRunOf(flatten(tail)))
	}
	return a, true
}

// reachAfter returns how far past a keyword ending at text[0] a match can go, and
// whether one can: the longest of the suffixes' matches there.
func (a *anchor) reachAfter(text string) (int, bool) {
	end, ok := 0, false
	for i, re := range a.suffixes {
		if r := a.runs[i]; r != nil && !r.starts(text) {
			continue
		}
		if m := re.FindStringIndex(text); m != nil {
			end, ok = max(end, m[1]), true
		}
	}
	return end, ok
}

func allEndWithKeyword(words, keywords []string) bool {
	for _, w := range words {
		if w == "" || !slices.ContainsFunc(keywords, func(k string) bool { return strings.HasSuffix(w, k) }) {
			return false
		}
	}
	return true
}

// language returns the strings re matches, lower case, when there are at most limit of
// them and re is made of literals, small character classes, alternations, concatenations,
// optional parts and captures only.
func language(re *syntax.Regexp, limit int) ([]string, bool) {
	switch re.Op {
	case syntax.OpLiteral:
		for _, c := range re.Rune {
			if c >= utf8.RuneSelf {
				return nil, false
			}
		}
		return []string{lowerASCII(string(re.Rune))}, true
	case syntax.OpCharClass:
		var out []string
		for i := 0; i+1 < len(re.Rune); i += 2 {
			for c := re.Rune[i]; c <= re.Rune[i+1]; c++ {
				if c >= utf8.RuneSelf || len(out) > 8 {
					return nil, false
				}
				s := lowerASCII(string(c))
				if !slices.Contains(out, s) {
					out = append(out, s)
				}
			}
		}
		return out, true
	case syntax.OpCapture:
		return language(re.Sub[0], limit)
	case syntax.OpQuest:
		l, ok := language(re.Sub[0], limit-1)
		return append(l, ""), ok
	case syntax.OpEmptyMatch:
		return []string{""}, true
	case syntax.OpAlternate:
		var out []string
		for _, sub := range re.Sub {
			l, ok := language(sub, limit)
			if !ok {
				return nil, false
			}
			out = append(out, l...)
			if len(out) > limit {
				return nil, false
			}
		}
		return out, true
	case syntax.OpConcat:
		out := []string{""}
		for _, sub := range re.Sub {
			l, ok := language(sub, limit)
			if !ok {
				return nil, false
			}
			var next []string
			for _, a := range out {
				for _, b := range l {
					next = append(next, a+b)
				}
			}
			if len(next) > limit {
				return nil, false
			}
			out = next
		}
		return out, true
	}
	return nil, false
}

// maxLen returns the most bytes re can match, or -1 when there is no bound.
func maxLen(re *syntax.Regexp) int {
	switch re.Op {
	case syntax.OpLiteral:
		n := 0
		for _, c := range re.Rune {
			w := utf8.RuneLen(c)
			if re.Flags&syntax.FoldCase != 0 {
				for f := unicode.SimpleFold(c); f != c; f = unicode.SimpleFold(f) {
					w = max(w, utf8.RuneLen(f))
				}
			}
			n += max(w, 1)
		}
		return n
	case syntax.OpCharClass:
		w := 1
		for i := 1; i < len(re.Rune); i += 2 {
			w = max(w, utf8.RuneLen(min(re.Rune[i], unicode.MaxRune)))
		}
		return w
	case syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		return utf8.UTFMax
	case syntax.OpCapture, syntax.OpQuest:
		return maxLen(re.Sub[0])
	case syntax.OpStar, syntax.OpPlus:
		return -1
	case syntax.OpRepeat:
		n := maxLen(re.Sub[0])
		if re.Max < 0 || n < 0 {
			return -1
		}
		return re.Max * n
	case syntax.OpConcat:
		n := 0
		for _, s := range re.Sub {
			m := maxLen(s)
			if m < 0 {
				return -1
			}
			n += m
		}
		return n
	case syntax.OpAlternate:
		n := 0
		for _, s := range re.Sub {
			m := maxLen(s)
			if m < 0 {
				return -1
			}
			n = max(n, m)
		}
		return n
	}
	return 0
}
