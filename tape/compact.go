package tape

import (
	"bytes"
	"encoding/json"
)

// maxDepth is encoding/json's nesting limit; deeper values take encoding/json's path.
const maxDepth = 10000

// compactJSON appends to dst the compact form of the JSON value b, as json.Compact gives it,
// validating b in the same pass. It reports false, leaving the decision to encoding/json,
// when b is not valid JSON (or nests deeper than encoding/json allows).
func compactJSON(dst, b []byte) ([]byte, bool) {
	c := compactor{b: b, out: dst}
	c.ws()
	if !c.value(0) {
		return dst, false
	}
	c.ws()
	return c.out, c.i == len(b)
}

type compactor struct {
	b   []byte
	i   int
	out []byte
}

func (c *compactor) ws() {
	for c.i < len(c.b) {
		switch c.b[c.i] {
		case ' ', '\t', '\n', '\r':
			c.i++
		default:
			return
		}
	}
}

func (c *compactor) value(depth int) bool {
	if c.i >= len(c.b) {
		return false
	}
	switch ch := c.b[c.i]; {
	case ch == '"':
		return c.str()
	case ch == '{':
		return c.object(depth + 1)
	case ch == '[':
		return c.array(depth + 1)
	case ch == 't':
		return c.literal("true")
	case ch == 'f':
		return c.literal("false")
	case ch == 'n':
		return c.literal("null")
	case ch == '-' || '0' <= ch && ch <= '9':
		return c.number()
	}
	return false
}

func (c *compactor) object(depth int) bool {
	if depth > maxDepth {
		return false
	}
	c.out = append(c.out, '{')
	c.i++
	c.ws()
	if c.i < len(c.b) && c.b[c.i] == '}' {
		c.out = append(c.out, '}')
		c.i++
		return true
	}
	for {
		if c.i >= len(c.b) || c.b[c.i] != '"' || !c.str() {
			return false
		}
		c.ws()
		if c.i >= len(c.b) || c.b[c.i] != ':' {
			return false
		}
		c.out = append(c.out, ':')
		c.i++
		c.ws()
		if !c.value(depth) {
			return false
		}
		if more, ok := c.sep('}'); !more {
			return ok
		}
	}
}

// sep copies what follows a value in a container that end closes: a comma (more: a value
// comes next) or end; ok is false for anything else.
func (c *compactor) sep(end byte) (more, ok bool) {
	c.ws()
	if c.i >= len(c.b) {
		return false, false
	}
	switch c.b[c.i] {
	case ',':
		c.out = append(c.out, ',')
		c.i++
		c.ws()
		return true, true
	case end:
		c.out = append(c.out, end)
		c.i++
		return false, true
	}
	return false, false
}

func (c *compactor) array(depth int) bool {
	if depth > maxDepth {
		return false
	}
	c.out = append(c.out, '[')
	c.i++
	c.ws()
	if c.i < len(c.b) && c.b[c.i] == ']' {
		c.out = append(c.out, ']')
		c.i++
		return true
	}
	for {
		if !c.value(depth) {
			return false
		}
		if more, ok := c.sep(']'); !more {
			return ok
		}
	}
}

// str copies a string as it is, checking its escapes and that it holds no control bytes
// (encoding/json accepts any other byte, UTF-8 or not).
func (c *compactor) str() bool {
	b := c.b
	start := c.i
	i := c.i + 1
	for i < len(b) {
		ch := b[i]
		switch {
		case ch == '"':
			c.out = append(c.out, b[start:i+1]...)
			c.i = i + 1
			return true
		case ch < 0x20:
			return false
		case ch == '\\':
			if i+1 >= len(b) {
				return false
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(b) {
					return false
				}
				for _, h := range b[i+2 : i+6] {
					if !('0' <= h && h <= '9' || 'a' <= h && h <= 'f' || 'A' <= h && h <= 'F') {
						return false
					}
				}
				i += 6
			default:
				return false
			}
		default:
			i++
		}
	}
	return false
}

