package secrets

import (
	"strings"
	"unsafe"
)

// encoded reports whether gitleaks could find in s, once decoded (base64, hex, percent
// or Unicode escapes, its four codecs, up to depth rounds), what it does not find in s as
// it is: s holds a segment that decodes to printable text and either the decoded segment
// holds a keyword, or s holds one anywhere (a rule then runs on the decoded string, where
// a match may take in the decoded bytes: "token=abc%41..."). It errs on the side of yes:
// it decodes more than gitleaks does (every alignment of a base64 run, both base64
// alphabets at once, every printable stretch of the result), never less.
func (e *engine) encoded(s string, depth int) bool {
	seg, kw := e.segments(s, depth)
	return kw || (seg && e.dfa.any(s))
}

// segments reports whether s holds a segment that decodes to printable text (seg), and
// whether one decodes to text holding a keyword (kw).
func (e *engine) segments(s string, depth int) (seg, kw bool) {
	if depth <= 0 || len(s) < 3 {
		return false, false
	}
	check := func(d string) bool {
		dseg, dkw := e.decodedHasKeyword(d, depth)
		seg = seg || dseg
		kw = kw || dkw
		return kw
	}
	if strings.Contains(s, `\u`) || strings.Contains(s, `\U`) || strings.Contains(s, "U+") {
		if d, ok := unicodeDecode(s); ok && check(d) {
			return seg, kw
		}
	}
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case b64Value[c] != 0xff:
			j := i
			for j < len(s) && b64Value[s[j]] != 0xff {
				j++
			}
			if j-i >= 16 && !opaqueValueAt(s, i) && e.run(s[i:j], check) {
				return seg, kw
			}
			i = j
			continue
		case c == '%':
			if i+2 < len(s) && isHexByte(s[i+1]) && isHexByte(s[i+2]) {
				end := strings.IndexByte(s[i:], '\n')
				if end < 0 {
					end = len(s)
				} else {
					end += i
				}
				seg = true
				if check(percentDecode(s[i:end])) {
					return seg, kw
				}
				i = end
				continue
			}
		}
		i++
	}
	return seg, kw
}

// opaqueValues are how a value of an opaque member (allow.go) starts in JSON text held in a
// string, such as a stream chunk's events: `"encrypted_content":"`.
var opaqueValues = func() (out []string) {
	for _, name := range OpaqueFields() {
		out = append(out, `"`+name+`":"`, `"`+name+`": "`)
	}
	return out
}()

// opaqueValueAt reports whether s[i:] is the value of an opaque member in JSON text: a
// provider's ciphertext or signature, which a scan of the JSON itself does not look at, so
// it is not decoded here either. Decoded, it is printable (base64 of hex digits) and sent
// a stream chunk that held it, and any keyword, to gitleaks whole with every rule and its
// decoder: most of what a scan of a clean corpus cost in gitleaks.
func opaqueValueAt(s string, i int) bool {
	for _, p := range opaqueValues {
		if i >= len(p) && s[i-len(p):i] == p {
			return true
		}
	}
	return false
}

// run checks a maximal run of base64 characters (hex ones included): decoded as base64
// at each of its four alignments, and each stretch of 32 or more hex digits decoded as hex
// at both alignments.
func (e *engine) run(r string, check func(decoded string) bool) bool {
	if !strings.ContainsAny(r, "0123456789+/-_") {
		// gitleaks decodes neither base64 nor hex without one of these.
		return false
	}
	var buf []byte
	for a := range 4 {
		buf = b64Decode(buf[:0], r[a:])
		if check(bytesString(buf)) {
			return true
		}
	}
	for i := 0; i < len(r); {
		if !isHexByte(r[i]) {
			i++
			continue
		}
		j := i
		for j < len(r) && isHexByte(r[j]) {
			j++
		}
		if j-i >= 32 {
			for a := range 2 {
				buf = hexDecode(buf[:0], r[i+a:j])
				if check(bytesString(buf)) {
					return true
				}
			}
		}
		i = j
	}
	return false
}

