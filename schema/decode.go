package schema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/tapebox/tapebox/internal/jsonlex"
)

// maxDepth bounds the nesting of arrays and objects, as encoding/json does, so that
// hostile input cannot exhaust the stack.
const maxDepth = 10000

// SyntaxError reports bytes that are not one well-formed JSON value.
type SyntaxError struct {
	// Offset is the byte offset of the error; Line and Column (1-based, in bytes) locate it.
	Offset int64
	Line   int
	Column int
	// Msg says what was wrong.
	Msg string
	// Truncated is true when the input ended in the middle of the value.
	Truncated bool
}

// Error implements error.
func (e *SyntaxError) Error() string {
	if e.Truncated {
		return fmt.Sprintf("truncated JSON: the input ends after %d bytes (line %d, column %d): %s", e.Offset, e.Line, e.Column, e.Msg)
	}
	return fmt.Sprintf("not valid JSON at line %d, column %d: %s", e.Line, e.Column, e.Msg)
}

// Unwrap returns io.ErrUnexpectedEOF for a truncated input, so that callers can branch with
// errors.Is.
func (e *SyntaxError) Unwrap() error {
	if e.Truncated {
		return io.ErrUnexpectedEOF
	}
	return nil
}

// Values shared by every placeholder: the validator only reads them.
var (
	emptyObject = map[string]any{}
	emptyArray  = []any{}
)

// decoder turns JSON bytes into the values jsonschema validates (map[string]any, []any,
// string, json.Number, bool, nil), building only what the schema's shape needs.
type decoder struct {
	data  []byte
	i     int
	depth int

	// record says whether unit instances are reduced and recorded (decoding a tape) or
	// skipped (building one distinct unit instance, whose own units are recorded already).
	record bool
	units  units

	open  map[openKey]*openMemo   // see memo.go
	items map[*unitDef]*itemsMemo // when recording, not locating

	// keys holds the keys of the open objects, so that a key an object repeats is found
	// (dup) in the one pass; skipKeys serves the values skip passes over. Spans reused from
	// the memos are byte copies of spans already checked.
	keys, skipKeys jsonlex.Path
	dup            bool
}

// errDuplicateKey: an object repeats a key (jsonlex.DuplicateKeyError); Validate names it.
var errDuplicateKey = errors.New("an object repeats a key")

// decode decodes data, which must hold exactly one JSON value, following sh. It returns
// the distinct unit instances met on the way, which the value holds as placeholders.
func decode(data []byte, sh *shape) (any, []*unitRun, error) {
	return decodeUnits(data, sh, false)
}

// locateUnits decodes data again and returns its distinct unit instances by reduced
// encoding, each with the offset of every occurrence.
func locateUnits(data []byte, sh *shape) (map[string]*unitRun, error) {
	_, runs, err := decodeUnits(data, sh, true)
	if err != nil {
		return nil, err
	}
	byKey := make(map[string]*unitRun, len(runs))
	for _, r := range runs {
		byKey[r.key] = r
	}
	return byKey, nil
}

func decodeUnits(data []byte, sh *shape, locate bool) (any, []*unitRun, error) {
	d := &decoder{data: data, record: true}
	d.units.locate = locate
	v, err := d.value(sh)
	if err != nil {
		return nil, nil, err
	}
	d.ws()
	if d.i < len(d.data) {
		return nil, nil, d.errorf("invalid character %s after the top-level value", quoteChar(d.data[d.i]))
	}
	if d.dup {
		return nil, nil, errDuplicateKey
	}
	return v, d.units.runs, nil
}

func (d *decoder) errorf(format string, args ...any) *SyntaxError {
	off := min(d.i, len(d.data))
	line, col := lineCol(d.data, off)
	return &SyntaxError{Offset: int64(off), Line: line, Column: col, Msg: fmt.Sprintf(format, args...)}
}

func (d *decoder) eof(what string) *SyntaxError {
	d.i = len(d.data)
	e := d.errorf("unexpected end of input %s", what)
	e.Truncated = true
	return e
}

func lineCol(data []byte, off int) (line, col int) { return jsonlex.LineCol(data, off) }

func quoteChar(c byte) string { return jsonlex.Char(c) }

