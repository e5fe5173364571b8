package jsonlex

import (
	"bytes"
	"slices"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// AppendCanonical appends the canonical form of the JSON value at b[i] (whitespace
// before it skipped) and returns the offset past the value. The canonical form is the
// content of a value, not its spelling: two documents that decode to the same value give
// the same bytes, whatever encoder wrote them. It is RFC 8785's JSON Canonicalization
// Scheme (JCS) but for numbers, which keep their exact decimal value:
//
//   - no whitespace; object members sorted by their keys' UTF-16 code units; a repeated key
//     (see DuplicateKeyError) is an error;
//   - strings in one escape form: \" \\ \b \f \n \r \t, \u00xx (lower-case hex) for the
//     other control characters, every other character as itself in UTF-8. Invalid UTF-8
//     becomes U+FFFD, as encoding/json decodes it; a lone surrogate escape (\ud800) stays an
//     escape, in lower-case hex;
//   - a number as its exact decimal value laid out as ECMAScript's Number.prototype.toString
//     lays out a double (which JCS uses): 1.0, 1E0 and 10e-1 are 1; 1e21 and 1e+21 are
//     1e+21; 0.0000001 is 1e-7; -0 is 0. Unlike JCS, a number is not rounded to a double
//     first, so two numbers that differ give different forms (9007199254740993 stays);
//   - true, false, null as themselves.
//
// p is working memory for the key check (nil allocates one).
func AppendCanonical(dst, b []byte, i int, p *Path) (out []byte, end int, err error) {
	if p == nil {
		p = new(Path)
	}
	p.Reset()
	c := canon{b: b, p: p, out: dst}
	end, err = c.value(Space(b, i))
	return c.out, end, err
}

// Canonical is AppendCanonical of the whole document b (whitespace around the value).
func Canonical(dst, b []byte) ([]byte, error) {
	out, end, err := AppendCanonical(dst, b, 0, nil)
	if err != nil {
		return nil, err
	}
	if j := Space(b, end); j < len(b) {
		return nil, bad(b, j, "invalid character %s after top-level value")
	}
	return out, nil
}

type canon struct {
	b       []byte
	p       *Path
	out     []byte
	members []member // the members of the open objects, innermost last
	scratch []byte
	keys    []byte // decoded keys of members, for sorting
}

type member struct {
	key      span32 // in keys
	from, to int    // the member's canonical bytes in out
	ascii    bool
}

func (c *canon) value(i int) (int, error) {
	b := c.b
	if i >= len(b) {
		return i, eof(i, "looking for a value")
	}
	switch ch := b[i]; {
	case ch == '"':
		end, s, err := String(b, i)
		if err != nil {
			return end, err
		}
		c.out = appendCanonicalString(c.out, b[i+1:end-1], s)
		return end, nil
	case ch == '{':
		return c.object(i)
	case ch == '[':
		return c.array(i)
	case ch == 't' || ch == 'f' || ch == 'n':
		end, _, err := Keyword(b, i)
		if err != nil {
			return end, err
		}
		c.out = append(c.out, b[i:end]...)
		return end, nil
	}
	end, _, err := Number(b, i)
	if err != nil {
		return end, err
	}
	c.out = appendCanonicalNumber(c.out, b[i:end])
	return end, nil
}

func (c *canon) array(i int) (int, error) {
	b := c.b
	if len(c.p.frames)+1 > MaxDepth {
		return i, &Error{Off: i, Msg: maxDepthMsg}
	}
	c.p.OpenArray()
	c.out = append(c.out, '[')
	i = Space(b, i+1)
	if i < len(b) && b[i] == ']' {
		c.p.Close()
		c.out = append(c.out, ']')
		return i + 1, nil
	}
	for n := 0; ; n++ {
		if n > 0 {
			c.out = append(c.out, ',')
		}
		c.p.Elem()
		end, err := c.value(i)
		if err != nil {
			return end, err
		}
		i = Space(b, end)
		if i >= len(b) {
			return i, eof(i, "after an array element")
		}
		switch b[i] {
		case ',':
			i = Space(b, i+1)
		case ']':
			c.p.Close()
			c.out = append(c.out, ']')
			return i + 1, nil
		default:
			return i, bad(b, i, "invalid character %s after an array element (want ',' or ']')")
		}
	}
}

func (c *canon) object(i int) (int, error) {
	b := c.b
	if len(c.p.frames)+1 > MaxDepth {
		return i, &Error{Off: i, Msg: maxDepthMsg}
	}
	c.p.OpenObject()
	c.out = append(c.out, '{')
	i = Space(b, i+1)
	if i < len(b) && b[i] == '}' {
		c.p.Close()
		c.out = append(c.out, '}')
		return i + 1, nil
	}
	base, keysBase := len(c.members), len(c.keys)
	start := len(c.out)
	for n := 0; ; n++ {
		if i >= len(b) {
			return i, eof(i, "looking for an object key")
		}
		if b[i] != '"' {
			return i, bad(b, i, "invalid character %s looking for the beginning of an object key")
		}
		kend, s, err := String(b, i)
		if err != nil {
			return kend, err
		}
		body := b[i+1 : kend-1]
		if first, ok := c.p.Key(body, s); !ok {
			key := string(Unquote(nil, body))
			return i, &DuplicateKeyError{Pointer: c.p.Member(key), Key: key, First: first, Off: i}
		}
		if n > 0 {
			c.out = append(c.out, ',')
		}
		m := member{from: len(c.out)}
		kf := int32(len(c.keys))
		c.keys = unquoteKeepSurrogates(c.keys, body, s)
		m.key = span32{kf, int32(len(c.keys))}
		m.ascii = s == 0
		c.out = appendCanonicalString(c.out, body, s)
		c.out = append(c.out, ':')
		i = Space(b, kend)
		if i >= len(b) {
			return i, eof(i, "after an object key")
		}
		if b[i] != ':' {
			return i, bad(b, i, "invalid character %s after an object key (want ':')")
		}
		end, verr := c.value(Space(b, i+1))
		if verr != nil {
			return end, verr
		}
		m.to = len(c.out)
		c.members = append(c.members, m)
		i = Space(b, end)
		if i >= len(b) {
			return i, eof(i, "after an object value")
		}
		switch b[i] {
		case ',':
			i = Space(b, i+1)
			continue
		case '}':
		default:
			return i, bad(b, i, "invalid character %s after an object value (want ',' or '}')")
		}
		c.sort(start, c.members[base:])
		c.members, c.keys = c.members[:base], c.keys[:keysBase]
		c.p.Close()
		c.out = append(c.out, '}')
		return i + 1, nil
	}
}

// sort puts the members written from out[start:] in key order.
func (c *canon) sort(start int, ms []member) {
	less := func(a, b member) int { return compareKeys(c.keys, a.key, b.key, a.ascii && b.ascii) }
	if slices.IsSortedFunc(ms, less) {
		return
	}
	sorted := slices.Clone(ms)
	slices.SortFunc(sorted, less)
	c.scratch = append(c.scratch[:0], c.out[start:]...)
	c.out = c.out[:start]
	for k, m := range sorted {
		if k > 0 {
			c.out = append(c.out, ',')
		}
		c.out = append(c.out, c.scratch[m.from-start:m.to-start]...)
	}
}

// compareKeys orders two decoded keys (spans of keys) as JCS sorts members: by UTF-16
// code units, which is byte order when both are ASCII.
func compareKeys(keys []byte, a, b span32, ascii bool) int {
	ka, kb := keys[a.from:a.to], keys[b.from:b.to]
	if ascii {
		return bytes.Compare(ka, kb)
	}
	return compareUTF16(ka, kb)
}

// compareUTF16 compares two strings (UTF-8, with lone surrogates as WTF-8) by their UTF-16
// code units, as JCS sorts keys.
func compareUTF16(a, b []byte) int {
	for len(a) > 0 && len(b) > 0 {
		ra, na := decodeWTF8(a)
		rb, nb := decodeWTF8(b)
		a, b = a[na:], b[nb:]
		if ra == rb {
			continue
		}
		a1, a2 := utf16.EncodeRune(ra)
		if a1 == utf8.RuneError {
			a1 = ra
		}
		b1, b2 := utf16.EncodeRune(rb)
		if b1 == utf8.RuneError {
			b1 = rb
		}
		if a1 != b1 {
			return int(a1) - int(b1)
		}
		return int(a2) - int(b2)
	}
	return len(a) - len(b)
}

// decodeWTF8 decodes a rune, taking a surrogate's three-byte form as the surrogate.
func decodeWTF8(b []byte) (rune, int) {
	if len(b) >= 3 && b[0] == 0xed && b[1] >= 0xa0 && b[1] <= 0xbf {
		return rune(b[0]&0x0f)<<12 | rune(b[1]&0x3f)<<6 | rune(b[2]&0x3f), 3
	}
	return utf8.DecodeRune(b)
}

// unquoteKeepSurrogates is Unquote, but a lone surrogate escape becomes the surrogate's
// three-byte (WTF-8) form rather than U+FFFD, so that keys sort as JCS sorts them.
func unquoteKeepSurrogates(dst, body []byte, s Str) []byte {
	if s&Escaped == 0 {
		return Unquote(dst, body)
	}
	for len(body) > 0 {
		k := bytes.IndexByte(body, '\\')
		if k < 0 {
			return Unquote(dst, body)
		}
		dst = Unquote(dst, body[:k])
		body = body[k:]
		if body[1] == 'u' {
			r := Hex4(body[2:])
			if utf16.IsSurrogate(r) {
				if len(body) >= 12 && body[6] == '\\' && body[7] == 'u' {
					if r2 := utf16.DecodeRune(r, Hex4(body[8:])); r2 != utf8.RuneError {
						dst = utf8.AppendRune(dst, r2)
						body = body[12:]
						continue
					}
				}
				dst = append(dst, 0xed, byte(0x80|(r>>6)&0x3f), byte(0x80|r&0x3f))
				body = body[6:]
				continue
			}
		}
		dst, body = unescape(dst, body)
	}
	return dst
}

// appendCanonicalString writes a string, given the body String scanned with flags s, in
// the canonical escape form.
func appendCanonicalString(dst, body []byte, s Str) []byte {
	dst = append(dst, '"')
	if s&Escaped == 0 && (s&NonASCII == 0 || utf8.Valid(body)) {
		// Neither quotes, backslashes nor control bytes (String refuses them unescaped).
		dst = append(dst, body...)
		return append(dst, '"')
	}
	for len(body) > 0 {
		c := body[0]
		switch {
		case c == '\\':
			var r rune
			n := 2
			switch body[1] {
			case 'b':
				r = '\b'
			case 'f':
				r = '\f'
			case 'n':
				r = '\n'
			case 'r':
				r = '\r'
			case 't':
				r = '\t'
			case 'u':
				r, n = Hex4(body[2:]), 6
				if utf16.IsSurrogate(r) {
					if len(body) >= 12 && body[6] == '\\' && body[7] == 'u' {
						if r2 := utf16.DecodeRune(r, Hex4(body[8:])); r2 != utf8.RuneError {
							r, n = r2, 12
						}
					}
					if n == 6 { // a lone surrogate stays an escape
						dst = append(dst, `\u`...)
						dst = appendHex4(dst, r)
						body = body[n:]
						continue
					}
				}
			default: // " \ /
				r = rune(body[1])
			}
			dst = appendCanonicalRune(dst, r)
			body = body[n:]
		case c < utf8.RuneSelf:
			dst = appendCanonicalRune(dst, rune(c))
			body = body[1:]
		default:
			r, n := utf8.DecodeRune(body)
			dst = utf8.AppendRune(dst, r) // RuneError for invalid UTF-8: U+FFFD
			body = body[n:]
		}
	}
	return append(dst, '"')
}

func appendCanonicalRune(dst []byte, r rune) []byte {
	switch r {
	case '"':
		return append(dst, `\"`...)
	case '\\':
		return append(dst, `\\`...)
	case '\b':
		return append(dst, `\b`...)
	case '\f':
		return append(dst, `\f`...)
	case '\n':
		return append(dst, `\n`...)
	case '\r':
		return append(dst, `\r`...)
	case '\t':
		return append(dst, `\t`...)
	}
	if r < 0x20 {
		return appendHex4(append(dst, `\u`...), r)
	}
	return utf8.AppendRune(dst, r)
}

func appendHex4(dst []byte, r rune) []byte {
	const hex = "0123456789abcdef"
	return append(dst, hex[r>>12&0xf], hex[r>>8&0xf], hex[r>>4&0xf], hex[r&0xf])
}

// appendCanonicalNumber writes the number n (valid JSON) by its exact decimal value in
// ECMAScript's layout: with k significant digits d and the decimal point after position
// e (the value is 0.d × 10^e):
//
//	k <= e <= 21      d followed by e-k zeros
//	0 < e <= 21       d with a point after e digits
//	-6 < e <= 0       0. then -e zeros then d
//	otherwise         d1[.rest]e±(e-1)
func appendCanonicalNumber(dst, n []byte) []byte {
	neg := n[0] == '-'
	if neg {
		n = n[1:]
	}
	// Split into integer digits, fraction digits and exponent.
	i := 0
	for i < len(n) && isDigit(n[i]) {
		i++
	}
	intPart := n[:i]
	var frac []byte
	if i < len(n) && n[i] == '.' {
		j := i + 1
		for j < len(n) && isDigit(n[j]) {
			j++
		}
		frac, i = n[i+1:j], j
	}
	exp := int64(0)
	if i < len(n) && (n[i] == 'e' || n[i] == 'E') {
		x, err := strconv.ParseInt(string(n[i+1:]), 10, 64)
		if err != nil { // beyond int64: saturate, which keeps the order of magnitude's sign
			x = 1 << 62
			if n[i+1] == '-' {
				x = -x
			}
		}
		exp = max(min(x, 1<<62), -(1 << 62))
	}
	// digits = intPart frac; value = 0.digits × 10^(len(intPart)+exp), then strip zeros.
	pos := int64(len(intPart)) + exp
	digits := make([]byte, 0, len(intPart)+len(frac))
	digits = append(append(digits, intPart...), frac...)
	lead := 0
	for lead < len(digits) && digits[lead] == '0' {
		lead++
	}
	digits, pos = digits[lead:], pos-int64(lead)
	for len(digits) > 0 && digits[len(digits)-1] == '0' {
		digits = digits[:len(digits)-1]
	}
	if len(digits) == 0 {
		return append(dst, '0')
	}
	if neg {
		dst = append(dst, '-')
	}
	k := int64(len(digits))
	switch {
	case k <= pos && pos <= 21:
		dst = append(dst, digits...)
		for range pos - k {
			dst = append(dst, '0')
		}
	case 0 < pos && pos <= 21:
		dst = append(dst, digits[:pos]...)
		dst = append(append(dst, '.'), digits[pos:]...)
	case -6 < pos && pos <= 0:
		dst = append(dst, "0."...)
		for range -pos {
			dst = append(dst, '0')
		}
		dst = append(dst, digits...)
	default:
		dst = append(dst, digits[0])
		if k > 1 {
			dst = append(append(dst, '.'), digits[1:]...)
		}
		dst = append(dst, 'e')
		if pos-1 >= 0 {
			dst = append(dst, '+')
		}
		dst = strconv.AppendInt(dst, pos-1, 10)
	}
	return dst
}
