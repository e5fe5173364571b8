package protocol

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
	"unicode/utf8"

	"github.com/tapebox/tapebox/internal/jsonlex"
	"github.com/tapebox/tapebox/tape"
)

// The hot messages, call and result, are encoded and decoded by hand: encoding/json's
// reflection and its validation pass over the whole line cost 4 to 8 us a round trip on each
// side, a fifth of a Docker exec stream's. The hand-written paths give the same values as
// encoding/json (fast_test.go checks both ways, and fuzzes the decoder against it). The
// decoder handles the lines Encoder writes and lines like them; on anything else (an unknown
// or repeated key, a null where a value is expected, an escaped key, a syntax error) it reports false and the line goes through encoding/json, which also words
// the errors.

// appendCall appends c as one JSON line.
func appendCall(b []byte, c *Call) ([]byte, bool) {
	b = append(b, `{"op":`...)
	b = appendString(b, string(c.Op))
	b = append(b, `,"id":`...)
	b = appendString(b, c.ID)
	b = append(b, `,"call":{"id":`...)
	b = appendString(b, c.Call.ID)
	b = append(b, `,"name":`...)
	b = appendString(b, c.Call.Name)
	b = append(b, `,"input":`...)
	b, ok := appendRaw(b, c.Call.Input)
	if !ok {
		return b, false
	}
	if c.Call.Kind != "" {
		b = append(b, `,"kind":`...)
		b = appendString(b, c.Call.Kind)
	}
	b = append(b, `},"recorded":`...)
	if c.Recorded == nil {
		b = append(b, "null"...)
	} else if b, ok = appendToolResult(b, c.Recorded); !ok {
		return b, false
	}
	return append(b, "}\n"...), true
}

// appendResult appends r as one JSON line.
func appendResult(b []byte, r *Result) ([]byte, bool) {
	b = append(b, `{"op":`...)
	b = appendString(b, string(r.Op))
	b = append(b, `,"id":`...)
	b = appendString(b, r.ID)
	b = append(b, `,"result":`...)
	b, ok := appendToolResult(b, &r.Result)
	if !ok {
		return b, false
	}
	return append(b, "}\n"...), true
}

func appendToolResult(b []byte, r *tape.ToolResult) ([]byte, bool) {
	b = append(b, `{"tool_call_id":`...)
	b = appendString(b, r.ToolCallID)
	b = append(b, `,"content":`...)
	b, ok := appendBlocks(b, r.Content)
	if !ok {
		return b, false
	}
	b = append(b, `,"is_error":`...)
	b = strconv.AppendBool(b, r.IsError)
	b = append(b, `,"duration_ms":`...)
	if r.DurationMS == nil {
		b = append(b, "null"...)
	} else if b, ok = appendFloat(b, *r.DurationMS); !ok {
		return b, false
	}
	return append(b, '}'), true
}

// appendBlocks appends a []Block; a nil slice is null (omitempty fields leave it out).
func appendBlocks(b []byte, bs []tape.Block) ([]byte, bool) {
	if bs == nil {
		return append(b, "null"...), true
	}
	b = append(b, '[')
	for i := range bs {
		if i > 0 {
			b = append(b, ',')
		}
		var ok bool
		if b, ok = appendBlock(b, &bs[i]); !ok {
			return b, false
		}
	}
	return append(b, ']'), true
}

func appendBlock(b []byte, k *tape.Block) ([]byte, bool) {
	b = append(b, `{"type":`...)
	b = appendString(b, k.Type)
	ok := true
	str := func(key, v string) {
		if v != "" {
			b = append(b, key...)
			b = appendString(b, v)
		}
	}
	raw := func(key string, v json.RawMessage) {
		if len(v) > 0 && ok {
			b = append(b, key...)
			b, ok = appendRaw(b, v)
		}
	}
	str(`,"text":`, k.Text)
	str(`,"id":`, k.ID)
	str(`,"name":`, k.Name)
	raw(`,"input":`, k.Input)
	str(`,"tool_call_id":`, k.ToolCallID)
	if len(k.Content) > 0 && ok {
		b = append(b, `,"content":`...)
		b, ok = appendBlocks(b, k.Content)
	}
	if k.IsError {
		b = append(b, `,"is_error":true`...)
	}
	raw(`,"raw":`, k.Raw)
	return append(b, '}'), ok
}

// appendRaw appends a json.RawMessage as encoding/json does: compacted, null when empty.
func appendRaw(b []byte, v json.RawMessage) ([]byte, bool) {
	if len(v) == 0 {
		return append(b, "null"...), true
	}
	if isCompact(v) {
		return append(b, v...), json.Valid(v)
	}
	buf := bytes.NewBuffer(b)
	if err := json.Compact(buf, v); err != nil {
		return b, false
	}
	return buf.Bytes(), true
}