// lexError turns a jsonlex error into a SyntaxError at its offset.
func (d *decoder) lexError(e *jsonlex.Error) *SyntaxError {
	d.i = e.Off
	line, col := lineCol(d.data, e.Off)
	return &SyntaxError{Offset: int64(e.Off), Line: line, Column: col, Msg: e.Msg, Truncated: e.EOF}
}

// ws skips whitespace.
func (d *decoder) ws() { d.i = jsonlex.Space(d.data, d.i) }

// value decodes the value at d.i following sh (nil: in full).
func (d *decoder) value(sh *shape) (any, error) {
	d.ws()
	if d.i >= len(d.data) {
		return nil, d.eof("looking for a value")
	}
	c := d.data[d.i]
	if sh != nil {
		switch sh.mode {
		case modeOpen:
			return nil, d.skip()
		case modeUnit:
			if d.record {
				_, err := d.reduceUnit(sh.unit)
				return nil, err
			}
			return nil, d.skip()
		case modeTypeOnly:
			switch c {
			case '"':
				_, _, err := d.scanString()
				return "", err
			case '{':
				return emptyObject, d.skip()
			case '[':
				return emptyArray, d.skip()
			case 't', 'f', 'n':
			default:
				return d.typeOnlyNumber()
			}
		case modeEnum:
			if c == '"' {
				return d.enumString(sh.maxEnum)
			}
		}
	}
	switch c {
	case '{', '[':
		return d.container(sh)
	case '"':
		return d.str()
	case 't', 'f', 'n':
		return d.keyword()
	}
	return d.number()
}

// container decodes the object or array at d.i, one level deeper.
func (d *decoder) container(sh *shape) (v any, err error) {
	if err := d.deeper(); err != nil {
		return nil, err
	}
	if d.data[d.i] == '{' {
		v, err = d.objectBody(sh)
	} else {
		v, err = d.arrayBody(sh)
	}
	d.depth--
	return v, err
}

// deeper goes down into a container, which the caller leaves with d.depth--; past
// maxDepth it is an error.
func (d *decoder) deeper() error {
	if d.depth++; d.depth > maxDepth {
		return d.errorf("exceeded max depth of %d", maxDepth)
	}
	return nil
}

func (d *decoder) objectBody(sh *shape) (any, error) {
	m := make(map[string]any)
	err := d.members(func() error {
		key, child, err := d.key(sh)
		if err != nil {
			return err
		}
		if err := d.colon(); err != nil {
			return err
		}
		var v any
		if d.ws(); child != nil && child.mode == modeOpen && d.i < len(d.data) && d.data[d.i] == '{' {
			err = d.openValue(openKey{sh, key})
		} else {
			v, err = d.value(child)
		}
		m[key] = v
		return err
	})
	if err != nil {
		return nil, err
	}
	return m, nil
}

// members reads the object whose '{' comes next: member reads each member, from its key
// to the end of its value.
func (d *decoder) members(member func() error) error {
	d.i++ // {
	d.ws()
	if d.i < len(d.data) && d.data[d.i] == '}' {
		d.i++
		return nil
	}
	d.keys.OpenObject()
	for {
		if err := d.keyStart(); err != nil {
			return err
		}
		if end, f, err := jsonlex.String(d.data, d.i); err == nil {
			if _, ok := d.keys.Key(d.data[d.i+1:end-1], f); !ok {
				d.dup = true
			}
		}
		if err := member(); err != nil {
			return err
		}
		if more, err := d.after('}'); err != nil || !more {
			if err == nil {
				d.keys.Close()
			}
			return err
		}
	}
}

// elements reads the array whose '[' comes next: elem reads each element.
func (d *decoder) elements(elem func() error) error {
	d.i++ // [
	d.ws()
	if d.i < len(d.data) && d.data[d.i] == ']' {
		d.i++
		return nil
	}
	for {
		if err := elem(); err != nil {
			return err
		}
		if more, err := d.after(']'); err != nil || !more {
			return err
		}
	}
}

// keyStart checks that an object key comes next (after spaces).
func (d *decoder) keyStart() error {
	return d.expect('"', "looking for an object key", "looking for the beginning of an object key")
}

