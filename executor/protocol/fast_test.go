package protocol

import (
	"bytes"
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/tape"
)

func ms(f float64) *float64 { return &f }

// fastCalls and fastResults cover what the hand-written codec meets: escapes, control
// characters, invalid UTF-8, nested blocks, raw values with whitespace, nil and empty slices,
// numbers in and out of its range.
var (
	fastCalls = []Call{
		{Op: OpCall, ID: "1", Call: tape.ToolCall{ID: "toolu_1", Name: "TodoWrite", Input: json.RawMessage(`{"todos":[]}`)},
			Recorded: &tape.ToolResult{ToolCallID: "toolu_1", Content: []tape.Block{{Type: tape.BlockText, Text: "Todos have been modified successfully."}}}},
		{Op: OpCall, ID: "2", Call: tape.ToolCall{ID: "c", Name: "apply_patch", Kind: "custom", Input: json.RawMessage("{ \"input\" : \"*** Begin Patch\\n\\t<&>\" ,\n \"x\": [1, 2.5e3, true, null] }")}},
		{Op: OpCall, ID: "é\"\\\x01\x7f\u2028\u2029😀", Call: tape.ToolCall{ID: "bad\xffutf8", Name: "Bash", Input: json.RawMessage(`"just a string"`)},
			Recorded: &tape.ToolResult{Content: []tape.Block{}, IsError: true, DurationMS: ms(12.345)}},
		{Op: OpCall, ID: "3", Call: tape.ToolCall{Name: "Read"}},
		{Op: OpCall, ID: "5", Call: tape.ToolCall{ID: "g", Name: "Glob", Input: json.RawMessage(`{}`)}, NotOffered: true},
		{Op: OpCall, ID: "4", Call: tape.ToolCall{ID: "t", Name: "Agent", Input: json.RawMessage(`{}`)},
			Recorded: &tape.ToolResult{ToolCallID: "t", DurationMS: ms(1e-7), Content: []tape.Block{
				{Type: "tool_use", ID: "u", Name: "n", Input: json.RawMessage(`{"a": 1}`)},
				{Type: "tool_result", ToolCallID: "u", IsError: true, Content: []tape.Block{{Type: "text", Text: "line1\nline2\r\t\b\f"}}},
				{Type: "image", Raw: json.RawMessage(`{"type":"image","source":{"data":"AAAA"}}`)},
			}}},
	}
	fastResults = []Result{
		{Op: OpResult, ID: "1", Result: tape.ToolResult{ToolCallID: "toolu_1", Content: []tape.Block{{Type: "text", Text: "ok"}}, DurationMS: ms(0.012)}},
		{Op: OpResult, ID: "2", Result: tape.ToolResult{ToolCallID: "x", Content: nil, IsError: true}},
		{Op: OpResult, ID: "3", Result: tape.ToolResult{Content: []tape.Block{{Type: "text", Text: strings.Repeat("\x00 ß \\ \"", 50)}}, DurationMS: ms(0)}},
		{Op: OpResult, ID: "4", Result: tape.ToolResult{DurationMS: ms(3e21)}},
		{Op: OpResult, ID: "5", Result: tape.ToolResult{DurationMS: ms(-1234567.125)}},
	}
)

func stdEncode(t testing.TB, msg any) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	require.NoError(t, enc.Encode(msg))
	return buf.Bytes()
}

// TestFastEncodeMatchesJSON: the hand-written encoder writes what encoding/json writes.
func TestFastEncodeMatchesJSON(t *testing.T) {
	var msgs []any
	for _, c := range fastCalls {
		msgs = append(msgs, c, &c)
	}
	for _, r := range fastResults {
		msgs = append(msgs, r, &r)
	}
	for i, msg := range msgs {
		var got bytes.Buffer
		require.NoError(t, NewEncoder(&got).Encode(msg))
		assert.Equal(t, string(stdEncode(t, msg)), got.String(), "message %d", i)
	}
	// The fast path really is taken for the usual messages.
	_, ok := appendCall(nil, &fastCalls[0])
	assert.True(t, ok)
	_, ok = appendResult(nil, &fastResults[0])
	assert.True(t, ok)
	_, ok = appendResult(nil, &fastResults[3])
	assert.True(t, ok, "exponent notation is written by hand too")
	_, ok = appendResult(nil, &Result{Op: OpResult, Result: tape.ToolResult{DurationMS: ms(math.NaN())}})
	assert.False(t, ok, "a NaN is refused, as encoding/json refuses it (Encode names the field)")
}

