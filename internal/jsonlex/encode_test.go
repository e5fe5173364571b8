package jsonlex_test

import (
	"bytes"
	"encoding/json"
	"math"
	"testing"

	"github.com/tapebox/tapebox/internal/jsonlex"
)

// stdString is encoding/json's encoding of s, with HTML escaping or without.
func stdString(t *testing.T, s string, html bool) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(html)
	if err := enc.Encode(s); err != nil {
		t.Fatal(err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

// FuzzAppend holds AppendString and AppendFloat to encoding/json.
func FuzzAppend(f *testing.F) {
	for _, s := range []string{"", "plain ascii text, long enough for words", "q\"b\\\b\f\n\r\t\x00\x1f\x7f/",
		"<a>&amp;", "bad \xff utf-8 \xe2\x80 \xed\xa0\x80", "sep \u2028 \u2029", "\uFFFD\\ufffd", "héllo wörld €𝄞"} {
		f.Add(s, 1.5)
	}
	for _, x := range []float64{0, math.Copysign(0, -1), 1e-6, 9.99e-7, 1e21, 1e20, -1.5e-300, math.MaxFloat64, 0.1, 123456789} {
		f.Add("", x)
	}
	f.Fuzz(func(t *testing.T, s string, x float64) {
		for _, html := range []bool{false, true} {
			if got, want := jsonlex.AppendString([]byte("p"), s, html), append([]byte("p"), stdString(t, s, html)...); !bytes.Equal(got, want) {
				t.Fatalf("AppendString(%q, html %v) = %s, want %s", s, html, got, want)
			}
		}
		got, ok := jsonlex.AppendFloat(nil, x)
		want, err := json.Marshal(x)
		if ok != (err == nil) || ok && !bytes.Equal(got, want) {
			t.Fatalf("AppendFloat(%v) = %s, %v; encoding/json: %s, %v", x, got, ok, want, err)
		}
	})
}

// TestAppendRaw: nil is null, a value is compacted, anything else is refused.
func TestAppendRaw(t *testing.T) {
	for in, want := range map[string]string{" [1, {\"a\" : 2}] ": `[1,{"a":2}]`, `"x"`: `"x"`, "": "", "[1,]": "", "1 2": ""} {
		got, ok := jsonlex.AppendRaw(nil, []byte(in))
		if ok != (want != "") || string(got) != want {
			t.Errorf("AppendRaw(%q) = %q, %v; want %q", in, got, ok, want)
		}
	}
	if got, ok := jsonlex.AppendRaw(nil, nil); !ok || string(got) != "null" {
		t.Errorf("AppendRaw(nil) = %q, %v", got, ok)
	}
}
