package jsonlex

import (
	"math"
	"math/bits"
	"strconv"
	"unicode/utf8"
)

const hexDigits = "0123456789abcdef"

// AppendString appends s as a JSON string exactly as encoding/json writes it: the short
// escapes \" \\ \b \f \n \r \t, other control bytes as \u00XX, invalid UTF-8 as \ufffd,
// U+2028 and U+2029 escaped, and with html also <, > and & (json.Marshal's default; an
// Encoder with SetEscapeHTML(false) leaves them).
func AppendString(dst []byte, s string, html bool) []byte {
	dst = append(dst, '"')
	start, i := 0, 0
	for i < len(s) {
		if !html {
			// Eight bytes at a time, skip what needs no escape: the lowest flag of a
			// quote, backslash, control or non-ASCII byte is exact (see String).
			for i+8 <= len(s) {
				b := s[i : i+8]
				w := uint64(b[0]) | uint64(b[1])<<8 | uint64(b[2])<<16 | uint64(b[3])<<24 |
					uint64(b[4])<<32 | uint64(b[5])<<40 | uint64(b[6])<<48 | uint64(b[7])<<56
				q := w ^ quote
				k := w ^ bslsh
				if m := (((q - lsb) & ^q) | ((k - lsb) & ^k) | ((w - ctl) & ^w) | w) & msb; m != 0 {
					i += bits.TrailingZeros64(m) / 8
					break
				}
				i += 8
			}
			if i >= len(s) {
				break
			}
		}
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && (!html || c != '<' && c != '>' && c != '&') {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// AppendFloat appends f as encoding/json writes a float64 (ES6 number formatting:
// exponent form below 1e-6 and from 1e21, without a padded exponent). It reports false
// for NaN and the infinities, which encoding/json refuses.
func AppendFloat(dst []byte, f float64) ([]byte, bool) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return dst, false
	}
	format := byte('f')
	if a := math.Abs(f); a != 0 && (a < 1e-6 || a >= 1e21) {
		format = 'e'
	}
	dst = strconv.AppendFloat(dst, f, format, -1, 64)
	if n := len(dst); format == 'e' && n >= 4 && dst[n-4] == 'e' && dst[n-3] == '-' && dst[n-2] == '0' {
		dst[n-2] = dst[n-1] // e-07 -> e-7
		dst = dst[:n-1]
	}
	return dst, true
}

// AppendRaw appends a raw value (a json.RawMessage) as an encoding/json Encoder without
// HTML escaping writes it: nil as null, anything else compacted. It reports false when v
// is not one valid JSON value (encoding/json's error to word).
func AppendRaw(dst, v []byte) ([]byte, bool) {
	if v == nil {
		return append(dst, "null"...), true
	}
	return Compact(dst, v)
}
