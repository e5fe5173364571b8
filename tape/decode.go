package tape

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/tapebox/tapebox/internal/jsonlex"
)

// The decoder reads a tape with the field table (codec.go), without reflection: the
// path of Unmarshal, Load, LoadFile, Summary.Tape and Decode. It is strict as Unmarshal
// is: a key repeated in any object (raw bodies included) or a field the table does not
// know is an error naming its JSON pointer and line. It also says whether the input is in
// canonical encoding (exactly what Marshal gives for the tape: the key order and omitted
// fields of the table, no whitespace, sorted map keys, encoding/json's escapes and number
// formats, one trailing newline), checking every byte on the way.
//
// Anything else unusual (a value of the wrong kind, a null where the format has a string,
// invalid UTF-8, a number out of range, a syntax error) makes it give up with errUnusual,
// and the caller decodes with encoding/json (unmarshalReference), which decides and words
// the error: the decoder accepts nothing that encoding/json refuses and decodes what it
// does (FuzzDecodeAgrees holds it to that).

// errUnusual marks input the decoder leaves to encoding/json.
var errUnusual = errors.New("unusual input")

// decoder reads JSON from data at offset i. nonCanon records the first departure from the
// canonical encoding; decoding goes on, since the tape may still be valid.
type decoder struct {
	data     []byte
	i        int
	nonCanon bool
	// keys follows where the decoder stands and holds the open objects' keys, so that a
	// repeated key is refused with its pointer (jsonlex.DuplicateKeyError); base is the
	// pointer of the value the decoding started at.
	keys jsonlex.Path
	base string
	// noLines leaves the line and column out of errors: data is not the file (a summary's
	// skeleton, a step).
	noLines bool
	// alias leaves raw values as slices of data; without it they are copies, as
	// encoding/json gives them.
	alias bool
	// lean leaves stream chunks' data empty while the input is canonical; dropped says
	// some was left out.
	lean, dropped bool
	memo          *threadMemo // of the thread being decoded
	keyAt         int         // the offset of the current key
}

// fieldError is a definite refusal: an unknown field or a repeated key. Unlike errUnusual,
// encoding/json would refuse the input too.
type fieldError struct {
	err        error // *jsonlex.DuplicateKeyError, or an unknown field's
	key, ptr   string
	line, col  int
	unknown    bool
	whereLines bool // line and column are the document's
}

func (e *fieldError) Error() string {
	msg := e.err.Error()
	if e.whereLines {
		msg += fmt.Sprintf(" (line %d, column %d)", e.line, e.col)
	}
	return msg
}

func (e *fieldError) Unwrap() error { return e.err }

func (d *decoder) errorf(format string, args ...any) error {
	return fmt.Errorf("decode tape at byte %d: %s: %w", d.i, fmt.Sprintf(format, args...), errUnusual)
}

// lexError is errorf for a flaw jsonlex found, at its offset.
func (d *decoder) lexError(err *jsonlex.Error) error {
	d.i = err.Off
	return d.errorf("%s", err.Msg)
}

// refusal is the fieldError for the key at offset off of the innermost object: err, a
// *jsonlex.DuplicateKeyError, or nil for an unknown key.
func (d *decoder) refusal(err error, key string, off int, unknown bool) error {
	ptr := d.base + d.keys.Member(key)
	line, col := jsonlex.LineCol(d.data, off)
	if de, ok := err.(*jsonlex.DuplicateKeyError); ok {
		de.Pointer, de.Off = ptr, off
	} else {
		err = fmt.Errorf("unknown field %q at %s", key, ptr)
	}
	return &fieldError{err: err, key: key, ptr: ptr, line: line, col: col, unknown: unknown, whereLines: !d.noLines}
}

// next skips whitespace, which the canonical encoding has none of, and returns the byte
// after it, or 0 at the end of data.
func (d *decoder) next() byte {
	if d.i < len(d.data) {
		if c := d.data[d.i]; c > ' ' {
			return c
		}
	}
	if j := jsonlex.Space(d.data, d.i); j != d.i {
		d.i, d.nonCanon = j, true
	}
	if d.i >= len(d.data) {
		return 0
	}
	return d.data[d.i]
}

func (d *decoder) expect(c byte) error {
	if d.next() != c {
		return d.errorf("want %q", c)
	}
	d.i++
	return nil
}

