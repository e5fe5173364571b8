package dataset

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"

	"github.com/tapebox/tapebox/tape"
)

// decodeTape is a fast decoder for tapes. It decodes into the tape package's types
// without reflection, takes raw bodies (json.RawMessage) as slices of data, normalizes like
// tape.Unmarshal, and reports whether data is in canonical encoding, the form of every
// tape file TapeBox writes: exactly what tape.Marshal gives for the tape (the key order
// and omitted fields of the tape types, no whitespace, sorted map keys, encoding/json's
// escapes and number formats, one trailing newline).
//
// It is a fast path, not the reference. It returns an error for anything unusual (an
// unknown field, invalid UTF-8, a value of the wrong kind) and Export then falls back to
// tape.Unmarshal and tape.Marshal; it says canonical only when it has checked every byte.
// Tests hold it to tape.Marshal on generated, golden and randomly mutated tapes, and
// Validate checks exported rows with the reference path.
//
// With lean, the data of stream chunks is checked but not kept (Chunk.Data stays empty):
// the rows count chunks and read nothing else of them.
func decodeTape(data []byte, lean bool) (t *tape.Tape, canonical bool, err error) {
	t, canonical, _, err = decodeTapeLean(data, lean)
	return t, canonical, err
}

// decodeTapeLean is decodeTape that also says whether the tape is complete: a lean
// decoding keeps chunk data once the input shows it is not canonical (its canonical
// encoding will be needed), so only data before that point is missing.
func decodeTapeLean(data []byte, lean bool) (t *tape.Tape, canonical, complete bool, err error) {
	d := &decoder{data: data, lean: lean}
	defer func() { complete = !d.dropped }()
	t = &tape.Tape{}
	var o order
	err = d.object(func(key []byte) error {
		switch string(key) {
		case "version":
			d.field(&o, 0)
			v, err := d.int64()
			t.Version = int(v)
			return err
		case "meta":
			d.field(&o, 1)
			return d.meta(&t.Meta)
		case "threads":
			d.field(&o, 2)
			if d.nullNormalized() {
				return nil
			}
			t.Threads = []*tape.Thread{}
			return d.array(func() error {
				th := &tape.Thread{}
				t.Threads = append(t.Threads, th)
				return d.thread(th)
			})
		case "digest":
			d.field(&o, 3)
			if d.nullNormalized() { // omitted when nil
				return nil
			}
			t.Digest = &tape.Digest{}
			return d.digest(t.Digest)
		}
		return d.unknown(key)
	})
	if err != nil {
		return nil, false, false, err
	}
	d.check(o, 0b111|bit(3, t.Digest != nil))
	if d.repeated {
		return nil, false, false, d.errorf("a key repeats in an object")
	}
	if len(data)-d.i != 1 || data[d.i] != '\n' {
		d.nonCanon = true // tape.Marshal ends the tape with one newline
		if d.ws(); d.i != len(data) {
			return nil, false, false, d.errorf("data after the tape")
		}
	}
	if t.Version != tape.Version {
		return nil, false, false, fmt.Errorf("version %d: %w", t.Version, tape.ErrUnsupportedVersion)
	}
	tape.Normalize(t)
	return t, !d.nonCanon, true, nil
}

// decodeCanonical decodes a tape and returns it with its canonical encoding, which is data
// itself (no copy) when data is canonical, as files TapeBox writes are. A valid tape in
// another form (whitespace, key order, escapes of another encoder) is decoded on the fast
// path too and encoded again with tape.Marshal; only unusual input takes tape.Unmarshal.
// lean is decodeTape's, for canonical data.
func decodeCanonical(data []byte, lean bool) (*tape.Tape, []byte, error) {
	t, canonical, complete, err := decodeTapeLean(data, lean)
	if err == nil && canonical {
		return t, data, nil
	}
	if err == nil && !complete {
		// Valid but written by another tool (other key order or escapes past its start):
		// the canonical encoding needs the chunk data the lean decoding left out.
		t, _, err = decodeTape(data, false)
	}
	if err != nil {
		// Unusual input: the reference decoder decides, and words the error.
		if t, err = tape.Unmarshal(data); err != nil {
			return nil, nil, err
		}
	}
	enc, err := tape.Marshal(t)
	if err != nil {
		return nil, nil, err
	}
	if bytes.Equal(enc, data) {
		enc = data
	}
	return t, enc, nil
}

// decoder reads JSON from data at offset i. nonCanon records the first departure from
// the canonical encoding; decoding goes on, since the tape may still be valid.
type decoder struct {
	data     []byte
	i        int
	nonCanon bool
	// repeated records a key seen twice in one object: encoding/json's handling of that
	// (the last wins, maps merged) is left to it.
	repeated bool
	// lean leaves stream chunks' data empty (rows only count chunks) while the input is
	// canonical; dropped says some was left out.
	lean, dropped bool
	memo          *threadMemo // of the thread being decoded
}

