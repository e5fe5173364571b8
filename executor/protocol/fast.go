package protocol

import (
	"encoding/json"
	"slices"
	"strconv"

	"github.com/tapebox/tapebox/internal/jsonlex"
	"github.com/tapebox/tapebox/tape"
)

// The hot messages, call and result, are decoded by hand: reflection and a validation pass
// over the whole line cost 4 to 8 us a round trip on each side with encoding/json, a fifth
// of a Docker exec stream's. The hand-written reader gives the same values as encoding/json
// (fast_test.go and decode_test.go check it, and fuzz it). It handles the lines Encoder
// writes and lines like them; on anything else (an unknown or repeated key, a null where a
// value is expected, an escaped key, a syntax error) it reports false and the line goes
// through jsonlex.Unmarshal, encoding/json's rules by reflection, which also words the errors.

// appendCall appends c as one JSON line.
func appendCall(b []byte, c *Call) ([]byte, bool) {
	b = appendHead(b, c.Op, c.ID, `,"call":`)
	b, ok := tape.AppendToolCall(b, &c.Call)
	b = append(b, `,"recorded":`...)
	if c.Recorded == nil {
		b = append(b, "null"...)
	} else {
		var rok bool
		b, rok = tape.AppendToolResult(b, c.Recorded)
		ok = ok && rok
	}
	if c.NotOffered {
		b = append(b, `,"not_offered":true`...)
	}
	return append(b, "}\n"...), ok
}

// appendResult appends r as one JSON line.
func appendResult(b []byte, r *Result) ([]byte, bool) {
	b = appendHead(b, r.Op, r.ID, `,"result":`)
	b, ok := tape.AppendToolResult(b, &r.Result)
	return append(b, "}\n"...), ok
}

// appendHead appends the fields every message opens with, then key.
func appendHead(b []byte, op Op, id, key string) []byte {
	b = jsonlex.AppendString(append(b, `{"op":`...), string(op), false)
	b = jsonlex.AppendString(append(b, `,"id":`...), id, false)
	return append(b, key...)
}

// scanner reads one JSON line by hand; ok turns false at the first thing it does not
// handle, and the caller falls back to jsonlex.Unmarshal.
type scanner struct {
	b  []byte
	i  int
	ok bool
}

func (s *scanner) ws() { s.i = jsonlex.Space(s.b, s.i) }

