package tape_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf16"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/internal/jsonlex"
	"github.com/tapebox/tapebox/internal/testutil/tapegen"
	"github.com/tapebox/tapebox/tape"
	"github.com/tapebox/tapebox/tape/seal"
)

// decodeTestTapes returns generated and golden tapes in canonical encoding.
func decodeTestTapes(t testing.TB) [][]byte {
	t.Helper()
	var out [][]byte
	for i := range 10 {
		opts := tapegen.Options{Seed: 71, MeanSteps: 4, Lean: true}
		if i%3 == 2 {
			opts.Workspaces = 2 // meta.workspace: a start snapshot and an end manifest
		}
		data, err := tape.Marshal(tapegen.Tape(opts, i))
		require.NoError(t, err)
		out = append(out, data)
	}
	for _, p := range goldenPaths(t) {
		out = append(out, canonical(t, p))
	}
	return out
}

// edgeTape holds the strings and numbers whose canonical encoding has special cases.
func edgeTape() *tape.Tape {
	t := tape.New(tape.ProviderAnthropic, time.Date(2026, 2, 3, 4, 5, 6, 789012345, time.UTC))
	t.Meta.TapeID = "edge"
	t.Meta.Cwd = "/w\u00e9rk/<a&b>"
	t.Meta.Labels = map[string]string{"b": "2", "a": "1", "\u00e9": "x"}
	t.Meta.Workspace = &tape.Workspace{
		Snapshot: "edge <1>&.workspace.tar.zst",
		Digest:   "sha256:" + strings.Repeat("ab", 32),
		Size:     123456789,
		Files:    4,
		Bytes:    987654321,
		Exclude:  []string{"node_modules", "build/<out>", "\u00e9*"},
		End: []tape.FileEntry{
			{Path: ".", Type: "dir", Mode: "0755"},
			{Path: "a b/\u00e9<1>.txt", Type: "file", Mode: "0644", Size: 1 << 40, SHA256: strings.Repeat("0f", 32)},
			{Path: "empty", Type: "file", Mode: "0600", SHA256: strings.Repeat("e3", 32)},
			{Path: "link", Type: "symlink", Mode: "0777", Link: "../outside/\u2028&"},
		},
	}
	t.Meta.ForkedFrom = &tape.ForkedFrom{TapeID: "rec<1>", Thread: "main", Step: 2,
		Served: map[string]int{"main": 2, "t\u00e91": 3}, Overrides: map[string]string{"model": "m&<x>", "system_append": "Be brief.\n"}}
	t.Meta.Ended = &tape.Ended{Reason: tape.EndCut, At: t.Meta.StartedAt.Add(time.Second), Detail: "a<b>&c"}
	tiny, huge, neg := 1e-7, 1e21, -0.25
	text := "ctl:\x1b\x00\x7f bs:\b ff:\f nl:\n cr:\r tab:\t q:\" back:\\ sep:\u2028\u2029 html:<&> uni:\u00e9\U0001F600 slash:/"
	t.Threads = []*tape.Thread{{ID: "main", Steps: []*tape.Step{{
		Request: tape.Request{Path: "/v1/messages", System: text,
			Messages: []tape.Message{{Role: "user", Content: []tape.Block{{Type: "text", Text: text}, {Type: "tool_result", ToolCallID: "c", IsError: true,
				Content: []tape.Block{{Type: "text", Text: "x"}}}}}},
			Tools:   []tape.Tool{{Name: "Bash", Kind: "function", InputSchema: json.RawMessage(`{"type":"object"}`)}, {Name: "apply_patch", Kind: "custom", Description: "d"}},
			Params:  map[string]json.RawMessage{"z": json.RawMessage(`1`), "a": json.RawMessage(`{"k":["\/","\u00e9",1e5,-0.0,true,null]}`)},
			Headers: tape.Headers{"x-b": "1", "x-a": "<2>"},
			Raw:     json.RawMessage(`{"s":"\u2028 \/ \ud83d\ude00","n":[0,-1,2.5e-10]}`)},
		Response: tape.Response{Status: 200, Content: []tape.Block{{Type: "thinking", Text: text}, {Type: "other", Raw: json.RawMessage(`{"x":1}`)}},
			StopReason: "end_turn", Usage: tape.Usage{InputTokens: 1, ReasoningTokens: 9},
			Raw:    json.RawMessage(`"not json body"`),
			Chunks: []tape.Chunk{{AtMS: tiny, Data: text}, {AtMS: huge, Data: ""}, {AtMS: neg}}},
		ToolCalls: []tape.ToolCall{{ID: "c", Name: "Bash", Input: json.RawMessage(`{}`)}, {ID: "d", Name: "apply_patch", Kind: "custom", Input: json.RawMessage(`{"input":"x"}`)},
			{ID: "e", Name: "spawn_agent", Input: json.RawMessage(`{}`), Namespace: "ns<&>"}},
		ToolResults: []tape.ToolResult{{ToolCallID: "c", Content: []tape.Block{{Type: "text", Text: text}}, DurationMS: &tiny},
			{ToolCallID: "d", Content: []tape.Block{}, CopiedFromTape: true}},
		Timing:         tape.Timing{RequestAt: 0.001, FirstByteAt: 123456.789, LastByteAt: 1e-6, NextRequestAt: &huge},
		ServedFromTape: true,
	}}}, {ID: "sub<1>&", Parent: &tape.Parent{ThreadID: "main", ToolCallID: "<c>&"}, Steps: []*tape.Step{}}}
	return t
}

