package match

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"
	"sync"
	"unicode"

	"github.com/tapebox/tapebox/tape"
)

// Identifiers maps identifiers of a recording to the ones a replay produced in their place
// (background task ids and their output paths, session ids, subagent ids). It is learned by
// comparing each tool result of the replay with the recorded one, and applied to the tool
// calls and responses sent from then on. Safe for concurrent use.
//
// A pair is learned only from evidence, never from the two texts alone: either the harness
// names the field it stands in as an identifier (IdentifierFields), or the recording uses the
// recorded value again later (in a later tool call's input, or in the opening request of a
// thread that starts later). A number, path or word that differs and that nothing in the
// recording refers to is a difference, not an identifier.
type Identifiers struct {
	mu      sync.Mutex
	m       map[string]string // recorded -> replayed
	inv     map[string]string // replayed -> recorded
	learned []Learned
	ev      *evidence
	// oneToOne keeps the mapping one to one (Compare's): a recorded id already learned is
	// not learned again with another replayed value, nor a replayed value for a second
	// recorded id. A replay whose background shell, session or path changes under the same
	// recorded id (or that gives two recorded ids one value) then differs. The replay's own
	// map relearns instead, so that the calls it sends follow the sandbox.
	oneToOne bool
}

// Learned is one identifier pair and why it was accepted.
type Learned struct {
	Recorded string `json:"recorded"`
	Replayed string `json:"replayed"`
	// Evidence is the harness field that names the value, or where the recording uses the
	// recorded value again.
	Evidence string `json:"evidence"`
}

// Site is where a recorded text stands in the recording: the tool results of step Step of
// thread Thread, or, with Step -1, the thread's opening request (its system prompt and first
// messages).
type Site struct {
	Thread string
	Step   int
}

// NewIdentifiers returns an empty map that learns from evidence in rec, the recording the
// texts given to Learn come from.
func NewIdentifiers(rec *tape.Tape) *Identifiers {
	return &Identifiers{m: map[string]string{}, inv: map[string]string{}, ev: newEvidence(rec)}
}

// NewOneToOne is NewIdentifiers for a verdict (compare's): the map stays one to one, so a
// replayed value that changes under one recorded id, or one value for two recorded ids,
// is a difference and not learned.
func NewOneToOne(rec *tape.Tape) *Identifiers {
	ids := NewIdentifiers(rec)
	ids.oneToOne = true
	return ids
}

// Similar says whether two texts differ only in identifier-like tokens.
func Similar(a, b string) bool {
	return a == b || identifierPairs(a, b, nil) != nil
}

// tokenRE matches the runs that can hold an identifier: letters, digits and the punctuation
// of paths and ids.
var tokenRE = regexp.MustCompile(`[A-Za-z0-9_\-./:]+`)

