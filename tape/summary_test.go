package tape

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/internal/jsonlex"
)

// bodiesTape is a tape with every kind of body: JSON and non-JSON raw bodies, streams,
// truncation markers, in two threads.
func bodiesTape() *Tape {
	tp := New(ProviderAnthropic, time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC))
	tp.Meta.TapeID = "0123456789abcdef0123456789abcdef"
	tp.Meta.Model = "claude-sonnet-4-5"
	marker := Truncation{Bytes: 100 << 20, Limit: 32 << 20}.Raw()
	stream := &Step{
		Request: Request{Path: "/v1/messages", Stream: true, Params: map[string]json.RawMessage{"model": json.RawMessage(`"m"`)},
			Messages: []Message{{Role: "user", Content: []Block{{Type: BlockText, Text: "hi \"raw\": [chunks]"}}}},
			Raw:      json.RawMessage(`{"model":"m","stream":true,"raw":{"chunks":[1,2]},"messages":[{"role":"user","content":"hi \"raw\": [chunks]"}]}`)},
		Response: Response{Status: 200, StopReason: "tool_use", Usage: Usage{InputTokens: 3, OutputTokens: 4},
			Content: []Block{{Type: BlockToolUse, ID: "toolu_1", Name: "Bash", Input: json.RawMessage(`{"command":"ls"}`)}},
			Chunks:  []Chunk{{AtMS: 1.5, Data: "event: message_start\ndata: {\"raw\":\"\\u00e9\"}\n\n"}, {AtMS: 2, Data: "data: [DONE]\n\n"}}},
		ToolCalls:   []ToolCall{{ID: "toolu_1", Name: "Bash", Input: json.RawMessage(`{"command":"ls"}`)}},
		ToolResults: []ToolResult{{ToolCallID: "toolu_1", Content: []Block{{Type: BlockText, Text: "a\nb"}}}},
		Timing:      Timing{RequestAt: 1, FirstByteAt: 2, LastByteAt: 3},
	}
	body := &Step{
		Request:  Request{Path: "/v1/messages", Raw: json.RawMessage(`{"model":"m","messages":[]}`)},
		Response: Response{Status: 200, Raw: json.RawMessage(`{"id":"msg_1","content":[{"type":"text","text":"` + strings.Repeat("long ", 1000) + `"}]}`)},
	}
	notJSON := &Step{Request: Request{Raw: json.RawMessage(`"a=b&c=d"`)}, Response: Response{Status: 502, Raw: json.RawMessage(`"<html>bad gateway</html>"`)}}
	cut := &Step{Request: Request{Raw: marker}, Response: Response{Status: 200, Raw: marker}}
	tp.Threads = []*Thread{
		{ID: "main", Steps: []*Step{stream, body, notJSON}},
		{ID: "t1", Parent: &Parent{ThreadID: "main", ToolCallID: "toolu_1"}, Steps: []*Step{cut}},
	}
	tp.Meta.Ended = &Ended{Reason: EndComplete, At: tp.Meta.StartedAt.Add(time.Second)}
	return tp
}

// withoutBodies is what LoadSummary gives for t, loaded from its canonical encoding.
func withoutBodies(t *Tape) *Tape {
	for _, th := range t.Threads {
		for _, s := range th.Steps {
			for _, raw := range []*json.RawMessage{&s.Request.Raw, &s.Response.Raw} {
				if len(*raw) > SmallBody {
					*raw = json.RawMessage("null")
				}
			}
			s.Response.Chunks = []Chunk{}
		}
	}
	return t
}

func TestStripBodies(t *testing.T) {
	data, err := Marshal(bodiesTape())
	require.NoError(t, err)
	want, err := Marshal(withoutBodies(bodiesTape()))
	require.NoError(t, err)
	for name, r := range map[string]func() io.Reader{
		"whole":    func() io.Reader { return bytes.NewReader(data) },
		"one-byte": func() io.Reader { return iotest.OneByteReader(bytes.NewReader(data)) },
		"half":     func() io.Reader { return iotest.HalfReader(bytes.NewReader(data)) },
	} {
		t.Run(name, func(t *testing.T) {
			got, err := StripBodies(r())
			require.NoError(t, err)
			require.Equal(t, string(want), string(got))
		})
	}

	// Indented, the tape strips to the same fields (white space counts in a body's length).
	var indented bytes.Buffer
	require.NoError(t, json.Indent(&indented, data, "", "  "))
	whole, err := Unmarshal(indented.Bytes())
	require.NoError(t, err)
	want, err = Marshal(withoutBodies(whole))
	require.NoError(t, err)
	got, err := LoadSummary(iotest.HalfReader(&indented))
	require.NoError(t, err)
	again, err := Marshal(got)
	require.NoError(t, err)
	require.Equal(t, string(want), string(again))
	require.Contains(t, string(again), `"raw":{"tapebox_truncated":{"bytes":104857600,"limit":33554432}}`)
}

func TestLoadSummaryFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "run.json")
	require.NoError(t, Save(path, bodiesTape()))
	got, err := LoadSummaryFile(path)
	require.NoError(t, err)
	want := withoutBodies(bodiesTape())
	want.normalize()
	require.Equal(t, want, got)
	cut, ok := TruncationOf(got.Threads[1].Steps[0].Response.Raw)
	require.True(t, ok)
	require.Equal(t, int64(100<<20), cut.Bytes)

	_, err = LoadSummaryFile(filepath.Join(t.TempDir(), "missing.json"))
	require.ErrorIs(t, err, os.ErrNotExist)

	data, err := os.ReadFile(path)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, data[:len(data)/2], 0o644))
	_, err = LoadSummaryFile(path)
	require.ErrorIs(t, err, io.ErrUnexpectedEOF)
	require.ErrorContains(t, err, path)
}

// TestStripBodiesInvalid: input that is not one JSON value fails, naming the byte offset,
// wherever the flaw is (in a body too); StripBodies agrees with json.Valid.
func TestStripBodiesInvalid(t *testing.T) {
	for _, c := range []struct {
		in, err string
	}{
		{`{"version":1,"threads":[{"steps":[{"request":{"raw":{"a":tru}}}]}]}`, "(byte 57): bad literal"},
		{`{"version":1,"threads":[{"steps":[{"response":{"chunks":[{"data":"a` + "\x01" + `"}]}}]}]}`, `(byte 67): control character '\x01'`},
		{`{"version":1,"threads":[{"steps":[{"response":{"raw":"\x"}}]}]}`, `(byte 54): bad escape 'x'`},
		{`{"version":1,"threads":[{"steps":[{"response":{"raw":[1,2}}]}]}`, `(byte 57): unexpected '}' after an array element`},
		{`{"version":1,"threads":[{"steps":[{"response":{"raw":01}}]}]}`, `(byte 54): unexpected '1' after an object value`},
		{`{"version":1} {}`, `(byte 14): unexpected '{' after the tape object`},
		{`{"version":1,"meta":{"a" 1}}`, `(byte 25): unexpected '1' after a key`},
		{`{"version":1,"threads":[{"steps":[{"request":{"raw":"abc`, `truncated: the JSON ends after 56 bytes`},
		{`{"version":1,"threads":[{"steps":[{"request":{"raw":nul`, `truncated`},
		{`{"version":1,"threads":[{"steps":[{"request":{"raw":1e`, `truncated`},
		{`{"version":-}`, `(byte 12): bad number`},
		{"{\n  \"version\": 1,\n  \"meta\": x\n}", `at line 3, column 11 (byte 28): unexpected 'x' looking for a value`},
		{``, `truncated: the JSON ends after 0 bytes`},
		{`{"version":1,"threads":` + strings.Repeat("[", 10001), `nested too deeply`},
	} {
		_, err := StripBodies(strings.NewReader(c.in))
		require.ErrorContains(t, err, c.err, c.in)
		require.False(t, json.Valid([]byte(c.in)), c.in)
		_, err = StripBodies(iotest.OneByteReader(strings.NewReader(c.in)))
		require.ErrorContains(t, err, c.err, "one byte at a time: %s", c.in)
	}
	_, err := StripBodies(iotest.ErrReader(errors.New("disk on fire")))
	require.ErrorContains(t, err, "read tape: disk on fire")
}