func TestDecodeTapeAgreesWithUnmarshal(t *testing.T) {
	edge, err := tape.Marshal(edgeTape())
	require.NoError(t, err)
	// An empty end manifest (the run left an empty workspace) is [], not left out.
	emptyEnd := edgeTape()
	emptyEnd.Meta.Workspace = &tape.Workspace{End: []tape.FileEntry{}}
	empty, err := tape.Marshal(emptyEnd)
	require.NoError(t, err)
	for i, data := range append(decodeTestTapes(t), edge, empty) {
		fast, canon, err := tape.DecodeTape(data, false)
		require.NoError(t, err, "tape %d", i)
		require.True(t, canon, "tape %d: the canonical encoding is recognized", i)
		require.True(t, tape.IsCanonical(fast, data), "tape %d", i)
		ref, err := tape.Unmarshal(data)
		require.NoError(t, err)
		if ref.Meta.Workspace != nil {
			require.Equal(t, ref.Meta.Workspace.End == nil, fast.Meta.Workspace.End == nil, "tape %d: an end manifest is kept, even an empty one", i)
		}
		a, err := tape.Marshal(fast)
		require.NoError(t, err)
		b, err := tape.Marshal(ref)
		require.NoError(t, err)
		require.Equal(t, string(b), string(a), "tape %d", i)
		lean, leanCanon, err := tape.DecodeTape(data, true)
		require.NoError(t, err)
		require.True(t, leanCanon)
		for _, th := range lean.Threads {
			for _, st := range th.Steps {
				for _, c := range st.Response.Chunks {
					require.Empty(t, c.Data, "tape %d: a lean decoding keeps no chunk data", i)
				}
			}
		}
	}
}

