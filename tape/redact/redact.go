// Package redact removes secrets from a tape: the places a secret scan found (package
// secrets, through the CLI) and whatever given patterns match, in raw bodies, normalized
// fields, stream chunks, headers and meta. Protocol identifiers (tool call ids, message
// ids, thread ids, digests) are never changed, so that a redacted tape still replays. Each
// removed value becomes RedactedValue, the tape records what was removed in
// meta.redactions (the rule and the pointer, never the value), and a tape that carried
// digests is sealed again.
package redact

import (
	"crypto/ed25519"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/tapebox/tapebox/internal/jsonlex"
	"github.com/tapebox/tapebox/tape"
	"github.com/tapebox/tapebox/tape/seal"
)

// RedactedValue replaces what is removed, as the gateway writes credentials in headers.
const RedactedValue = "REDACTED"

// Finding is a secret to remove: the JSON pointer of a string of the tape's canonical
// encoding (tape.Marshal), where in that decoded string the secret starts, and the rule
// that found it. The secret scan's findings give all three.
type Finding struct {
	Pointer string
	Offset  int
	Rule    string
	// Length is how many bytes the secret takes from Offset, when the scan says; 0: up to
	// the end of the token that starts there.
	Length int
	// Key says the secret is in the member name at Pointer, not in its value: the member
	// is renamed (to a name its object does not hold yet), and the redaction records the
	// new name's pointer.
	Key bool
}

// Options say what to remove.
type Options struct {
	// Findings are the secrets a scan found.
	Findings []Finding
	// Patterns are removed wherever they match a string value, identifiers excepted (see
	// Protected); each is recorded with the rule "pattern:" and its text.
	Patterns []*regexp.Regexp
	// Whole removes each finding's whole string instead of the secret's token: for
	// findings a first pass left behind.
	Whole bool
	// Sign, when set, signs the digests of a tape sealed again (a signature cannot be kept:
	// it covered the values removed).
	Sign ed25519.PrivateKey
}

// Result is a redacted tape.
type Result struct {
	Tape *tape.Tape
	// Removed lists what this pass removed (also appended to Tape.Meta.Redactions).
	Removed []tape.Redaction
	// Resealed says the tape carried digests and was sealed again; SignatureDropped that it
	// was signed, and a signature cannot be made again without the key.
	Resealed, SignatureDropped bool
}

// protectedKeys are the members whose string values are protocol identifiers or digests:
// a pattern never changes them, so that a replay still pairs calls with results and
// threads with their parents.
var protectedKeys = map[string]bool{
	"id": true, "tool_use_id": true, "tool_call_id": true, "call_id": true, "item_id": true,
	"tape_id": true, "thread": true, "parent": true, "previous_response_id": true,
	"response_id": true, "signature": true, "encrypted_content": true, "digest": true,
	"root": true, "public_key": true, "sha256": true, "replay_of": true, "type": true,
	"role": true, "name": true, "path": true,
}

// Protected reports whether a string under key is an identifier a pattern leaves alone.
func Protected(key string) bool { return protectedKeys[key] }

// Tape removes from t, whose canonical encoding the findings' pointers refer to, what opts
// names. t is not changed.
func Tape(t *tape.Tape, opts Options) (*Result, error) {
	doc, err := tape.Marshal(t)
	if err != nil {
		return nil, fmt.Errorf("redact: %w", err)
	}
	sealed, signed := t.Digest != nil, t.Digest != nil && t.Digest.Signature != ""
	r := newRedactor(doc, opts)
	if err := walk(doc, r.onKey, r.onString); err != nil {
		return nil, err
	}
	if err := r.unmatched(); err != nil {
		return nil, err
	}
	r.renameMembers()
	rt, err := tape.Unmarshal(r.patched())
	if err != nil {
		return nil, fmt.Errorf("redact: the redacted tape: %w", err)
	}
	rt.Meta.Redactions = append(rt.Meta.Redactions, r.removed...)
	res := &Result{Tape: rt, Removed: r.removed}
	if sealed {
		if err := seal.Tape(rt, opts.Sign); err != nil {
			return nil, fmt.Errorf("redact: seal the redacted tape: %w", err)
		}
		res.Resealed, res.SignatureDropped = true, signed && opts.Sign == nil
	} else {
		rt.Digest = nil
	}
	return res, nil
}