// null consumes a null literal if one comes next.
func (d *decoder) null() bool {
	if d.next() == 'n' && bytes.HasPrefix(d.data[d.i:], []byte("null")) {
		d.i += 4
		return true
	}
	return false
}

// object calls fn for each key (its decoded bytes, valid until the next key), with d
// positioned at the value, which fn must consume. A repeated key is refused.
func (d *decoder) object(fn func(key []byte) error) error {
	d.keys.OpenObject()
	err := d.members('{', '}', func() error {
		at := d.next()
		start := d.i
		if at != '"' {
			return d.errorf("want %q", '"')
		}
		body, s, err := d.scanStr(false)
		if err != nil {
			return err
		}
		key := body
		if s&jsonlex.Escaped != 0 {
			key = jsonlex.Unquote(make([]byte, 0, len(body)), body)
		}
		if first, ok := d.keys.Key(body, s); !ok {
			k := string(key)
			return d.refusal(&jsonlex.DuplicateKeyError{Key: k, First: first}, k, start, false)
		}
		if err := d.expect(':'); err != nil {
			return err
		}
		d.keyAt = start
		return fn(key)
	})
	if err == nil {
		d.keys.Close()
	}
	return err
}

// sortedObject is object for a Go map: canonical keys come sorted, each once.
func (d *decoder) sortedObject(fn func(key []byte) error) error {
	var prev []byte
	first := true
	return d.object(func(key []byte) error {
		if !first && bytes.Compare(prev, key) >= 0 {
			d.nonCanon = true
		}
		first, prev = false, key
		return fn(key)
	})
}

// array calls fn for each element, with d positioned at it.
func (d *decoder) array(fn func() error) error {
	d.keys.OpenArray()
	err := d.members('[', ']', func() error {
		d.keys.Elem()
		return fn()
	})
	if err == nil {
		d.keys.Close()
	}
	return err
}

// members reads an object or an array, between the brackets open and close, calling member
// for each of its members (a key and its value, or an element), with d positioned at it.
func (d *decoder) members(open, close byte, member func() error) error {
	if err := d.expect(open); err != nil {
		return err
	}
	if d.next() == close {
		d.i++
		return nil
	}
	for {
		if err := member(); err != nil {
			return err
		}
		switch d.next() {
		case ',':
			d.i++
		case close:
			d.i++
			return nil
		default:
			return d.errorf("want , or %c", close)
		}
	}
}

// readObject reads an object of type o into v: each key known to o, in any order (the
// canonical order is tried first), an unknown one refused. Members left out keep v's
// values, as encoding/json leaves them.
func readObject[T any](d *decoder, o *object[T], v *T) error {
	var seen uint64
	last, next := -1, 0
	err := d.object(func(key []byte) error {
		i := next
		if i >= len(o.fields) || o.fields[i].key != string(key) {
			if i = o.field(string(key)); i < 0 {
				return d.unknown(&o.shape, key)
			}
		}
		next = i + 1
		if i <= last {
			d.nonCanon = true // out of order
		}
		seen |= 1 << i
		last = i
		return o.fields[i].dec(d, v)
	})
	if err != nil || d.nonCanon {
		return err
	}
	for i := range o.fields {
		f := &o.fields[i]
		if (seen&(1<<i) != 0) == (f.omit != nil && f.omit(v)) {
			d.nonCanon = true // a member the encoding writes is missing, or one it leaves out is there
			break
		}
	}
	return nil
}

// unknown refuses a key that the object type s does not have. encoding/json matches keys
// without regard to case: one that matches so is left to it.
func (d *decoder) unknown(s *shape, key []byte) error {
	for _, k := range s.keys {
		if strings.EqualFold(k, string(key)) {
			return d.errorf("field %q in another case", key)
		}
	}
	return d.refusal(nil, string(key), d.keyAt, true)
}

// readList reads an array into *dst with elem. null gives nil, which the encoding never
// writes where the format has a list: Normalize makes those empty, and the lists left out
// when empty are left out.
func readList[E any](d *decoder, dst *[]E, elem func(*decoder, *E) error) error {
	if d.null() {
		d.nonCanon = true
		*dst = nil
		return nil
	}
	*dst = []E{}
	return d.array(func() error {
		var zero E
		*dst = append(*dst, zero)
		return elem(d, &(*dst)[len(*dst)-1]) // in place: a value read through a pointer escapes
	})
}