func TestDecodeTapeSeesNonCanonical(t *testing.T) {
	data, err := tape.Marshal(edgeTape())
	require.NoError(t, err)
	var indented bytes.Buffer
	require.NoError(t, json.Indent(&indented, data, "", " "))
	swap := func(a, b string) []byte {
		i, j := bytes.Index(data, []byte(a)), bytes.Index(data, []byte(b))
		require.True(t, i >= 0 && j >= i+len(a), "%s before %s", a, b)
		out := bytes.Clone(data[:i])
		out = append(out, b...)
		out = append(out, data[i+len(a):j]...)
		out = append(out, a...)
		return append(out, data[j+len(b):]...)
	}
	replace := func(old, new string) []byte {
		require.Contains(t, string(data), old)
		return bytes.Replace(data, []byte(old), []byte(new), 1)
	}
	tests := map[string][]byte{
		"indented":             indented.Bytes(),
		"space after colon":    replace(`"tape_id":`, `"tape_id": `),
		"escaped letter":       replace(`"tape_id":"edge"`, `"tape_id":"\u0065dge"`),
		"escaped key":          replace(`"tape_id":`, `"tap\u0065_id":`),
		"escaped slash":        replace(`slash:/`, `slash:\/`),
		"upper-case hex":       replace(`\u001b`, `\u001B`),
		"long form of newline": replace(`nl:\n`, `nl:\u000a`),
		"raw line separator":   replace(`\u2028\u2029 html`, "\u2028 html"),
		"escaped html":         replace(`html:<&>`, `html:\u003c&>`),
		"raw html in parent":   replace(`"\u003cc\u003e\u0026"`, `"<c>&"`),
		"number trailing zero": replace(`"first_byte_at":123456.789`, `"first_byte_at":123456.7890`),
		"number exponent":      replace(`"first_byte_at":123456.789`, `"first_byte_at":1.23456789e5`),
		"int exponent":         replace(`"status":200`, `"status":2e2`),
		"negative zero int":    replace(`"output_tokens":0`, `"output_tokens":-0`),
		"time offset":          replace(`"started_at":"2026-02-03T04:05:06.789012345Z"`, `"started_at":"2026-02-03T05:05:06.789012345+01:00"`),
		"key order":            swap(`"harness":"",`, `"harness_version":"",`),
		"cwd out of order":     swap(`"cwd":"/wérk/<a&b>",`, `"started_at":"2026-02-03T04:05:06.789012345Z",`),
		"empty cwd":            replace(`"cwd":"/wérk/<a&b>",`, `"cwd":"",`),
		"map order":            swap(`"a":"1",`, `"b":"2",`),
		"workspace out of order": bytes.Replace(replace(`"labels":{"a":"1","b":"2","é":"x"},`, ``),
			[]byte(`]},"ended":`), []byte(`]},"labels":{"a":"1","b":"2","é":"x"},"ended":`), 1),
		"workspace field order":  swap(`"snapshot":"edge <1>&.workspace.tar.zst",`, `"digest":"sha256:`+strings.Repeat("ab", 32)+`",`),
		"workspace null":         replace(`"workspace":{`, `"workspace":null,"x":{`),
		"empty workspace field":  replace(`"files":4,`, `"files":0,`),
		"empty exclude":          replace(`"exclude":["node_modules","build/<out>","é*"],`, `"exclude":[],`),
		"null exclude":           replace(`"exclude":["node_modules","build/<out>","é*"],`, `"exclude":null,`),
		"empty end manifest":     replace(`"size":123456789,`, `"size":123456789,"end":[],`),
		"entry field order":      swap(`"path":"empty","type":"file",`, `"mode":"0600",`),
		"entry empty sha256":     replace(`{"path":".","type":"dir","mode":"0755","size":0}`, `{"path":".","type":"dir","mode":"0755","size":0,"sha256":""}`),
		"entry missing size":     replace(`{"path":".","type":"dir","mode":"0755","size":0}`, `{"path":".","type":"dir","mode":"0755"}`),
		"entry size exponent":    replace(`"size":1099511627776,`, `"size":1.099511627776e12,`),
		"escaped html in link":   replace(`"link":"../outside/\u2028&"`, `"link":"../outside/\u2028\u0026"`),
		"raw separator in link":  replace(`"link":"../outside/\u2028&"`, "\"link\":\"../outside/\u2028&\""),
		"duplicate key":          replace(`"tape_id":"edge",`, `"tape_id":"edge","tape_id":"edge",`),
		"empty omitempty field":  replace(`{"type":"text","text":"x"}`, `{"type":"text","text":"x","id":""}`),
		"empty omitempty list":   replace(`{"type":"text","text":"x"}`, `{"type":"text","text":"x","content":[]}`),
		"false omitempty bool":   replace(`{"type":"text","text":"x"}`, `{"type":"text","text":"x","is_error":false}`),
		"false copied_from_tape": replace(`"copied_from_tape":true}`, `"copied_from_tape":false}`),
		"null normalized list":   replace(`"tool_results":[`, `"tool_results":null,"x":[`),
		"missing required field": replace(`"stop_reason":"end_turn",`, ``),
		"missing tool input":     replace(`{"id":"c","name":"Bash","input":{}}`, `{"id":"c","name":"Bash"}`),
		"raw with space":         replace(`{"x":1}`, `{"x": 1}`),
		"no newline":             data[:len(data)-1],
		"two newlines":           append(bytes.Clone(data), '\n'),
	}
	for name, in := range tests {
		t.Run(name, func(t *testing.T) {
			require.NotEqual(t, string(data), string(in))
			want := []byte(nil)
			if ref, err := tape.Unmarshal(in); err == nil {
				want, err = tape.Marshal(ref)
				require.NoError(t, err)
			}
			for _, lean := range []bool{false, true} {
				_, canon, err := tape.DecodeTape(in, lean)
				if err == nil {
					assert.False(t, canon, "%s is not canonical (lean %v)", name, lean)
				}
			}
			got, gotCanon, err := tape.Decode(in, tape.DecodeOptions{NoChunkData: false})
			if want == nil {
				assert.Error(t, err, "tape.Unmarshal refuses it, so must decodeCanonical")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, string(want), string(gotCanon))
			again, err := tape.Marshal(got)
			require.NoError(t, err)
			assert.Equal(t, string(want), string(again))
		})
	}
}

