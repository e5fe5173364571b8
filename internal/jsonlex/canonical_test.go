package jsonlex

import (
	"bytes"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

func TestCanonical(t *testing.T) {
	for in, want := range map[string]string{
		`{ "b" : 1 , "a" : [ true , null , "x" ] }`:      `{"a":[true,null,"x"],"b":1}`,
		`"\u2014 \/ \u0041 \t \u001f \u007f"`:            "\"\u2014 / A \\t \\u001f \x7f\"",
		`"<>&\u2028"`:                                    "\"<>&\u2028\"",
		`"\ud83d\ude00 \ud800 \uDC00"`:                   "\"\U0001F600 \\ud800 \\udc00\"",
		"\"\xff\"":                                       "\"\uFFFD\"",
		`[1.0, 1E0, 10e-1, 0.1e1, -0, -0.0, 0e5]`:        `[1,1,1,1,0,0,0]`,
		`[1e21, 1e+21, 100000000000000000000, 1e20]`:     `[1e+21,1e+21,100000000000000000000,100000000000000000000]`,
		`[0.0000001, 1e-7, 0.000001, 1.5e-6, 123.456e2]`: `[1e-7,1e-7,0.000001,0.0000015,12345.6]`,
		`[9007199254740993, -12.50, 1e-05, 1e+16]`:       `[9007199254740993,-12.5,0.00001,10000000000000000]`,
		`{"\u00e9":1,"z":2,"\ud83d\ude00":3,"\uffff":4}`: "{\"z\":2,\"\u00e9\":1,\"\U0001F600\":3,\"\uffff\":4}",
	} {
		got, err := Canonical(nil, []byte(in))
		if err != nil || string(got) != want {
			t.Errorf("%s:\n got %s (%v)\nwant %s", in, got, err, want)
		}
	}
	var de *DuplicateKeyError
	if _, err := Canonical(nil, []byte(`{"a":{"x":1,"y":{"q":1,"Q":2}}}`)); !errors.As(err, &de) || de.Pointer != "/a/y/Q" {
		t.Errorf("want a duplicate at /a/y/Q, got %v", err)
	}
}

// FuzzCanonical: the canonical form of valid JSON is valid JSON that decodes to the same
// value (numbers as float64), is its own canonical form, and does not depend on how the
// input was spelled (encoding/json's own spelling of the decoded value gives the same form,
// when numbers survive float64).
func FuzzCanonical(f *testing.F) {
	for _, s := range []string{`{"b":[1,2.5e3,"\u00e9"],"a":null}`, `"\ud800x"`, `[-0.0,1e400]`, `{"\u0000":"\t"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := Canonical(nil, b)
		var w bytes.Buffer
		werr := WriteCanonical(&w, b)
		if (err == nil) != (werr == nil) || w.String() != string(got) {
			t.Fatalf("WriteCanonical %q: %q (%v), Canonical: %q (%v)", b, w.Bytes(), werr, got, err)
		}
		if err != nil {
			var de *DuplicateKeyError
			if json.Valid(b) && !errors.As(err, &de) {
				t.Fatalf("valid JSON %q refused: %v", b, err)
			}
			return
		}
		if !json.Valid(b) {
			t.Fatalf("invalid JSON %q accepted", b)
		}
		again, err := Canonical(nil, got)
		if err != nil || string(again) != string(got) {
			t.Fatalf("not idempotent: %q -> %q -> %q (%v)", b, got, again, err)
		}
		var v1, v2 any
		if json.Unmarshal(b, &v1) != nil {
			return // a number beyond float64
		}
		if err := json.Unmarshal(got, &v2); err != nil || !reflect.DeepEqual(v1, v2) {
			t.Fatalf("%q -> %q: values differ (%v)", b, got, err)
		}
	})
}

// TestWriteCanonical: WriteCanonical writes Canonical's bytes, in pieces, for the cases of
// TestCanonical, for generated documents (objects out of key order, nested, strings past
// the piece size), and writes nothing for a document Canonical refuses.
func TestWriteCanonical(t *testing.T) {
	docs := []string{
		`{ "b" : 1 , "a" : [ true , null , "x" ] }`, `"\u2014 \/ \u0041"`, `[1.0, 1E0, -0.0, 1e21]`,
		`{"\u00e9":1,"z":2,"\ud83d\ude00":3,"\uffff":4}`, `{}`, `[]`, `[{}, [], {"a":[]}]`, ` 7 `,
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 300 {
		docs = append(docs, string(genJSON(rng, 0)))
	}
	big := `{"z":"` + strings.Repeat(`x\n\u00e9`, 40000) + `","a":{"y":[` + strings.Repeat(`{"k":1,"b":2},`, 5000) + `0]}}`
	plain := `{"z":"` + strings.Repeat("plain é text ", 10000) + `","a":"` + strings.Repeat("\xff", canonWriteChunk) + `"}`
	docs = append(docs, big, plain)
	for _, d := range docs {
		want, err := Canonical(nil, []byte(d))
		if err != nil {
			t.Fatalf("%.80s: %v", d, err)
		}
		var w chunks
		if err := WriteCanonical(&w, []byte(d)); err != nil {
			t.Fatalf("%.80s: %v", d, err)
		}
		if got := bytes.Join(w, nil); !bytes.Equal(got, want) {
			t.Fatalf("%.80s:\n got %.200s\nwant %.200s", d, got, want)
		}
		if len(d) > 3*canonWriteChunk && len(w) < 2 {
			t.Errorf("a %d-byte document went out in %d piece", len(d), len(w))
		}
	}
	for _, bad := range []string{`{"a":1,"a":2}`, `{"a":{"x":1,"X":2}}`, `[1,`, `{"a" 1}`, `"\x"`, `[1] 2`, ``} {
		var w chunks
		if err := WriteCanonical(&w, []byte(bad)); err == nil || len(w) > 0 {
			t.Errorf("%q: err %v, %d pieces written", bad, err, len(w))
		}
	}
}

// chunks keeps each Write's bytes.
type chunks [][]byte

func (c *chunks) Write(p []byte) (int, error) {
	*c = append(*c, bytes.Clone(p))
	return len(p), nil
}

// genJSON draws a JSON value: objects with keys out of order and non-ASCII, escapes,
// numbers in several spellings.
func genJSON(r *rand.Rand, depth int) []byte {
	keys := []string{`"b"`, `"a"`, `"\u00e9"`, `"Z"`, `"\ud83d\ude00"`, `"\uffff"`, `"aa"`, `""`, `"\u0061b"`}
	scalars := []string{`1`, `-0.0`, `1E3`, `"x\ty"`, `"\u2028"`, `true`, `null`, `"é"`, `0.0000001`}
	switch n := r.IntN(4); {
	case depth > 4 || n == 0:
		return []byte(scalars[r.IntN(len(scalars))])
	case n == 1:
		out := []byte{'['}
		for i := range r.IntN(4) {
			if i > 0 {
				out = append(out, " , "[r.IntN(2):]...)
			}
			out = append(out, genJSON(r, depth+1)...)
		}
		return append(out, ']')
	default:
		out := []byte{'{'}
		perm := r.Perm(len(keys))[:r.IntN(len(keys))]
		for i, k := range perm {
			if i > 0 {
				out = append(out, ',')
			}
			out = append(out, keys[k]...)
			out = append(out, " : "[r.IntN(2):]...)
			out = append(out, genJSON(r, depth+1)...)
		}
		return append(out, '}')
	}
}