// FuzzStripBodies: StripBodies accepts exactly what json.Valid accepts, whatever the
// reads, and a tape it strips loads as the whole tape does, bodies left out.
func FuzzStripBodies(f *testing.F) {
	data, err := Marshal(bodiesTape())
	if err != nil {
		f.Fatal(err)
	}
	f.Add(data)
	f.Add(data[:len(data)/3])
	f.Add([]byte(`{"threads":[{"steps":[{"request":{"raw":{"tapebox_truncated":{"bytes":1,"limit":1}}},"response":{"chunks":null}}]}]}`))
	f.Add([]byte(` [1, -0.5e+3, "\u00e9\n", true, false, null, {}] `))
	f.Add([]byte(`{"version":1,"threads":[{"id":"a","steps":[{},{}],"steps":[{"timing":{}}]}],"threads":[{"id":"b","steps":[null]}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := StripBodies(bytes.NewReader(data))
		var de *jsonlex.DuplicateKeyError
		if errors.As(err, &de) {
			return // a repeated key, refused
		}
		if valid := json.Valid(data); valid != (err == nil) {
			t.Fatalf("json.Valid says %v, StripBodies says %v", valid, err)
		}
		if err != nil {
			return
		}
		again, err := StripBodies(iotest.OneByteReader(bytes.NewReader(data)))
		if err != nil || !bytes.Equal(got, again) {
			t.Fatalf("one byte at a time: %v\n%q\n%q", err, got, again)
		}
		if !json.Valid(got) {
			t.Fatalf("StripBodies gave invalid JSON: %q", got)
		}
		// Decoding step by step agrees with decoding the stripped bytes whole.
		byStep, errStep := LoadSummary(bytes.NewReader(data))
		whole, errWhole := Unmarshal(got)
		if (errStep == nil) != (errWhole == nil) {
			t.Fatalf("step by step: %v; whole: %v\n%q", errStep, errWhole, got)
		}
		if errStep == nil {
			a, _ := Marshal(byStep)
			b, _ := Marshal(whole)
			if !bytes.Equal(a, b) {
				t.Fatalf("step by step:\n%s\nwhole:\n%s", a, b)
			}
		}
		whole, err = Unmarshal(data)
		if err != nil {
			return
		}
		summary, err := LoadSummary(bytes.NewReader(data))
		if err != nil {
			t.Fatalf("the tape loads, its summary does not: %v\n%q", err, got)
		}
		want, _ := Marshal(withoutBodies(whole))
		have, _ := Marshal(summary)
		if !bytes.Equal(want, have) {
			t.Fatalf("summary differs from the tape without its bodies:\n%s\n%s", have, want)
		}
	})
}

// TestSummaryStepErrors: a step decoded on its own fails as it would in the whole tape,
// naming where it stands.
func TestSummaryStepErrors(t *testing.T) {
	for _, c := range []struct{ in, err string }{
		{`{"version":1,"threads":[{"id":"main","steps":[{},null]}]}`, "/threads/0/steps/1: is null"},
		{`{"version":1,"threads":[{"id":"main","steps":[]},{"id":"t1","steps":[{"nope":1}]}]}`, `unknown field "nope" at /threads/1/steps/0/nope`},
		{`{"version":1,"threads":[{"id":"main","steps":[{"timing":{"request_at":"soon"}}]}]}`, `/threads/0/steps/0: field "timing.request_at": cannot use JSON string as float64`},
		{`{"version":2,"threads":[{"id":"main","steps":[{"nope":1}]}]}`, "unsupported tape version"},
	} {
		_, err := LoadSummary(strings.NewReader(c.in))
		require.ErrorContains(t, err, c.err, c.in)
		_, err = Unmarshal([]byte(c.in))
		require.Error(t, err, c.in)
	}
	// An unknown field outside the steps is named by its pointer, without the line of the
	// skeleton the summary decodes (the steps and bodies cut out of it move the lines).
	_, err := LoadSummary(strings.NewReader("{\"version\":1,\n\"threads\":[{\"id\":\"a\",\"steps\":[{}]},{\"id\":\"b\",\"x\":1}]}"))
	require.ErrorContains(t, err, `unknown field "x" at /threads/1/x`)
	require.NotContains(t, err.Error(), "line")
	// The threads and steps arrays given twice, which decoding whole would merge, fail,
	// as any other repeated key does.
	for _, in := range []string{
		`{"version":1,"threads":[{"id":"a","steps":[{},{}],"steps":[{"timing":{"request_at":1}}]}]}`,
		`{"version":1,"threads":[],"threads":[{"id":"b","steps":[{},{}]}]}`,
	} {
		_, err := LoadSummary(strings.NewReader(in))
		require.ErrorContains(t, err, "duplicate object key", in)
	}
}
