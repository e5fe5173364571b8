package term

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Printable is s with its control characters other than newline and tab, and its bytes
// that are not UTF-8, written as Go escapes (\x1b, \u009b). What a tape holds or a
// sandbox's command wrote reaches a terminal in error messages, logs and reports, and an
// escape sequence there could retitle it, rewrite what it shows or, on some terminals,
// answer back as input.
func Printable(s string) string {
	clean := true
	for _, r := range s {
		if r == utf8.RuneError || (unicode.IsControl(r) && r != '\n' && r != '\t') {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n <= 1:
			fmt.Fprintf(&b, "\\x%02x", s[i])
		case r == '\n' || r == '\t' || !unicode.IsControl(r):
			b.WriteString(s[i : i+n])
		case r < 0x80:
			fmt.Fprintf(&b, "\\x%02x", r)
		default:
			fmt.Fprintf(&b, "\\u%04x", r)
		}
		i += n
	}
	return b.String()
}

// Excerpt is s as a report shows it: on one line (a newline written \n), cut after n
// bytes with a "…", its other control characters escaped (Printable: a tape's text must not
// drive the terminal).
func Excerpt(s string, n int) string {
	s = strings.ReplaceAll(s, "\n", `\n`)
	if len(s) > n {
		s = s[:n] + "…"
	}
	return Printable(s)
}