// threadMemo remembers the thread's previous request as spans of data. A request
// repeats the conversation so far, the system prompt and the tools of the one before it:
// where the bytes are the same, the values decoded from them are taken over instead of
// decoded again, which keeps decoding linear in the length of a conversation.
type threadMemo struct {
	system     []byte // the system string, quotes included
	systemText string
	tools      []byte // the tools array
	toolList   []tape.Tool
	msgSpans   [][]byte
	msgs       []tape.Message
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

var errUnusual = errors.New("unusual input")

func (d *decoder) errorf(format string, args ...any) error {
	return fmt.Errorf("decode tape at byte %d: %s: %w", d.i, fmt.Sprintf(format, args...), errUnusual)
}

func (d *decoder) unknown(key []byte) error { return d.errorf("unknown field %q", key) }

// order tracks the keys of one object: the bit of every field seen, and the last field's
// index. Canonical objects list their fields in the order of the Go struct.
type order struct {
	seen uint32
	last int8
}

// field records key index i of the current object.
func (d *decoder) field(o *order, i int8) {
	if o.seen&(1<<i) != 0 {
		d.repeated = true
	}
	if o.seen != 0 && i <= o.last {
		d.nonCanon = true // out of order, or repeated
	}
	o.seen |= 1 << i
	o.last = i
}

// check compares the fields seen with those the canonical encoding has.
func (d *decoder) check(o order, want uint32) {
	if o.seen != want {
		d.nonCanon = true
	}
}

// bit returns 1<<i if present.
func bit(i int8, present bool) uint32 {
	if present {
		return 1 << i
	}
	return 0
}

// ws skips whitespace, which the canonical encoding has none of.
func (d *decoder) ws() {
	for d.i < len(d.data) {
		switch d.data[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
			d.nonCanon = true
		default:
			return
		}
	}
}

func (d *decoder) next() byte {
	if d.i < len(d.data) {
		if c := d.data[d.i]; c > ' ' {
			return c
		}
	}
	d.ws()
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

// nullNormalized consumes a null where tape.Unmarshal normalizes null to an empty value,
// so that tape.Marshal never writes null there.
func (d *decoder) nullNormalized() bool {
	if d.null() {
		d.nonCanon = true
		return true
	}
	return false
}

// object calls fn for each key, with d positioned at the value, which fn must consume.
func (d *decoder) object(fn func(key []byte) error) error {
	if err := d.expect('{'); err != nil {
		return err
	}
	if d.next() == '}' {
		d.i++
		return nil
	}
	for {
		key, err := d.strBytes(false)
		if err != nil {
			return err
		}
		if err := d.expect(':'); err != nil {
			return err
		}
		if err := fn(key); err != nil {
			return err
		}
		switch d.next() {
		case ',':
			d.i++
		case '}':
			d.i++
			return nil
		default:
			return d.errorf("want , or }")
		}
	}
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
	if err := d.expect('['); err != nil {
		return err
	}
	if d.next() == ']' {
		d.i++
		return nil
	}
	for {
		if err := fn(); err != nil {
			return err
		}
		switch d.next() {
		case ',':
			d.i++
		case ']':
			d.i++
			return nil
		default:
			return d.errorf("want , or ]")
		}
	}
}

// strBytes reads a string. Without escapes the result aliases data; with escapes it is
// a fresh slice. Invalid UTF-8 is unusual (encoding/json would replace it). html says
// the string was encoded with encoding/json's HTML escaping (by json.Marshal).
func (d *decoder) strBytes(html bool) ([]byte, error) {
	if err := d.expect('"'); err != nil {
		return nil, err
	}
	rest := d.data[d.i:]
	end := bytes.IndexByte(rest, '"')
	if end < 0 {
		return nil, d.errorf("unterminated string")
	}
	if bytes.IndexByte(rest[:end], '\\') >= 0 {
		return d.unescape(html, true)
	}
	s := rest[:end]
	control, ascii := scanText(s)
	if control {
		return nil, d.errorf("control character in a string")
	}
	if !ascii {
		if !utf8.Valid(s) {
			return nil, d.errorf("invalid UTF-8")
		}
		if bytes.Contains(s, lineSep) || bytes.Contains(s, paraSep) {
			d.nonCanon = true // encoding/json escapes U+2028 and U+2029
		}
	}
	if html && bytes.ContainsAny(s, "<>&") {
		d.nonCanon = true
	}
	d.i += end + 1
	return s, nil
}

// nextQuoteOrBackslash returns the index of the first '"' or '\\' in data from i on, or
// len(data).
func nextQuoteOrBackslash(data []byte, i int) int {
	rest := data[i:]
	q := bytes.IndexByte(rest, '"')
	if q < 0 {
		q = len(rest)
	}
	if b := bytes.IndexByte(rest[:q], '\\'); b >= 0 {
		q = b
	}
	return i + q
}

// scanText reports whether s holds a control character (below 0x20, which JSON strings
// must escape) and whether it is all ASCII, eight bytes at a time.
func scanText(s []byte) (control, ascii bool) {
	const (
		ones  = 0x0101010101010101
		highs = 0x8080808080808080
	)
	var hi, lo uint64
	for len(s) >= 8 {
		x := binary.LittleEndian.Uint64(s)
		hi |= x
		lo |= (x - 0x20*ones) &^ x // a high bit set where a byte is below 0x20
		s = s[8:]
	}
	for _, c := range s {
		hi |= uint64(c)
		if c < 0x20 {
			lo |= highs
		}
	}
	return lo&highs != 0, hi&highs == 0
}

var (
	lineSep = []byte("\u2028")
	paraSep = []byte("\u2029")
)

// unescape reads the rest of a string that holds escapes, and checks that each escape
// is the one encoding/json writes. Without keep it only checks, and returns nil.
func (d *decoder) unescape(html, keep bool) ([]byte, error) {
	var out []byte
	if keep {
		// The unescaped string is no longer than its escaped form: size the buffer once.
		out = make([]byte, 0, d.rawStringLen())
	}
	start := d.i
	nonASCII := false
	for d.i < len(d.data) {
		c := d.data[d.i]
		switch {
		case c == '"':
			if nonASCII {
				// encoding/json writes U+2028 and U+2029 escaped.
				d.checkRawSeparators(start)
			}
			d.i++
			return out, nil
		case c == '\\':
			if d.i+1 >= len(d.data) {
				return nil, d.errorf("unterminated escape")
			}
			e := d.data[d.i+1]
			d.i += 2
			var b byte
			switch e {
			case '"', '\\':
				b = e
			case '/':
				b = e
				d.nonCanon = true
			case 'b':
				b = '\b'
			case 'f':
				b = '\f'
			case 'n':
				b = '\n'
			case 'r':
				b = '\r'
			case 't':
				b = '\t'
			case 'u':
				hexStart := d.i
				r, ok := d.hex4()
				if !ok {
					return nil, d.errorf("bad \\u escape")
				}
				if !canonicalU(d.data[hexStart:d.i], r, html) {
					d.nonCanon = true
				}
				if utf16.IsSurrogate(r) {
					r2, ok2 := rune(0), false
					if d.i+1 < len(d.data) && d.data[d.i] == '\\' && d.data[d.i+1] == 'u' {
						d.i += 2
						r2, ok2 = d.hex4()
					}
					if r = utf16.DecodeRune(r, r2); !ok2 || r == utf8.RuneError {
						return nil, d.errorf("lone surrogate")
					}
				}
				if keep {
					out = utf8.AppendRune(out, r)
				}
				continue
			default:
				return nil, d.errorf("bad escape")
			}
			if keep {
				out = append(out, b)
			}
		default:
			// Take up to the next quote or backslash in one go. Escapes are ASCII, so
			// checking UTF-8 piece by piece checks the whole string.
			j := nextQuoteOrBackslash(d.data, d.i)
			seg := d.data[d.i:j]
			control, ascii := scanText(seg)
			if control {
				return nil, d.errorf("control character in a string")
			}
			if !ascii {
				if !utf8.Valid(seg) {
					return nil, d.errorf("invalid UTF-8")
				}
				nonASCII = true
			}
			if html && bytes.ContainsAny(seg, "<>&") {
				d.nonCanon = true
			}
			if keep {
				out = append(out, seg...)
			}
			d.i = j
		}
	}
	d.i = start
	return nil, d.errorf("unterminated string")
}

// rawStringLen returns the length of the escaped string that starts at d.i (after its
// opening quote), up to its closing quote, or to the end of data.
func (d *decoder) rawStringLen() int {
	i := d.i
	for {
		j := bytes.IndexByte(d.data[i:], '"')
		if j < 0 {
			return len(d.data) - d.i
		}
		k := i + j
		n := 0
		for k-1-n >= d.i && d.data[k-1-n] == '\\' {
			n++
		}
		if n%2 == 0 {
			return k - d.i
		}
		i = k + 1
	}
}

// checkRawSeparators marks the string from start as not canonical if it holds U+2028 or
// U+2029 unescaped.
func (d *decoder) checkRawSeparators(start int) {
	raw := d.data[start:d.i]
	if bytes.Contains(raw, lineSep) || bytes.Contains(raw, paraSep) {
		d.nonCanon = true
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

func (d *decoder) hex4() (rune, bool) {
	if d.i+4 > len(d.data) {
		return 0, false
	}
	var v rune
	for _, c := range d.data[d.i : d.i+4] {
		v <<= 4
		switch {
		case c >= '0' && c <= '9':
			v |= rune(c - '0')
		case c >= 'a' && c <= 'f':
			v |= rune(c - 'a' + 10)
		case c >= 'A' && c <= 'F':
			v |= rune(c - 'A' + 10)
		default:
			return 0, false
		}
	}
	d.i += 4
	return v, true
}

// skipStr checks a string value as strBytes does, without keeping it.
func (d *decoder) skipStr() error {
	if err := d.expect('"'); err != nil {
		return err
	}
	rest := d.data[d.i:]
	end := bytes.IndexByte(rest, '"')
	if end < 0 {
		return d.errorf("unterminated string")
	}
	if bytes.IndexByte(rest[:end], '\\') >= 0 {
		_, err := d.unescape(false, false)
		return err
	}
	d.i--
	_, err := d.strBytes(false)
	return err
}

// str reads a string value.
func (d *decoder) str() (string, error) {
	b, fresh, err := d.strBytesFresh()
	if err != nil || !fresh {
		return string(b), err
	}
	// unescape's buffer is ours and never written again: make it the string.
	return unsafe.String(unsafe.SliceData(b), len(b)), nil
}

// strBytesFresh is strBytes(false) that also says whether the result is a fresh buffer
// rather than a slice of data.
func (d *decoder) strBytesFresh() ([]byte, bool, error) {
	d.next()
	fresh := false
	if d.i < len(d.data) && d.data[d.i] == '"' {
		rest := d.data[d.i+1:]
		if end := bytes.IndexByte(rest, '"'); end >= 0 {
			fresh = bytes.IndexByte(rest[:end], '\\') >= 0
		}
	}
	b, err := d.strBytes(false)
	return b, fresh && len(b) > 0, err
}

func (d *decoder) strInto(dst *string) error {
	s, err := d.str()
	*dst = s
	return err
}

// number returns the next number token, checked against the JSON grammar.
func (d *decoder) number() ([]byte, error) {
	d.next()
	start, j, n := d.i, d.i, len(d.data)
	digits := func() bool {
		k := j
		for j < n && d.data[j] >= '0' && d.data[j] <= '9' {
			j++
		}
		return j > k
	}
	if j < n && d.data[j] == '-' {
		j++
	}
	switch {
	case j < n && d.data[j] == '0':
		j++
	case !digits():
		return nil, d.errorf("want a number")
	}
	if j < n && d.data[j] == '.' {
		j++
		if !digits() {
			return nil, d.errorf("bad number")
		}
	}
	if j < n && (d.data[j] == 'e' || d.data[j] == 'E') {
		j++
		if j < n && (d.data[j] == '+' || d.data[j] == '-') {
			j++
		}
		if !digits() {
			return nil, d.errorf("bad number")
		}
	}
	d.i = j
	return d.data[start:j], nil
}

func (d *decoder) int64() (int64, error) {
	tok, err := d.number()
	if err != nil {
		return 0, err
	}
	v, err := strconv.ParseInt(string(tok), 10, 64)
	if err != nil {
		return 0, d.errorf("%v", err)
	}
	var buf [24]byte
	if string(strconv.AppendInt(buf[:0], v, 10)) != string(tok) {
		d.nonCanon = true
	}
	return v, nil
}

func (d *decoder) float() (float64, error) {
	tok, err := d.number()
	if err != nil {
		return 0, err
	}
	v, err := strconv.ParseFloat(string(tok), 64)
	if err != nil {
		return 0, d.errorf("%v", err)
	}
	var buf [32]byte
	if string(appendFloat(buf[:0], v)) != string(tok) {
		d.nonCanon = true
	}
	return v, nil
}

// appendFloat formats f as encoding/json does (like ES6: 'f' form unless the exponent is
// very small or large, and exponents without padding).
func appendFloat(b []byte, f float64) []byte {
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
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
	if _, err := d.strBytes(false); err != nil {
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

// raw returns the next value as it is in data (no copy). A null gives "null", as
// encoding/json gives a json.RawMessage field. Canonical raw values are compact.
func (d *decoder) raw() (json.RawMessage, error) {
	d.next()
	start := d.i
	if err := d.skip(); err != nil {
		return nil, err
	}
	return json.RawMessage(d.data[start:d.i]), nil
}

// skip consumes one value, checking it against the JSON grammar (encoding/json would
// refuse to encode an invalid raw value). Strings inside raw values are not decoded:
// encoding/json keeps them as they are.
func (d *decoder) skip() error {
	switch c := d.next(); {
	case c == '{':
		return d.object(func([]byte) error { return d.skip() })
	case c == '[':
		return d.array(d.skip)
	case c == '"':
		d.i++
		for d.i < len(d.data) {
			switch c := d.data[d.i]; c {
			case '"':
				d.i++
				return nil
			case '\\':
				if d.i+1 >= len(d.data) {
					return d.errorf("unterminated escape")
				}
				switch d.data[d.i+1] {
				case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
					d.i += 2
				case 'u':
					d.i += 2
					if _, ok := d.hex4(); !ok {
						return d.errorf("bad \\u escape")
					}
				default:
					return d.errorf("bad escape")
				}
			default:
				j := nextQuoteOrBackslash(d.data, d.i)
				if control, _ := scanText(d.data[d.i:j]); control {
					return d.errorf("control character in a string")
				}
				d.i = j
			}
		}
		return d.errorf("unterminated string")
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

func (d *decoder) stringMap(m *map[string]string) error {
	if d.nullNormalized() {
		*m = nil
		return nil
	}
	*m = map[string]string{}
	return d.sortedObject(func(key []byte) error {
		v, err := d.str()
		(*m)[string(key)] = v
		return err
	})
}

func (d *decoder) headers(h *tape.Headers) error {
	var m map[string]string
	err := d.stringMap(&m)
	*h = m
	return err
}

func (d *decoder) meta(m *tape.Meta) error {
	var o order
	err := d.object(func(key []byte) error {
		switch string(key) {
		case "tape_id":
			d.field(&o, 0)
			return d.strInto(&m.TapeID)
		case "harness":
			d.field(&o, 1)
			return d.strInto(&m.Harness)
		case "harness_version":
			d.field(&o, 2)
			return d.strInto(&m.HarnessVersion)
		case "provider":
			d.field(&o, 3)
			s, err := d.str()
			m.Provider = tape.Provider(s)
			return err
		case "model":
			d.field(&o, 4)
			return d.strInto(&m.Model)
		case "cwd":
			d.field(&o, 5)
			return d.strInto(&m.Cwd)
		case "started_at":
			d.field(&o, 6)
			t, err := d.time()
			m.StartedAt = t
			return err
		case "task":
			d.field(&o, 7)
			return d.stringMap(&m.Task)
		case "replay_of":
			d.field(&o, 8)
			if d.null() {
				m.ReplayOf = nil
				return nil
			}
			s, err := d.str()
			m.ReplayOf = &s
			return err
		case "labels":
			d.field(&o, 9)
			return d.stringMap(&m.Labels)
		case "workspace":
			d.field(&o, 10)
			if d.nullNormalized() { // omitted when nil
				m.Workspace = nil
				return nil
			}
			w := &tape.Workspace{}
			m.Workspace = w
			return d.workspace(w)
		case "limits":
			d.field(&o, 11)
			if d.nullNormalized() { // omitted when nil
				m.Limits = nil
				return nil
			}
			m.Limits = &tape.Limits{}
			return d.limits(m.Limits)
		case "forked_from":
			d.field(&o, 12)
			if d.nullNormalized() { // omitted when nil
				m.ForkedFrom = nil
				return nil
			}
			f := &tape.ForkedFrom{}
			m.ForkedFrom = f
			return d.forkedFrom(f)
		case "ended":
			d.field(&o, 13)
			if d.null() {
				m.Ended = nil
				return nil
			}
			e := &tape.Ended{}
			m.Ended = e
			return d.ended(e)
		}
		return d.unknown(key)
	})
	d.check(o, 0b10_0011_1101_1111|bit(5, m.Cwd != "")|bit(10, m.Workspace != nil)|bit(11, m.Limits != nil)|bit(12, m.ForkedFrom != nil))
	return err
}

// workspace reads meta.workspace, whose every field is omitted when empty.
func (d *decoder) workspace(w *tape.Workspace) error {
	var o order
	err := d.object(func(key []byte) error {
		var err error
		switch string(key) {
		case "snapshot":
			d.field(&o, 0)
			err = d.strInto(&w.Snapshot)
		case "digest":
			d.field(&o, 1)
			err = d.strInto(&w.Digest)
		case "size":
			d.field(&o, 2)
			w.Size, err = d.int64()
		case "files":
			d.field(&o, 3)
			var v int64
			v, err = d.int64()
			w.Files = int(v)
		case "bytes":
			d.field(&o, 4)
			w.Bytes, err = d.int64()
		case "exclude":
			d.field(&o, 5)
			w.Exclude = nil
			if d.null() {
				return nil
			}
			w.Exclude = []string{}
			err = d.array(func() error {
				s, err := d.str()
				w.Exclude = append(w.Exclude, s)
				return err
			})
		case "end":
			d.field(&o, 6)
			w.End = nil
			if d.null() {
				return nil
			}
			w.End = []tape.FileEntry{}
			err = d.array(func() error {
				var e tape.FileEntry
				err := d.fileEntry(&e)
				w.End = append(w.End, e)
				return err
			})
		default:
			err = d.unknown(key)
		}
		return err
	})
	d.check(o, bit(0, w.Snapshot != "")|bit(1, w.Digest != "")|bit(2, w.Size != 0)|bit(3, w.Files != 0)|
		bit(4, w.Bytes != 0)|bit(5, len(w.Exclude) > 0)|bit(6, len(w.End) > 0))
	return err
}

// fileEntry reads one entry of the end manifest.
func (d *decoder) fileEntry(e *tape.FileEntry) error {
	var o order
	err := d.object(func(key []byte) error {
		var err error
		switch string(key) {
		case "path":
			d.field(&o, 0)
			err = d.strInto(&e.Path)
		case "type":
			d.field(&o, 1)
			err = d.strInto(&e.Type)
		case "mode":
			d.field(&o, 2)
			err = d.strInto(&e.Mode)
		case "size":
			d.field(&o, 3)
			e.Size, err = d.int64()
		case "sha256":
			d.field(&o, 4)
			err = d.strInto(&e.SHA256)
		case "link":
			d.field(&o, 5)
			err = d.strInto(&e.Link)
		default:
			err = d.unknown(key)
		}
		return err
	})
	d.check(o, 0b1111|bit(4, e.SHA256 != "")|bit(5, e.Link != ""))
	return err
}

// forkedFrom reads meta.forked_from, every field of which is always there.
func (d *decoder) forkedFrom(f *tape.ForkedFrom) error {
	var o order
	err := d.object(func(key []byte) error {
		switch string(key) {
		case "tape_id":
			d.field(&o, 0)
			return d.strInto(&f.TapeID)
		case "thread":
			d.field(&o, 1)
			return d.strInto(&f.Thread)
		case "step":
			d.field(&o, 2)
			n, err := d.int64()
			f.Step = int(n)
			return err
		case "served":
			d.field(&o, 3)
			f.Served = map[string]int{}
			return d.sortedObject(func(key []byte) error {
				n, err := d.int64()
				f.Served[string(key)] = int(n)
				return err
			})
		case "overrides":
			d.field(&o, 4)
			return d.stringMap(&f.Overrides)
		}
		return d.unknown(key)
	})
	d.check(o, 0b1_1111)
	return err
}

func (d *decoder) ended(e *tape.Ended) error {
	var o order
	err := d.object(func(key []byte) error {
		switch string(key) {
		case "reason":
			d.field(&o, 0)
			s, err := d.str()
			e.Reason = tape.EndReason(s)
			return err
		case "at":
			d.field(&o, 1)
			t, err := d.time()
			e.At = t
			return err
		case "detail":
			d.field(&o, 2)
			return d.strInto(&e.Detail)
		case "limit":
			d.field(&o, 3)
			return d.strInto(&e.Limit)
		}
		return d.unknown(key)
	})
	d.check(o, 0b11|bit(2, e.Detail != "")|bit(3, e.Limit != ""))
	return err
}

func (d *decoder) thread(th *tape.Thread) error {
	var o order
	err := d.object(func(key []byte) error {
		switch string(key) {
		case "id":
			d.field(&o, 0)
			return d.strInto(&th.ID)
		case "parent":
			d.field(&o, 1)
			if d.null() {
				th.Parent = nil
				return nil
			}
			// Parent.MarshalJSON uses json.Marshal, which escapes HTML.
			var pair []string
			if err := d.array(func() error {
				b, err := d.strBytes(true)
				pair = append(pair, string(b))
				return err
			}); err != nil {
				return err
			}
			if len(pair) != 2 {
				return d.errorf("parent: want [thread id, tool call id]")
			}
			th.Parent = &tape.Parent{ThreadID: pair[0], ToolCallID: pair[1]}
			return nil
		case "steps":
			d.field(&o, 2)
			if d.nullNormalized() {
				return nil
			}
			th.Steps = []*tape.Step{}
			d.memo = &threadMemo{}
			defer func() { d.memo = nil }()
			return d.array(func() error {
				s := &tape.Step{}
				th.Steps = append(th.Steps, s)
				return d.step(s)
			})
		}
		return d.unknown(key)
	})
	d.check(o, 0b111)
	return err
}

func (d *decoder) step(s *tape.Step) error {
	var o order
	err := d.object(func(key []byte) error {
		switch string(key) {
		case "request":
			d.field(&o, 0)
			return d.request(&s.Request)
		case "response":
			d.field(&o, 1)
			return d.response(&s.Response)
		case "tool_calls":
			d.field(&o, 2)
			if d.nullNormalized() {
				return nil
			}
			s.ToolCalls = []tape.ToolCall{}
			return d.array(func() error {
				var c tape.ToolCall
				err := d.toolCall(&c)
				s.ToolCalls = append(s.ToolCalls, c)
				return err
			})
		case "tool_results":
			d.field(&o, 3)
			if d.nullNormalized() {
				return nil
			}
			s.ToolResults = []tape.ToolResult{}
			return d.array(func() error {
				var r tape.ToolResult
				err := d.toolResult(&r)
				s.ToolResults = append(s.ToolResults, r)
				return err
			})
		case "timing":
			d.field(&o, 4)
			return d.timing(&s.Timing)
		case "served_from_tape":
			d.field(&o, 5)
			var err error
			s.ServedFromTape, err = d.boolean()
			return err
		case "digest":
			d.field(&o, 6)
			return d.strInto(&s.Digest)
		}
		return d.unknown(key)
	})
	d.check(o, 0b1_1111|bit(5, s.ServedFromTape)|bit(6, s.Digest != ""))
	return err
}

func (d *decoder) toolCall(c *tape.ToolCall) error {
	var o order
	err := d.object(func(key []byte) error {
		switch string(key) {
		case "id":
			d.field(&o, 0)
			return d.strInto(&c.ID)
		case "name":
			d.field(&o, 1)
			return d.strInto(&c.Name)
		case "input":
			d.field(&o, 2)
			var err error
			c.Input, err = d.raw()
			return err
		case "kind":
			d.field(&o, 3)
			return d.strInto(&c.Kind)
		case "namespace":
			d.field(&o, 4)
			return d.strInto(&c.Namespace)
		}
		return d.unknown(key)
	})
	d.check(o, 0b111|bit(3, c.Kind != "")|bit(4, c.Namespace != ""))
	return err
}

func (d *decoder) toolResult(r *tape.ToolResult) error {
	var o order
	err := d.object(func(key []byte) error {
		switch string(key) {
		case "tool_call_id":
			d.field(&o, 0)
			return d.strInto(&r.ToolCallID)
		case "content":
			d.field(&o, 1)
			if d.nullNormalized() {
				return nil
			}
			return d.blocks(&r.Content)
		case "is_error":
			d.field(&o, 2)
			var err error
			r.IsError, err = d.boolean()
			return err
		case "duration_ms":
			d.field(&o, 3)
			return d.optFloat(&r.DurationMS)
		}
		return d.unknown(key)
	})
	d.check(o, 0b1111)
	return err
}

func (d *decoder) timing(t *tape.Timing) error {
	var o order
	err := d.object(func(key []byte) error {
		var err error
		switch string(key) {
		case "request_at":
			d.field(&o, 0)
			t.RequestAt, err = d.float()
		case "first_byte_at":
			d.field(&o, 1)
			t.FirstByteAt, err = d.float()
		case "last_byte_at":
			d.field(&o, 2)
			t.LastByteAt, err = d.float()
		case "next_request_at":
			d.field(&o, 3)
			err = d.optFloat(&t.NextRequestAt)
		default:
			err = d.unknown(key)
		}
		return err
	})
	d.check(o, 0b1111)
	return err
}

func (d *decoder) optFloat(dst **float64) error {
	if d.null() {
		*dst = nil
		return nil
	}
	v, err := d.float()
	*dst = &v
	return err
}

func (d *decoder) request(r *tape.Request) error {
	var o order
	err := d.object(func(key []byte) error {
		var err error
		switch string(key) {
		case "path":
			d.field(&o, 0)
			err = d.strInto(&r.Path)
		case "system":
			d.field(&o, 1)
			if m := d.memo; m != nil && d.reuse(m.system) {
				r.System = m.systemText
				return nil
			}
			start := d.i
			err = d.strInto(&r.System)
			if m := d.memo; m != nil && err == nil {
				m.system, m.systemText = d.data[start:d.i], r.System
			}
		case "messages":
			d.field(&o, 2)
			if d.nullNormalized() {
				return nil
			}
			r.Messages = []tape.Message{}
			var spans [][]byte
			err = d.array(func() error {
				k := len(r.Messages)
				if m := d.memo; m != nil && k < len(m.msgSpans) && d.reuse(m.msgSpans[k]) {
					r.Messages = append(r.Messages, m.msgs[k])
					spans = append(spans, m.msgSpans[k])
					return nil
				}
				var msg tape.Message
				d.next()
				start := d.i
				err := d.message(&msg)
				r.Messages = append(r.Messages, msg)
				spans = append(spans, d.data[start:d.i])
				return err
			})
			if m := d.memo; m != nil && err == nil {
				m.msgSpans, m.msgs = spans, r.Messages
			}
		case "tools":
			d.field(&o, 3)
			if d.nullNormalized() {
				return nil
			}
			if m := d.memo; m != nil && d.reuse(m.tools) {
				r.Tools = m.toolList
				return nil
			}
			start := d.i
			r.Tools = []tape.Tool{}
			err = d.array(func() error {
				var t tape.Tool
				err := d.tool(&t)
				r.Tools = append(r.Tools, t)
				return err
			})
			if m := d.memo; m != nil && err == nil {
				m.tools, m.toolList = d.data[start:d.i], r.Tools
			}
		case "params":
			d.field(&o, 4)
			if d.nullNormalized() {
				return nil
			}
			r.Params = map[string]json.RawMessage{}
			err = d.sortedObject(func(key []byte) error {
				v, err := d.raw()
				r.Params[string(key)] = v
				return err
			})
		case "stream":
			d.field(&o, 5)
			r.Stream, err = d.boolean()
		case "headers":
			d.field(&o, 6)
			err = d.headers(&r.Headers)
		case "raw":
			d.field(&o, 7)
			if m := d.memo; m != nil {
				r.Raw, m.raw, err = d.rawReusing(m.raw)
			} else {
				r.Raw, err = d.raw()
			}
		default:
			err = d.unknown(key)
		}
		return err
	})
	d.check(o, 0b1111_1111)
	return err
}

func (d *decoder) message(m *tape.Message) error {
	var o order
	err := d.object(func(key []byte) error {
		switch string(key) {
		case "role":
			d.field(&o, 0)
			return d.strInto(&m.Role)
		case "content":
			d.field(&o, 1)
			if d.nullNormalized() {
				return nil
			}
			return d.blocks(&m.Content)
		}
		return d.unknown(key)
	})
	d.check(o, 0b11)
	return err
}

func (d *decoder) tool(t *tape.Tool) error {
	var o order
	err := d.object(func(key []byte) error {
		var err error
		switch string(key) {
		case "name":
			d.field(&o, 0)
			err = d.strInto(&t.Name)
		case "description":
			d.field(&o, 1)
			err = d.strInto(&t.Description)
		case "kind":
			d.field(&o, 2)
			err = d.strInto(&t.Kind)
		case "input_schema":
			d.field(&o, 3)
			t.InputSchema, err = d.raw()
		default:
			err = d.unknown(key)
		}
		return err
	})
	d.check(o, 0b101|bit(1, t.Description != "")|bit(3, len(t.InputSchema) > 0))
	return err
}

func (d *decoder) response(r *tape.Response) error {
	var o order
	err := d.object(func(key []byte) error {
		var err error
		switch string(key) {
		case "status":
			d.field(&o, 0)
			var v int64
			v, err = d.int64()
			r.Status = int(v)
		case "headers":
			d.field(&o, 1)
			err = d.headers(&r.Headers)
		case "content":
			d.field(&o, 2)
			if d.nullNormalized() {
				return nil
			}
			err = d.blocks(&r.Content)
		case "stop_reason":
			d.field(&o, 3)
			err = d.strInto(&r.StopReason)
		case "usage":
			d.field(&o, 4)
			err = d.usage(&r.Usage)
		case "raw":
			d.field(&o, 5)
			r.Raw, err = d.raw()
		case "chunks":
			d.field(&o, 6)
			if d.nullNormalized() {
				return nil
			}
			r.Chunks = []tape.Chunk{}
			err = d.array(func() error {
				var c tape.Chunk
				err := d.chunk(&c)
				r.Chunks = append(r.Chunks, c)
				return err
			})
		default:
			err = d.unknown(key)
		}
		return err
	})
	d.check(o, 0b111_1111)
	return err
}

func (d *decoder) usage(u *tape.Usage) error {
	var o order
	err := d.object(func(key []byte) error {
		var err error
		switch string(key) {
		case "input_tokens":
			d.field(&o, 0)
			u.InputTokens, err = d.int64()
		case "output_tokens":
			d.field(&o, 1)
			u.OutputTokens, err = d.int64()
		case "cache_read_input_tokens":
			d.field(&o, 2)
			u.CacheReadInputTokens, err = d.int64()
		case "cache_creation_input_tokens":
			d.field(&o, 3)
			u.CacheCreationInputTokens, err = d.int64()
		case "reasoning_tokens":
			d.field(&o, 4)
			u.ReasoningTokens, err = d.int64()
		default:
			err = d.unknown(key)
		}
		return err
	})
	d.check(o, 0b1_1111)
	return err
}

func (d *decoder) chunk(c *tape.Chunk) error {
	var o order
	err := d.object(func(key []byte) error {
		var err error
		switch string(key) {
		case "at_ms":
			d.field(&o, 0)
			c.AtMS, err = d.float()
		case "data":
			d.field(&o, 1)
			if d.lean && !d.nonCanon {
				d.dropped = true
				err = d.skipStr()
			} else {
				err = d.strInto(&c.Data)
			}
		default:
			err = d.unknown(key)
		}
		return err
	})
	d.check(o, 0b11)
	return err
}

// blocks reads a list of blocks; null gives nil.
func (d *decoder) blocks(dst *[]tape.Block) error {
	if d.null() {
		*dst = nil
		return nil
	}
	*dst = []tape.Block{}
	return d.array(func() error {
		var b tape.Block
		err := d.block(&b)
		*dst = append(*dst, b)
		return err
	})
}

func (d *decoder) block(b *tape.Block) error {
	var o order
	err := d.object(func(key []byte) error {
		var err error
		switch string(key) {
		case "type":
			d.field(&o, 0)
			err = d.strInto(&b.Type)
		case "text":
			d.field(&o, 1)
			err = d.strInto(&b.Text)
		case "id":
			d.field(&o, 2)
			err = d.strInto(&b.ID)
		case "name":
			d.field(&o, 3)
			err = d.strInto(&b.Name)
		case "input":
			d.field(&o, 4)
			b.Input, err = d.raw()
		case "tool_call_id":
			d.field(&o, 5)
			err = d.strInto(&b.ToolCallID)
		case "content":
			d.field(&o, 6)
			err = d.blocks(&b.Content)
		case "is_error":
			d.field(&o, 7)
			b.IsError, err = d.boolean()
		case "raw":
			d.field(&o, 8)
			b.Raw, err = d.raw()
		default:
			err = d.unknown(key)
		}
		return err
	})
	// Every field but type is omitted when empty.
	d.check(o, 1|bit(1, b.Text != "")|bit(2, b.ID != "")|bit(3, b.Name != "")|bit(4, len(b.Input) > 0)|
		bit(5, b.ToolCallID != "")|bit(6, len(b.Content) > 0)|bit(7, b.IsError)|bit(8, len(b.Raw) > 0))
	return err
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

// rawReusing is raw for a request body, reusing what prev (the thread's previous body,
// or nil) holds, and returns the memo of this body for the next.
func (d *decoder) rawReusing(prev *rawMemo) (json.RawMessage, *rawMemo, error) {
	if d.next() != '{' {
		v, err := d.raw()
		return v, nil, err
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
	return json.RawMessage(d.data[start:d.i]), m, nil
}

// limits reads meta.limits, whose every field is omitted when zero.
func (d *decoder) limits(l *tape.Limits) error {
	var o order
	err := d.object(func(key []byte) error {
		var err error
		var n int64
		switch string(key) {
		case "max_cost_usd":
			d.field(&o, 0)
			l.MaxCostUSD, err = d.float()
		case "max_steps":
			d.field(&o, 1)
			n, err = d.int64()
			l.MaxSteps = int(n)
		case "max_thread_steps":
			d.field(&o, 2)
			n, err = d.int64()
			l.MaxThreadSteps = int(n)
		case "max_tokens":
			d.field(&o, 3)
			l.MaxTokens, err = d.int64()
		case "max_repeat":
			d.field(&o, 4)
			n, err = d.int64()
			l.MaxRepeat = int(n)
		default:
			err = d.unknown(key)
		}
		return err
	})
	d.check(o, bit(0, l.MaxCostUSD != 0)|bit(1, l.MaxSteps != 0)|bit(2, l.MaxThreadSteps != 0)|bit(3, l.MaxTokens != 0)|bit(4, l.MaxRepeat != 0))
	return err
}

// digest reads the tape's digest record, whose key and signature are omitted when unsigned.
func (d *decoder) digest(g *tape.Digest) error {
	var o order
	err := d.object(func(key []byte) error {
		switch string(key) {
		case "algorithm":
			d.field(&o, 0)
			return d.strInto(&g.Algorithm)
		case "meta":
			d.field(&o, 1)
			return d.strInto(&g.Meta)
		case "root":
			d.field(&o, 2)
			return d.strInto(&g.Root)
		case "public_key":
			d.field(&o, 3)
			return d.strInto(&g.PublicKey)
		case "signature":
			d.field(&o, 4)
			return d.strInto(&g.Signature)
		}
		return d.unknown(key)
	})
	d.check(o, 0b111|bit(3, g.PublicKey != "")|bit(4, g.Signature != ""))
	return err
}
