package jsonlex

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/bits"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"
)

// MaxDepth is encoding/json's nesting limit; Skip and Compact refuse values nested deeper.
const MaxDepth = 10000

// maxDepthMsg is the error past MaxDepth. A literal, not built from MaxDepth at start-up
// (that costs the executor 257 B); TestErrors fails if the two part.
const maxDepthMsg = "exceeded max depth of 10000"

// Error is a flaw in the input: where it is and what it is. EOF says the input ended
// where more was needed (a cut value), which readers may report differently.
type Error struct {
	Off int
	EOF bool
	Msg string
}

func (e *Error) Error() string { return fmt.Sprintf("offset %d: %s", e.Off, e.Msg) }

func eof(off int, what string) *Error {
	return &Error{Off: off, EOF: true, Msg: "unexpected end of input " + what}
}

func bad(b []byte, off int, format string) *Error {
	return &Error{Off: off, Msg: fmt.Sprintf(format, Char(b[off]))}
}

// Char names a byte in an error message: 'x', '"', '\n', or byte 0xff.
func Char(c byte) string {
	switch {
	case c == '\'':
		return `'\''`
	case c == '"':
		return `'"'`
	case c >= utf8.RuneSelf:
		return fmt.Sprintf("byte 0x%02x", c)
	}
	return strconv.QuoteRune(rune(c))
}

// LineCol gives the 1-based line and column (in bytes) of offset off in b.
func LineCol(b []byte, off int) (line, col int) {
	before := b[:min(off, len(b))]
	line = bytes.Count(before, []byte("\n")) + 1
	col = len(before) - (bytes.LastIndexByte(before, '\n') + 1) + 1
	return line, col
}