// checkFastDecode fails when the hand-written decoder accepts a line and gives other values
// than encoding/json (or accepts a line encoding/json rejects).
func checkFastDecode(t *testing.T, line []byte) (callOK, resultOK bool) {
	var fc, sc Call
	if callOK = decodeCall(line, &fc); callOK {
		require.NoError(t, json.Unmarshal(line, &sc), "fast decoder accepted %q", line)
		require.True(t, reflect.DeepEqual(sc, fc), "%q:\nencoding/json %#v\nfast          %#v", line, sc, fc)
	}
	var fr, sr Result
	if resultOK = decodeResult(line, &fr); resultOK {
		require.NoError(t, json.Unmarshal(line, &sr), "fast decoder accepted %q", line)
		require.True(t, reflect.DeepEqual(sr, fr), "%q:\nencoding/json %#v\nfast          %#v", line, sr, fr)
	}
	return callOK, resultOK
}

// TestFastDecodeMatchesJSON: the hand-written decoder gives encoding/json's values, and
// leaves what it does not handle to encoding/json.
func TestFastDecodeMatchesJSON(t *testing.T) {
	for _, c := range fastCalls {
		callOK, _ := checkFastDecode(t, stdEncode(t, c))
		assert.Equal(t, len(c.Call.Input) > 0, callOK, "%+v", c) // "input":null is left to encoding/json
	}
	for _, r := range fastResults {
		_, resultOK := checkFastDecode(t, stdEncode(t, r))
		assert.True(t, resultOK, "%+v", r)
	}
	for _, tt := range []struct {
		line string
		fast bool
	}{
		{` { "recorded" : null , "call" : { "name" : "Bash" , "input" : { "a" : [ 1 , { } ] } } , "id" : "1" , "op" : "call" } `, true},
		{`{"op":"call","id":"\u00e9\ud83d\ude00\/","call":{"name":"x","input":-0.5e-3}}`, true},
		{`{"op":"result","id":"1","result":{"content":[{"type":"text","content":null,"is_error":false}],"duration_ms":null}}`, true},
		{`{"op":"call","id":"1","call":{"name":"x","input":{}},"extra":1}`, false},         // unknown key
		{`{"op":"call","ID":"1","call":{"name":"x","input":{}}}`, false},                   // encoding/json folds case
		{`{"op":"call","id":"1","id":"2","call":{"name":"x","input":{}}}`, false},          // repeated key
		{`{"op":"call","id":"1","call":{"name":"x","input":null}}`, false},                 // null into a RawMessage
		{`{"op":"call","id":"\ud800","call":{"name":"x","input":{}}}`, true},               // lone surrogate: U+FFFD, as encoding/json
		{"{\"op\":\"call\",\"id\":\"\xff\",\"call\":{\"name\":\"x\",\"input\":{}}}", true}, // invalid UTF-8: U+FFFD, as encoding/json
		{`{"op":"call","\u0069d":"1","call":{"name":"x","input":{}}}`, false},              // escaped key
		{`{"op":"call","id":"1","call":{"name":"x","input":{"a":}}}`, false},               // bad raw value
		{`{"op":"call","id":"1","call":{"name":"x","input":{}}} x`, false},                 // trailing bytes
		{`{"op":"call","id":"1","call":{"name":"x","input":{}}`, false},                    // truncated
		{`{"op":"result","id":"1","result":{"duration_ms":01}}`, false},                    // bad number
		{`{"op":"result","id":"1","result":{"is_error":"yes"}}`, false},                    // wrong type
		{`{"op":"call","id":"1","call":{"name":"x","input":{}},"recorded":{"content":[{"type":"text"},]}}`, false},
	} {
		callOK, resultOK := checkFastDecode(t, []byte(tt.line))
		assert.Equal(t, tt.fast, callOK || resultOK, "%s", tt.line)
	}
}

