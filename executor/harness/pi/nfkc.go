package pi

import (
	"slices"
	"strings"
	"sync"
	"unicode/utf8"
)

//go:generate sh -c "python3 nfkcgen.py > nfkc_table.go"

// nfkc is JavaScript's String.prototype.normalize("NFKC"), the first step of Pi's
// normalizeForFuzzyMatch: every character's compatibility decomposition, the combining
// marks in canonical order, then canonical composition (Unicode's algorithm, UAX #15),
// from tables generated from the Unicode data (nfkc_table.go). Text that is already
// NFKC, the common case, is returned as it is. Bytes that are not UTF-8 stay as they are.
func nfkc(s string) string {
	if isNFKCQuick(s) {
		return s
	}
	var out strings.Builder
	out.Grow(len(s))
	buf := make([]rune, 0, 32)
	flush := func() {
		for _, r := range compose(reorder(buf)) {
			out.WriteRune(r)
		}
		buf = buf[:0]
	}
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n <= 1 {
			flush()
			out.WriteString(s[i : i+n])
			i += n
			continue
		}
		i += n
		// A starter that nothing before it composes with begins a new segment; a
		// segment is normalized on its own.
		if ccc(r) == 0 && len(buf) > 0 && !composesBack(r) {
			flush()
		}
		buf = decompose(buf, r)
	}
	flush()
	return out.String()
}

// isNFKCQuick says whether s is ASCII, or holds no character that decomposes, is a
// combining mark or composes with the one before it.
func isNFKCQuick(s string) bool {
	for _, r := range s {
		if r < 0x80 {
			continue
		}
		if r == utf8.RuneError || isHangulSyllable(r) {
			continue
		}
		if _, ok := nfkd(r); ok || ccc(r) != 0 || composesBack(r) {
			return false
		}
	}
	return true
}

const (
	hangulS = 0xAC00
	hangulL = 0x1100
	hangulV = 0x1161
	hangulT = 0x11A7
	nL, nV  = 19, 21
	nT      = 28
	nS      = nL * nV * nT
)

func isHangulSyllable(r rune) bool { return r >= hangulS && r < hangulS+nS }

// decompose appends r's full compatibility decomposition to buf.
func decompose(buf []rune, r rune) []rune {
	if isHangulSyllable(r) {
		i := r - hangulS
		buf = append(buf, hangulL+i/(nV*nT), hangulV+(i%(nV*nT))/nT)
		if t := i % nT; t != 0 {
			buf = append(buf, hangulT+t)
		}
		return buf
	}
	if d, ok := nfkd(r); ok {
		for _, x := range d {
			buf = append(buf, x)
		}
		return buf
	}
	return append(buf, r)
}

// nfkd is r's full compatibility decomposition, when it has one.
func nfkd(r rune) (string, bool) {
	i, ok := slices.BinarySearch(nfkdKeys[:], r)
	if !ok {
		return "", false
	}
	return nfkdVals[nfkdOffs[i]:nfkdOffs[i+1]], true
}

// ccc is r's canonical combining class.
func ccc(r rune) uint8 {
	if r < 0x300 {
		return 0
	}
	if i, ok := slices.BinarySearch(cccKeys[:], r); ok {
		return cccVals[i]
	}
	return 0
}

// composeRunes is what a followed by b composes to canonically, if anything.
func composeRunes(a, b rune) (rune, bool) {
	if a >= hangulL && a < hangulL+nL && b >= hangulV && b < hangulV+nV {
		return hangulS + ((a-hangulL)*nV+(b-hangulV))*nT, true
	}
	if isHangulSyllable(a) && (a-hangulS)%nT == 0 && b > hangulT && b < hangulT+nT {
		return a + (b - hangulT), true
	}
	i, ok := slices.BinarySearch(compKeys[:], uint64(a)<<21|uint64(b))
	if !ok {
		return 0, false
	}
	return compVals[i], true
}

// composesBack says whether r is the second of some composition pair (a starter that can
// still compose with the character before it, as a Hangul vowel or a few others).
func composesBack(r rune) bool {
	if (r >= hangulV && r < hangulV+nV) || (r > hangulT && r < hangulT+nT) {
		return true
	}
	secondsOnce.Do(func() {
		for _, k := range compKeys {
			seconds = append(seconds, rune(k&(1<<21-1)))
		}
		slices.Sort(seconds)
	})
	_, ok := slices.BinarySearch(seconds, r)
	return ok
}

var (
	secondsOnce sync.Once
	seconds     []rune // the second runes of compKeys, sorted
)

// reorder sorts each run of combining marks by class, stably (canonical ordering).
func reorder(rs []rune) []rune {
	for i := 0; i < len(rs); {
		if ccc(rs[i]) == 0 {
			i++
			continue
		}
		j := i
		for j < len(rs) && ccc(rs[j]) != 0 {
			j++
		}
		slices.SortStableFunc(rs[i:j], func(a, b rune) int { return int(ccc(a)) - int(ccc(b)) })
		i = j
	}
	return rs
}

// compose is the canonical composition algorithm of UAX #15 over decomposed, ordered text.
func compose(rs []rune) []rune {
	if len(rs) == 0 {
		return rs
	}
	starter := -1
	if ccc(rs[0]) == 0 {
		starter = 0
	}
	last := -1 // the class of the last character kept after the starter; -1 for none
	out := rs[:1]
	for _, r := range rs[1:] {
		c := int(ccc(r))
		if starter >= 0 && (last == -1 || (last != 0 && last < c)) {
			if comp, ok := composeRunes(out[starter], r); ok {
				out[starter] = comp
				continue
			}
		}
		if c == 0 {
			starter, last = len(out), -1
		} else {
			last = c
		}
		out = append(out, r)
	}
	return out
}
