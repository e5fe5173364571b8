package term

import "testing"

func TestPrintable(t *testing.T) {
	for in, want := range map[string]string{
		"plain\ttext\nnext é 😀": "plain\ttext\nnext é 😀",
		"\x1b[2Jclear\a":        `\x1b[2Jclear\x07`,
		"c1 \u009b and \xff":    `c1 \u009b and \xff`,
		"del\x7f\r":             `del\x7f\x0d`,
		"":                      "",
	} {
		if got := Printable(in); got != want {
			t.Errorf("Printable(%q) = %q, want %q", in, got, want)
		}
	}
}