// readMap reads an object into a map with read. null gives nil (not canonical where
// Normalize makes the map empty, and taken for not canonical everywhere: the conservative
// answer).
func readMap[M ~map[string]V, V any](d *decoder, dst *M, read func(*decoder) (V, error)) error {
	if d.null() {
		d.nonCanon = true
		*dst = nil
		return nil
	}
	m := M{}
	*dst = m
	return d.sortedObject(func(key []byte) error {
		v, err := read(d)
		m[string(key)] = v
		return err
	})
}

// scanStr scans the next string (jsonlex.String) and returns its body, the bytes between
// its quotes. Invalid UTF-8 is unusual (encoding/json would replace it). A string is
// canonical when it is as encoding/json writes it: the characters it escapes (U+2028 and
// U+2029, and with html <, > and &) escaped, and every escape one it writes (see
// canonicalEscapes).
func (d *decoder) scanStr(html bool) ([]byte, jsonlex.Str, error) {
	if d.next() != '"' {
		return nil, 0, d.errorf("want %q", '"')
	}
	end, s, lerr := jsonlex.String(d.data, d.i)
	if lerr != nil {
		return nil, s, d.lexError(lerr)
	}
	body := d.data[d.i+1 : end-1]
	if s&jsonlex.NonASCII != 0 {
		if !utf8.Valid(body) {
			return nil, s, d.errorf("invalid UTF-8")
		}
		if bytes.Contains(body, lineSep) || bytes.Contains(body, paraSep) {
			d.nonCanon = true
		}
	}
	if html && bytes.ContainsAny(body, "<>&") {
		d.nonCanon = true
	}
	if s&jsonlex.Escaped != 0 && !d.nonCanon && !canonicalEscapes(body, html) {
		d.nonCanon = true
	}
	d.i = end
	return body, s, nil
}

var (
	lineSep = []byte("\u2028")
	paraSep = []byte("\u2029")
)

// canonicalEscapes reports whether every escape in a string body (checked by
// jsonlex.String) is one encoding/json writes: \" \\ \b \f \n \r \t, or \u in lower-case hex
// for a control character without a short escape, U+2028, U+2029, and with html <, > and &.
// A lone surrogate is never canonical: encoding/json writes U+FFFD for it, as Unquote reads it.
func canonicalEscapes(body []byte, html bool) bool {
	for {
		k := bytes.IndexByte(body, '\\')
		if k < 0 {
			return true
		}
		body = body[k+1:]
		switch body[0] {
		case '"', '\\', 'b', 'f', 'n', 'r', 't':
			body = body[1:]
		case 'u':
			if !canonicalU(body[1:5], jsonlex.Hex4(body[1:5]), html) {
				return false
			}
			body = body[5:]
		default: // '/'
			return false
		}
	}
}

// canonicalU reports whether the \u escape with hex digits h (value r) is one
// encoding/json writes: a control character without a short escape, U+2028, U+2029, or
// with HTML escaping <, > and &, in lower-case hex.
func canonicalU(h []byte, r rune, html bool) bool {
	for _, c := range h {
		if c >= 'A' && c <= 'F' {
			return false
		}
	}
	switch {
	case r < 0x20:
		return r != '\b' && r != '\f' && r != '\n' && r != '\r' && r != '\t'
	case r == '\u2028' || r == '\u2029':
		return true
	case html && (r == '<' || r == '>' || r == '&'):
		return true
	}
	return false
}

// str reads a string value.
func (d *decoder) str() (string, error) {
	body, s, err := d.scanStr(false)
	if err != nil || s&jsonlex.Escaped == 0 {
		return string(body), err
	}
	return jsonlex.UnquoteString(body), nil
}

// number returns the next number token, checked against the JSON grammar.
func (d *decoder) number() ([]byte, error) {
	d.next()
	end, _, err := jsonlex.Number(d.data, d.i)
	if err != nil {
		return nil, d.lexError(err)
	}
	tok := d.data[d.i:end]
	d.i = end
	return tok, nil
}