// redactor is one pass of Tape over a tape's canonical document: the findings still to
// meet, by pointer, and the patches, renames and redactions made so far.
type redactor struct {
	opts           Options
	doc            []byte
	want, wantKeys map[string][]Finding // findings in string values, and in member names
	keyParents     map[string]bool      // the objects a member name of which holds a finding
	patches        []patch
	removed        []tape.Redaction
	renames        []rename
	// siblings holds the keys (folded, as the strict reader compares them) of each
	// object one of whose members is renamed.
	siblings map[string]map[string]bool
}

func newRedactor(doc []byte, opts Options) *redactor {
	r := &redactor{
		opts: opts, doc: doc,
		want: map[string][]Finding{}, wantKeys: map[string][]Finding{},
		keyParents: map[string]bool{}, siblings: map[string]map[string]bool{},
	}
	for _, f := range opts.Findings {
		if f.Key {
			r.wantKeys[f.Pointer] = append(r.wantKeys[f.Pointer], f)
			r.keyParents[parentOf(f.Pointer)] = true
			continue
		}
		r.want[f.Pointer] = append(r.want[f.Pointer], f)
	}
	return r
}

// onKey meets a member name: it notes the names of objects with a finding in a member
// name, and plans the rename of a name that holds one.
func (r *redactor) onKey(ptr *jsonlex.Path, key string, start, end int) error {
	if len(r.keyParents) == 0 {
		return nil
	}
	member := ptr.Pointer()
	parent := parentOf(member)
	if !r.keyParents[parent] {
		return nil
	}
	if r.siblings[parent] == nil {
		r.siblings[parent] = map[string]bool{}
	}
	r.siblings[parent][strings.ToLower(key)] = true
	fs, ok := r.wantKeys[member]
	if !ok {
		return nil
	}
	delete(r.wantKeys, member)
	var spans []Span
	rules := map[string]bool{}
	for _, f := range fs {
		if f.Offset < 0 || f.Offset > len(key) {
			return fmt.Errorf("redact: finding in the member name at %s: offset %d is outside the name (%d bytes): the findings are not of this tape", member, f.Offset, len(key))
		}
		n := f.Length
		if n <= 0 || r.opts.Whole {
			n = len(key) - f.Offset
			if !r.opts.Whole {
				n = tokenLen(key[f.Offset:])
			}
		}
		spans = append(spans, Span{f.Offset, min(n, len(key)-f.Offset)})
		rules[f.Rule] = true
	}
	r.renames = append(r.renames, rename{parent: parent, member: member, old: key, new: Cut(key, spans), start: start, end: end, rules: rules})
	return nil
}

// onString meets a string value: it cuts what the findings at its pointer name and what
// the patterns match, and plans the patch.
func (r *redactor) onString(ptr *jsonlex.Path, key string, start, end int) error {
	p := ptr.Pointer()
	if strings.HasPrefix(p, "/digest") || strings.HasPrefix(p, "/meta/redactions") {
		return nil
	}
	value := jsonlex.UnquoteString(r.doc[start+1 : end-1])
	var cuts []span
	rules := map[string]bool{}
	for _, f := range r.want[p] {
		if f.Offset < 0 || f.Offset > len(value) {
			return fmt.Errorf("redact: finding at %s: offset %d is outside the string (%d bytes): the findings are not of this tape", p, f.Offset, len(value))
		}
		to := len(value)
		switch {
		case r.opts.Whole:
		case f.Length > 0:
			to = min(f.Offset+f.Length, len(value))
		default:
			to = f.Offset + tokenLen(value[f.Offset:])
		}
		cuts = append(cuts, span{f.Offset, to})
		rules[f.Rule] = true
	}
	delete(r.want, p)
	v := value
	if len(cuts) > 0 {
		v = cut(value, cuts)
	}
	if !protectedKeys[key] && len(r.opts.Patterns) > 0 {
		v = r.cutPatterns(p, key, v, rules)
	}
	if v == value {
		return nil
	}
	r.patches = append(r.patches, patch{start, end, jsonlex.AppendString(nil, v, false)})
	for _, rule := range slices.Sorted(mapKeys(rules)) {
		r.removed = append(r.removed, tape.Redaction{Rule: rule, Pointer: p})
	}
	return nil
}

