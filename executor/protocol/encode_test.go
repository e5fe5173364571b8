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

func strp(s string) *string { return &s }

// otherMessages are the messages besides call and result, with the values that make their
// encodings differ: nil and empty maps and lists, escapes, omitempty.
var otherMessages = []any{
	Hello{Op: OpHello, Harness: "claude-code", Cwd: "/app", Env: map[string]string{}},
	Hello{Op: OpHello, Harness: "codex", Cwd: "/w <&> \u2028", Env: map[string]string{"PATH": "/bin", "A": "\x00\"\\", "é": "\xff"}, StateDir: strp("/tmp/s")},
	Hello{Op: OpHello, Harness: "claude-code", Cwd: "/app", Env: map[string]string{}, HarnessVersion: "2.1.332"},
	Hello{},
	Hello{Op: OpHello, Harness: "codex", HarnessVersion: "0.171.0"},
	HelloReply{Op: OpHello, OK: true, Version: "0.1.0", Protocol: Version, Harness: "claude-code", Cwd: "/app",
		Policy: Policy{ParallelToolCalls: true, SpawningTools: []string{"Agent", "Task"}}, Platform: "linux-6.8.0-x86_64"},
	HelloReply{Op: OpHello, Protocol: -7, Policy: Policy{SpawningTools: []string{}}},
	HelloReply{},
	Bye{Op: OpBye},
	Bye{Op: OpBye, OK: true},
	Bye{},
	Error{Op: OpError, ID: strp("7"), Message: `call "7" before hello`},
	Error{Op: OpError, Message: "line 2: malformed JSON: <\n>"},
	Error{ID: strp("")},
}

// TestEncodeMatchesJSON: every message, as a value and through a pointer, is encoded as
// an encoding/json Encoder without HTML escaping encodes it.
func TestEncodeMatchesJSON(t *testing.T) {
	msgs := append([]any(nil), otherMessages...)
	for _, c := range fastCalls {
		msgs = append(msgs, c)
	}
	for _, r := range fastResults {
		msgs = append(msgs, r)
	}
	for i, msg := range msgs {
		ptr := reflect.New(reflect.TypeOf(msg))
		ptr.Elem().Set(reflect.ValueOf(msg))
		for _, m := range []any{msg, ptr.Interface()} {
			var got bytes.Buffer
			require.NoError(t, NewEncoder(&got).Encode(m))
			assert.Equal(t, string(stdEncode(t, m)), got.String(), "message %d (%T)", i, m)
		}
	}
}

// TestEncodeErrors: what encoding/json refuses is an error naming the message and the
// field, and so are nil messages and other types; nothing is written for them.
func TestEncodeErrors(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	blocks := []tape.Block{{Type: "text", Text: "ok"}, {Type: "tool_result", Content: []tape.Block{{Type: "image", Raw: json.RawMessage(`{"a":}`)}}}}
	for _, tt := range []struct {
		msg  any
		want string
		std  bool // encoding/json refuses it too
	}{
		{Call{Op: OpCall, ID: "7", Call: tape.ToolCall{Name: "Bash", Input: json.RawMessage(`{"a":1`)}}, `encode call "7": call.input: not valid JSON: offset 6: unexpected end of input`, true},
		{Call{Op: OpCall, ID: "7", Call: tape.ToolCall{Name: "Bash", Input: json.RawMessage{}}}, `encode call "7": call.input: not valid JSON`, true},
		{Call{Op: OpCall, ID: "7", Call: tape.ToolCall{Name: "Bash", Input: json.RawMessage(`{} x`)}}, `encode call "7": call.input: not valid JSON: offset 3: invalid character 'x' after the value`, true},
		{&Call{Op: OpCall, ID: "8", Call: tape.ToolCall{Name: "Bash"}, Recorded: &tape.ToolResult{DurationMS: &nan}}, `encode call "8": recorded.duration_ms: NaN is not a JSON number`, true},
		{Call{Op: OpCall, ID: "9", Call: tape.ToolCall{Name: "Bash"}, Recorded: &tape.ToolResult{Content: blocks}}, `encode call "9": recorded.content[1].content[0].raw: not valid JSON: offset 5: invalid character '}'`, true},
		{Result{Op: OpResult, ID: "1", Result: tape.ToolResult{DurationMS: &inf}}, `encode result "1": result.duration_ms: +Inf is not a JSON number`, true},
		{&Result{Op: OpResult, ID: "2", Result: tape.ToolResult{Content: []tape.Block{{Type: "tool_use", Input: json.RawMessage(`[1,]`)}}}}, `encode result "2": result.content[0].input: not valid JSON: offset 3: invalid character ']'`, true},
		{(*Call)(nil), "encode *protocol.Call: nil message", false},
		{(*Hello)(nil), "encode *protocol.Hello: nil message", false},
		{(*Error)(nil), "encode *protocol.Error: nil message", false},
		{map[string]any{"op": "bye"}, "encode map[string]interface {}: not a message of protocol version 1", false},
		{nil, "encode <nil>: not a message of protocol version 1", false},
		{Envelope{Op: OpBye}, "encode protocol.Envelope: not a message", false},
	} {
		var out bytes.Buffer
		err := NewEncoder(&out).Encode(tt.msg)
		require.Error(t, err, "%#v", tt.msg)
		assert.Contains(t, err.Error(), tt.want)
		assert.Empty(t, out.String(), "nothing is written for a message that fails")
		if tt.std {
			_, stdErr := json.Marshal(tt.msg)
			assert.Error(t, stdErr, "encoding/json refuses %#v too", tt.msg)
		}
	}
	// The Encoder goes on after a failed message, and the failure left nothing behind.
	var out bytes.Buffer
	enc := NewEncoder(&out)
	require.Error(t, enc.Encode(Result{Op: OpResult, ID: "1", Result: tape.ToolResult{Content: []tape.Block{{Type: "text", Text: strings.Repeat("x", 100)}}, DurationMS: &nan}}))
	require.NoError(t, enc.Encode(Bye{Op: OpBye, OK: true}))
	assert.Equal(t, "{\"op\":\"bye\",\"ok\":true}\n", out.String())
}

