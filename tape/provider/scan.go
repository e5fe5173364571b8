package provider

import (
	"bytes"
	"encoding/json"
	"errors"

	"github.com/tapebox/tapebox/internal/jsonlex"
)

// errSlow sends a request down the slow path (plain encoding/json decoding), which gives
// the exact errors and handles what the fast path does not model: malformed JSON, values
// of the wrong type, duplicate or case-folded keys, escaped keys.
var errSlow = errors.New("provider: slow path")

// maxDepth is encoding/json's nesting limit.
const maxDepth = jsonlex.MaxDepth

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

func (d *scanner) ws() { d.i = jsonlex.Space(d.b, d.i) }

// peek returns the first byte of the next value (0 at the end).
func (d *scanner) peek() byte {
	d.ws()
	if d.i >= len(d.b) {
		return 0
	}
	return d.b[d.i]
}

// nullOr reads a null (null is true) or checks that the next value opens with c (a '[' or
// '{' the caller then reads); anything else takes the slow path.
func (d *scanner) nullOr(c byte) (null bool, err error) {
	switch d.peek() {
	case 'n':
		return true, d.literal("null")
	case c:
		return false, nil
	}
	return false, errSlow
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
	e, f, lerr := jsonlex.String(d.b, d.i)
	if lerr != nil {
		return 0, false, false, errSlow
	}
	start := d.i + 1
	d.i = e
	return e - 1, f.Plain(d.b[start : e-1]), f&jsonlex.NonASCII == 0, nil
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
	body := d.b[start+1 : end]
	return jsonlex.UnquoteString(body), nil
}

// skip validates the next value and moves past it, returning where it starts.
func (d *scanner) skip() (int, error) {
	d.ws()
	start := d.i
	end, err := jsonlex.SkipAt(d.b, d.i, d.depth)
	if err != nil {
		return 0, errSlow
	}
	d.i = end
	return start, nil
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
	end, err := jsonlex.Literal(d.b, d.i, lit)
	if err != nil {
		return errSlow
	}
	d.i = end
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

// compactValid is json.Compact of a value already validated.
func compactValid(b []byte) json.RawMessage {
	out, _ := jsonlex.Compact(make([]byte, 0, len(b)), b)
	return out
}

// objectInputValid is objectInput of a value already validated (nil when absent).
func objectInputValid(raw []byte) json.RawMessage {
	if len(raw) > 0 && raw[0] == '{' {
		return compactValid(raw)
	}
	return objectInput(raw)
}