// cutPatterns cuts what opts.Patterns match in v, the string at pointer p under key; a
// stream chunk's data is cut event by event.
func (r *redactor) cutPatterns(p, key, v string, rules map[string]bool) string {
	if strings.Contains(p, "/response/chunks/") && key == "data" {
		v, _ = redactEvent(v, r.opts.Patterns, rules)
		return v
	}
	var pcuts []span
	for _, re := range r.opts.Patterns {
		for _, m := range re.FindAllStringIndex(v, -1) {
			if m[1] > m[0] {
				pcuts = append(pcuts, span{m[0], m[1]})
				rules["pattern:"+re.String()] = true
			}
		}
	}
	if len(pcuts) > 0 {
		v = cut(v, pcuts)
	}
	return v
}

// unmatched is an error when a finding pointed at no string or member of the document.
func (r *redactor) unmatched() error {
	if len(r.want) > 0 {
		missing := slices.Sorted(mapKeys(r.want))
		return fmt.Errorf("redact: no string at %s (%d findings point nowhere): the findings are not of this tape", missing[0], len(missing))
	}
	if len(r.wantKeys) > 0 {
		missing := slices.Sorted(mapKeys(r.wantKeys))
		return fmt.Errorf("redact: no member at %s (%d findings in member names point nowhere): the findings are not of this tape", missing[0], len(missing))
	}
	return nil
}

// renameMembers plans the renames: each to a name its object does not hold yet, so the
// strict reader still reads it. The redactions say where things are now, not where the
// secret was.
func (r *redactor) renameMembers() {
	moved := map[string]string{}
	for _, rn := range r.renames {
		name := rn.new
		for i := 2; r.siblings[rn.parent][strings.ToLower(name)]; i++ {
			name = rn.new + "-" + strconv.Itoa(i)
		}
		r.siblings[rn.parent][strings.ToLower(name)] = true
		r.patches = append(r.patches, patch{rn.start, rn.end, jsonlex.AppendString(nil, name, false)})
		now := rn.parent + "/" + jsonlex.EscapePointer(name)
		moved[rn.member] = now
		for _, rule := range slices.Sorted(mapKeys(rn.rules)) {
			r.removed = append(r.removed, tape.Redaction{Rule: rule, Pointer: now})
		}
	}
	if len(moved) == 0 {
		return
	}
	// Innermost first: an outer rename then finds its own old prefix unchanged.
	olds := slices.SortedFunc(mapKeys(moved), func(a, b string) int { return len(b) - len(a) })
	for i := range r.removed {
		for _, old := range olds {
			if p := r.removed[i].Pointer; p == old || strings.HasPrefix(p, old+"/") {
				r.removed[i].Pointer = moved[old] + p[len(old):]
			}
		}
	}
}

// patched is the document with every planned patch applied, last first so that the
// earlier offsets hold.
func (r *redactor) patched() []byte {
	slices.SortFunc(r.patches, func(a, b patch) int { return b.start - a.start })
	out := r.doc
	for _, pt := range r.patches {
		out = slices.Concat(out[:pt.start], pt.repl, out[pt.end:])
	}
	return out
}

type patch struct {
	start, end int
	repl       []byte
}

// rename is a member whose name holds a secret: its name's span in the document (quotes
// included), its pointer and its object's, its name before and after.
type rename struct {
	parent, member, old, new string
	start, end               int
	rules                    map[string]bool
}