// FuzzEncodeMessages holds the encoder to encoding/json on every message with the fuzzer's
// values in each field: arbitrary strings (invalid UTF-8, escapes), a float for durations
// (NaN and the infinities included), a raw value that may not be JSON, and flags choosing
// nil or set for the optional fields.
func FuzzEncodeMessages(f *testing.F) {
	f.Add("7", "Bash", "\xff<&>\u2028", []byte(`{"command":"ls"}`), 12.5, 5, uint8(0))
	f.Add("", "", "", []byte(" [1, 2] "), math.Inf(-1), -1, uint8(0xff))
	f.Add("é\"\\\x01", "x", "y", []byte(`{"a":`), 1e-7, 0, uint8(0x55))
	f.Fuzz(func(t *testing.T, id, name, text string, raw []byte, d float64, n int, flags uint8) {
		set := func(bit uint8) bool { return flags&(1<<bit) != 0 }
		var dur *float64
		if set(0) {
			dur = &d
		}
		var in json.RawMessage
		if set(1) {
			in = raw
		}
		env := map[string]string{name: text, text: id}
		if set(2) {
			env = nil
		}
		tools := []string{name, text}
		if set(3) {
			tools = nil
		}
		var sid *string
		if set(4) {
			sid = &id
		}
		blocks := []tape.Block{{Type: tape.BlockText, Text: text}, {Type: "tool_use", ID: id, Name: name, Input: in}}
		if set(5) {
			blocks = append(blocks, tape.Block{Type: "tool_result", ToolCallID: id, IsError: set(6), Content: []tape.Block{{Type: "image", Raw: in}}})
		}
		res := tape.ToolResult{ToolCallID: id, Content: blocks, IsError: set(7), DurationMS: dur}
		var rec *tape.ToolResult
		if set(6) {
			rec = &res
		}
		for _, msg := range []any{
			Hello{Op: Op(name), Harness: name, Cwd: text, Env: env, StateDir: sid},
			HelloReply{Op: OpHello, OK: set(0), Version: text, Protocol: n, Harness: name, Cwd: id, Policy: Policy{ParallelToolCalls: set(1), SpawningTools: tools}, Platform: text},
			Bye{Op: Op(id), OK: set(1)},
			Error{Op: OpError, ID: sid, Message: text},
			Call{Op: OpCall, ID: id, Call: tape.ToolCall{ID: id, Name: name, Input: in, Kind: text, Namespace: text}, Recorded: rec},
			Result{Op: OpResult, ID: id, Result: res},
		} {
			checkEncode(t, msg)
		}
	})
}

// checkEncode fails unless the Encoder writes msg as an encoding/json Encoder without HTML
// escaping does, or both refuse it and the Encoder wrote nothing.
func checkEncode(t *testing.T, msg any) {
	t.Helper()
	var std bytes.Buffer
	enc := json.NewEncoder(&std)
	enc.SetEscapeHTML(false)
	stdErr := enc.Encode(msg)
	var got bytes.Buffer
	err := NewEncoder(&got).Encode(msg)
	if stdErr != nil {
		require.Error(t, err, "encoding/json: %v", stdErr)
		require.Empty(t, got.String())
		return
	}
	require.NoError(t, err)
	require.Equal(t, std.String(), got.String())
}
