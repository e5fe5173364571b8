package tape

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"
)

// reflectMarshal is Marshal by encoding/json alone, the reference for the hand-written
// encoder.
func reflectMarshal(t *Tape) ([]byte, error) {
	t.normalize()
	var buf bytes.Buffer
	if err := encode(&buf, t); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// handMarshal is the hand-written encoder's output, and whether it wrote the tape.
func handMarshal(t *Tape) ([]byte, bool) {
	t.normalize()
	e := enc{ok: true}
	e.tape(t)
	return fixReplacement(append(e.b, '\n')), e.ok
}

// edgeTape sets every field, with strings s, floats x and raw bodies raw.
func edgeTape(s string, x float64, raw []byte) *Tape {
	at := time.Date(2026, 1, 2, 3, 4, 5, 600, time.UTC)
	tp := New(ProviderOpenAIChat, at)
	replay := s
	dur := x
	tp.Meta = Meta{TapeID: s, Harness: s, HarnessVersion: s, Provider: Provider(s), Model: s, Cwd: s,
		StartedAt: at, Task: map[string]string{s: s, "b": "c", "a": s}, ReplayOf: &replay,
		Labels:     map[string]string{},
		Workspace:  &Workspace{Snapshot: s, Digest: s, Size: -1, Files: 2, Bytes: 3, Exclude: []string{s, ""}, End: []FileEntry{{Path: s, Type: s, Mode: s, Size: 4, SHA256: s, Link: s}, {}}},
		Limits:     &Limits{MaxCostUSD: x, MaxSteps: 1, MaxThreadSteps: 2, MaxTokens: 3, MaxRepeat: 4},
		ForkedFrom: &ForkedFrom{TapeID: s, Thread: s, Step: 5, Served: map[string]int{s: 1, "main": 2}, Overrides: map[string]string{"model": s, s: "b"}},
		Ended:      &Ended{Reason: EndReason(s), At: at.Add(time.Second), Detail: s, Limit: s},
		Redactions: []Redaction{{Rule: s, Pointer: "/meta/" + s}, {Rule: "", Pointer: ""}}}
	blocks := []Block{{Type: s, Text: s, ID: s, Name: s, Input: raw, ToolCallID: s, IsError: true, Raw: raw,
		Content: []Block{{Type: BlockText, Text: s}}}, {Type: BlockText}}
	step := &Step{
		Request: Request{Path: s, System: s, Messages: []Message{{Role: s, Content: blocks}, {Role: "user"}},
			Tools:  []Tool{{Name: s, Description: s, Kind: s, InputSchema: raw}, {Name: "b"}},
			Params: map[string]json.RawMessage{s: raw, "n": nil, "a": json.RawMessage(` 1 `)}, Stream: true,
			Headers: Headers{s: s}, Raw: raw},
		Response: Response{Status: 200, Headers: Headers{"x": s}, Content: blocks, StopReason: s,
			Usage: Usage{1, 2, 3, 4, -5}, Raw: raw, Chunks: []Chunk{{AtMS: x, Data: s}, {AtMS: 1e-7, Data: "data: {}"}}},
		ToolCalls:      []ToolCall{{ID: s, Name: s, Input: raw, Kind: s, Namespace: s}, {ID: "c"}},
		ToolResults:    []ToolResult{{ToolCallID: s, Content: blocks, IsError: true, DurationMS: &dur, CopiedFromTape: true}, {ToolCallID: "c"}},
		Timing:         Timing{RequestAt: x, FirstByteAt: 1e21, LastByteAt: -1e-7, NextRequestAt: &dur},
		ServedFromTape: true, Digest: s,
	}
	tp.Threads = []*Thread{{ID: s, Steps: []*Step{step, {}}}, {ID: "sub", Parent: &Parent{ThreadID: s, ToolCallID: "<a&b>"}}}
	tp.Digest = &Digest{Algorithm: s, Meta: s, Root: s, PublicKey: s, Signature: s}
	return tp
}

// TestEdgeTapeSetsEveryField keeps edgeTape complete: a field added to a tape type but not
// set there would leave the hand-written encoder untested on it (and a field the encoder
// forgets would go unnoticed). Every exported field of every struct reachable from Tape
// must be set (non-zero) somewhere in edgeTape.
func TestEdgeTapeSetsEveryField(t *testing.T) {
	set := map[string]bool{}
	var walk func(v reflect.Value)
	walk = func(v reflect.Value) {
		switch v.Kind() {
		case reflect.Pointer, reflect.Interface:
			if !v.IsNil() {
				walk(v.Elem())
			}
		case reflect.Slice, reflect.Array:
			if v.Type().Elem().Kind() == reflect.Uint8 {
				return
			}
			for i := 0; i < v.Len(); i++ {
				walk(v.Index(i))
			}
		case reflect.Map:
			it := v.MapRange()
			for it.Next() {
				walk(it.Value())
			}
		case reflect.Struct:
			if v.Type() == reflect.TypeOf(time.Time{}) {
				return
			}
			for i := 0; i < v.NumField(); i++ {
				f := v.Type().Field(i)
				if !f.IsExported() {
					continue
				}
				key := v.Type().Name() + "." + f.Name
				if !v.Field(i).IsZero() {
					set[key] = true
				} else if _, seen := set[key]; !seen {
					set[key] = false
				}
				walk(v.Field(i))
			}
		}
	}
	walk(reflect.ValueOf(edgeTape("s", 1.5, []byte(`{"a":1}`))))
	for key, ok := range set {
		if !ok {
			t.Errorf("edgeTape leaves %s unset: set it, so the hand-written encoder is checked on it", key)
		}
	}
	if len(set) < 60 {
		t.Fatalf("walked only %d fields: the walk is broken", len(set))
	}
}

// TestEncodeMatchesEncodingJSON holds the hand-written encoder to encoding/json on the
// golden tapes and on a tape with every field set to awkward values.
func TestEncodeMatchesEncodingJSON(t *testing.T) {
	cases := map[string]*Tape{}
	paths, _ := filepath.Glob("../testdata/*.json")
	if len(paths) == 0 {
		t.Fatal("no golden tapes in ../testdata")
	}
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		tp, err := Unmarshal(data)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		cases[filepath.Base(p)] = tp
	}
	strs := map[string]string{"plain": "abc", "empty": "", "escapes": "q\"b\\s/\b\f\n\r\t\x00\x1f\x7f",
		"html": "<a href=x>&amp;</a>", "bad-utf8": "a\xffb\xe2\x80c\xed\xa0\x80", "separators": "a\u2028b\u2029c",
		"replacement": "\uFFFD and \\ufffd", "long": "0123456789abcdef\"0123456789abcdef\xe2\x82\xac0123456789abcdef\n"}
	floats := map[string]float64{"zero": 0, "neg-zero": math.Copysign(0, -1), "tenth": 0.1, "tiny": 1.5e-9,
		"huge": 1e21, "big": 123456789012345678, "neg": -2.5e-300, "max": math.MaxFloat64}
	raws := map[string][]byte{"object": []byte(` { "a" : [ 1 , "x y" ] , "b\ufffd" : "\ufffd\\ufffd" } `),
		"string": []byte(`"<>&\u2028"`), "number": []byte(`-1.5e+10`), "deep": bytes.Repeat([]byte("["), 20)}
	raws["deep"] = append(raws["deep"], bytes.Repeat([]byte("]"), 20)...)
	for sn, s := range strs {
		cases["string-"+sn] = edgeTape(s, 1.25, raws["object"])
	}
	for fn, x := range floats {
		cases["float-"+fn] = edgeTape("s", x, raws["number"])
	}
	for rn, raw := range raws {
		cases["raw-"+rn] = edgeTape("s", 2, raw)
	}
	// An empty end manifest (an empty workspace) is written as [], a nil one left out.
	cases["workspace-end-empty"] = edgeTape("s", 2, raws["object"])
	cases["workspace-end-empty"].Meta.Workspace.End = []FileEntry{}
	cases["workspace-end-nil"] = edgeTape("s", 2, raws["object"])
	cases["workspace-end-nil"].Meta.Workspace.End = nil
	for name, tp := range cases {
		t.Run(name, func(t *testing.T) {
			want, err := reflectMarshal(tp)
			if err != nil {
				t.Fatal(err)
			}
			got, ok := handMarshal(tp)
			if !ok {
				t.Fatal("the hand-written encoder gave up")
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("hand-written encoding differs from encoding/json's:\n got %s\nwant %s", got, want)
			}
		})
	}
}

