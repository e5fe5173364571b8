package controller

import (
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"sync"
	"unicode"
)

// Identifiers maps identifiers of a recording to the ones a replay produced in their place
// (background task ids and their output paths, session ids, subagent ids). It is learned by
// comparing each tool result of the replay with the recorded one, and applied to the tool
// calls and responses sent from then on. Safe for concurrent use.
type Identifiers struct {
	mu sync.Mutex
	m  map[string]string // recorded -> replayed
}

// NewIdentifiers returns an empty map.
func NewIdentifiers() *Identifiers { return &Identifiers{m: map[string]string{}} }

// tokenRE matches the runs that can hold an identifier: letters, digits and the punctuation
// of paths and ids.
var tokenRE = regexp.MustCompile(`[A-Za-z0-9_\-./:]+`)

// Learn compares a recorded text with the replayed one. When both split into the same
// sequence of tokens except for some that look like identifiers, it records each such pair
// and returns them. Texts with a different shape teach nothing.
func (ids *Identifiers) Learn(recorded, replayed string) map[string]string {
	pairs := identifierPairs(recorded, replayed)
	if len(pairs) == 0 {
		return nil
	}
	ids.mu.Lock()
	defer ids.mu.Unlock()
	for r, n := range pairs {
		ids.m[r] = n
	}
	return pairs
}

// tokens returns the spans of tokenRE in s, without trailing sentence punctuation.
func tokens(s string) [][]int {
	spans := tokenRE.FindAllStringIndex(s, -1)
	for _, sp := range spans {
		for sp[1] > sp[0]+1 && strings.ContainsRune(".:", rune(s[sp[1]-1])) {
			sp[1]--
		}
	}
	return spans
}

// identifierPairs aligns two texts token by token.
func identifierPairs(a, b string) map[string]string {
	if a == b {
		return nil
	}
	ta, tb := tokens(a), tokens(b)
	if len(ta) != len(tb) {
		return nil
	}
	// The text between tokens must agree, so that only tokens differ.
	prevA, prevB := 0, 0
	var diff [][2]string
	for i := range ta {
		if a[prevA:ta[i][0]] != b[prevB:tb[i][0]] {
			return nil
		}
		x, y := a[ta[i][0]:ta[i][1]], b[tb[i][0]:tb[i][1]]
		prevA, prevB = ta[i][1], tb[i][1]
		if x != y {
			diff = append(diff, [2]string{x, y})
		}
	}
	if a[prevA:] != b[prevB:] {
		return nil
	}
	// A path that differs teaches its differing segments (the id inside it), even when such
	// a segment, alone, would not look like an id (a random id may have no digit).
	pairs := map[string]string{}
	for _, d := range diff {
		if !strings.Contains(d[0], "/") || !strings.Contains(d[1], "/") {
			continue
		}
		sx, sy := strings.FieldsFunc(d[0], isPathSep), strings.FieldsFunc(d[1], isPathSep)
		if len(sx) != len(sy) {
			continue
		}
		for j := range sx {
			if sx[j] != sy[j] && (idPair(sx[j], sy[j]) || sameShape(sx[j], sy[j])) {
				pairs[sx[j]] = sy[j]
			}
		}
	}
	for _, d := range diff {
		if _, fromPath := pairs[d[0]]; !fromPath && !idPair(d[0], d[1]) {
			return nil
		}
		pairs[d[0]] = d[1]
	}
	if len(pairs) == 0 {
		return nil
	}
	return pairs
}

// idPair says whether two differing tokens are one identifier standing for another: both
// look like ids, or they have the same length and alphabet and one looks like an id (random
// ids of one kind sometimes draw no digit: bhasuphlv for b86y08nu1).
func idPair(x, y string) bool {
	if looksLikeID(x) && looksLikeID(y) {
		return true
	}
	return sameShape(x, y) && (looksLikeID(x) || looksLikeID(y))
}

// sameShape says whether two tokens have the same length (6 or more) and are made of
// letters, digits, '_' and '-' only.
func sameShape(x, y string) bool {
	if len(x) != len(y) || len(x) < 6 {
		return false
	}
	word := func(s string) bool {
		for _, r := range s {
			if !(r == '_' || r == '-' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
				return false
			}
		}
		return true
	}
	return word(x) && word(y)
}

func isPathSep(r rune) bool { return r == '/' || r == '.' }

// looksLikeID says whether a token can be a generated identifier rather than a word or a
// measurement: a path, a token of 4 or more characters mixing letters and digits, or an
// integer of 3 or more digits (Codex session ids). Decimal numbers (times) never are.
func looksLikeID(s string) bool {
	if strings.Contains(s, "/") {
		return true
	}
	digits := 0
	for _, r := range s {
		if unicode.IsDigit(r) {
			digits++
		}
	}
	if digits == 0 {
		return false
	}
	if strings.Trim(s, "0123456789.") == "" { // a number
		return !strings.Contains(s, ".") && len(s) >= 3
	}
	return len(s) >= 4
}

// Len returns how many identifiers are known.
func (ids *Identifiers) Len() int {
	ids.mu.Lock()
	defer ids.mu.Unlock()
	return len(ids.m)
}

// Map returns a copy of the mapping.
func (ids *Identifiers) Map() map[string]string {
	ids.mu.Lock()
	defer ids.mu.Unlock()
	out := make(map[string]string, len(ids.m))
	for k, v := range ids.m {
		out[k] = v
	}
	return out
}

// Apply replaces every known recorded identifier in s with its replayed counterpart. Only
// whole tokens are replaced (an id 2000 is not replaced inside 20006 or in a time of 2000
// ms), and the longest id wins where several start at one place (a path before the id
// inside it).
func (ids *Identifiers) Apply(s string) string {
	ids.mu.Lock()
	defer ids.mu.Unlock()
	if len(ids.m) == 0 {
		return s
	}
	var keys []string
	for k := range ids.m {
		if strings.Contains(s, k) {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return s
	}
	slices.SortFunc(keys, func(a, b string) int { return len(b) - len(a) })
	var b strings.Builder
	last := 0
	for i := 0; i < len(s); {
		if i > 0 && isIDChar(s[i-1]) && isIDChar(s[i]) {
			i++
			continue
		}
		matched := ""
		for _, k := range keys {
			if strings.HasPrefix(s[i:], k) && (i+len(k) == len(s) || !isIDChar(s[i+len(k)]) || !isIDChar(k[len(k)-1])) {
				matched = k
				break
			}
		}
		if matched == "" {
			i++
			continue
		}
		b.WriteString(s[last:i])
		b.WriteString(ids.m[matched])
		i += len(matched)
		last = i
	}
	if last == 0 {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}

// ContainsID says whether s holds id as a whole token, the way Apply would find it.
func ContainsID(s, id string) bool {
	probe := &Identifiers{m: map[string]string{id: "\x00"}}
	return probe.Apply(s) != s
}

// isIDChar says whether a byte continues an identifier token: a letter, a digit, '_' or '-'.
func isIDChar(c byte) bool {
	return c == '_' || c == '-' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// ApplyJSON replaces identifiers inside a JSON document's strings. Identifiers hold no
// characters that JSON escapes, so a textual replacement keeps the document valid; the
// result is checked anyway and the input returned unchanged if it would not be.
func (ids *Identifiers) ApplyJSON(raw json.RawMessage) json.RawMessage {
	out := ids.Apply(string(raw))
	if out == string(raw) || !json.Valid([]byte(out)) {
		return raw
	}
	return json.RawMessage(out)
}