// TestNormalizedTapeIsCanonical: a tape built in code with every nil the format allows,
// once normalized, encodes as tape.Marshal does, and decodes back on the canonical path.
func TestNormalizedTapeIsCanonical(t *testing.T) {
	// A tape with every nil the format allows, and times not in UTC.
	build := func() *tape.Tape {
		return &tape.Tape{
			Version: tape.Version,
			Meta: tape.Meta{StartedAt: time.Date(2026, 1, 2, 3, 4, 5, 6, time.FixedZone("x", 3600)),
				Ended: &tape.Ended{Reason: tape.EndCut, At: time.Date(2026, 1, 2, 4, 0, 0, 0, time.FixedZone("y", -7200))}},
			Threads: []*tape.Thread{{ID: "a"}, {ID: "b", Steps: []*tape.Step{{
				Request:     tape.Request{Messages: []tape.Message{{Role: "user"}}},
				ToolCalls:   []tape.ToolCall{{ID: "c"}},
				ToolResults: []tape.ToolResult{{ToolCallID: "c"}},
			}}}},
		}
	}
	mine := build()
	tape.Normalize(mine)
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	require.NoError(t, enc.Encode(mine))
	want, err := tape.Marshal(build())
	require.NoError(t, err)
	assert.Equal(t, string(want), b.String())
	back, canon, err := tape.DecodeTape(want, false)
	require.NoError(t, err)
	assert.True(t, canon)
	assert.True(t, tape.IsCanonical(back, want))
}

func TestDecodeTapeErrors(t *testing.T) {
	data := decodeTestTapes(t)[1]
	for name, in := range map[string][]byte{
		"unknown field": bytes.Replace(data, []byte(`"version":1,`), []byte(`"version":1,"extra":2,`), 1),
		"version 2":     bytes.Replace(data, []byte(`"version":1,`), []byte(`"version":2,`), 1),
		"truncated":     data[:len(data)/3],
		"trailing data": append(bytes.Clone(data), '{', '}'),
		"invalid utf-8": bytes.Replace(data, []byte(`"harness":"`), []byte("\"harness\":\"\xff"), 1),
		"not an object": []byte(`[1,2]`),
	} {
		t.Run(name, func(t *testing.T) {
			require.NotEqual(t, string(data), string(in))
			_, _, err := tape.DecodeTape(in, false)
			require.Error(t, err)
			_, _, err = tape.DecodeTape(in, true)
			require.Error(t, err)
		})
	}
}

