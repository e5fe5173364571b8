package secrets

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
)

// FuzzWalkStrings checks the walk against encoding/json: on any valid document it visits
// every string value, and each pointer leads to that string; a document whose first value
// encoding/json cannot decode is an error.
func FuzzWalkStrings(f *testing.F) {
	for _, seed := range []string{
		`{"a":"x","b":[1,"y",{"c~/d":"z"}],"e":{}}`,
		`["p",[],[["q"]],{"":"r"}]`,
		`"top"`,
		`{"version":1,"threads":[{"id":"main","parent":null,"steps":[{"request":{"raw":{"messages":[{"content":"hi"}]}}}]}]}`,
		`{"a":`,
		`{"a":"\u00e9\ud83d\ude00"}`,
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, doc string) {
		var ref any
		valid := json.Unmarshal([]byte(doc), &ref) == nil
		got := map[string]string{}
		err := walkStrings(strings.NewReader(doc), func(w *walker, v string) error {
			got[w.pointer()] = v // a member named twice: the last one, as encoding/json keeps
			return nil
		})
		if !valid {
			// A walk reads the first value only: when encoding/json cannot decode that
			// value either, the walk must say so rather than pass it as clean.
			var first any
			if json.NewDecoder(strings.NewReader(doc)).Decode(&first) != nil && err == nil {
				t.Fatalf("invalid JSON %q walked without an error", doc)
			}
			return
		}
		if err != nil {
			t.Fatalf("valid JSON %q: %v", doc, err)
		}
		want := map[string]string{}
		collect(ref, "", want)
		// The walk may visit more: values that a member named twice hides from Unmarshal.
		for p, v := range want {
			if g, ok := got[p]; !ok || g != v {
				t.Fatalf("at %q got %q, want %q", p, got[p], v)
			}
		}
	})
}

func collect(v any, ptr string, out map[string]string) {
	switch x := v.(type) {
	case string:
		out[ptr] = x
	case []any:
		for i, e := range x {
			collect(e, ptr+"/"+strconv.Itoa(i), out)
		}
	case map[string]any:
		for k, e := range x {
			collect(e, ptr+"/"+escapePointer(k), out)
		}
	}
}
