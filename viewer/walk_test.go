package viewer

import (
	"bytes"
	"encoding/json"
	"testing"
)

// On any valid JSON the scanner's span of one value is the whole value.
func FuzzScanner(f *testing.F) {
	for _, s := range []string{
		`{"a":"x\"y","b":[1,2.5e3,-0,true,false,null],"c":{"d":"\\"}}`,
		`"\\\\\""`, `["\\", "\\\"", "a\\\\"]`, ` [ ] `, `{}`, `0`, `"é\u00e9"`,
		`{"threads":[{"id":"main","steps":[{"x":"}]"}]}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s := &scanner{data: data}
		span, err := s.value()
		if !json.Valid(data) {
			return
		}
		if err != nil {
			t.Fatalf("value(%q): %v", data, err)
		}
		if want := bytes.TrimSpace(data); !bytes.Equal(span, want) {
			t.Fatalf("value(%q) = %q, want %q", data, span, want)
		}
		if s.peek() != 0 {
			t.Fatalf("value(%q) stopped at %d", data, s.pos)
		}
	})
}