// minDecoded is the shortest printable stretch of decoded text looked at: gitleaks keeps
// a decoded segment only when it is printable ASCII, and a segment is at least 16 base64
// characters (12 bytes) or 32 hex digits (16 bytes).
const minDecoded = 8

// decodedHasKeyword looks at the printable stretches of decoded text d: seg is whether
// there is one (of minDecoded bytes or more, or d whole), kw whether one holds a keyword or
// decodes further (depth-1 rounds) to text that may hold a finding.
func (e *engine) decodedHasKeyword(d string, depth int) (seg, kw bool) {
	for i := 0; i < len(d); {
		if !printable(d[i]) {
			i++
			continue
		}
		j := i
		for j < len(d) && printable(d[j]) {
			j++
		}
		if j-i >= minDecoded || (i == 0 && j == len(d)) {
			seg = true
			if e.dfa.any(d[i:j]) || e.encoded(d[i:j], depth-1) {
				return true, true
			}
		}
		i = j
	}
	return seg, false
}

func printable(c byte) bool { return c >= 0x20 && c < 0x7f || c == '\t' || c == '\n' || c == '\r' }

var b64Value = func() (t [256]byte) {
	for i := range t {
		t[i] = 0xff
	}
	const std = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
	for i := range len(std) {
		t[std[i]] = byte(i)
	}
	t['-'], t['_'] = 62, 63
	return t
}()

// b64Decode appends the bytes of s's whole 4-character groups, either alphabet.
func b64Decode(dst []byte, s string) []byte {
	for i := 0; i+4 <= len(s); i += 4 {
		v := uint32(b64Value[s[i]])<<18 | uint32(b64Value[s[i+1]])<<12 | uint32(b64Value[s[i+2]])<<6 | uint32(b64Value[s[i+3]])
		dst = append(dst, byte(v>>16), byte(v>>8), byte(v))
	}
	if rest := len(s) % 4; rest >= 2 {
		t := s[len(s)-rest:]
		v := uint32(b64Value[t[0]])<<18 | uint32(b64Value[t[1]])<<12
		dst = append(dst, byte(v>>16))
		if rest == 3 {
			v |= uint32(b64Value[t[2]]) << 6
			dst = append(dst, byte(v>>8))
		}
	}
	return dst
}

func isHexByte(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func hexNibble(c byte) byte {
	switch {
	case c <= '9':
		return c - '0'
	case c <= 'F':
		return c - 'A' + 10
	}
	return c - 'a' + 10
}

func hexDecode(dst []byte, s string) []byte {
	for i := 0; i+2 <= len(s); i += 2 {
		dst = append(dst, hexNibble(s[i])<<4|hexNibble(s[i+1]))
	}
	return dst
}

// percentDecode decodes every %XX of s, leaving the rest as it is.
func percentDecode(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) && isHexByte(s[i+1]) && isHexByte(s[i+2]) {
			b.WriteByte(hexNibble(s[i+1])<<4 | hexNibble(s[i+2]))
			i += 2
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// unicodeDecode decodes every \uXXXX, \\uXXXX and U+XXXX of s (case-insensitive u),
// leaving the rest as it is; ok is false when there is none.
func unicodeDecode(s string) (string, bool) {
	var b strings.Builder
	ok := false
	for i := 0; i < len(s); i++ {
		j := i
		for j < len(s) && j-i < 2 && s[j] == '\\' {
			j++
		}
		switch {
		case j > i && j+5 <= len(s) && (s[j] == 'u' || s[j] == 'U') && allHex(s[j+1:j+5]):
			i = j + 4
		case s[i] == 'U' && i+6 <= len(s) && s[i+1] == '+' && allHex(s[i+2:i+6]):
			j = i + 1
			i += 5
		default:
			b.WriteByte(s[i])
			continue
		}
		var r rune
		for _, c := range []byte(s[j+1 : j+5]) {
			r = r<<4 | rune(hexNibble(c))
		}
		b.WriteRune(r)
		ok = true
	}
	return b.String(), ok
}

func allHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if !isHexByte(s[i]) {
			return false
		}
	}
	return true
}

// bytesString is b as a string, without a copy, for a look that ends before b changes.
func bytesString(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }
