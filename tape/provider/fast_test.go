package provider

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// fastSeeds are request bodies: the testdata requests and every request of the golden
// tapes.
func fastSeeds(tb testing.TB) [][]byte {
	var out [][]byte
	for _, name := range []string{"anthropic/claude_code_request.json", "chat/request.json", "responses/codex_request.json"} {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			tb.Fatal(err)
		}
		out = append(out, b)
	}
	files, _ := filepath.Glob(filepath.Join("..", "..", "testdata", "*.json"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			tb.Fatal(err)
		}
		var tp struct {
			Threads []struct {
				Steps []struct {
					Request struct {
						Raw json.RawMessage `json:"raw"`
					} `json:"request"`
				} `json:"steps"`
			} `json:"threads"`
		}
		if json.Unmarshal(b, &tp) != nil {
			continue
		}
		for _, th := range tp.Threads {
			for _, s := range th.Steps {
				out = append(out, s.Request.Raw)
			}
		}
	}
	extra := []string{
		`{"messages":[null,{"role":"user","content":[null,{"type":"tool_result","content":[{"type":"text","text":"a\u00e9\ud83d\ude00\ud800x"}],"is_error":true}]}],"system":[null,{"type":"text","text":"s"}],"tools":[null,{"type":"custom","name":"x","input_schema":null}]}`,
		`{"messages":[{"content":[{"content":"x","type":"tool_result"},{"type":"tool_use","input":{ "a" : [1, 2.5e3, true] }}]}],"stream":true}`,
		`{"input":[null,{"type":"reasoning","summary":[],"content":[]},{"type":"x_output","id":"i","output":{"a":1}},{"type":"local_shell_call","id":"i","action":{"b": 2}}],"instructions":5,"tools":[null,{"type":"function","parameters":{}}]}`,
		`{"input":"hi","stream":null}`,
		`{"Messages":[],"TYPE":1,"messages":[{"Role":"user"}]}`,
	}
	for _, e := range extra {
		out = append(out, []byte(e))
	}
	return out
}

// FuzzRequestFast checks that the fast paths, when they succeed, make the request the
// slow paths make.
func FuzzRequestFast(f *testing.F) {
	for _, b := range fastSeeds(f) {
		for i := range 2 {
			f.Add(uint8(i), b)
		}
	}
	f.Fuzz(func(t *testing.T, which uint8, body []byte) {
		fast, slow := anthropicRequestFast, anthropicRequestSlow
		if which%2 == 1 {
			fast, slow = responsesRequestFast, responsesRequestSlow
		}
		got, err := fast(body)
		if err != nil {
			return
		}
		want, err := slow(body)
		if err != nil {
			t.Fatalf("the fast path accepts what the slow path rejects (%v): %q", err, body)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("fast and slow paths differ on %q:\n%#v\n%#v", body, got, want)
		}
	})
}

// TestFastPathTaken checks that the realistic requests do not fall back to the slow path.
func TestFastPathTaken(t *testing.T) {
	for i, name := range []string{"anthropic/claude_code_request.json", "responses/codex_request.json"} {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		fast := anthropicRequestFast
		if i == 1 {
			fast = responsesRequestFast
		}
		if _, err := fast(b); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}