// integer reads an integer, in its canonical form when strconv's.
func (d *decoder) integer() (int64, error) {
	tok, err := d.number()
	if err != nil {
		return 0, err
	}
	n, err := strconv.ParseInt(string(tok), 10, 64)
	if err != nil {
		return 0, d.errorf("%v", err)
	}
	var buf [24]byte
	if string(strconv.AppendInt(buf[:0], n, 10)) != string(tok) {
		d.nonCanon = true
	}
	return n, nil
}

func (d *decoder) integerInt() (int, error) {
	n, err := d.integer()
	return int(n), err
}

// float reads a number, in its canonical form when encoding/json's.
func (d *decoder) float() (float64, error) {
	tok, err := d.number()
	if err != nil {
		return 0, err
	}
	x, err := strconv.ParseFloat(string(tok), 64)
	if err != nil {
		return 0, d.errorf("%v", err)
	}
	var buf [32]byte
	if enc, _ := jsonlex.AppendFloat(buf[:0], x); string(enc) != string(tok) { // ParseFloat gives no NaN or infinity
		d.nonCanon = true
	}
	return x, nil
}

func (d *decoder) boolean() (bool, error) {
	d.next()
	switch {
	case bytes.HasPrefix(d.data[d.i:], []byte("true")):
		d.i += 4
		return true, nil
	case bytes.HasPrefix(d.data[d.i:], []byte("false")):
		d.i += 5
		return false, nil
	}
	return false, d.errorf("want a boolean")
}

func (d *decoder) time() (time.Time, error) {
	d.next()
	start := d.i
	if _, _, err := d.scanStr(false); err != nil {
		return time.Time{}, err
	}
	var t time.Time
	if err := t.UnmarshalJSON(d.data[start:d.i]); err != nil {
		return time.Time{}, d.errorf("%v", err)
	}
	if b, err := t.UTC().MarshalJSON(); err != nil || string(b) != string(d.data[start:d.i]) {
		d.nonCanon = true
	}
	return t, nil
}

// raw returns the next value as it is in data. A null gives "null", as encoding/json
// gives a json.RawMessage field. Canonical raw values are compact.
func (d *decoder) raw() (json.RawMessage, error) {
	d.next()
	start := d.i
	if err := d.skip(); err != nil {
		return nil, err
	}
	return d.rawOf(d.data[start:d.i]), nil
}

// rawOf is a raw value found in data: the slice itself, or a copy.
func (d *decoder) rawOf(b []byte) json.RawMessage {
	if d.alias {
		return json.RawMessage(b)
	}
	return json.RawMessage(bytes.Clone(b))
}

// skip consumes one value, checking it against the JSON grammar (encoding/json would
// refuse to encode an invalid raw value) and its objects' keys for repeats. Strings
// inside raw values are not decoded: encoding/json keeps them as they are.
func (d *decoder) skip() error {
	switch c := d.next(); {
	case c == '{':
		return d.object(func([]byte) error { return d.skip() })
	case c == '[':
		return d.array(d.skip)
	case c == '"':
		end, _, err := jsonlex.String(d.data, d.i)
		if err != nil {
			return d.lexError(err)
		}
		d.i = end
		return nil
	case c == 't' || c == 'f':
		_, err := d.boolean()
		return err
	case c == 'n':
		if d.null() {
			return nil
		}
	case c == '-' || (c >= '0' && c <= '9'):
		_, err := d.number()
		return err
	}
	return d.errorf("want a value")
}

// parent reads a thread's parent, a [thread id, tool call id] pair, as json.Marshal
// writes it (HTML escaped).
func (d *decoder) parent(p *Parent) error {
	var pair []string
	if err := d.array(func() error {
		body, s, err := d.scanStr(true)
		if err == nil && s&jsonlex.Escaped != 0 {
			pair = append(pair, jsonlex.UnquoteString(body))
		} else {
			pair = append(pair, string(body))
		}
		return err
	}); err != nil {
		return err
	}
	if len(pair) != 2 {
		return d.errorf("parent: want [thread id, tool call id]")
	}
	p.ThreadID, p.ToolCallID = pair[0], pair[1]
	return nil
}

