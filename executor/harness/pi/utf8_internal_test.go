package pi

import (
	"testing"

	"github.com/tapebox/tapebox/executor/action"
)

// TestDecodeUTF8: invalid bytes become U+FFFD as Node's decoder makes them (the wants are
// node -e 'Buffer.from([...]).toString()' on each input).
func TestDecodeUTF8(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"plain", "plain"},
		{"\xe2\x82 x", "\ufffd x"},
		{"a\xffb", "a\ufffdb"},
		{"\xf0\x9f\x99", "\ufffd"},
		{"\xf0\x9f\x99\x82", "🙂"},
		{"\xed\xa0\x80", "\ufffd\ufffd\ufffd"},
		{"\xe0\x80\xaf", "\ufffd\ufffd\ufffd"},
		{"\xc3", "\ufffd"},
		{"\xc3\xc3\xa9", "\ufffdé"},
		{"\xf4\x90\x80\x80", "\ufffd\ufffd\ufffd\ufffd"},
	} {
		if got := action.LossyUTF8([]byte(tc.in)); got != tc.want {
			t.Errorf("action.LossyUTF8(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
