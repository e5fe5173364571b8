package jsonlex

import (
	"encoding/json"
	"errors"
	"reflect"
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
