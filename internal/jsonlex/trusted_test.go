package jsonlex

import "testing"

// On valid JSON, SkipTrusted ends where Skip does; on any bytes it stays inside them.
func FuzzSkipTrusted(f *testing.F) {
	for _, s := range []string{
		`{"a":"x\"y","b":[1,2.5e3,-0,true,false,null],"c":{"d":"\\"}}`,
		`"\\\\\""`, `["\\", "\\\"", "a\\\\"]`, ` [ ] `, `{}`, `0`, `"é\u00e9"`,
		`{"threads":[{"id":"main","steps":[{"x":"}]"}]}]}`,
		`[1,`, `"abc\"`, `}`, `[}`, ``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		i := Space(data, 0)
		end, ok := SkipTrusted(data, i)
		if end < i || end > len(data) {
			t.Fatalf("SkipTrusted(%q) = %d, outside [%d, %d]", data, end, i, len(data))
		}
		if !Valid(data) {
			return
		}
		want, err := Skip(data, i)
		if err != nil {
			t.Fatalf("Skip(%q): %v", data, err)
		}
		if !ok || end != want {
			t.Fatalf("SkipTrusted(%q) = %d, %v; Skip ends at %d", data, end, ok, want)
		}
	})
}

func TestSkipTrusted(t *testing.T) {
	for _, tc := range []struct {
		in  string
		end int
		ok  bool
	}{
		{`{"a":[1,"}"]} x`, 13, true},
		{`"a\\"b`, 5, true},
		{`"a\"b"`, 6, true},
		{`true,`, 4, true},
		{`[1,2`, 4, false},
		{`"abc`, 4, false},
		{`]`, 0, false},
		{`,`, 0, false},
		{``, 0, false},
	} {
		end, ok := SkipTrusted([]byte(tc.in), 0)
		if end != tc.end || ok != tc.ok {
			t.Errorf("SkipTrusted(%q) = %d, %v; want %d, %v", tc.in, end, ok, tc.end, tc.ok)
		}
	}
}
