package schema

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"unicode/utf8"

	"github.com/tapebox/tapebox/tape"
)

// FuzzValidate: Validate never panics or hangs; it calls bytes JSON exactly when
// encoding/json does; and on JSON input its problems are those of the straightforward
// validation (encoding/json into any, then the whole schema).
func FuzzValidate(f *testing.F) {
	paths, _ := filepath.Glob("testdata/*.json")
	for _, p := range paths {
		if data, err := os.ReadFile(p); err == nil {
			f.Add(data)
		}
	}
	small := mustMarshal(agentTape(tape.ProviderOpenAIChat, 2, 20, true))
	f.Add(small)
	f.Add(small[:len(small)/3])
	f.Add([]byte(`{"version":1,"meta":null,"threads":[{"id":"a","parent":["x"],"steps":[{}]}]}`))
	f.Add([]byte(`{"version":2}`))
	f.Add([]byte(`[1,-0.5e+7,"\ud800\u00e9",true,null,{}]`))
	f.Add([]byte(`{"threads":[{"steps":[{"request":{"messages":[{"role":"x","content":[{"type":"text"},{"type":"text"}]}]}}]}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		err := Validate(data)
		var se *SyntaxError
		isSyntax := errors.As(err, &se)
		if isSyntax == json.Valid(data) {
			t.Fatalf("Validate syntax error %v, but json.Valid says %v", err, json.Valid(data))
		}
		if isSyntax || !utf8.Valid(data) {
			return // encoding/json replaces invalid UTF-8, which changes messages
		}
		var ve *ValidationError
		if errors.As(err, &ve) && ve.version {
			return // reported on its own, unlike the schema's const
		}
		if m := map[string]any{}; json.Unmarshal(data, &m) == nil {
			if v, ok := m["version"]; ok && v != float64(tape.Version) {
				return
			}
		}
		want, ok := reference(t, data)
		if !ok {
			t.Fatalf("json.Valid but the reference cannot decode")
		}
		var got []Problem
		if ve != nil {
			got = ve.Problems
		} else if err != nil {
			t.Fatalf("unexpected error: %v", err)
		}
		if len(got) != len(want) {
			t.Fatalf("got %d problems, want %d:\ngot  %v\nwant %v", len(got), len(want), got, want)
		}
		for i := range got {
			if got[i].Pointer != want[i].Pointer {
				t.Fatalf("problem %d: got %v, want %v", i, got[i], want[i])
			}
		}
	})
}
