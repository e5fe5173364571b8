package provider

import (
	"bytes"
	"encoding/json"
	"errors"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// errSlow sends a request down the slow path (plain encoding/json decoding), which gives
// the exact errors and handles what the fast path does not model: malformed JSON, values
// of the wrong type, duplicate or case-folded keys, escaped keys.
var errSlow = errors.New("provider: slow path")

// maxDepth is encoding/json's nesting limit.
const maxDepth = 10000

// scanner reads a request body in one pass, validating it as encoding/json does.
type scanner struct {
	b     []byte
	s     string // a copy of b: strings without escapes are substrings of it
	i     int
	depth int
}

func newScanner(b []byte) *scanner {
	return &scanner{b: b, s: string(b)}
}

func (d *scanner) ws() {
	for d.i < len(d.b) {
		switch d.b[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

// peek returns the first byte of the next value (0 at the end).
func (d *scanner) peek() byte {
	d.ws()
	if d.i >= len(d.b) {
		return 0
	}
	return d.b[d.i]
}

// end checks that nothing but whitespace follows the top-level value.
func (d *scanner) end() error {
	d.ws()
	if d.i != len(d.b) {
		return errSlow
	}
	return nil
}

// enter consumes c, '{' or '['.
func (d *scanner) enter(c byte) error {
	if d.peek() != c {
		return errSlow
	}
	d.i++
	d.depth++
	if d.depth > maxDepth {
		return errSlow
	}
	return nil
}

// more reports whether the object or array entered has an n-th member, consuming the
// comma before it, or the closing byte after the last.
func (d *scanner) more(closing byte, n int) (bool, error) {
	c := d.peek()
	if c == 0 {
		return false, errSlow
	}
	if c == closing {
		d.i++
		d.depth--
		return false, nil
	}
	if n == 0 {
		return true, nil
	}
	if c != ',' {
		return false, errSlow
	}
	d.i++
	return true, nil
}

// key reads an object key and its colon. Keys with escapes or non-ASCII bytes take the
// slow path.
func (d *scanner) key() ([]byte, error) {
	if d.peek() != '"' {
		return nil, errSlow
	}
	start := d.i
	end, simple, ascii, err := d.stringEnd()
	if err != nil || !simple || !ascii {
		return nil, errSlow
	}
	if d.peek() != ':' {
		return nil, errSlow
	}
	d.i++
	return d.b[start+1 : end], nil
}

// stringEnd validates the string at d.i and moves past it. end is the index of the
// closing quote; simple means its bytes are its value (no escapes, valid UTF-8).
func (d *scanner) stringEnd() (end int, simple, ascii bool, err error) {
	b := d.b
	i := d.i + 1
	start := i
	simple, ascii = true, true
	for i < len(b) {
		for i < len(b) && plain[b[i]] {
			i++
		}
		if i >= len(b) {
			break
		}
		c := b[i]
		switch {
		case c == '"':
			if !ascii && simple && !utf8.Valid(b[start:i]) {
				simple = false
			}
			d.i = i + 1
			return i, simple, ascii, nil
		case c == '\\':
			simple = false
			i++
			if i >= len(b) {
				return 0, false, false, errSlow
			}
			switch b[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i++
			case 'u':
				if i+4 >= len(b) {
					return 0, false, false, errSlow
				}
				for _, h := range b[i+1 : i+5] {
					if !isHex(h) {
						return 0, false, false, errSlow
					}
				}
				i += 5
			default:
				return 0, false, false, errSlow
			}
		case c < 0x20:
			return 0, false, false, errSlow
		case c >= utf8.RuneSelf:
			ascii = false
			i++
		default:
			i++
		}
	}
	return 0, false, false, errSlow
}

// plain marks the bytes a string holds as they are: not a quote, a backslash, a control
// byte or part of a multi-byte UTF-8 sequence.
var plain = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// str reads a string value.
func (d *scanner) str() (string, error) {
	if d.peek() != '"' {
		return "", errSlow
	}
	start := d.i
	end, simple, _, err := d.stringEnd()
	if err != nil {
		return "", err
	}
	if simple {
		return d.s[start+1 : end], nil
	}
	t, ok := unquote(d.b[start+1 : end])
	if !ok {
		return "", errSlow
	}
	return string(t), nil
}

// skip validates the next value and moves past it, returning where it starts.
func (d *scanner) skip() (int, error) {
	c := d.peek()
	start := d.i
	switch c {
	case '{':
		if err := d.enter('{'); err != nil {
			return 0, err
		}
		for n := 0; ; n++ {
			ok, err := d.more('}', n)
			if err != nil {
				return 0, err
			}
			if !ok {
				return start, nil
			}
			if d.peek() != '"' {
				return 0, errSlow
			}
			if _, _, _, err := d.stringEnd(); err != nil {
				return 0, err
			}
			if d.peek() != ':' {
				return 0, errSlow
			}
			d.i++
			if _, err := d.skip(); err != nil {
				return 0, err
			}
		}
	case '[':
		if err := d.enter('['); err != nil {
			return 0, err
		}
		for n := 0; ; n++ {
			ok, err := d.more(']', n)
			if err != nil {
				return 0, err
			}
			if !ok {
				return start, nil
			}
			if _, err := d.skip(); err != nil {
				return 0, err
			}
		}
	case '"':
		_, _, _, err := d.stringEnd()
		return start, err
	case 't':
		return start, d.literal("true")
	case 'f':
		return start, d.literal("false")
	case 'n':
		return start, d.literal("null")
	}
	if c == '-' || '0' <= c && c <= '9' {
		return start, d.number()
	}
	return 0, errSlow
}

// raw validates the next value and returns its bytes (in the input).
func (d *scanner) raw() ([]byte, error) {
	start, err := d.skip()
	if err != nil {
		return nil, err
	}
	return d.b[start:d.i], nil
}

// kept validates the next value and returns a copy of its bytes.
func (d *scanner) kept() (json.RawMessage, error) {
	start, err := d.skip()
	if err != nil {
		return nil, err
	}
	return bytes.Clone(d.b[start:d.i]), nil
}

func (d *scanner) literal(lit string) error {
	if len(d.b)-d.i < len(lit) || string(d.b[d.i:d.i+len(lit)]) != lit {
		return errSlow
	}
	d.i += len(lit)
	return nil
}

func (d *scanner) number() error {
	b, i := d.b, d.i
	digits := func() bool {
		j := i
		for i < len(b) && '0' <= b[i] && b[i] <= '9' {
			i++
		}
		return i > j
	}
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && '1' <= b[i] && b[i] <= '9':
		digits()
	default:
		return errSlow
	}
	if i < len(b) && b[i] == '.' {
		i++
		if !digits() {
			return errSlow
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if !digits() {
			return errSlow
		}
	}
	d.i = i
	return nil
}

// optString reads a string field of a struct as encoding/json does: null leaves it
// alone; another kind of value is a type error (bad).
func (d *scanner) optString(dst *string) (bad bool, err error) {
	switch d.peek() {
	case '"':
		*dst, err = d.str()
		return false, err
	case 'n':
		_, err = d.skip()
		return false, err
	}
	_, err = d.skip()
	return true, err
}

// optBool reads a bool field of a struct.
func (d *scanner) optBool(dst *bool) (bad bool, err error) {
	switch d.peek() {
	case 't':
		*dst = true
		return false, d.literal("true")
	case 'f':
		*dst = false
		return false, d.literal("false")
	case 'n':
		return false, d.literal("null")
	}
	_, err = d.skip()
	return true, err
}

// at parses the value at index i with f, then comes back.
func (d *scanner) at(i int, f func() error) error {
	saved, depth := d.i, d.depth
	d.i = i
	err := f()
	d.i, d.depth = saved, depth
	return err
}

// folds reports whether key, which matched none of names exactly, matches one of them
// the way encoding/json matches struct fields (ignoring case). Such keys take the slow
// path.
func folds(key []byte, names ...string) bool {
	for _, n := range names {
		if len(n) == len(key) && bytes.EqualFold(key, []byte(n)) {
			return true
		}
	}
	return false
}

// unquote decodes the inside of a JSON string as encoding/json does (invalid UTF-8 and
// lone surrogates become U+FFFD).
func unquote(s []byte) ([]byte, bool) {
	b := make([]byte, 0, len(s)+2*utf8.UTFMax)
	for r := 0; r < len(s); {
		switch c := s[r]; {
		case c == '\\':
			r++
			if r >= len(s) {
				return nil, false
			}
			switch s[r] {
			default:
				return nil, false
			case '"', '\\', '/', '\'':
				b = append(b, s[r])
				r++
			case 'b':
				b = append(b, '\b')
				r++
			case 'f':
				b = append(b, '\f')
				r++
			case 'n':
				b = append(b, '\n')
				r++
			case 'r':
				b = append(b, '\r')
				r++
			case 't':
				b = append(b, '\t')
				r++
			case 'u':
				r--
				rr := getu4(s[r:])
				if rr < 0 {
					return nil, false
				}
				r += 6
				if utf16.IsSurrogate(rr) {
					rr1 := getu4(s[r:])
					if dec := utf16.DecodeRune(rr, rr1); dec != unicode.ReplacementChar {
						r += 6
						b = utf8.AppendRune(b, dec)
						break
					}
					rr = unicode.ReplacementChar
				}
				b = utf8.AppendRune(b, rr)
			}
		case c == '"', c < ' ':
			return nil, false
		case c < utf8.RuneSelf:
			b = append(b, c)
			r++
		default:
			rr, size := utf8.DecodeRune(s[r:])
			r += size
			b = utf8.AppendRune(b, rr)
		}
	}
	return b, true
}

// getu4 decodes \uXXXX from the beginning of s, returning the hex value, or -1.
func getu4(s []byte) rune {
	if len(s) < 6 || s[0] != '\\' || s[1] != 'u' {
		return -1
	}
	var r rune
	for _, c := range s[2:6] {
		switch {
		case '0' <= c && c <= '9':
			c = c - '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return -1
		}
		r = r*16 + rune(c)
	}
	return r
}

// compactValid is json.Compact of a value already validated.
func compactValid(b []byte) json.RawMessage {
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); {
		switch c := b[i]; c {
		case ' ', '\t', '\n', '\r':
			i++
		case '"':
			j := i + 1
			for j < len(b) && b[j] != '"' {
				if b[j] == '\\' {
					j++
				}
				j++
			}
			j++
			out = append(out, b[i:j]...)
			i = j
		default:
			out = append(out, c)
			i++
		}
	}
	return out
}

// objectInputValid is objectInput of a value already validated (nil when absent).
func objectInputValid(raw []byte) json.RawMessage {
	if len(raw) > 0 && raw[0] == '{' {
		return compactValid(raw)
	}
	return objectInput(raw)
}
