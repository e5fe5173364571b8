package jsonlex_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/tapebox/tapebox/internal/jsonlex"
)

// benchStrings are encoded JSON strings of about 30 KB each, of three kinds: lines of code
// and test output (an escape every dozen bytes or so, as in tool results), prose without
// escapes, and text that is not ASCII.
var benchStrings = func() map[string][][]byte {
	kinds := map[string]func(seed, line int) string{
		"code": func(seed, line int) string {
			return fmt.Sprintf("%4d\tfunc f%d_%d(s string) error { return fmt.Errorf(\"bad %%q: %%w\", s, err) } // path C:\\x\n", line, seed, line)
		},
		"prose": func(seed, line int) string {
			return fmt.Sprintf("Step %d.%d: I will run the tests and read the file to see what fails, then fix it. ", seed, line)
		},
		"non-ascii": func(seed, line int) string {
			return fmt.Sprintf("Étape %d.%d : je lance les tests — « ça échoue » — puis je corrige. ", seed, line)
		},
	}
	out := map[string][][]byte{}
	for kind, line := range kinds {
		for seed := range 16 {
			var sb strings.Builder
			for n := 0; sb.Len() < 30000; n++ {
				sb.WriteString(line(seed, n))
			}
			b, err := json.Marshal(sb.String())
			if err != nil {
				panic(err)
			}
			out[kind] = append(out[kind], b)
		}
	}
	return out
}()

// BenchmarkString measures the string scan; BenchmarkUnquoteString the scan's partner,
// decoding the body of an escaped or non-ASCII string.
func BenchmarkString(b *testing.B) {
	benchmarkStrings(b, func(b *testing.B, s []byte) {
		if end, _, err := jsonlex.String(s, 0); err != nil || end != len(s) {
			b.Fatalf("String: %d of %d, %v", end, len(s), err)
		}
	})
}

func BenchmarkUnquoteString(b *testing.B) {
	benchmarkStrings(b, func(b *testing.B, s []byte) { unquoted = jsonlex.UnquoteString(s[1 : len(s)-1]) })
}

// BenchmarkStringTrusted is BenchmarkString for StringTrusted, which the viewer uses on
// bytes the schema has checked: the figures in SkipTrusted's doc.
func BenchmarkStringTrusted(b *testing.B) {
	benchmarkStrings(b, func(b *testing.B, s []byte) {
		if end, ok := jsonlex.StringTrusted(s, 0); !ok || end != len(s) {
			b.Fatalf("StringTrusted: %d of %d", end, len(s))
		}
	})
}

// benchmarkStrings times op on each kind of benchStrings, one sub-benchmark a kind.
func benchmarkStrings(b *testing.B, op func(b *testing.B, s []byte)) {
	for _, kind := range []string{"code", "prose", "non-ascii"} {
		b.Run("text="+kind, func(b *testing.B) {
			strs := benchStrings[kind]
			b.SetBytes(int64(totalLen(strs)))
			for b.Loop() {
				for _, s := range strs {
					op(b, s)
				}
			}
		})
	}
}

func totalLen(bs [][]byte) int {
	n := 0
	for _, b := range bs {
		n += len(b)
	}
	return n
}

// BenchmarkUnmarshal decodes a tool call's input (an Edit with a few lines of code, and a
// timeout no field takes) with Unmarshal and with encoding/json, which it stands in for in
// the executor.
func BenchmarkUnmarshal(b *testing.B) {
	input := []byte(`{"file_path":"/app/internal/server/handler.go","old_string":"func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {\n\tif r.Method != http.MethodGet {\n\t\thttp.Error(w, \"method not allowed\", 405)\n","new_string":"func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {\n\tif r.Method != http.MethodGet && r.Method != http.MethodHead {\n\t\thttp.Error(w, \"method not allowed\", http.StatusMethodNotAllowed)\n","replace_all":false,"timeout":120000}`)
	for _, dec := range []struct {
		name string
		f    func([]byte, any) error
	}{{"jsonlex", jsonlex.Unmarshal}, {"encoding-json", json.Unmarshal}} {
		b.Run(dec.name, func(b *testing.B) {
			b.SetBytes(int64(len(input)))
			b.ReportAllocs()
			for b.Loop() {
				var v edit
				if err := dec.f(input, &v); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
