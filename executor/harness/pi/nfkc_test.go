package pi

import (
	"strings"
	"testing"
)

// TestNFKC holds nfkc to what Node (Pi's runtime, ICU) gives for String.normalize("NFKC")
// on each case: composition of a letter and its accents in either order of the marks,
// compatibility forms (ligatures, fullwidth, circled digits, fractions, special spaces),
// Hangul jamo, singletons (Angstrom, Ohm), composition exclusions, blocked marks. The
// expected sides were printed by node (v24, ICU 78). Before nfkc, the fuzzy edit of a file
// with "e\u0301" wrote one byte more than Pi (fidelity seed pi 1002).
func TestNFKC(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"e\u0301", "\u00e9"},
		{"caf\u00e9", "caf\u00e9"},
		{"\ufb01le", "file"},
		{"\uff28\uff45\uff4c\uff4c\uff4f", "Hello"},
		{"\u2460\u2461", "12"},
		{"\u1100\u1161\u11a8", "\uac01"},
		{"\ud55c\uae00", "\ud55c\uae00"},
		{"a\u0301\u0323", "\u1ea1\u0301"},
		{"a\u0323\u0301", "\u1ea1\u0301"},
		{"\u212b", "\u00c5"},
		{"\u1e9b\u0323", "\u1e69"},
		{"x\u00a0y", "x y"},
		{"\u2126", "\u03a9"},
		{"\u00bd", "1\u20442"},
		{"\u3000", " "},
		{"\u0344", "\u0308\u0301"},
		{"e\u0301\u0301", "\u00e9\u0301"},
		{"\u0301e", "\u0301e"},
		{"\u0fb2\u0f80", "\u0fb2\u0f80"},
		{"\u03a9 \u00df na\u00efve \u05e9\u05dc\u05d5\u05dd \u65e5\u672c\u8a9e \U0001f642", "\u03a9 \u00df na\u00efve \u05e9\u05dc\u05d5\u05dd \u65e5\u672c\u8a9e \U0001f642"},
		{"A\u030a\u0301", "\u01fa"},
		{"\u00c5\u0301", "\u01fa"},
		{"\u1100\u1161", "\uac00"},
		{"\u1100\u0301\u1161", "\u1100\u0301\u1161"},
		{"\uac00\u11a8", "\uac01"},
		{"\u2028x\u2029", "\u2028x\u2029"},
		{"\u017f\u0307", "\u1e61"},
		{"\ufdfa", "\u0635\u0644\u0649 \u0627\u0644\u0644\u0647 \u0639\u0644\u064a\u0647 \u0648\u0633\u0644\u0645"},
		{"\u0958", "\u0915\u093c"},
	} {
		if got := nfkc(c.in); got != c.want {
			t.Errorf("nfkc(%+q) = %+q, want %+q", c.in, got, c.want)
		}
	}
	if s := strings.Repeat("plain ascii ", 100); nfkc(s) != s {
		t.Errorf("ASCII changed")
	}
	if got := nfkc("caf\xe9 \xff e\u0301"); got != "caf\xe9 \xff \u00e9" {
		t.Errorf("bytes that are not UTF-8: %+q", got)
	}
	// Pi's fuzzy edit works in the normalized text: the replacement lands in it.
	out, msg := applyEdits("config e\u0301 alpha  \nmain beta\n", []replacement{{"main beta   ", "done"}}, "f")
	if msg != "" || out != "config \u00e9 alpha\ndone\n" {
		t.Errorf("fuzzy edit: %+q %q", out, msg)
	}
}

// An oldText of spaces alone is empty once normalized, and Pi counts it as JavaScript's
// split("") does, once between every UTF-16 code unit: 49 for a file of 50 units, where
// strings.Count said 51 (fidelity seed pi 1077 on Pi 0.67.1).
func TestEmptyFuzzyOldTextCount(t *testing.T) {
	content := "alpha beta\n" + strings.Repeat("x", 38) + "\n" // 50 units
	_, msg := applyEdits(content, []replacement{{"    ", "y"}, {"beta", "b"}}, "f")
	if want := "Found 49 occurrences of edits[0] in f. Each oldText must be unique. Please provide more context to make it unique."; msg != want {
		t.Errorf("got %q, want %q", msg, want)
	}
	if n := jsSplitCount("a🙂", ""); n != 2 {
		t.Errorf("an astral character is two units: %d", n)
	}
	if n := jsSplitCount("", ""); n != -1 {
		t.Errorf("\"\".split(\"\") is empty: %d", n)
	}
}