// Learn compares a recorded text, found at site at of the recording, with the replayed one.
// When both split into the same sequence of tokens except for some that look like
// identifiers, it records each pair that has evidence and returns the pairs it learned.
// Texts with a different shape teach nothing.
func (ids *Identifiers) Learn(at Site, recorded, replayed string) map[string]string {
	// The harness fields of the recorded text, found once: a text with many differing
	// tokens would otherwise be searched again for each.
	var fields map[string]IdentifierField
	fieldsOf := func() map[string]IdentifierField {
		if fields == nil {
			fields = ids.ev.fieldsIn(recorded)
		}
		return fields
	}
	named := func(token string) bool { _, ok := fieldsOf()[token]; return ok }
	cands := identifierPairs(recorded, replayed, named)
	if len(cands) == 0 {
		return nil
	}
	ids.mu.Lock()
	defer ids.mu.Unlock()
	out := map[string]string{}
	accepted := map[string]string{} // path token -> evidence, for the segments inside it
	for _, c := range cands {
		if c.path != "" {
			continue
		}
		if why, ok := ids.ev.why(at, fieldsOf(), c.rec); ok {
			ids.add(c.rec, c.rep, why, out)
			if _, ok := out[c.rec]; ok {
				accepted[c.rec] = why
			}
		}
	}
	for _, c := range cands {
		if c.path == "" {
			continue
		}
		why, ok := ids.ev.why(at, fieldsOf(), c.rec)
		if !ok {
			if pw, pok := accepted[c.path]; pok {
				why, ok = "inside "+c.path+", "+pw, true
			}
		}
		if ok {
			ids.add(c.rec, c.rep, why, out)
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// add records one pair; a recorded id learned before keeps its first evidence. A one-to-one
// map refuses a pair that would remap a recorded id or give a replayed value a second one.
func (ids *Identifiers) add(rec, rep, why string, out map[string]string) {
	old, had := ids.m[rec]
	if had && old == rep {
		out[rec] = rep
		return
	}
	if prev, taken := ids.inv[rep]; ids.oneToOne && (had || taken && prev != rec) {
		return
	}
	out[rec] = rep
	if had && ids.inv[old] == rec {
		delete(ids.inv, old)
	}
	ids.m[rec] = rep
	ids.inv[rep] = rec
	for i := range ids.learned {
		if !had {
			break // a recorded id not learned before is not in the list
		}
		if ids.learned[i].Recorded == rec {
			ids.learned[i].Replayed = rep
			ids.learned[i].Evidence = why
			return
		}
	}
	ids.learned = append(ids.learned, Learned{Recorded: rec, Replayed: rep, Evidence: why})
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

// candidate is a differing token pair that may be an identifier; path is set for a segment
// of a differing path, naming the whole recorded path.
type candidate struct{ rec, rep, path string }

// identifierPairs aligns two texts token by token and returns the differing tokens that look
// like identifiers, or nothing when the texts differ in anything else. A recorded token that
// named says the harness names as an identifier needs only the shape of its counterpart: two
// random ids of one kind may both draw no digit (bjqhaaosb for bbdmlqjpx). named may be nil.
func identifierPairs(a, b string, named func(token string) bool) []candidate {
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
	var out []candidate
	seen := map[string]bool{}
	for _, d := range diff {
		if !idPair(d[0], d[1]) && !(named != nil && sameShape(d[0], d[1]) && named(d[0])) {
			return nil // a word or a measurement differs: the texts say different things
		}
		if !seen[d[0]] {
			seen[d[0]] = true
			out = append(out, candidate{rec: d[0], rep: d[1]})
		}
	}
	// A path that differs offers its differing segments (the id inside it), even when such
	// a segment, alone, would not look like an id (a random id may have no digit).
	for _, d := range diff {
		if !strings.Contains(d[0], "/") || !strings.Contains(d[1], "/") {
			continue
		}
		sx, sy := strings.FieldsFunc(d[0], isPathSep), strings.FieldsFunc(d[1], isPathSep)
		if len(sx) != len(sy) {
			continue
		}
		for j := range sx {
			if sx[j] != sy[j] && !seen[sx[j]] && (idPair(sx[j], sy[j]) || sameShape(sx[j], sy[j])) {
				seen[sx[j]] = true
				out = append(out, candidate{rec: sx[j], rep: sy[j], path: d[0]})
			}
		}
	}
	return out
}

// idPair says whether two differing tokens can be one identifier standing for another: both
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
// integer of 3 or more digits (Codex session ids). Decimal numbers (times) never are. This
// is only the shape; Learn still wants evidence.
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
	if isNumber(s) {
		return !strings.Contains(s, ".") && len(s) >= 3
	}
	return len(s) >= 4
}

// isNumber says whether s is made of digits and dots only.
func isNumber(s string) bool { return s != "" && strings.Trim(s, "0123456789.") == "" }

// Pin records a pair known before any text is compared (a replay that works in another
// directory than the recording: recorded is meta.cwd, replayed the replay's), with why as
// its evidence. A pair already known for recorded is replaced.
func (ids *Identifiers) Pin(recorded, replayed, why string) {
	if recorded == "" || recorded == replayed {
		return
	}
	ids.mu.Lock()
	defer ids.mu.Unlock()
	ids.add(recorded, replayed, why, map[string]string{})
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

// Learned returns the pairs learned, in the order they were learned, with their evidence.
func (ids *Identifiers) Learned() []Learned {
	ids.mu.Lock()
	defer ids.mu.Unlock()
	return append([]Learned{}, ids.learned...) // [] when none: a report's list is never null
}

// Apply replaces every known recorded identifier in the text s with its replayed
// counterpart. Only whole tokens are replaced (an id 2000 is not replaced inside 20006), and
// the longest id wins where several start at one place (a path before the id inside it).
func (ids *Identifiers) Apply(s string) string {
	ids.mu.Lock()
	defer ids.mu.Unlock()
	return replaceTokens(ids.m, s, true)
}

// replaceTokens replaces the keys of m standing as whole tokens in s; numbers says whether
// ids made only of digits are replaced anywhere (free text), or only where they are the
// whole of s or a path segment (inside a JSON string, where "sleep 2000" is not a session
// id but "/proc/2000" may hold one).
func replaceTokens(m map[string]string, s string, numbers bool) string {
	if len(m) == 0 {
		return s
	}
	// fits says whether the id k, found at i, stands there as replaceTokens takes one.
	fits := func(i int, k string) bool {
		return (i+len(k) == len(s) || !isIDChar(s[i+len(k)]) || !isIDChar(k[len(k)-1])) &&
			(numbers || !isNumber(k) || len(k) == len(s) || i > 0 && s[i-1] == '/' || i+len(k) < len(s) && s[i+len(k)] == '/')
	}
	// match returns the longest id that stands at i, or "".
	var match func(i int) string
	if len(m) <= manyIDs {
		var keys []string
		for k := range m {
			if strings.Contains(s, k) {
				keys = append(keys, k)
			}
		}
		if len(keys) == 0 {
			return s
		}
		slices.SortFunc(keys, func(a, b string) int { return len(b) - len(a) })
		match = func(i int) string {
			for _, k := range keys {
				if strings.HasPrefix(s[i:], k) && fits(i, k) {
					return k
				}
			}
			return ""
		}
	} else {
		// Many ids (a result full of them that the recording uses again): searching s for
		// each would take |m| passes over s; looking up the text of each id length at each
		// place takes one pass per length.
		seen := map[int]bool{}
		var lengths []int
		for k := range m {
			if len(k) > 0 && !seen[len(k)] {
				seen[len(k)] = true
				lengths = append(lengths, len(k))
			}
		}
		slices.SortFunc(lengths, func(a, b int) int { return b - a })
		match = func(i int) string {
			for _, l := range lengths {
				if i+l <= len(s) {
					if _, ok := m[s[i:i+l]]; ok && fits(i, s[i:i+l]) {
						return s[i : i+l]
					}
				}
			}
			return ""
		}
	}
	var b strings.Builder
	last := 0
	for i := 0; i < len(s); {
		if i > 0 && isIDChar(s[i-1]) && isIDChar(s[i]) {
			i++
			continue
		}
		matched := match(i)
		if matched == "" {
			i++
			continue
		}
		b.WriteString(s[last:i])
		b.WriteString(m[matched])
		i += len(matched)
		last = i
	}
	if last == 0 {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}

// manyIDs is how many ids replaceTokens searches a text for one by one; with more it looks
// them up by length instead.
const manyIDs = 64

// ContainsID says whether s holds id as a whole token, the way Apply would find it.
func ContainsID(s, id string) bool {
	return replaceTokens(map[string]string{id: "\x00"}, s, true) != s
}

// isIDChar says whether a byte continues an identifier token: a letter, a digit, '_' or '-'.
func isIDChar(c byte) bool {
	return c == '_' || c == '-' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// ApplyJSON replaces identifiers inside a JSON document, JSON-aware: a string value gets its
// id tokens replaced (a string that is itself a JSON document, as OpenAI's tool arguments,
// is rewritten the same way, recursively); a number value is replaced only when it is a
// learned id and stands in a field the harness table names as an identifier
// (IdentifierKeys), so "yield_time_ms": 2000 stays when a session id is 2000. Keys and the
// order of members are kept; a document that is not valid JSON is returned unchanged.
func (ids *Identifiers) ApplyJSON(raw json.RawMessage) json.RawMessage {
	ids.mu.Lock()
	defer ids.mu.Unlock()
	if len(ids.m) == 0 {
		return raw
	}
	out, changed := rewriteJSON(ids.m, ids.ev.keys, raw)
	if !changed {
		return raw
	}
	return out
}

// ApplyText rewrites s as ApplyJSON when it is a JSON object or array, else as Apply.
func (ids *Identifiers) ApplyText(s string) string {
	t := strings.TrimSpace(s)
	if t != "" && (t[0] == '{' || t[0] == '[') && json.Valid([]byte(t)) {
		return string(ids.ApplyJSON(json.RawMessage(s)))
	}
	return ids.Apply(s)
}

// rewriteJSON re-emits the document raw with identifiers replaced, and says whether anything
// changed. Unchanged documents are not re-encoded by the caller, so their bytes stay as they
// were.
func rewriteJSON(m map[string]string, idKeys map[string]bool, raw []byte) ([]byte, bool) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	type frame struct {
		object  bool
		n       int    // tokens written in this container
		key     string // the member being written (objects), or the array's own key
		wantKey bool
	}
	stack := []frame{{}}
	changed := false
	writeString := func(s string) {
		_ = enc.Encode(s)
		buf.Truncate(buf.Len() - 1) // Encode's newline
	}
	for {
		tok, err := dec.Token()
		if err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return raw, false
		}
		top := &stack[len(stack)-1]
		if d, ok := tok.(json.Delim); ok && (d == '}' || d == ']') {
			buf.WriteByte(byte(d))
			stack = stack[:len(stack)-1]
			continue
		}
		if top.n > 0 {
			if top.object && top.wantKey {
				buf.WriteByte(',')
			} else if !top.object {
				buf.WriteByte(',')
			}
		}
		if top.object && top.wantKey {
			k, _ := tok.(string)
			writeString(k)
			buf.WriteByte(':')
			top.key, top.wantKey = k, false
			top.n++
			continue
		}
		key := top.key
		if top.object {
			top.wantKey = true
		}
		top.n++
		switch v := tok.(type) {
		case json.Delim:
			buf.WriteByte(byte(v))
			stack = append(stack, frame{object: v == '{', wantKey: v == '{', key: key})
		case string:
			s := v
			if t := strings.TrimSpace(v); t != "" && (t[0] == '{' || t[0] == '[') && json.Valid([]byte(t)) {
				if inner, ok := rewriteJSON(m, idKeys, []byte(v)); ok {
					s = string(inner)
				}
			} else {
				s = replaceTokens(m, v, false)
			}
			if s != v {
				changed = true
			}
			writeString(s)
		case json.Number:
			lit := string(v)
			if rep, ok := m[lit]; ok && idKeys[key] {
				changed = true
				if isNumber(rep) && !strings.Contains(rep, ".") {
					buf.WriteString(rep)
				} else {
					writeString(rep)
				}
				continue
			}
			buf.WriteString(lit)
		case bool:
			fmt.Fprint(&buf, v)
		case nil:
			buf.WriteString("null")
		}
	}
	if !changed {
		return raw, false
	}
	return buf.Bytes(), true
}

// evidence answers whether the recording backs a recorded value up as an identifier.
type evidence struct {
	harness string
	keys    map[string]bool // JSON fields that hold identifiers, for ApplyJSON
	sources []source        // built on first use
	built   bool
	rec     *tape.Tape
	uses    map[string][]int   // token -> indexes into sources that hold it
	runs    map[string][]runAt // whole run of id characters -> where the sources hold it
}

// source is a text of the recording where a recorded identifier can be used again.
type source struct {
	thread  string
	step    int
	opening bool    // a thread's opening request, not a tool call's input
	at      float64 // ms since the recording started
	what    string
	text    string
	raw     json.RawMessage // a tool call's input; nil for an opening request
}

func newEvidence(rec *tape.Tape) *evidence {
	ev := &evidence{rec: rec, keys: map[string]bool{}, uses: map[string][]int{}, runs: map[string][]runAt{}}
	if rec != nil {
		ev.harness = rec.Meta.Harness
	}
	for _, f := range IdentifierFields {
		if f.Harness == ev.harness || ev.harness == "" {
			for _, k := range f.Keys {
				ev.keys[k] = true
			}
		}
	}
	return ev
}

func (ev *evidence) build() {
	ev.built = true
	if ev.rec == nil {
		return
	}
	for _, th := range ev.rec.Threads {
		for si, st := range th.Steps {
			if si == 0 && th.Parent != nil {
				var b strings.Builder
				b.WriteString(st.Request.System)
				for _, msg := range st.Request.Messages {
					for _, blk := range msg.Content {
						b.WriteString("\n")
						b.WriteString(blk.Text)
						if len(blk.Input) > 0 {
							b.WriteString("\n")
							b.WriteString(jsonText(blk.Input))
						}
					}
				}
				ev.sources = append(ev.sources, source{thread: th.ID, step: 0, opening: true, at: st.Timing.RequestAt,
					what: fmt.Sprintf("the opening request of thread %s", th.ID), text: b.String()})
			}
			for _, c := range st.ToolCalls {
				ev.sources = append(ev.sources, source{thread: th.ID, step: si, at: st.Timing.LastByteAt,
					what: fmt.Sprintf("thread %s step %d call %s (%s) input", th.ID, si, c.ID, c.Name), text: jsonText(c.Input), raw: c.Input})
			}
		}
	}
	for i, s := range ev.sources {
		ev.indexRuns(i, s.text)
	}
}

// jsonText is a JSON document as text to search for tokens: the document itself (numbers,
// plain strings) and, after it, its strings decoded (paths inside escaped text).
func jsonText(raw json.RawMessage) string {
	var b strings.Builder
	b.Write(raw)
	dec := json.NewDecoder(bytes.NewReader(raw))
	for {
		tok, err := dec.Token()
		if err != nil {
			break
		}
		if s, ok := tok.(string); ok {
			b.WriteString("\n")
			b.WriteString(s)
		}
	}
	return b.String()
}

// why returns the evidence that token, found in the recorded text at site at, is an
// identifier: the harness field it stands in (fields, the recorded text's: fieldsIn), or a
// later use in the recording.
func (ev *evidence) why(at Site, fields map[string]IdentifierField, token string) (string, bool) {
	if f, ok := fields[token]; ok {
		return "named by the harness: " + f.Harness + " " + f.Name, true
	}
	if !ev.built {
		ev.build()
	}
	idx, ok := ev.uses[token]
	if !ok {
		idx = ev.holding(token)
		if isNumber(token) {
			idx = slices.DeleteFunc(idx, func(i int) bool { return !ev.substituted(i, token) })
		}
		ev.uses[token] = idx
	}
	from := ev.siteTime(at)
	for _, i := range idx {
		s := ev.sources[i]
		if s.thread == at.Thread {
			if !s.opening && s.step > at.Step {
				return "used again: " + s.what, true
			}
			continue
		}
		if s.at >= from {
			return "used again: " + s.what, true
		}
	}
	return "", false
}

// substituted says whether the number token, standing in source i, stands where a replay's
// substitution replaces it (ApplyJSON): a whole string, a path segment, or a number in a
// field the harness table names as an identifier. Only such a use backs a number up as an
// identifier: "120" in `git commit -m "all 120 tests pass"` is a count the model repeated,
// and learning 120 -> 118 from it would pass a replay that ran two tests fewer, while the
// replay's call would still say 120.
func (ev *evidence) substituted(i int, token string) bool {
	m := map[string]string{token: "\x00"}
	s := ev.sources[i]
	if s.raw == nil {
		return replaceTokens(m, s.text, false) != s.text
	}
	_, changed := rewriteJSON(m, ev.keys, s.raw)
	return changed
}

// fieldsIn maps each value standing in an identifier field of the harness in the recorded
// text to that field (the first of the table that names it).
func (ev *evidence) fieldsIn(recorded string) map[string]IdentifierField {
	out := map[string]IdentifierField{}
	for _, f := range IdentifierFields {
		if f.Harness != ev.harness && ev.harness != "" {
			continue
		}
		for _, m := range f.re.FindAllStringSubmatch(recorded, -1) {
			if _, ok := out[m[1]]; !ok {
				out[m[1]] = f
			}
		}
	}
	return out
}

// runAt is where a run of id characters stands: source src, from byte off.
type runAt struct{ src, off int }

// idRuns calls f with the start and end of each whole run of id characters (isIDChar) of s.
func idRuns(s string, f func(i, j int)) {
	for i := 0; i < len(s); {
		if !isIDChar(s[i]) {
			i++
			continue
		}
		j := i
		for j < len(s) && isIDChar(s[j]) {
			j++
		}
		f(i, j)
		i = j
	}
}

// holding returns the indexes of the sources that hold token as a whole token (ContainsID),
// in order. Wherever a token stands whole, each run of id characters in it is a whole run
// of the text too (the token's own other characters or the token's ends bound it), so the
// rarest of its runs, looked up in the index, gives every place it can stand; each is
// checked. This keeps a text with many differing tokens from searching every source for
// each of them.
func (ev *evidence) holding(token string) []int {
	best, at := "", 0
	idRuns(token, func(i, j int) {
		if r := token[i:j]; best == "" || len(ev.runs[r]) < len(ev.runs[best]) {
			best, at = r, i
		}
	})
	var idx []int
	if best == "" { // no id character at all: search every source
		for i, s := range ev.sources {
			if strings.Contains(s.text, token) && ContainsID(s.text, token) {
				idx = append(idx, i)
			}
		}
		return idx
	}
	for _, p := range ev.runs[best] {
		text, i := ev.sources[p.src].text, p.off-at
		if len(idx) > 0 && idx[len(idx)-1] == p.src || i < 0 || i+len(token) > len(text) || text[i:i+len(token)] != token {
			continue
		}
		if wholeAt(text, i, len(token)) {
			idx = append(idx, p.src)
		}
	}
	return idx
}

// wholeAt says whether the n bytes of s at i stand there as a whole token, as replaceTokens
// takes one: not begun inside a run of id characters, not ended inside one.
func wholeAt(s string, i, n int) bool {
	if i > 0 && isIDChar(s[i-1]) && isIDChar(s[i]) {
		return false
	}
	return i+n == len(s) || !isIDChar(s[i+n]) || !isIDChar(s[i+n-1])
}

// indexRuns records where each whole run of id characters of source i stands.
func (ev *evidence) indexRuns(i int, text string) {
	idRuns(text, func(j, k int) {
		ev.runs[text[j:k]] = append(ev.runs[text[j:k]], runAt{src: i, off: j})
	})
}

// siteTime is when the text at site at was recorded: the end of the step's answer (its tool
// results come after), or the start of the thread.
func (ev *evidence) siteTime(at Site) float64 {
	if ev.rec == nil {
		return 0
	}
	th := ev.rec.Thread(at.Thread)
	if th == nil || len(th.Steps) == 0 {
		return 0
	}
	if at.Step < 0 || at.Step >= len(th.Steps) {
		return th.Steps[0].Timing.RequestAt
	}
	return th.Steps[at.Step].Timing.LastByteAt
}
