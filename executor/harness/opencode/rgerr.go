package opencode

import (
	"errors"
	"regexp"
	"regexp/syntax"
	"strings"
	"unicode/utf8"
)

// rgPatternError words a pattern ripgrep refuses as ripgrep does (Rust's regex-syntax,
// which opencode passes on trimmed), for the error Go's parser names alike: a group left
// open is marked under its "(":
//
//	regex parse error:
//	    (unclosed
//	    ^
//	error: unclosed group
//
// Other refusals keep Go's words ("" when Go compiles the pattern).
func rgPatternError(pattern string) string {
	_, err := regexp.Compile(pattern)
	var se *syntax.Error
	if err == nil || !errors.As(err, &se) || se.Code != syntax.ErrMissingParen || strings.Contains(pattern, "\n") {
		return ""
	}
	// The innermost group still open at the end, as the parser's stack pops it.
	var open []int
	escaped, inClass := false, false
	for i := 0; i < len(pattern); i++ {
		c := pattern[i]
		switch {
		case escaped:
			escaped = false
		case c == '\\':
			escaped = true
		case inClass:
			if c == ']' {
				inClass = false
			}
		case c == '[':
			inClass = true
		case c == '(':
			open = append(open, i)
		case c == ')' && len(open) > 0:
			open = open[:len(open)-1]
		}
	}
	if len(open) == 0 {
		return ""
	}
	col := utf8.RuneCountInString(pattern[:open[len(open)-1]])
	return "regex parse error:\n    " + pattern + "\n    " + strings.Repeat(" ", col) + "^\nerror: unclosed group"
}