// threadMemo remembers the thread's previous request as spans of data. A request
// repeats the conversation so far, the system prompt and the tools of the one before it:
// where the bytes are the same, the values decoded from them are taken over instead of
// decoded again, which keeps decoding linear in the length of a conversation.
type threadMemo struct {
	system     []byte // the system string, quotes included
	systemText string
	tools      []byte // the tools array
	toolList   []Tool
	msgSpans   [][]byte
	msgs       []Message
	raw        *rawMemo // the raw body
}

// reuse reports whether span (a complete JSON value from earlier) comes next in data,
// and consumes it if so. A complete value ends itself, so a byte-equal prefix is the
// same value.
func (d *decoder) reuse(span []byte) bool {
	// A number is not complete in itself: 12 is a prefix of 123.
	if len(span) == 0 || (span[len(span)-1] != '}' && span[len(span)-1] != ']' && span[len(span)-1] != '"') {
		return false
	}
	d.next()
	if bytes.HasPrefix(d.data[d.i:], span) {
		d.i += len(span)
		return true
	}
	return false
}

// reused reads a value of a request into dst with read, unless the thread's previous
// request had the same bytes there: then it takes over the value decoded from them. at
// gives where the memo keeps those bytes and that value, which it updates for the next
// request.
func reused[T any](d *decoder, dst *T, at func(*threadMemo) (span *[]byte, val *T), read func(*T) error) error {
	m := d.memo
	if m == nil {
		return read(dst)
	}
	span, val := at(m)
	if d.reuse(*span) {
		*dst = *val
		return nil
	}
	d.next()
	start := d.i
	err := read(dst)
	if err == nil {
		*span, *val = d.data[start:d.i], *dst
	}
	return err
}

// systemField is a request's system prompt, taken over from the thread's previous
// request when it is the same.
func systemField(key string) field[Request] {
	f := strField(key, always, func(r *Request) *string { return &r.System })
	f.dec = func(d *decoder, r *Request) error {
		return reused(d, &r.System, func(m *threadMemo) (*[]byte, *string) { return &m.system, &m.systemText },
			func(s *string) (err error) {
				*s, err = d.str()
				return err
			})
	}
	return f
}

// toolsField is a request's tools, taken over from the thread's previous request when
// they are the same.
func toolsField(key string) field[Request] {
	f := listField(key, always, func(r *Request) *[]Tool { return &r.Tools }, toolTable)
	read := f.dec
	f.dec = func(d *decoder, r *Request) error {
		return reused(d, &r.Tools, func(m *threadMemo) (*[]byte, *[]Tool) { return &m.tools, &m.toolList },
			func(tools *[]Tool) error {
				// read fills r.Tools, which is tools.
				return read(d, r)
			})
	}
	return f
}

// messagesField is a request's messages, each taken over from the thread's previous
// request when it is the same.
func messagesField(key string) field[Request] {
	f := listField(key, always, func(r *Request) *[]Message { return &r.Messages }, messageTable)
	f.dec = func(d *decoder, r *Request) error {
		if d.null() {
			d.nonCanon = true
			r.Messages = nil
			return nil
		}
		r.Messages = []Message{}
		var spans [][]byte
		err := d.array(func() error {
			k := len(r.Messages)
			if m := d.memo; m != nil && k < len(m.msgSpans) && d.reuse(m.msgSpans[k]) {
				r.Messages = append(r.Messages, m.msgs[k])
				spans = append(spans, m.msgSpans[k])
				return nil
			}
			d.next()
			start := d.i
			r.Messages = append(r.Messages, Message{})
			err := readObject(d, messageTable(), &r.Messages[k])
			spans = append(spans, d.data[start:d.i])
			return err
		})
		if m := d.memo; m != nil && err == nil {
			m.msgSpans, m.msgs = spans, r.Messages
		}
		return err
	}
	return f
}

// requestRawField is a request's raw body, whose members the thread's previous request
// mostly repeats (see rawMemo).
func requestRawField(key string) field[Request] {
	f := withCut(rawField(key, always, func(r *Request) *json.RawMessage { return &r.Raw }), cutBody)
	f.dec = func(d *decoder, r *Request) (err error) {
		if m := d.memo; m != nil {
			var b []byte
			b, m.raw, err = d.rawReusing(m.raw)
			if err == nil {
				r.Raw = d.rawOf(b)
			}
		} else {
			r.Raw, err = d.raw()
		}
		return err
	}
	return f
}

