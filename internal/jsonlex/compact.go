package jsonlex

// Compact appends to dst the compact form of the JSON value b, as json.Compact gives it,
// validating b in the same pass. It reports false, leaving the decision to encoding/json,
// when b is not one valid JSON value (or nests deeper than MaxDepth).
func Compact(dst, b []byte) ([]byte, bool) {
	c := compactor{b: b, out: dst}
	c.i = Space(b, 0)
	if !c.value(0) {
		return dst, false
	}
	if Space(b, c.i) != len(b) {
		return dst, false
	}
	return c.out, true
}

// CompactValue appends to dst the compact form of the one JSON value that starts at b[0],
// whatever follows it, and returns how many bytes of b it took. It reports false when b
// does not start with a valid value; a value cut short by the end of b is not one (a
// number that reaches the end of b may go on: callers reading a stream read more first).
func CompactValue(dst, b []byte) (out []byte, n int, ok bool) {
	c := compactor{b: b, out: dst}
	if !c.value(0) {
		return dst, 0, false
	}
	return c.out, c.i, true
}

type compactor struct {
	b   []byte
	i   int
	out []byte
}

// copyTo appends b[c.i:end] and moves to end; it reports whether err is nil.
func (c *compactor) copyTo(end int, err *Error) bool {
	if err != nil {
		return false
	}
	c.out = append(c.out, c.b[c.i:end]...)
	c.i = end
	return true
}

func (c *compactor) value(depth int) bool {
	if c.i >= len(c.b) {
		return false
	}
	switch ch := c.b[c.i]; ch {
	case '"':
		end, _, err := String(c.b, c.i)
		return c.copyTo(end, err)
	case '{', '[':
		return c.container(ch, depth+1)
	case 't', 'f', 'n':
		end, _, err := Keyword(c.b, c.i)
		return c.copyTo(end, err)
	}
	end, _, err := Number(c.b, c.i)
	return c.copyTo(end, err)
}

func (c *compactor) container(open byte, depth int) bool {
	if depth > MaxDepth {
		return false
	}
	closing := byte('}')
	if open == '[' {
		closing = ']'
	}
	b := c.b
	c.out = append(c.out, open)
	c.i = Space(b, c.i+1)
	if c.i < len(b) && b[c.i] == closing {
		c.out = append(c.out, closing)
		c.i++
		return true
	}
	for {
		if open == '{' {
			if c.i >= len(b) || b[c.i] != '"' {
				return false
			}
			if end, _, err := String(b, c.i); !c.copyTo(end, err) {
				return false
			}
			c.i = Space(b, c.i)
			if c.i >= len(b) || b[c.i] != ':' {
				return false
			}
			c.out = append(c.out, ':')
			c.i = Space(b, c.i+1)
		}
		if !c.value(depth) {
			return false
		}
		c.i = Space(b, c.i)
		if c.i >= len(b) {
			return false
		}
		switch b[c.i] {
		case ',':
			c.out = append(c.out, ',')
			c.i = Space(b, c.i+1)
		case closing:
			c.out = append(c.out, closing)
			c.i++
			return true
		default:
			return false
		}
	}
}