// parentOf is the pointer of the object or array that holds the value at ptr.
func parentOf(ptr string) string {
	if i := strings.LastIndexByte(ptr, '/'); i >= 0 {
		return ptr[:i]
	}
	return ""
}

type span struct{ from, to int }

// Span is Length bytes of a string from Offset.
type Span struct{ Offset, Length int }

// Cut replaces the spans of s (merged where they overlap or touch) with RedactedValue:
// what redact does to a string, for the names and contents redacted elsewhere (a start
// snapshot's) to come out as the tape's strings do.
func Cut(s string, spans []Span) string {
	sp := make([]span, 0, len(spans))
	for _, x := range spans {
		sp = append(sp, span{x.Offset, x.Offset + x.Length})
	}
	return cut(s, sp)
}

// Merged returns spans sorted by offset, those that overlap merged into one: the pieces
// Cut replaces.
func Merged(spans []Span) []Span {
	sorted := slices.Clone(spans)
	slices.SortFunc(sorted, func(a, b Span) int { return a.Offset - b.Offset })
	var out []Span
	for _, x := range sorted {
		if n := len(out); n > 0 && x.Offset <= out[n-1].Offset+out[n-1].Length {
			last := &out[n-1]
			last.Length = max(last.Offset+last.Length, x.Offset+x.Length) - last.Offset
			continue
		}
		out = append(out, x)
	}
	return out
}

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// cut replaces the spans of s (merged where they overlap) with RedactedValue.
func cut(s string, spans []span) string {
	slices.SortFunc(spans, func(a, b span) int { return a.from - b.from })
	var b strings.Builder
	at := 0
	for i := 0; i < len(spans); i++ {
		sp := spans[i]
		for i+1 < len(spans) && spans[i+1].from <= sp.to {
			sp.to = max(sp.to, spans[i+1].to)
			i++
		}
		if sp.from < at {
			sp.from = at
		}
		b.WriteString(s[at:sp.from])
		b.WriteString(RedactedValue)
		at = sp.to
	}
	b.WriteString(s[at:])
	return b.String()
}

// tokenLen is the length of the secret that starts s: a PEM block through its END line,
// else the run of characters a token holds (up to a space, quote, backslash, bracket or
// separator). A token the scan still finds afterwards is removed whole by a second pass
// (Options.Whole).
func tokenLen(s string) int {
	if strings.HasPrefix(s, "-----BEGIN") {
		if i := strings.Index(s, "-----END"); i >= 0 {
			if j := strings.Index(s[i+8:], "-----"); j >= 0 {
				return i + 8 + j + 5
			}
		}
		return len(s)
	}
	n := strings.IndexFunc(s, func(r rune) bool {
		return r <= ' ' || strings.ContainsRune("\"'`\\<>,;(){}[]|", r)
	})
	if n <= 0 {
		return len(s)
	}
	return n
}

// redactEvent applies the patterns to a stream chunk's text (server-sent event lines): the
// JSON of each data line string by string, identifiers left alone, as in the rest of the
// tape; other text whole. It reports false when nothing matched.
func redactEvent(event string, patterns []*regexp.Regexp, rules map[string]bool) (string, bool) {
	if len(patterns) == 0 {
		return event, false
	}
	lines := strings.SplitAfter(event, "\n")
	changed := false
	for i, line := range lines {
		body, nl := strings.CutSuffix(line, "\n")
		data, isData := strings.CutPrefix(body, "data:")
		lead := ""
		if isData {
			trimmed := strings.TrimLeft(data, " ")
			lead, data = data[:len(data)-len(trimmed)], trimmed
		}
		var out string
		var ok bool
		if isData && jsonlex.Valid([]byte(data)) {
			out, ok = redactJSON(data, patterns, rules)
			out = "data:" + lead + out
		} else {
			out, ok = body, false
			for _, re := range patterns {
				if re.MatchString(out) {
					out, ok = re.ReplaceAllLiteralString(out, RedactedValue), true
					rules["pattern:"+re.String()] = true
				}
			}
		}
		if ok {
			changed = true
			if nl {
				out += "\n"
			}
			lines[i] = out
		}
	}
	return strings.Join(lines, ""), changed
}