// A lone surrogate is read as encoding/json reads it (U+FFFD), and is not canonical:
// tape.Marshal writes U+FFFD itself.
func TestDecodeTapeLoneSurrogate(t *testing.T) {
	data := decodeTestTapes(t)[1]
	for _, esc := range []string{`\ud800`, `\udc00x`, `\ud83d\u0041`} {
		in := bytes.Replace(data, []byte(`"harness":"`), []byte(`"harness":"`+esc), 1)
		require.NotEqual(t, string(data), string(in))
		want, err := tape.Unmarshal(in)
		require.NoError(t, err)
		for _, lean := range []bool{false, true} {
			got, canon, err := tape.DecodeTape(in, lean)
			require.NoError(t, err, esc)
			assert.False(t, canon, esc)
			assert.Equal(t, want.Meta.Harness, got.Meta.Harness, esc)
			assert.True(t, strings.HasPrefix(got.Meta.Harness, "\uFFFD"), "%s: %q", esc, got.Meta.Harness)
		}
	}
}

// FuzzDecodeCanonical checks the property Export relies on: whenever the fast path
// accepts data as canonical, tape.Unmarshal accepts it too and tape.Marshal gives data
// back byte for byte; whenever it accepts data at all, it decodes what tape.Unmarshal does.
func FuzzDecodeCanonical(f *testing.F) {
	// Small seeds: the fuzzer mutates them quickly.
	small := tape.New(tape.ProviderAnthropic, tapegen.Epoch)
	small.Meta.TapeID, small.Meta.Task = "t1", map[string]string{"id": "x<y"}
	small.Meta.Workspace = &tape.Workspace{Snapshot: "t1.workspace.tar.zst", Digest: "sha256:" + strings.Repeat("0", 64), Size: 10, Files: 2,
		Exclude: []string{"node_modules"}, End: []tape.FileEntry{{Path: "a", Type: "file", Mode: "0644", Size: 1, SHA256: strings.Repeat("1", 64)}, {Path: "l", Type: "symlink", Mode: "0777", Link: "a"}}}
	next := 2.5
	small.Threads = []*tape.Thread{{ID: "main", Steps: []*tape.Step{{
		Request: tape.Request{Path: "/v1/messages", Messages: []tape.Message{{Role: "user", Content: []tape.Block{{Type: "text", Text: "hi\n\"there\" \u00e9"}}}},
			Params: map[string]json.RawMessage{"model": json.RawMessage(`"m"`)}, Raw: json.RawMessage(`{"a":[1,2.5e-7,"x\\"]}`)},
		Response: tape.Response{Status: 200, Content: []tape.Block{{Type: "tool_use", ID: "c", Name: "Bash", Input: json.RawMessage(`{"command":"ls"}`)}},
			Chunks: []tape.Chunk{{AtMS: 1.25, Data: "event: x\ndata: {}\n\n"}}},
		ToolCalls:   []tape.ToolCall{{ID: "c", Name: "Bash", Input: json.RawMessage(`{"command":"ls"}`)}},
		ToolResults: []tape.ToolResult{{ToolCallID: "c", Content: []tape.Block{{Type: "text", Text: "ok"}}, DurationMS: &next}},
		Timing:      tape.Timing{RequestAt: 0.5, FirstByteAt: 1, LastByteAt: 2, NextRequestAt: &next},
	}}}, {ID: "sub", Parent: &tape.Parent{ThreadID: "main", ToolCallID: "c"}}}
	data, err := tape.Marshal(small)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(data)
	f.Add([]byte(`{"version":1,"meta":{},"threads":[]}` + "\n"))
	f.Add([]byte(`{"version":1,"meta":{"workspace":{"end":[{"path":"a","type":"dir","mode":"0755","size":0}]}},"threads":[]}` + "\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		_, leanCanon, leanErr := tape.DecodeTape(data, true)
		fast, canon, err := tape.DecodeTape(data, false)
		if (err == nil && canon) != (leanErr == nil && leanCanon) {
			t.Fatalf("lean and full decoding disagree: %v %v, %v %v", canon, err, leanCanon, leanErr)
		}
		if err != nil {
			return
		}
		if !canon {
			// Accepted but not canonical (another encoder's whitespace, key order or
			// escapes): decodeCanonical trusts the fast decoding, so it must be
			// tape.Unmarshal's.
			ref, rerr := tape.Unmarshal(data)
			if rerr != nil {
				t.Fatalf("fast path decoded what tape.Unmarshal rejects: %v", rerr)
			}
			want, werr := tape.Marshal(ref)
			got, gerr := tape.Marshal(fast)
			if werr != nil || gerr != nil || !bytes.Equal(want, got) {
				t.Fatalf("fast and reference decodings differ (%v, %v):\n%s\n%s", werr, gerr, got, want)
			}
			return
		}
		if !tape.IsCanonical(fast, data) {
			t.Fatalf("the fast decoder calls canonical what the reference check does not")
		}
		ref, err := tape.Unmarshal(data)
		if err != nil {
			t.Fatalf("fast path accepted what tape.Unmarshal rejects: %v", err)
		}
		again, err := tape.Marshal(ref)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(again, data) {
			t.Fatalf("fast path accepted a non-canonical tape:\n%s\n%s", data, again)
		}
		if strings.Contains(string(data), "\r") {
			t.Log("carriage return")
		}
	})
}

