package jsonlex

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestCheckUnique(t *testing.T) {
	for _, tc := range []struct {
		doc, ptr, key string
	}{
		{doc: `{"a":1,"b":{"c":[1,{"d":2}]}}`},
		{doc: `[{"a":1},{"a":2}]`},
		{doc: `{"a":{"x":1},"b":{"x":1}}`},
		{doc: `{"meta":{"x":1},"threads":[],"meta":{"x":2}}`, ptr: "/meta", key: "meta"},
		{doc: `{"threads":[{"id":"a","steps":[],"id":"b"}]}`, ptr: "/threads/0/id", key: "id"},
		{doc: `{"a":1,"\u0061":2}`, ptr: "/a", key: "a"},
		{doc: `{"meta":1,"Meta":2}`, ptr: "/Meta", key: "Meta"},
		{doc: `{"k":1,"\u212a":2}`, ptr: "/\u212a", key: "\u212a"},
		{doc: `{"a/b":{"c~":1,"c~":2}}`, ptr: "/a~1b/c~0", key: "c~"},
		{doc: `{"x":[[],[{"q":1}],{"y":{"z":0,"z":1}}]}`, ptr: "/x/2/y/z", key: "z"},
		{doc: `{"\ud800":1,"\udc00":2}`, ptr: "/\ufffd", key: "\ufffd"},
	} {
		err := CheckUnique([]byte(tc.doc))
		if tc.ptr == "" {
			if err != nil {
				t.Errorf("%s: %v", tc.doc, err)
			}
			continue
		}
		var de *DuplicateKeyError
		if !errors.As(err, &de) {
			t.Errorf("%s: want a duplicate key error, got %v", tc.doc, err)
			continue
		}
		if de.Pointer != tc.ptr || de.Key != tc.key {
			t.Errorf("%s: got pointer %q key %q, want %q %q (%v)", tc.doc, de.Pointer, de.Key, tc.ptr, tc.key, err)
		}
	}
}

// TestCheckUniqueWide: an object of many keys is indexed, and a repeat among them, or in
// an object nested in it, is still caught with its pointer.
func TestCheckUniqueWide(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{`)
	for i := range 100 {
		b.WriteString(`"k` + string(rune('A'+i%26)) + strings.Repeat("x", i/26) + `":{"a":1,"b":2},`)
	}
	ok := b.String() + `"end":0}`
	if err := CheckUnique([]byte(ok)); err != nil {
		t.Fatal(err)
	}
	for doc, ptr := range map[string]string{
		b.String() + `"kA":0}`:               "/kA",
		b.String() + `"end":{"a":1,"A":2}}`:  "/end/A",
		b.String() + `"z":{"a":0},"kzxx":1}`: "/kzxx",
	} {
		var de *DuplicateKeyError
		if err := CheckUnique([]byte(doc)); !errors.As(err, &de) || de.Pointer != ptr {
			t.Errorf("want a duplicate at %s, got %v", ptr, err)
		}
	}
}

// FuzzCheckUnique: CheckUnique accepts what encoding/json accepts unless it finds a
// repeated key, and a repeated key it finds is one encoding/json would fold into another.
func FuzzCheckUnique(f *testing.F) {
	for _, s := range []string{`{"a":1,"a":2}`, `{"a":{"b":1},"A":{}}`, `[{"x":[{"y":1,"y":2}]}]`, `"s"`, `{}`, `{"\u00e9":1,"\u00c9":2}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		err := CheckUnique(b)
		var de *DuplicateKeyError
		switch {
		case err == nil:
			if !json.Valid(b) {
				t.Fatalf("accepted invalid JSON %q", b)
			}
		case errors.As(err, &de):
			// (A document cut after its repeated key is refused for the repeat.)
			if de.Off >= len(b) || b[de.Off] != '"' {
				t.Fatalf("%q: offset %d is not a key", b, de.Off)
			}
			if !strings.EqualFold(de.Key, de.First) {
				t.Fatalf("%q: %q does not repeat %q", b, de.Key, de.First)
			}
		default:
			if json.Valid(b) {
				t.Fatalf("refused valid JSON %q: %v", b, err)
			}
		}
	})
}