// chunkDataField is a chunk's data, which a lean decoding of canonical input checks but
// does not keep.
func chunkDataField(key string) field[Chunk] {
	f := strField(key, always, func(c *Chunk) *string { return &c.Data })
	read := f.dec
	f.dec = func(d *decoder, c *Chunk) error {
		if d.lean && !d.nonCanon {
			d.dropped = true
			_, _, err := d.scanStr(false)
			return err
		}
		return read(d, c)
	}
	return f
}

// rawMemo remembers a raw request body (a JSON object) as spans of data: each member's
// value and, for an array value, each element. The next request of the thread repeats
// most of them (the conversation so far, the system prompt, the tools); those are taken
// over with one comparison of bytes instead of being scanned again.
type rawMemo struct {
	keys  [][]byte
	vals  [][]byte
	elems [][][]byte // element spans of array values, nil for other values
}

// rawReusing reads a request body as raw does, reusing what prev (the thread's previous
// body, or nil) holds, and returns the body's span of data and the memo of this body for
// the next.
func (d *decoder) rawReusing(prev *rawMemo) ([]byte, *rawMemo, error) {
	if d.next() != '{' {
		start := d.i
		err := d.skip()
		return d.data[start:d.i], nil, err
	}
	start := d.i
	m := &rawMemo{}
	if prev != nil {
		m.keys = make([][]byte, 0, len(prev.keys))
		m.vals = make([][]byte, 0, len(prev.keys))
		m.elems = make([][][]byte, 0, len(prev.keys))
	}
	err := d.object(func(key []byte) error {
		var cand []byte
		var candElems [][]byte
		if prev != nil {
			// Members mostly come in the same order: look where this one was first.
			n := len(m.keys)
			for j := range prev.keys {
				k := (n + j) % len(prev.keys)
				if bytes.Equal(prev.keys[k], key) {
					cand, candElems = prev.vals[k], prev.elems[k]
					break
				}
			}
		}
		d.next()
		vs := d.i
		var elems [][]byte
		var err error
		switch {
		case d.reuse(cand):
			elems = candElems
		case d.i < len(d.data) && d.data[d.i] == '[':
			elems = make([][]byte, 0, len(candElems)+2)
			err = d.array(func() error {
				k := len(elems)
				if k < len(candElems) && d.reuse(candElems[k]) {
					elems = append(elems, candElems[k])
					return nil
				}
				d.next()
				es := d.i
				err := d.skip()
				elems = append(elems, d.data[es:d.i])
				return err
			})
		default:
			err = d.skip()
		}
		m.keys = append(m.keys, key)
		m.vals = append(m.vals, d.data[vs:d.i])
		m.elems = append(m.elems, elems)
		return err
	})
	if err != nil {
		return nil, nil, err
	}
	return d.data[start:d.i], m, nil
}

// decodeOptions are decodeTape's.
type decodeOptions struct {
	alias, lean, noLines bool
}

// decodeTape decodes a whole tape. canonical says data is exactly Marshal's encoding of
// it; complete says no chunk data was left out (a lean decoding keeps chunk data once the
// input shows it is not canonical, so only data before that point is missing).
func decodeTape(data []byte, opts decodeOptions) (t *Tape, canonical, complete bool, err error) {
	layout()
	d := &decoder{data: data, alias: opts.alias, lean: opts.lean, noLines: opts.noLines}
	t = &Tape{}
	if err := readObject(d, tapeTable(), t); err != nil {
		return nil, false, false, err
	}
	if len(data)-d.i != 1 || data[d.i] != '\n' {
		d.nonCanon = true // Marshal ends the tape with one newline
		if d.next(); d.i != len(data) {
			return nil, false, false, d.errorf("data after the tape")
		}
	}
	if t.Version != Version {
		return nil, false, false, d.errorf("version %d", t.Version)
	}
	t.normalize()
	return t, !d.nonCanon, !d.dropped, nil
}

// decodeStep decodes one step, standing at pointer base of the tape it comes from.
func decodeStep(data []byte, base string) (*Step, error) {
	d := &decoder{data: data, base: base, noLines: true}
	s := &Step{}
	if err := readObject(d, stepTable(), s); err != nil {
		return nil, err
	}
	if d.next(); d.i != len(data) {
		return nil, d.errorf("data after the step")
	}
	return s, nil
}
