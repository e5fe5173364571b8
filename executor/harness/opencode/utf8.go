package opencode

import (
	"strings"
	"unicode/utf8"
)

// decodeUTF8 is TextDecoder("utf-8") (as Node's and Bun's buffer.toString): each maximal
// invalid subsequence becomes one U+FFFD, as the WHATWG decoder has it. (The same as the
// Pi module's: both harnesses decode with the WHATWG decoder.)
func decodeUTF8(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	var sb strings.Builder
	for len(b) > 0 {
		r, n := utf8.DecodeRune(b)
		if r == utf8.RuneError && n == 1 {
			sb.WriteRune(utf8.RuneError)
			n = invalidRun(b)
		} else {
			sb.Write(b[:n])
		}
		b = b[n:]
	}
	return sb.String()
}

// invalidRun is the length of the maximal invalid subsequence that b starts with.
func invalidRun(b []byte) int {
	n := 0 // the length the lead byte announces
	switch c := b[0]; {
	case c >= 0xf0:
		n = 4
	case c >= 0xe0:
		n = 3
	case c >= 0xc0:
		n = 2
	}
	for i := min(len(b), 3); i >= 2; i-- {
		if i < n && utf8.Valid(append(append([]byte{}, b[:i]...), "\x80\x80"[:n-i]...)) {
			return i
		}
	}
	return 1
}
