package tape

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// FuzzLoad: Load never panics or hangs, and a tape it accepts has a canonical encoding
// that loads again into the same encoding.
func FuzzLoad(f *testing.F) {
	for _, pattern := range []string{"../testdata/*.json", "../schema/testdata/*.json"} {
		paths, _ := filepath.Glob(pattern)
		for _, p := range paths {
			if data, err := os.ReadFile(p); err == nil && len(data) < 64<<10 {
				f.Add(data)
			}
		}
	}
	tp := New(ProviderAnthropic, time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC))
	tp.Threads = []*Thread{
		{ID: "main", Steps: []*Step{fuzzSeedStep("c0"), fuzzSeedStep("c1")}},
		{ID: "sub", Parent: &Parent{ThreadID: "main", ToolCallID: "c0"}},
	}
	tp.Meta.Ended = &Ended{Reason: EndCut, At: tp.Meta.StartedAt.Add(time.Second), Detail: "signal"}
	seed, err := Marshal(tp)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(seed)
	f.Add(seed[:len(seed)/2])
	f.Add([]byte(`{"version":2,"meta":{}}`))
	f.Add([]byte(`{"version":1,"threads":[null]}`))
	f.Add([]byte(`{"version":1,"threads":[{"parent":["a"],"steps":[null]}]}`))
	f.Add([]byte(`{"version":1,"meta":{"started_at":"2026-01-01T00:00:00+02:00","ended":{"at":"2026-01-01T00:00:00.5Z"}}} x`))
	f.Fuzz(func(t *testing.T, data []byte) {
		loaded, err := Load(bytes.NewReader(data))
		if err != nil {
			if loaded != nil {
				t.Fatalf("Load returned a tape and an error: %v", err)
			}
			return
		}
		first, err := Marshal(loaded)
		if err != nil {
			t.Fatalf("Marshal of a loaded tape: %v", err)
		}
		if !json.Valid(first) {
			t.Fatalf("Marshal gave invalid JSON: %q", first)
		}
		again, err := Unmarshal(first)
		if err != nil {
			t.Fatalf("Unmarshal(Marshal(Load(data))): %v\n%s", err, first)
		}
		second, err := Marshal(again)
		if err != nil {
			t.Fatalf("second Marshal: %v", err)
		}
		if !bytes.Equal(first, second) {
			t.Fatalf("canonical encoding is not stable:\n%s\n%s", first, second)
		}
	})
}

// FuzzWriterParts checks that a step the Writer encodes in parts (a prepared request, then
// the answer, then the tool results) is byte for byte the step encoded whole.
func FuzzWriterParts(f *testing.F) {
	f.Add("hi \u00e9 \"q\" <&>", "event: ping\ndata: {}\n\n", "ok", `{"a": [1, "\ufffd"]}`)
	f.Add("\xff\xfe \\ufffd", "\ufffd\\", "\x00\u2028", "\"\xff\\\\ufffd\\\"\"")
	f.Add("x", "y", "z", `{"raw":0,"chunks":[]} `)
	f.Fuzz(func(t *testing.T, text, chunk, result, raw string) {
		// Raw bodies long enough to take the Writer's own compaction.
		pad := strings.Repeat("p ", 300)
		reqRaw := json.RawMessage(`{"pad": "` + pad + `", "v": ` + raw + "}\n")
		respRaw := json.RawMessage(` [ "` + pad + `" , ` + raw + ` ] `)
		if !json.Valid(reqRaw) || !json.Valid(respRaw) {
			return // the Writer refuses it, as Marshal does
		}
		w, err := Create(filepath.Join(t.TempDir(), "run.json"), New(ProviderAnthropic, time.Unix(0, 0)))
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		main, err := w.AddThread("main", nil)
		if err != nil {
			t.Fatal(err)
		}
		for i := range 2 {
			s := fuzzSeedStep("toolu_" + text)
			s.Request.Messages[0].Content[0].Text = text
			s.Request.Raw = reqRaw
			s.Response.Raw = respRaw
			s.ToolResults = nil
			p, err := Prepare(s)
			if err != nil {
				t.Fatal(err)
			}
			s.Response.Chunks[0].Data = chunk
			s.Response.Content[0].Text = text
			if _, err := w.AppendPrepared(main, p); err != nil {
				t.Fatal(err)
			}
			if i > 0 {
				err := w.UpdateStepEnd(main, i-1, func(results *[]ToolResult, timing *Timing) {
					*results = []ToolResult{{ToolCallID: text, Content: []Block{{Type: BlockText, Text: result}}}}
				})
				if err != nil {
					t.Fatal(err)
				}
			}
			if err := w.Sync(); err != nil {
				t.Fatal(err)
			}
			got, err := os.ReadFile(w.Path())
			if err != nil {
				t.Fatal(err)
			}
			want, err := Marshal(w.Tape())
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("encoded in parts:\n%s\nwhole:\n%s", got, want)
			}
		}
	})
}