// TestDecodeTapeReusedRawBodies checks the raw-body memo (rawReusing): later requests of a
// thread repeat the members and messages of the one before, which are taken over by a
// comparison of bytes. A longer number after a shorter one, a changed member and a
// broken value after a repeated prefix must decode as tape.Unmarshal does.
func TestDecodeTapeReusedRawBodies(t *testing.T) {
	msgs := []string{`{"role":"user","content":"fix it"}`}
	var steps []*tape.Step
	for i, maxTokens := range []string{"32000", "320001", "32000", "32000"} {
		raw := `{"max_tokens":` + maxTokens + `,"messages":[` + strings.Join(msgs, ",") + `],"model":"m","n":` + strconv.Itoa(i) + `}`
		steps = append(steps, &tape.Step{
			Request:  tape.Request{Path: "/v1/messages", Raw: json.RawMessage(raw)},
			Response: tape.Response{Status: 200},
		})
		msgs = append(msgs, `{"role":"assistant","content":"step `+strconv.Itoa(i)+`"}`)
	}
	tp := tape.New(tape.ProviderAnthropic, tapegen.Epoch)
	tp.Meta.TapeID = "raw-memo"
	tp.Threads = []*tape.Thread{{ID: "main", Steps: steps}}
	data, err := tape.Marshal(tp)
	require.NoError(t, err)

	got, canon, err := tape.DecodeTape(data, false)
	require.NoError(t, err)
	require.True(t, canon)
	for i, s := range got.Threads[0].Steps {
		assert.JSONEq(t, string(steps[i].Request.Raw), string(s.Request.Raw), "step %d", i)
		assert.Equal(t, string(steps[i].Request.Raw), string(s.Request.Raw), "step %d", i)
	}

	// Break the last body after the part it repeats.
	last := bytes.LastIndex(data, []byte(`"step 2"}`))
	require.Positive(t, last)
	broken := append(append(bytes.Clone(data[:last]), `"step 2"]}`...), data[last+len(`"step 2"}`):]...)
	_, refErr := tape.Unmarshal(broken)
	require.Error(t, refErr)
	_, canon, err = tape.DecodeTape(broken, false)
	assert.False(t, err == nil && canon, "a broken raw body is not taken for a canonical tape")
}