// isCompact reports whether v has no whitespace outside strings (so Compact would copy it).
func isCompact(v []byte) bool {
	in := false
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case in && c == '\\':
			i++
		case c == '"':
			in = !in
		case !in && (c == ' ' || c == '\t' || c == '\n' || c == '\r'):
			return false
		}
	}
	return true
}

// appendFloat formats a float64 as encoding/json does in the common range; other values
// (NaN, infinities, exponent notation) take the encoding/json path.
func appendFloat(b []byte, f float64) ([]byte, bool) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return b, false
	}
	if a := math.Abs(f); a != 0 && (a < 1e-6 || a >= 1e21) {
		return b, false
	}
	return strconv.AppendFloat(b, f, 'f', -1, 64), true
}

const hexDigits = "0123456789abcdef"

// appendString appends s as a JSON string the way encoding/json does without HTML escaping:
// control characters escaped, invalid UTF-8 as U+FFFD, U+2028 and U+2029 escaped.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// scanner reads one JSON line by hand; ok turns false at the first thing it does not
// handle, and the caller falls back to encoding/json.
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
// null is not taken (encoding/json's handling of null into a RawMessage is left to it).
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

// seen tracks the keys of one object.
type seen uint16

func (m *seen) mark(bit int) bool {
	if *m&(1<<bit) != 0 {
		return false
	}
	*m |= 1 << bit
	return true
}

func (s *scanner) toolResult(r *tape.ToolResult) {
	var m seen
	s.object(func(key []byte) bool {
		switch string(key) {
		case "tool_call_id":
			r.ToolCallID = s.str()
			return m.mark(0)
		case "content":
			r.Content = s.blocks()
			return m.mark(1)
		case "is_error":
			r.IsError = s.boolean()
			return m.mark(2)
		case "duration_ms":
			if s.null() {
				r.DurationMS = nil
			} else {
				f := s.number()
				r.DurationMS = &f
			}
			return m.mark(3)
		}
		return false
	})
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
		s.block(&bs[len(bs)-1])
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

func (s *scanner) block(k *tape.Block) {
	var m seen
	s.object(func(key []byte) bool {
		switch string(key) {
		case "type":
			k.Type = s.str()
			return m.mark(0)
		case "text":
			k.Text = s.str()
			return m.mark(1)
		case "id":
			k.ID = s.str()
			return m.mark(2)
		case "name":
			k.Name = s.str()
			return m.mark(3)
		case "input":
			k.Input = s.raw()
			return m.mark(4)
		case "tool_call_id":
			k.ToolCallID = s.str()
			return m.mark(5)
		case "content":
			k.Content = s.blocks()
			return m.mark(6)
		case "is_error":
			k.IsError = s.boolean()
			return m.mark(7)
		case "raw":
			k.Raw = s.raw()
			return m.mark(8)
		}
		return false
	})
}

// decodeCall reads a call line by hand; false means: use encoding/json.
func decodeCall(line []byte, c *Call) bool {
	s := scanner{b: line, ok: true}
	var m seen
	s.object(func(key []byte) bool {
		switch string(key) {
		case "op":
			c.Op = Op(s.str())
			return m.mark(0)
		case "id":
			c.ID = s.str()
			return m.mark(1)
		case "call":
			var cm seen
			s.object(func(key []byte) bool {
				switch string(key) {
				case "id":
					c.Call.ID = s.str()
					return cm.mark(0)
				case "name":
					c.Call.Name = s.str()
					return cm.mark(1)
				case "input":
					c.Call.Input = s.raw()
					return cm.mark(2)
				case "kind":
					c.Call.Kind = s.str()
					return cm.mark(3)
				}
				return false
			})
			return m.mark(2)
		case "recorded":
			if s.null() {
				c.Recorded = nil
			} else {
				c.Recorded = &tape.ToolResult{}
				s.toolResult(c.Recorded)
			}
			return m.mark(3)
		}
		return false
	})
	s.end()
	return s.ok
}

// decodeResult reads a result line by hand; false means: use encoding/json.
func decodeResult(line []byte, r *Result) bool {
	s := scanner{b: line, ok: true}
	var m seen
	s.object(func(key []byte) bool {
		switch string(key) {
		case "op":
			r.Op = Op(s.str())
			return m.mark(0)
		case "id":
			r.ID = s.str()
			return m.mark(1)
		case "result":
			s.toolResult(&r.Result)
			return m.mark(2)
		}
		return false
	})
	s.end()
	return s.ok
}