// colon moves past the colon after an object key (and the spaces before it).
func (d *decoder) colon() error {
	if err := d.expect(':', "after an object key", "after an object key (want ':')"); err != nil {
		return err
	}
	d.i++
	return nil
}

// expect checks that the byte c comes next, after spaces. where and badWhere end the
// messages for the input ending instead and for another byte.
func (d *decoder) expect(c byte, where, badWhere string) error {
	d.ws()
	if d.i >= len(d.data) {
		return d.eof(where)
	}
	if d.data[d.i] != c {
		return d.errorf("invalid character %s %s", quoteChar(d.data[d.i]), badWhere)
	}
	return nil
}

// after moves past what follows a member's value in an object (closing is '}') or an
// element in an array (closing is ']'): a comma (more is true: another comes) or the
// closing bracket.
func (d *decoder) after(closing byte) (more bool, err error) {
	what := "an object value"
	if closing == ']' {
		what = "an array element"
	}
	d.ws()
	if d.i >= len(d.data) {
		return false, d.eof("after " + what)
	}
	switch d.data[d.i] {
	case ',':
		d.i++
		return true, nil
	case closing:
		d.i++
		return false, nil
	}
	return false, d.errorf("invalid character %s after %s (want ',' or '%c')", quoteChar(d.data[d.i]), what, closing)
}

// key decodes an object key and returns it with the shape of its value.
func (d *decoder) key(sh *shape) (string, *shape, error) {
	start, end, esc, err := d.scanStringAt()
	if err != nil {
		return "", nil, err
	}
	var key string
	raw := d.data[start+1 : end-1]
	if sh != nil && !esc {
		if p, ok := sh.prop(raw); ok {
			return p.name, p.shape, nil
		}
	}
	if esc {
		key = d.unescape(raw)
	} else {
		key = string(raw)
	}
	if sh == nil {
		return key, nil, nil
	}
	if p, ok := sh.prop([]byte(key)); ok {
		return p.name, p.shape, nil
	}
	return key, sh.other, nil
}

func (d *decoder) arrayBody(sh *shape) (any, error) {
	if sh != nil && sh.unitItems {
		return emptyArray, d.unitItems(sh.items.unit)
	}
	var items *shape
	if sh != nil {
		items = sh.items
	}
	arr := []any{}
	err := d.elements(func() error {
		v, err := d.value(items)
		arr = append(arr, v)
		return err
	})
	if err != nil {
		return nil, err
	}
	return arr, nil
}

// unitItems moves past an array of unit instances, recording them (or skipping them when
// not recording).
func (d *decoder) unitItems(def *unitDef) error {
	if !d.record {
		return d.skip()
	}
	// Items equal to those at the same index of the last array of the same definition
	// are the same instances (see memo.go); locating needs every occurrence instead.
	var prev, cur *itemsMemo
	err := d.elements(func() error {
		d.ws()
		start := d.i
		if d.units.locate {
			_, err := d.reduceUnit(def)
			return err
		}
		if cur == nil { // the first item
			if prev = d.items[def]; prev != nil && prev.depth != d.depth {
				prev = nil
			}
			cur = &itemsMemo{depth: d.depth}
			if prev != nil {
				cur.spans = make([][]byte, 0, len(prev.spans)+2)
				cur.runs = make([]*unitRun, 0, len(prev.spans)+2)
			}
		}
		if k := len(cur.spans); prev != nil && k < len(prev.spans) && d.reuse(prev.spans[k]) {
			cur.spans = append(cur.spans, prev.spans[k])
			cur.runs = append(cur.runs, prev.runs[k])
			return nil
		}
		r, err := d.reduceUnit(def)
		if err != nil {
			return err
		}
		cur.spans = append(cur.spans, d.data[start:d.i])
		cur.runs = append(cur.runs, r)
		return nil
	})
	if cur != nil {
		if d.items == nil {
			d.items = map[*unitDef]*itemsMemo{}
		}
		d.items[def] = cur
	}
	return err
}

func (d *decoder) str() (any, error) {
	start, end, esc, err := d.scanStringAt()
	if err != nil {
		return nil, err
	}
	raw := d.data[start+1 : end-1]
	if esc {
		return d.unescape(raw), nil
	}
	return string(raw), nil
}