func fuzzSeedStep(callID string) *Step {
	next := 2.5
	return &Step{
		Request: Request{
			Path:     "/v1/messages",
			Messages: []Message{{Role: "user", Content: []Block{{Type: BlockText, Text: "hi \u00e9 \"q\""}}}},
			Params:   map[string]json.RawMessage{"max_tokens": json.RawMessage(`100`)},
			Raw:      json.RawMessage(`{"model":"m","messages":[]}`),
		},
		Response: Response{
			Status: 200, StopReason: "tool_use",
			Content: []Block{{Type: BlockToolUse, ID: callID, Name: "Bash", Input: json.RawMessage(`{"command":"ls"}`)}},
			Chunks:  []Chunk{{AtMS: 1.25, Data: "event: ping\ndata: {}\n\n"}},
			Usage:   Usage{InputTokens: 1, OutputTokens: 2},
		},
		ToolCalls:   []ToolCall{{ID: callID, Name: "Bash", Input: json.RawMessage(`{"command":"ls"}`)}},
		ToolResults: []ToolResult{{ToolCallID: callID, Content: []Block{{Type: BlockText, Text: "ok"}}, DurationMS: &next}},
		Timing:      Timing{RequestAt: 1, FirstByteAt: 1.5, LastByteAt: 2, NextRequestAt: &next},
	}
}

// FuzzCompactJSON checks that compactJSON accepts only what json.Valid accepts and then
// writes what json.Compact writes.
func FuzzCompactJSON(f *testing.F) {
	for _, s := range []string{`{"a": [1, 2.5e-3, -0, true, false, null, "x\"y\\u00e9\ud800"]}`, ` [ ] `, `{}`, `"\x7f\xff"`,
		`{"a":1,}`, `01`, `1.`, `-`, `"\u12g4"`, "\"a\tb\"", `{"a" 1}`, `[1 2]`, `nul`, `{"raw":0,"chunks":[]}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		got, ok := compactJSON(nil, b)
		if !ok {
			return
		}
		if !json.Valid(b) {
			t.Fatalf("compactJSON accepts invalid JSON %q", b)
		}
		var want bytes.Buffer
		if err := json.Compact(&want, b); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want.Bytes()) {
			t.Fatalf("compactJSON(%q) = %q, want %q", b, got, want.Bytes())
		}
	})
}

// FuzzDecodeAgrees holds the field table's decoder to encoding/json, the reference
// (unmarshalReference): whatever the decoder accepts, the reference accepts and decodes to
// a tape of the same encoding; what it calls canonical is Marshal's encoding byte for
// byte; what it refuses outright (a repeated key, an unknown field) the reference refuses.
func FuzzDecodeAgrees(f *testing.F) {
	for _, pattern := range []string{"../testdata/*.json", "../schema/testdata/*.json"} {
		paths, _ := filepath.Glob(pattern)
		for _, p := range paths {
			if data, err := os.ReadFile(p); err == nil && len(data) < 64<<10 {
				f.Add(data)
			}
		}
	}
	tp := New(ProviderAnthropic, time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC))
	tp.Threads = []*Thread{
		{ID: "main", Steps: []*Step{fuzzSeedStep("c0"), fuzzSeedStep("c1")}},
		{ID: "sub<&>", Parent: &Parent{ThreadID: "main", ToolCallID: "c0"}},
	}
	seed, err := Marshal(tp)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(seed)
	f.Add([]byte(`{"version":1,"meta":{"forked_from":{"served":null}},"threads":[{"id":"a","steps":[{"nope":1}]}]}`))
	f.Add([]byte(`{"version":1,"META":{},"threads":null}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		fast, canon, _, err := decodeTape(data, decodeOptions{})
		ref, rerr := unmarshalReference(data, nil)
		if err != nil {
			var fe *fieldError
			if errors.As(err, &fe) && rerr == nil {
				t.Fatalf("the decoder refuses (%v) what encoding/json accepts", err)
			}
			return
		}
		if rerr != nil {
			t.Fatalf("the decoder accepts what encoding/json refuses: %v", rerr)
		}
		got, gerr := Marshal(fast)
		want, werr := Marshal(ref)
		if gerr != nil || werr != nil || !bytes.Equal(got, want) {
			t.Fatalf("the decoder and encoding/json decode differently (%v, %v):\n%s\n%s", gerr, werr, got, want)
		}
		if canon && !bytes.Equal(want, data) {
			t.Fatalf("the decoder calls canonical what Marshal does not write:\n%s\n%s", data, want)
		}
	})
}
