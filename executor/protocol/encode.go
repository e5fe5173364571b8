package protocol

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"strconv"

	"github.com/tapebox/tapebox/internal/jsonlex"
	"github.com/tapebox/tapebox/tape"
)

// Every message is encoded by hand, as an encoding/json Encoder without HTML escaping
// writes it (encode_test.go and FuzzEncodeMessages hold the two together), so that the
// executor links no reflective encoder (its 3 MiB budget). What encoding/json would refuse
// (a NaN or infinite duration, a raw value that is not JSON) is an error naming the
// message and the field.

// appender is what every message type of this package is: each appends itself as one line.
// The methods have value receivers, so that a message and a pointer to one both encode.
type appender interface {
	appendLine(b []byte) ([]byte, error)
}

// appendMessage appends msg, a message of this package or a pointer to one, as one line.
func appendMessage(b []byte, msg any) ([]byte, error) {
	m, ok := msg.(appender)
	if !ok {
		return b, fmt.Errorf("encode %T: not a message of protocol version %d", msg, Version)
	}
	if v := reflect.ValueOf(msg); v.Kind() == reflect.Pointer && v.IsNil() {
		return b, fmt.Errorf("encode %T: nil message", msg)
	}
	return m.appendLine(b)
}

func (c Call) appendLine(b []byte) ([]byte, error) {
	out, ok := appendCall(b, &c)
	if !ok {
		return b, fmt.Errorf("encode call %q: %s", c.ID, callFault(&c))
	}
	return out, nil
}

func (r Result) appendLine(b []byte) ([]byte, error) {
	out, ok := appendResult(b, &r)
	if !ok {
		return b, fmt.Errorf("encode result %q: %s", r.ID, resultFault("result", &r.Result))
	}
	return out, nil
}

func (h Hello) appendLine(b []byte) ([]byte, error) {
	b = jsonlex.AppendString(append(b, `{"op":`...), string(h.Op), false)
	b = jsonlex.AppendString(append(b, `,"harness":`...), h.Harness, false)
	b = jsonlex.AppendString(append(b, `,"cwd":`...), h.Cwd, false)
	b, _ = jsonlex.AppendValue(append(b, `,"env":`...), h.Env, "") // a map of strings cannot fail
	b = appendOptString(append(b, `,"state_dir":`...), h.StateDir)
	if h.HarnessVersion != "" {
		b = jsonlex.AppendString(append(b, `,"harness_version":`...), h.HarnessVersion, false)
	}
	return append(b, "}\n"...), nil
}

func (h HelloReply) appendLine(b []byte) ([]byte, error) {
	b = jsonlex.AppendString(append(b, `{"op":`...), string(h.Op), false)
	b = strconv.AppendBool(append(b, `,"ok":`...), h.OK)
	b = jsonlex.AppendString(append(b, `,"version":`...), h.Version, false)
	b = strconv.AppendInt(append(b, `,"protocol":`...), int64(h.Protocol), 10)
	b = jsonlex.AppendString(append(b, `,"harness":`...), h.Harness, false)
	b = jsonlex.AppendString(append(b, `,"cwd":`...), h.Cwd, false)
	b = strconv.AppendBool(append(b, `,"policy":{"parallel_tool_calls":`...), h.Policy.ParallelToolCalls)
	b, _ = jsonlex.AppendValue(append(b, `,"spawning_tools":`...), h.Policy.SpawningTools, "") // strings cannot fail
	b = jsonlex.AppendString(append(b, `},"platform":`...), h.Platform, false)
	return append(b, "}\n"...), nil
}

func (m Bye) appendLine(b []byte) ([]byte, error) {
	b = jsonlex.AppendString(append(b, `{"op":`...), string(m.Op), false)
	if m.OK {
		b = append(b, `,"ok":true`...)
	}
	return append(b, "}\n"...), nil
}

func (m Error) appendLine(b []byte) ([]byte, error) {
	b = jsonlex.AppendString(append(b, `{"op":`...), string(m.Op), false)
	b = appendOptString(append(b, `,"id":`...), m.ID)
	b = jsonlex.AppendString(append(b, `,"message":`...), m.Message, false)
	return append(b, "}\n"...), nil
}

// appendOptString appends *s, or null for nil.
func appendOptString(b []byte, s *string) []byte {
	if s == nil {
		return append(b, "null"...)
	}
	return jsonlex.AppendString(b, *s, false)
}

// callFault names the field of c that appendCall could not write, and why.
func callFault(c *Call) string {
	if c.Call.Input != nil {
		if why := rawFault(c.Call.Input); why != "" {
			return "call.input: " + why
		}
	}
	if c.Recorded != nil {
		if why := resultFault("recorded", c.Recorded); why != "" {
			return why
		}
	}
	return "a value JSON cannot hold"
}

// resultFault names the field of r, at path, that could not be written, and why; "" when
// there is none.
func resultFault(path string, r *tape.ToolResult) string {
	if d := r.DurationMS; d != nil && (math.IsNaN(*d) || math.IsInf(*d, 0)) {
		return path + ".duration_ms: " + strconv.FormatFloat(*d, 'g', -1, 64) + " is not a JSON number"
	}
	return blocksFault(path+".content", r.Content)
}

func blocksFault(path string, bs []tape.Block) string {
	for i := range bs {
		k := &bs[i]
		at := path + "[" + strconv.Itoa(i) + "]"
		// input and raw are omitempty: an empty one is left out, not written.
		if len(k.Input) > 0 {
			if why := rawFault(k.Input); why != "" {
				return at + ".input: " + why
			}
		}
		if len(k.Raw) > 0 {
			if why := rawFault(k.Raw); why != "" {
				return at + ".raw: " + why
			}
		}
		if why := blocksFault(at+".content", k.Content); why != "" {
			return why
		}
	}
	return ""
}

// rawFault says why v, a non-nil raw value, is not one JSON value; "" when it is.
func rawFault(v json.RawMessage) string {
	end, err := jsonlex.Skip(v, jsonlex.Space(v, 0))
	if err != nil {
		return "not valid JSON: " + err.Error()
	}
	if end = jsonlex.Space(v, end); end != len(v) {
		return "not valid JSON: offset " + strconv.Itoa(end) + ": invalid character " + jsonlex.Char(v[end]) + " after the value"
	}
	return ""
}