func (c *compactor) literal(lit string) bool {
	if len(c.b)-c.i < len(lit) || string(c.b[c.i:c.i+len(lit)]) != lit {
		return false
	}
	c.out = append(c.out, lit...)
	c.i += len(lit)
	return true
}

func (c *compactor) number() bool {
	b, i := c.b, c.i
	digits := func() bool {
		j := i
		for i < len(b) && '0' <= b[i] && b[i] <= '9' {
			i++
		}
		return i > j
	}
	if b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && '1' <= b[i] && b[i] <= '9':
		digits()
	default:
		return false
	}
	if i < len(b) && b[i] == '.' {
		i++
		if !digits() {
			return false
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if !digits() {
			return false
		}
	}
	c.out = append(c.out, b[c.i:i]...)
	c.i = i
	return true
}

// minSplice is the size of a raw body from which encoding it with compactJSON and splicing
// it in pays (encoding/json validates and compacts a raw value in two slower passes).
const minSplice = 512

// spliceRaw encodes v, whose raw field is set to the placeholder 0 so that its encoding
// holds marker (`"raw":0` and what follows it): at its end when atEnd, else last (the
// fields after raw must not be able to hold it), then puts the compact form of raw in the
// placeholder's place. It reports false when raw is not valid JSON or the marker is not found: the
// caller then encodes v with raw itself and lets encoding/json decide. The result starts
// with prefix and has room for extra more bytes, so that a caller building a larger piece
// around a large body copies it no more.
func spliceRaw(v any, raw []byte, marker string, atEnd bool, prefix string, extra int) ([]byte, bool, error) {
	head, err := marshalPiece(v)
	if err != nil {
		return nil, false, err
	}
	at := bytes.LastIndex(head, []byte(marker))
	if at < 0 || atEnd && at != len(head)-len(marker) {
		return nil, false, nil
	}
	at += len(`"raw":`)
	out := make([]byte, 0, len(prefix)+len(head)+len(raw)+extra)
	out = append(append(out, prefix...), head[:at]...)
	mid := len(out)
	out, ok := compactJSON(out, raw)
	if !ok {
		return nil, false, nil
	}
	if bytes.Contains(out[mid:], escapedReplacement) {
		// encode writes U+FFFD unescaped everywhere, raw values included.
		fixed := unescapeReplacement(out[mid:])
		out = append(out[:mid], fixed...)
	}
	out = append(out, head[at+1:]...) // what followed the placeholder 0
	return out, true, nil
}

var rawPlaceholder = json.RawMessage("0")

// marshalRequest is the canonical encoding of r.
func marshalRequest(r *Request) ([]byte, error) {
	if len(r.Raw) >= minSplice {
		tmp := *r
		tmp.Raw = rawPlaceholder
		if out, ok, err := spliceRaw(&tmp, r.Raw, `"raw":0}`, true, "", 0); err != nil || ok {
			return out, err
		}
	}
	return marshalPiece(r)
}

// marshalResponse is the canonical encoding of r.
func marshalResponse(r *Response) ([]byte, error) {
	return appendResponse("", r, 0)
}

// appendResponse is prefix followed by the canonical encoding of r, with room for extra
// more bytes.
func appendResponse(prefix string, r *Response, extra int) ([]byte, error) {
	if len(r.Raw) >= minSplice {
		tmp := *r
		tmp.Raw = rawPlaceholder
		if out, ok, err := spliceRaw(&tmp, r.Raw, `"raw":0,"chunks":`, false, prefix, extra); err != nil || ok {
			return out, err
		}
	}
	b, err := marshalPiece(r)
	if err != nil || prefix == "" && extra == 0 {
		return b, err
	}
	out := make([]byte, 0, len(prefix)+len(b)+extra)
	return append(append(out, prefix...), b...), nil
}