// TestDecodeOtherEncoders: the golden tapes re-serialised as other tools write JSON
// (indented; Python's json.dump: ", " and ": " separators, keys sorted, non-ASCII as \u
// escapes) take the fast path:
// decodeCanonical gives tape.Marshal's encoding without tape.Unmarshal, and a repeated
// key is left to the reference decoder.
func TestDecodeOtherEncoders(t *testing.T) {
	for _, p := range goldenPaths(t) {
		want := canonical(t, p)
		var indented bytes.Buffer
		require.NoError(t, json.Indent(&indented, want, "", "  "))
		python := pythonDump(t, want)
		// Canonical but for its last byte: the lean first pass drops chunk data before it
		// learns, so the encoding takes a second, full pass.
		late := bytes.TrimSuffix(want, []byte("\n"))
		_, _, complete, err := tape.DecodeTapeLean(late, true)
		require.NoError(t, err)
		hasChunks := bytes.Contains(want, []byte(`"chunks":[{`))
		assert.Equal(t, !hasChunks, complete, "%s: lean decoding of a tape whose flaw comes last", p)
		_, _, complete, err = tape.DecodeTapeLean(indented.Bytes(), true)
		require.NoError(t, err)
		assert.True(t, complete, "an indented tape shows it is not canonical at once: one pass")
		for name, in := range map[string][]byte{"indented": indented.Bytes(), "python": python, "late": late} {
			t.Run(filepath.Base(p)+"/"+name, func(t *testing.T) {
				// The reference: raw bodies keep their keys' order (json.RawMessage), so
				// the canonical form of a re-sorted tape is its own.
				want := canonicalOf(t, in)
				got, canon, err := tape.DecodeTape(in, false)
				require.NoError(t, err, "the fast path declines a valid tape")
				assert.False(t, canon)
				again, err := tape.Marshal(got)
				require.NoError(t, err)
				assert.Equal(t, string(want), string(again))
				_, enc, err := tape.Decode(in, tape.DecodeOptions{NoChunkData: true})
				require.NoError(t, err)
				assert.Equal(t, string(want), string(enc), "lean first pass, then a full one for the encoding")
			})
		}
	}
	dup := []byte(`{"version":1,"meta":{"tape_id":"a","tape_id":"b"},"threads":[]}` + "\n")
	_, _, err := tape.DecodeTape(dup, false)
	var de *jsonlex.DuplicateKeyError
	require.ErrorAs(t, err, &de, "the decoder refuses a repeated key itself")
	require.Equal(t, "/meta/tape_id", de.Pointer)
	_, _, err = tape.Decode(dup, tape.DecodeOptions{NoChunkData: true})
	require.ErrorContains(t, err, `duplicate object key "tape_id" at /meta/tape_id`, "a repeated key is refused, not left to encoding/json's last-wins")
}