// TestFastDecoderThroughDecode: Decode gives the same envelopes with and without the hand-
// written path, including the errors of bad lines.
func TestFastDecoderThroughDecode(t *testing.T) {
	var in bytes.Buffer
	for _, c := range fastCalls {
		in.Write(stdEncode(t, c))
	}
	in.WriteString(`{"op":"call","id":"7","call":{"input":{}}}` + "\n")
	dec := NewRequestDecoder(&in)
	for _, c := range fastCalls {
		env, err := dec.Decode()
		require.NoError(t, err)
		var want Call
		require.NoError(t, json.Unmarshal(env.Raw, &want))
		assert.Equal(t, want, *env.Call)
		assert.Equal(t, c.ID, env.Call.ID)
	}
	_, err := dec.Decode()
	var le *LineError
	require.ErrorAs(t, err, &le)
	assert.ErrorContains(t, err, `call without "call.name"`)
	require.NotNil(t, le.ID)
	assert.Equal(t, "7", *le.ID)
}

// TestFastFieldsKnown fails when a field is added to a message or to the tape records they
// carry: the hand-written codec in fast.go and encode.go must learn it.
func TestFastFieldsKnown(t *testing.T) {
	for _, tt := range []struct {
		v    any
		keys string
	}{
		{Call{}, "op id call recorded not_offered,omitempty"},
		{Result{}, "op id result"},
		{tape.ToolCall{}, "id name input kind,omitempty namespace,omitempty"},
		{tape.ToolResult{}, "tool_call_id content is_error duration_ms copied_from_tape,omitempty"},
		{tape.Block{}, "type text,omitempty id,omitempty name,omitempty input,omitempty tool_call_id,omitempty content,omitempty is_error,omitempty raw,omitempty"},
		{Hello{}, "op harness cwd env state_dir harness_version,omitempty"},
		{HelloReply{}, "op ok version protocol harness cwd policy platform"},
		{Policy{}, "parallel_tool_calls spawning_tools"},
		{Bye{}, "op ok,omitempty"},
		{Error{}, "op id message"},
	} {
		rt := reflect.TypeOf(tt.v)
		var keys []string
		for i := range rt.NumField() {
			keys = append(keys, rt.Field(i).Tag.Get("json"))
		}
		assert.Equal(t, tt.keys, strings.Join(keys, " "), "%s changed: teach executor/protocol/fast.go and encode.go its fields", rt)
	}
}

func FuzzFastDecode(f *testing.F) {
	for _, c := range fastCalls {
		f.Add(stdEncode(f, c))
	}
	for _, r := range fastResults {
		f.Add(stdEncode(f, r))
	}
	f.Add([]byte(`{"op":"call","id":"\u00e9\ud83d\ude00","call":{"name":"x","input":[1,"]",{"}":2}]}}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		checkFastDecode(t, line)
	})
}

func FuzzFastEncode(f *testing.F) {
	f.Add("toolu_1", "Todos have been modified successfully.", []byte(`{"todos":[]}`), 0.012)
	f.Add("é\"\\\x01\x7f\u2028", "\xff\xfe bad", []byte(" [ 1 , \"\\u00e9\" ] "), 1e-9)
	f.Fuzz(func(t *testing.T, id, text string, input []byte, d float64) {
		if !json.Valid(input) {
			input = nil
		}
		c := Call{Op: OpCall, ID: id, Call: tape.ToolCall{ID: id, Name: text, Input: input},
			Recorded: &tape.ToolResult{ToolCallID: id, Content: []tape.Block{{Type: "text", Text: text, Raw: input}}, DurationMS: &d}}
		r := Result{Op: OpResult, ID: id, Result: *c.Recorded}
		for _, msg := range []any{c, r} {
			checkEncode(t, msg)
		}
	})
}