// TestEncodeFallsBack: where encoding/json fails, the hand-written encoder gives up and
// Marshal returns encoding/json's error.
func TestEncodeFallsBack(t *testing.T) {
	for name, tp := range map[string]*Tape{
		"nan":         edgeTape("s", math.NaN(), []byte("1")),
		"inf":         edgeTape("s", math.Inf(-1), []byte("1")),
		"invalid-raw": edgeTape("s", 1, []byte(`{"a":}`)),
		"empty-raw": func() *Tape {
			tp := edgeTape("s", 1, []byte("1"))
			tp.Threads[0].Steps[0].Request.Raw = []byte{}
			return tp
		}(),
		"year": func() *Tape {
			tp := edgeTape("s", 1, []byte("1"))
			tp.Meta.StartedAt = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)
			return tp
		}(),
	} {
		t.Run(name, func(t *testing.T) {
			if _, ok := handMarshal(tp); ok {
				t.Fatal("the hand-written encoder wrote a tape encoding/json refuses")
			}
			_, want := reflectMarshal(tp)
			_, got := Marshal(tp)
			if want == nil || got == nil || got.Error() != want.Error() {
				t.Fatalf("Marshal: %v, want encoding/json's %v", got, want)
			}
		})
	}
}

// FuzzEncode holds the hand-written encoder to encoding/json: on any tape Unmarshal
// accepts, and on a tape with every field set from the fuzzer's string, float and raw body.
func FuzzEncode(f *testing.F) {
	paths, _ := filepath.Glob("../testdata/*.json")
	for _, p := range paths {
		if data, err := os.ReadFile(p); err == nil && len(data) < 64<<10 {
			f.Add(data, "s", 1.0)
		}
	}
	f.Add([]byte(` {"a": "\ufffd"} `), "a\xff\u2028\"<&>\x01", 1e-7)
	f.Add([]byte(`[1, 2,]`), "", math.Inf(1))
	f.Fuzz(func(t *testing.T, data []byte, s string, x float64) {
		check := func(tp *Tape) {
			want, werr := reflectMarshal(tp)
			got, ok := handMarshal(tp)
			if werr != nil {
				if ok {
					t.Fatalf("the hand-written encoder wrote a tape encoding/json refuses (%v)", werr)
				}
				return
			}
			if !ok {
				// Giving up is allowed only where encoding/json would fail too.
				t.Fatalf("the hand-written encoder gave up on a tape encoding/json writes:\n%s", want)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("hand-written encoding differs from encoding/json's:\n got %s\nwant %s", got, want)
			}
		}
		if tp, err := Unmarshal(data); err == nil {
			check(tp)
		}
		check(edgeTape(s, x, data))
	})
}