// pythonDump re-encodes a JSON document as Python's json.dump(sort_keys=True) writes it:
// ", " and ": " between items, keys sorted, every non-ASCII character as a \u escape.
func pythonDump(t *testing.T, doc []byte) []byte {
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	var v any
	require.NoError(t, dec.Decode(&v))
	var b bytes.Buffer
	var walk func(v any)
	// list writes n items between open and close, with ", " between them.
	list := func(open, close byte, n int, item func(i int)) {
		b.WriteByte(open)
		for i := range n {
			if i > 0 {
				b.WriteString(", ")
			}
			item(i)
		}
		b.WriteByte(close)
	}
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			keys := slices.Sorted(maps.Keys(x))
			list('{', '}', len(keys), func(i int) {
				walk(keys[i])
				b.WriteString(": ")
				walk(x[keys[i]])
			})
		case []any:
			list('[', ']', len(x), func(i int) { walk(x[i]) })
		case string:
			q := strconv.QuoteToASCII(x) // Go escapes; make them JSON's
			q = strings.ReplaceAll(q, `\x`, `\u00`)
			q = regexp.MustCompile(`\\U000([0-9a-fA-F]{5})`).ReplaceAllStringFunc(q, func(m string) string {
				r, _ := strconv.ParseUint(m[2:], 16, 32)
				hi, lo := utf16.EncodeRune(rune(r))
				return fmt.Sprintf(`\u%04x\u%04x`, hi, lo)
			})
			q = strings.ReplaceAll(q, `\a`, `\u0007`)
			q = strings.ReplaceAll(q, `\v`, `\u000b`)
			b.WriteString(q)
		default:
			enc, err := json.Marshal(x)
			require.NoError(t, err)
			b.Write(enc)
		}
	}
	walk(v)
	b.WriteByte('\n')
	var check any
	require.NoError(t, json.Unmarshal(b.Bytes(), &check), "pythonDump wrote invalid JSON")
	return b.Bytes()
}

// goldenPaths are the repository's golden tapes.
func goldenPaths(t testing.TB) []string {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join("..", "testdata", "*.json"))
	require.NoError(t, err)
	require.NotEmpty(t, paths)
	return paths
}

// canonical returns tape.Marshal of the tape in a file.
func canonical(t testing.TB, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	return canonicalOf(t, data)
}

// canonicalOf returns the canonical encoding of the tape data holds: tape.Marshal of
// tape.Unmarshal.
func canonicalOf(t testing.TB, data []byte) []byte {
	t.Helper()
	tp, err := tape.Unmarshal(data)
	require.NoError(t, err)
	enc, err := tape.Marshal(tp)
	require.NoError(t, err)
	return enc
}

func TestIsCanonicalAgreesWithMarshal(t *testing.T) {
	var tapes []*tape.Tape
	for i := range 12 {
		tapes = append(tapes, tapegen.Tape(tapegen.Options{Seed: 61, MeanSteps: 4, Lean: true}, i))
	}
	for _, p := range goldenPaths(t) {
		tp, err := tape.LoadFile(p)
		require.NoError(t, err)
		tapes = append(tapes, tp)
	}
	empty := tape.New(tape.ProviderAnthropic, tapegen.Epoch)
	sealed := tapegen.Tape(tapegen.Options{Seed: 62, MeanSteps: 4, Lean: true}, 0)
	require.NoError(t, seal.Tape(sealed, nil))
	tapes = append(tapes, empty, edgeTape(), sealed)
	for i, tp := range tapes {
		data, err := tape.Marshal(tp)
		require.NoError(t, err)
		back, err := tape.Unmarshal(data)
		require.NoError(t, err)
		assert.True(t, tape.IsCanonical(back, data), "tape %d: its canonical encoding is canonical", i)

		for name, mutate := range map[string]func([]byte) []byte{
			"space":          func(b []byte) []byte { return bytes.Replace(b, []byte(`":`), []byte(`": `), 1) },
			"no newline":     func(b []byte) []byte { return b[:len(b)-1] },
			"two newlines":   func(b []byte) []byte { return append(bytes.Clone(b), '\n') },
			"escaped letter": func(b []byte) []byte { return bytes.Replace(b, []byte(`"meta"`), []byte(`"met\u0061"`), 1) },
			"meta changed":   func(b []byte) []byte { return bytes.Replace(b, []byte(`"harness":"`), []byte(`"harness":"x`), 1) },
			"key order": func(b []byte) []byte {
				return bytes.Replace(b, []byte(`{"version":1,"meta":`), []byte(`{"meta":`), 1)
			},
		} {
			bad := mutate(data)
			if bytes.Equal(bad, data) {
				continue
			}
			assert.False(t, tape.IsCanonical(back, bad), "tape %d: %s", i, name)
		}
	}
}