// next skips whitespace and consumes c if it comes next.
func (s *scanner) next(c byte) bool {
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

func (s *scanner) fail() { s.ok = false }

// object calls field for each key of an object; field returns false for a key it does not
// know. A repeated key fails (seen is a bit per known key, set by field through mark).
func (s *scanner) object(field func(key []byte) bool) {
	if !s.ok || !s.next('{') {
		s.fail()
		return
	}
	if s.next('}') {
		return
	}
	for s.ok {
		s.ws()
		key, ok := s.plainKey()
		if !ok || !s.next(':') || !field(key) {
			s.fail()
			return
		}
		if s.next(',') {
			continue
		}
		if !s.next('}') {
			s.fail()
		}
		return
	}
}

// plainKey reads a key without escapes.
func (s *scanner) plainKey() ([]byte, bool) {
	if s.i >= len(s.b) || s.b[s.i] != '"' {
		return nil, false
	}
	end, f, err := jsonlex.String(s.b, s.i)
	if err != nil || f&jsonlex.Escaped != 0 {
		return nil, false
	}
	key := s.b[s.i+1 : end-1]
	s.i = end
	return key, true
}

// str reads a string value, as encoding/json decodes it.
func (s *scanner) str() string {
	s.ws()
	if !s.ok || s.i >= len(s.b) || s.b[s.i] != '"' {
		s.fail()
		return ""
	}
	end, f, err := jsonlex.String(s.b, s.i)
	if err != nil {
		s.fail()
		return ""
	}
	body := s.b[s.i+1 : end-1]
	s.i = end
	if f.Plain(body) {
		return string(body)
	}
	return jsonlex.UnquoteString(body)
}

// null consumes a null if one comes next.
func (s *scanner) null() bool {
	s.ws()
	if s.i+4 <= len(s.b) && string(s.b[s.i:s.i+4]) == "null" {
		s.i += 4
		return true
	}
	return false
}

func (s *scanner) boolean() bool {
	s.ws()
	switch {
	case s.i+4 <= len(s.b) && string(s.b[s.i:s.i+4]) == "true":
		s.i += 4
		return true
	case s.i+5 <= len(s.b) && string(s.b[s.i:s.i+5]) == "false":
		s.i += 5
		return false
	}
	s.fail()
	return false
}

// number reads a JSON number.
func (s *scanner) number() float64 {
	s.ws()
	end, _, err := jsonlex.Number(s.b, s.i)
	if err != nil {
		s.fail()
		return 0
	}
	f, perr := strconv.ParseFloat(string(s.b[s.i:end]), 64)
	if perr != nil {
		s.fail()
		return 0
	}
	s.i = end
	return f
}

// raw reads any value and returns a copy of its bytes, validated as encoding/json does. A
// null is not taken (null into a RawMessage is left to the general path).
func (s *scanner) raw() json.RawMessage {
	s.ws()
	if !s.ok || s.i >= len(s.b) || s.b[s.i] == 'n' {
		s.fail()
		return nil
	}
	end, err := jsonlex.Skip(s.b, s.i)
	if err != nil {
		s.fail()
		return nil
	}
	v := append(json.RawMessage(nil), s.b[s.i:end]...)
	s.i = end
	return v
}

// end checks that only whitespace follows.
func (s *scanner) end() {
	s.ws()
	if s.i != len(s.b) {
		s.fail()
	}
}

// fields reads an object whose keys are among names, each at most once and in any order,
// into the target at the same place in targets: a *string, *Op, *bool,
// *json.RawMessage (any value but null), *[]tape.Block (null: nil), **float64 (null: nil) or a
// func() that reads the value. An unknown or repeated key fails.
func (s *scanner) fields(names []string, targets ...any) {
	var seen uint32
	next := 0 // keys come in order, as Encoder writes them: try the next one first
	s.object(func(key []byte) bool {
		i := next
		if i >= len(names) || names[i] != string(key) {
			i = slices.Index(names, string(key))
		}
		if i < 0 || seen&(1<<i) != 0 {
			return false
		}
		seen |= 1 << i
		next = i + 1
		switch p := targets[i].(type) {
		case *string:
			*p = s.str()
		case *Op:
			*p = Op(s.str())
		case *bool:
			*p = s.boolean()
		case *json.RawMessage:
			*p = s.raw()
		case *[]tape.Block:
			*p = s.blocks()
		case **float64:
			*p = nil
			if !s.null() {
				f := s.number()
				*p = &f
			}
		case func():
			p()
		}
		return true
	})
}

// The keys of the objects of a call and a result.
var (
	resultKeys     = []string{"op", "id", "result"}
	callKeys       = []string{"op", "id", "call", "recorded", "not_offered"}
	toolCallKeys   = []string{"id", "name", "input", "kind", "namespace"}
	toolResultKeys = []string{"tool_call_id", "content", "is_error", "duration_ms", "copied_from_tape"}
	blockKeys      = []string{"type", "text", "id", "name", "input", "tool_call_id", "content", "is_error", "raw"}
)

func (s *scanner) toolResult(r *tape.ToolResult) {
	s.fields(toolResultKeys, &r.ToolCallID, &r.Content, &r.IsError, &r.DurationMS, &r.CopiedFromTape)
}

// blocks reads an array of blocks; null is a nil slice, [] an empty one.
func (s *scanner) blocks() []tape.Block {
	if s.null() {
		return nil
	}
	if !s.ok || !s.next('[') {
		s.fail()
		return nil
	}
	bs := []tape.Block{}
	if s.next(']') {
		return bs
	}
	for s.ok {
		bs = append(bs, tape.Block{})
		k := &bs[len(bs)-1]
		s.fields(blockKeys, &k.Type, &k.Text, &k.ID, &k.Name, &k.Input, &k.ToolCallID, &k.Content, &k.IsError, &k.Raw)
		if s.next(',') {
			continue
		}
		if !s.next(']') {
			s.fail()
		}
		break
	}
	return bs
}

// decodeCall reads a call line by hand; false means: use jsonlex.Unmarshal.
func decodeCall(line []byte, c *Call) bool {
	s := scanner{b: line, ok: true}
	call := func() {
		s.fields(toolCallKeys, &c.Call.ID, &c.Call.Name, &c.Call.Input, &c.Call.Kind, &c.Call.Namespace)
	}
	recorded := func() {
		c.Recorded = nil
		if !s.null() {
			c.Recorded = &tape.ToolResult{}
			s.toolResult(c.Recorded)
		}
	}
	s.fields(callKeys, &c.Op, &c.ID, call, recorded, &c.NotOffered)
	s.end()
	return s.ok
}

// decodeResult reads a result line by hand; false means: use jsonlex.Unmarshal.
func decodeResult(line []byte, r *Result) bool {
	s := scanner{b: line, ok: true}
	result := func() { s.toolResult(&r.Result) }
	s.fields(resultKeys, &r.Op, &r.ID, result)
	s.end()
	return s.ok
}