// enumString decodes a string that must be one of an enum whose longest member has maxLen
// bytes. A string that cannot be that short once unescaped (an escape takes at most six
// bytes for one byte of text) cannot match: it is cut to a prefix that still cannot match,
// so a huge string costs no copy and no huge error message.
func (d *decoder) enumString(maxLen int) (any, error) {
	start, end, esc, err := d.scanStringAt()
	if err != nil {
		return nil, err
	}
	raw := d.data[start+1 : end-1]
	if limit := enumLimit(maxLen); len(raw) > limit {
		return string(bytes.ToValidUTF8(raw[:limit], nil)) + "…", nil
	}
	if esc {
		return d.unescape(raw), nil
	}
	return string(raw), nil
}

// enumLimit is the raw length past which a string cannot match an enum whose longest
// member has maxLen bytes.
func enumLimit(maxLen int) int { return 6*maxLen + 64 }

// keyword decodes true, false or null.
func (d *decoder) keyword() (any, error) {
	end, v, err := jsonlex.Keyword(d.data, d.i)
	if err != nil {
		return nil, d.lexError(err)
	}
	d.i = end
	return v, nil
}

func (d *decoder) literal(lit string) error {
	end, err := jsonlex.Literal(d.data, d.i, lit)
	if err != nil {
		return d.lexError(err)
	}
	d.i = end
	return nil
}

// Placeholders for numbers whose schema constrains only their type: the validator asks
// of them only whether they are numbers and whether they are integers.
var (
	someInteger = json.Number("0")
)

// typeOnlyNumber decodes a number for a schema that constrains only its type: a literal
// without fraction or exponent is an integer and becomes someInteger; others keep their
// text, which is rare and lets the validator decide (1.0 and 1e3 are integers).
func (d *decoder) typeOnlyNumber() (any, error) {
	start := d.i
	if err := d.scanNumber(); err != nil {
		return nil, err
	}
	lit := d.data[start:d.i]
	if bytes.IndexAny(lit, ".eE") < 0 {
		return someInteger, nil
	}
	return json.Number(lit), nil
}

// number decodes a number as a json.Number, which keeps its exact text.
func (d *decoder) number() (any, error) {
	start := d.i
	if err := d.scanNumber(); err != nil {
		return nil, err
	}
	return json.Number(d.data[start:d.i]), nil
}

// scanNumber moves past a number, checking JSON's grammar.
func (d *decoder) scanNumber() error {
	end, _, err := jsonlex.Number(d.data, d.i)
	if err != nil {
		return d.lexError(err)
	}
	d.i = end
	return nil
}

// scanString moves past the string at d.i.
func (d *decoder) scanString() (start, end int, err error) {
	start, end, _, err = d.scanStringAt()
	return start, end, err
}

// scanStringAt moves past the string whose opening quote is at d.i; [start, end) spans it
// with its quotes. esc says whether it holds escapes.
func (d *decoder) scanStringAt() (start, end int, esc bool, err error) {
	start = d.i
	end, f, lerr := jsonlex.String(d.data, d.i)
	if lerr != nil {
		return 0, 0, false, d.lexError(lerr)
	}
	d.i = end
	return start, end, f&jsonlex.Escaped != 0, nil
}

// unescape decodes the content of a string already checked by scanStringAt into a new
// string, as encoding/json does (invalid surrogates and UTF-8 become U+FFFD).
func (d *decoder) unescape(raw []byte) string {
	return jsonlex.UnquoteString(raw)
}

// skip moves past one value (after spaces), checking its syntax, without building
// anything (jsonlex.SkipAt, with the nesting limit counted from the top of the document).
func (d *decoder) skip() error {
	d.ws()
	end, err := jsonlex.SkipUniqueAt(d.data, d.i, d.depth, &d.skipKeys)
	var de *jsonlex.DuplicateKeyError
	if errors.As(err, &de) {
		d.dup = true // the pass goes on past it: Validate names it
		end2, lerr := jsonlex.SkipAt(d.data, d.i, d.depth)
		if lerr != nil {
			return d.lexError(lerr)
		}
		end, err = end2, nil
	}
	var lerr *jsonlex.Error
	if errors.As(err, &lerr) {
		return d.lexError(lerr)
	}
	d.i = end
	return nil
}
