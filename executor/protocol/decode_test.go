package protocol

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/stretchr/testify/require"
)

// checkDecodeAsJSON decodes one line with both Decoders and requires what encoding/json makes
// of it: the same message, or an error where encoding/json fails, the op is missing or
// unknown, or a call lacks its id or name.
func checkDecodeAsJSON(t *testing.T, line []byte) {
	require.Empty(t, decodeMismatch(line, (*Decoder).Decode))
}

// decodeMismatch decodes line with decode through both Decoders and says how the outcome
// differs from encoding/json's reading of it ("" when it does not).
func decodeMismatch(line []byte, decode func(*Decoder) (*Envelope, error)) string {
	if bytes.ContainsAny(line, "\r\n") || len(bytes.TrimSpace(line)) == 0 {
		return "" // one line, not blank: framing is TestDecodeRequests's
	}
	for _, replies := range []bool{false, true} {
		d := NewRequestDecoder(bytes.NewReader(line))
		if replies {
			d = NewReplyDecoder(bytes.NewReader(line))
		}
		env, err := decode(d)
		var head struct {
			Op Op `json:"op"`
		}
		var want any
		headErr := json.Unmarshal(line, &head)
		switch {
		case head.Op == OpHello && replies:
			want = &HelloReply{}
		case head.Op == OpHello:
			want = &Hello{}
		case head.Op == OpCall && !replies:
			want = &Call{}
		case head.Op == OpResult && replies:
			want = &Result{}
		case head.Op == OpBye:
			want = &Bye{}
		case head.Op == OpError && replies:
			want = &Error{}
		}
		var refused error // why the Decoder must refuse the line
		switch {
		case headErr != nil:
			refused = headErr
		case want == nil:
			refused = fmt.Errorf("op %q", head.Op)
		default:
			refused = json.Unmarshal(line, want)
			if c, ok := want.(*Call); ok && refused == nil && (c.ID == "" || c.Call.Name == "") {
				refused = errors.New("a call without id or name")
			}
		}
		switch {
		case refused != nil && err == nil:
			return fmt.Sprintf("%q (replies %v): decoded, but encoding/json refuses it: %v", line, replies, refused)
		case refused == nil && err != nil:
			return fmt.Sprintf("%q (replies %v): %v", line, replies, err)
		case refused == nil && !reflect.DeepEqual(want, message(env)):
			return fmt.Sprintf("%q (replies %v): decoded %+v, encoding/json %+v", line, replies, message(env), want)
		}
	}
	return ""
}

// message returns the typed message an envelope holds.
func message(e *Envelope) any {
	switch {
	case e.Hello != nil:
		return e.Hello
	case e.HelloReply != nil:
		return e.HelloReply
	case e.Call != nil:
		return e.Call
	case e.Result != nil:
		return e.Result
	case e.Bye != nil:
		return e.Bye
	}
	return e.Error
}

var decodeSeeds = []string{
	`{"op":"hello","harness":"claude-code","cwd":"/app","env":{"A":"1"},"state_dir":null}`,
	`{"op":"hello","ok":true,"version":"0.1.0","protocol":1,"harness":"codex","cwd":"/w","policy":{"parallel_tool_calls":true,"spawning_tools":["spawn_agent"]},"platform":"linux"}`,
	`{"op":"call","id":"7","call":{"id":"a","name":"Bash","input":{"command":"ls"}},"recorded":{"tool_call_id":"a","content":[{"type":"text","text":"x"}],"is_error":false,"duration_ms":null}}`,
	`{"id":"7","op":"call","CALL":{"NAME":"Bash","Id":"b"},"recorded":null,"extra":[1,2]}`,
	`{"op":"call","id":"7","call":{"name":"Bash","input":null}}`,
	`{"op":"call","id":"7","call":{"id":"a","name":"x"},"call":{"input":[1]}}`,
	`{"op":"result","id":"7","result":{"tool_call_id":"a","content":null,"is_error":true,"duration_ms":1.5}}`,
	`{"op":"result","id":"7","result":{"content":[{"type":"tool_result","content":[{"type":"text","text":"n"}],"raw":{"k":1}}]}}`,
	`{"op":"bye","ok":true}`, `{"op":"bye"}`, `{"op":"error","id":null,"message":"m"}`, `{"op":"error","id":"3","message":"m"}`,
	`{"op":"hello","env":{"A":1}}`, `{"op":"call","id":7}`, `{"op":"result","result":{"duration_ms":"slow"}}`,
	`{"op":"\u0063all","id":"7","call":{"id":"a","name":"B"}}`, `{"op":"launch"}`, `{"op":""}`, `{}`, `[]`, `{"op":"call"`,
}

// TestDecodeAsJSON holds the Decoder, hand-written paths and general path alike, to
// encoding/json's reading of each message.
func TestDecodeAsJSON(t *testing.T) {
	for _, s := range decodeSeeds {
		checkDecodeAsJSON(t, []byte(s))
	}
	// And it can fail: a Decoder that drops the recorded result, or that takes a line
	// encoding/json refuses, is caught.
	dropRecorded := func(d *Decoder) (*Envelope, error) {
		env, err := d.Decode()
		if env != nil && env.Call != nil {
			env.Call.Recorded = nil
		}
		return env, err
	}
	require.Contains(t, decodeMismatch([]byte(decodeSeeds[2]), dropRecorded), "decoded")
	takeAll := func(d *Decoder) (*Envelope, error) {
		env, err := d.Decode()
		if err != nil {
			return &Envelope{Bye: &Bye{}}, nil
		}
		return env, nil
	}
	require.Contains(t, decodeMismatch([]byte(`{"op":"call","id":7}`), takeAll), "encoding/json refuses it")
}

func FuzzDecodeAsJSON(f *testing.F) {
	for _, s := range decodeSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(checkDecodeAsJSON)
}