// redactJSON applies the patterns to the string values of a JSON document, identifiers
// left alone.
func redactJSON(doc string, patterns []*regexp.Regexp, rules map[string]bool) (string, bool) {
	b := []byte(doc)
	var patches []patch
	_ = walk(b, nil, func(_ *jsonlex.Path, key string, start, end int) error {
		if protectedKeys[key] {
			return nil
		}
		value := jsonlex.UnquoteString(b[start+1 : end-1])
		v := value
		for _, re := range patterns {
			if re.MatchString(v) {
				v = re.ReplaceAllLiteralString(v, RedactedValue)
				rules["pattern:"+re.String()] = true
			}
		}
		if v != value {
			patches = append(patches, patch{start, end, jsonlex.AppendString(nil, v, false)})
		}
		return nil
	})
	if len(patches) == 0 {
		return doc, false
	}
	for i := len(patches) - 1; i >= 0; i-- {
		pt := patches[i]
		b = slices.Concat(b[:pt.start], pt.repl, b[pt.end:])
	}
	return string(b), true
}

// walk calls fn for each string value of the JSON document b with its path, the key of
// the member it stands in (for an array element, the array's), and its span, quotes
// included; and onKey, when not nil, for each member name, with the member's path, the
// name and its span.
func walk(b []byte, onKey, fn func(p *jsonlex.Path, key string, start, end int) error) error {
	var p jsonlex.Path
	var value func(i int, key string) (int, error)
	value = func(i int, key string) (int, error) {
		i = jsonlex.Space(b, i)
		if i >= len(b) {
			return i, errors.New("redact: unexpected end of JSON")
		}
		switch b[i] {
		case '"':
			end, _, err := jsonlex.String(b, i)
			if err != nil {
				return i, err
			}
			return end, fn(&p, key, i, end)
		case '{':
			p.OpenObject()
			i = jsonlex.Space(b, i+1)
			for b[i] != '}' {
				kend, s, err := jsonlex.String(b, i)
				if err != nil {
					return i, err
				}
				if _, ok := p.Key(b[i+1:kend-1], s); !ok {
					return i, fmt.Errorf("redact: a repeated key at byte %d", i)
				}
				k := jsonlex.UnquoteString(b[i+1 : kend-1])
				if onKey != nil {
					if err := onKey(&p, k, i, kend); err != nil {
						return i, err
					}
				}
				i = jsonlex.Space(b, kend) + 1
				var verr error
				if i, verr = value(i, k); verr != nil {
					return i, verr
				}
				if i = jsonlex.Space(b, i); b[i] == ',' {
					i = jsonlex.Space(b, i+1)
				}
			}
			p.Close()
			return i + 1, nil
		case '[':
			p.OpenArray()
			i = jsonlex.Space(b, i+1)
			for b[i] != ']' {
				p.Elem()
				var err error
				if i, err = value(i, key); err != nil {
					return i, err
				}
				if i = jsonlex.Space(b, i); b[i] == ',' {
					i = jsonlex.Space(b, i+1)
				}
			}
			p.Close()
			return i + 1, nil
		}
		end, err := jsonlex.Skip(b, i)
		if err != nil {
			return i, err
		}
		return end, nil
	}
	if !jsonlex.Valid(b) {
		return errors.New("redact: not valid JSON")
	}
	_, err := value(0, "")
	return err
}

// Describe is a one-line summary of what a pass removed, for the CLI.
func (r *Result) Describe() string {
	n := map[string]int{}
	for _, x := range r.Removed {
		n[x.Rule]++
	}
	var parts []string
	for _, rule := range slices.Sorted(mapKeys(n)) {
		parts = append(parts, rule+" ×"+strconv.Itoa(n[rule]))
	}
	return strings.Join(parts, ", ")
}