// Space returns the offset of the first byte at or after i that is not JSON whitespace.
func Space(b []byte, i int) int {
	for i < len(b) {
		switch b[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// Str describes a string String scanned.
type Str uint8

// The flags of a Str.
const (
	// Escaped: the string holds backslash escapes, so its bytes are not its value.
	Escaped Str = 1 << iota
	// NonASCII: the string holds bytes of 0x80 and above, which may not be valid UTF-8.
	NonASCII
)

// Plain reports whether the string body b[start:end] (quotes excluded) with flags s is
// its own value: no escapes, and valid UTF-8.
func (s Str) Plain(body []byte) bool {
	return s&Escaped == 0 && (s&NonASCII == 0 || utf8.Valid(body))
}

const (
	lsb   = 0x0101010101010101
	msb   = 0x8080808080808080
	quote = '"' * lsb
	bslsh = '\\' * lsb
	ctl   = 0x20 * lsb
)

// String scans the string whose opening quote is at b[i] and returns the offset just past
// its closing quote. Eight bytes at a time it looks for the first quote, backslash or
// control byte: in each 64-bit word x, (x - lsb) & ^x & msb flags the bytes that are zero,
// and the lowest flag is exact.
func String(b []byte, i int) (end int, s Str, err *Error) {
	i++
	for {
		for i+8 <= len(b) {
			w := binary.LittleEndian.Uint64(b[i:])
			q := w ^ quote
			k := w ^ bslsh
			m := ((q - lsb) & ^q) | ((k - lsb) & ^k) | ((w - ctl) & ^w)
			m &= msb
			if m != 0 {
				n := bits.TrailingZeros64(m) / 8
				if w&msb&(1<<(8*n)-1) != 0 {
					s |= NonASCII
				}
				i += n
				break
			}
			if w&msb != 0 {
				s |= NonASCII
			}
			i += 8
		}
		for ; i < len(b); i++ {
			c := b[i]
			if c == '"' || c == '\\' || c < 0x20 {
				break
			}
			if c >= utf8.RuneSelf {
				s |= NonASCII
			}
		}
		if i >= len(b) {
			return i, s, eof(i, "in a string")
		}
		switch c := b[i]; {
		case c == '"':
			return i + 1, s, nil
		case c == '\\':
			s |= Escaped
			if i+1 >= len(b) {
				return i + 1, s, eof(i+1, "in a string escape")
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				for j := i + 2; j < i+6; j++ {
					if j >= len(b) {
						return j, s, eof(j, "in a \\u escape")
					}
					if !isHex(b[j]) {
						return j, s, bad(b, j, "invalid character %s in a \\u escape")
					}
				}
				i += 6
			default:
				return i + 1, s, bad(b, i+1, "invalid escape character %s in a string")
			}
		default:
			return i, s, bad(b, i, "invalid control character %s in a string")
		}
	}
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

func isHex(c byte) bool {
	return isDigit(c) || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// Number scans the number at b[i], checking JSON's grammar
// -? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?, and returns the offset past it.
// Integer reports that it has neither fraction nor exponent.
func Number(b []byte, i int) (end int, integer bool, err *Error) {
	if i < len(b) && b[i] == '-' {
		i++
	}
	if i >= len(b) {
		return i, false, eof(i, "in a number")
	}
	switch c := b[i]; {
	case c == '0':
		i++
	case '1' <= c && c <= '9':
		for i++; i < len(b) && isDigit(b[i]); i++ {
		}
	default:
		return i, false, bad(b, i, "invalid character %s looking for the beginning of a value")
	}
	integer = true
	if i < len(b) && b[i] == '.' {
		integer = false
		if i, err = digits(b, i+1, "after a decimal point", "invalid character %s after a decimal point in a number"); err != nil {
			return i, false, err
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		integer = false
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i, err = digits(b, i, "in a number's exponent", "invalid character %s in a number's exponent"); err != nil {
			return i, false, err
		}
	}
	return i, integer, nil
}

// digits scans the digits, one at least, of a number's fraction or exponent at b[i]; where
// and badFormat word the error when there are none.
func digits(b []byte, i int, where, badFormat string) (int, *Error) {
	if i >= len(b) {
		return i, eof(i, where)
	}
	if !isDigit(b[i]) {
		return i, bad(b, i, badFormat)
	}
	for i++; i < len(b) && isDigit(b[i]); i++ {
	}
	return i, nil
}

// Literal scans lit (true, false or null) at b[i]. On a mismatch the error points at the
// first byte that differs.
func Literal(b []byte, i int, lit string) (end int, err *Error) {
	rest := b[i:]
	if len(rest) >= len(lit) && string(rest[:len(lit)]) == lit {
		return i + len(lit), nil
	}
	j := 0
	for j < len(rest) && j < len(lit) && rest[j] == lit[j] {
		j++
	}
	if j == len(rest) {
		return i + j, eof(i+j, "in literal "+lit)
	}
	return i + j, &Error{Off: i + j, Msg: fmt.Sprintf("invalid character %s in literal %s", Char(rest[j]), lit)}
}

// Keyword scans the literal that the byte at b[i] begins: 't' true, 'f' false, and 'n' (or
// any other byte, then an error) null. It returns the offset past it and its value as
// encoding/json decodes it into an any: true, false or nil.
func Keyword(b []byte, i int) (end int, v any, err *Error) {
	switch b[i] {
	case 't':
		end, err = Literal(b, i, "true")
		return end, true, err
	case 'f':
		end, err = Literal(b, i, "false")
		return end, false, err
	}
	end, err = Literal(b, i, "null")
	return end, nil, err
}

// Skip scans the value at b[i] (whitespace before it is not skipped) and returns the offset
// past it.
func Skip(b []byte, i int) (end int, err *Error) {
	return skip(b, i, 0)
}

// SkipAt is Skip for a value that stands depth containers deep, so that the nesting limit
// counts from the top of the document.
func SkipAt(b []byte, i, depth int) (end int, err *Error) {
	return skip(b, i, depth)
}

func skip(b []byte, i, depth int) (int, *Error) {
	if i >= len(b) {
		return i, eof(i, "looking for a value")
	}
	switch c := b[i]; c {
	case '"':
		end, _, err := String(b, i)
		return end, err
	case '{', '[':
		closing := byte('}')
		if c == '[' {
			closing = ']'
		}
		if depth+1 > MaxDepth {
			return i, &Error{Off: i, Msg: maxDepthMsg}
		}
		badAfter, endAfter := "invalid character %s after an object value (want ',' or '}')", "after an object value"
		if c == '[' {
			badAfter, endAfter = "invalid character %s after an array element (want ',' or ']')", "after an array element"
		}
		i = Space(b, i+1)
		if i < len(b) && b[i] == closing {
			return i + 1, nil
		}
		for {
			var err *Error
			if c == '{' {
				if i >= len(b) {
					return i, eof(i, "looking for an object key")
				}
				if b[i] != '"' {
					return i, bad(b, i, "invalid character %s looking for the beginning of an object key")
				}
				if i, _, err = String(b, i); err != nil {
					return i, err
				}
				i = Space(b, i)
				if i >= len(b) {
					return i, eof(i, "after an object key")
				}
				if b[i] != ':' {
					return i, bad(b, i, "invalid character %s after an object key (want ':')")
				}
				i = Space(b, i+1)
			}
			if i, err = skip(b, i, depth+1); err != nil {
				return i, err
			}
			i = Space(b, i)
			if i >= len(b) {
				return i, eof(i, endAfter)
			}
			switch b[i] {
			case ',':
				i = Space(b, i+1)
			case closing:
				return i + 1, nil
			default:
				return i, bad(b, i, badAfter)
			}
		}
	case 't', 'f', 'n':
		end, _, err := Keyword(b, i)
		return end, err
	}
	end, _, err := Number(b, i)
	return end, err
}

// Valid reports whether b is one JSON value with nothing but whitespace around it.
func Valid(b []byte) bool {
	end, err := Skip(b, Space(b, 0))
	return err == nil && Space(b, end) == len(b)
}

// UnquoteString returns the value of a string body (as Unquote) as a new string, in one
// allocation: string(Unquote(...)) would copy the buffer it just filled.
func UnquoteString(body []byte) string {
	b := Unquote(make([]byte, 0, len(body)), body)
	// b is ours alone and never written again: it becomes the string.
	return unsafe.String(unsafe.SliceData(b), len(b))
}

// Unquote appends to dst the value of a string body (the bytes between its quotes, already
// checked by String), as encoding/json decodes it: invalid UTF-8 and lone surrogates
// become U+FFFD.
func Unquote(dst, body []byte) []byte {
	for len(body) > 0 {
		// Eight bytes at a time while dst has room for them: store the word whole, then keep
		// the bytes before its first backslash or byte of 0x80 and above (see asciiRun).
		// Runs between escapes are short, and this copies them without a call per run.
		for len(body) >= 8 && cap(dst)-len(dst) >= 8 {
			w := binary.LittleEndian.Uint64(body)
			binary.LittleEndian.PutUint64(dst[len(dst):len(dst)+8], w)
			k := w ^ bslsh
			if m := ((k-lsb)&^k | w) & msb; m != 0 {
				n := bits.TrailingZeros64(m) / 8
				dst, body = dst[:len(dst)+n], body[n:]
				break
			}
			dst, body = dst[:len(dst)+8], body[8:]
		}
		if len(body) == 0 {
			break
		}
		switch c := body[0]; {
		case c == '\\':
			dst, body = unescape(dst, body)
		case c < utf8.RuneSelf:
			n := asciiRun(body)
			dst = append(dst, body[:n]...)
			body = body[n:]
		default:
			r, n := utf8.DecodeRune(body)
			if r == utf8.RuneError && n == 1 {
				dst = append(dst, "\uFFFD"...)
			} else {
				dst = append(dst, body[:n]...)
			}
			body = body[n:]
		}
	}
	return dst
}

// unescape appends the value of the escape at the start of body and returns the rest of
// body. A \u escape of a high surrogate takes the low one that follows it.
func unescape(dst, body []byte) ([]byte, []byte) {
	if len(body) < 2 {
		return dst, nil
	}
	switch body[1] {
	case 'b':
		dst = append(dst, '\b')
	case 'f':
		dst = append(dst, '\f')
	case 'n':
		dst = append(dst, '\n')
	case 'r':
		dst = append(dst, '\r')
	case 't':
		dst = append(dst, '\t')
	case 'u':
		r := Hex4(body[2:])
		body = body[6:]
		if utf16.IsSurrogate(r) {
			if len(body) >= 6 && body[0] == '\\' && body[1] == 'u' {
				if r2 := utf16.DecodeRune(r, Hex4(body[2:])); r2 != utf8.RuneError {
					return utf8.AppendRune(dst, r2), body[6:]
				}
			}
			r = utf8.RuneError
		}
		return utf8.AppendRune(dst, r), body
	default: // " \ /
		dst = append(dst, body[1])
	}
	return dst, body[2:]
}

// asciiRun returns the length of the run at the start of b that holds neither a backslash
// nor a byte of 0x80 and above: bytes that are their own value. Eight bytes at a time, as
// String scans: in each word, the backslashes are the zero bytes of w ^ bslsh, and the
// bytes of 0x80 and above have their own top bit set.
func asciiRun(b []byte) int {
	n := 0
	for n+8 <= len(b) {
		w := binary.LittleEndian.Uint64(b[n:])
		k := w ^ bslsh
		if m := ((k-lsb)&^k | w) & msb; m != 0 {
			return n + bits.TrailingZeros64(m)/8
		}
		n += 8
	}
	for n < len(b) && b[n] != '\\' && b[n] < utf8.RuneSelf {
		n++
	}
	return n
}

// Hex4 decodes the four hex digits at the start of b (checked by String); -1 when they are
// not four hex digits.
func Hex4(b []byte) rune {
	if len(b) < 4 {
		return -1
	}
	var r rune
	for _, c := range b[:4] {
		switch {
		case isDigit(c):
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return -1
		}
		r = r<<4 | rune(c)
	}
	return r
}
