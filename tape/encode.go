package tape

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tapebox/tapebox/internal/jsonlex"
)

// The canonical encoding is written by hand: encoding/json's reflection, and above all
// the second pass it makes over every raw body (a json.RawMessage is validated and
// compacted again on each encode, a byte at a time), were half the time of exporting a
// corpus of tapes another tool wrote. The appenders below give encoding/json's bytes for
// this package's types (an Encoder without HTML escaping: field order, omitempty, sorted
// map keys, its string escapes and number formats; encode_test.go and FuzzEncode hold them
// to it). Anything encoding/json would refuse or that they do not handle (NaN, an invalid
// raw value, a time it cannot write) makes them report false, and the caller encodes with
// encoding/json, which words the error.

// enc appends JSON to b; ok turns false at the first value it cannot write.
type enc struct {
	b  []byte
	ok bool
}

// obj writes layout, the JSON text of an object or array with a verb where each value
// goes, taking the values from args in order. The layout is the type's encoding as
// encoding/json gives it: its keys in field order, a verb for each value:
//
//	%v  the value: string, int, int64, bool, float64, *float64 and *string (nil: null),
//	    json.RawMessage (compacted; nil: null), or a func() that writes the value (strs,
//	    strList and at make them for maps, lists of strings and times)
//	%o  an omitempty field's value: the member, key and comma, goes when the value is
//	    "", 0, false, an empty raw value or slice, or a nil func
func (e *enc) obj(layout string, args ...any) {
	for {
		i := strings.IndexByte(layout, '%')
		if i < 0 {
			e.text(layout)
			return
		}
		seg, verb, v := layout[:i], layout[i+1], args[0]
		layout, args = layout[i+2:], args[1:]
		if verb == 'o' && empty(v) {
			m := strings.LastIndexAny(seg, ",{[")
			if seg[m] != ',' {
				m++ // the opening bracket stays
			}
			e.text(seg[:m])
			continue
		}
		e.text(seg)
		e.value(v)
	}
}

// text writes layout text; after an opening bracket, the comma of a member left out
// before it goes.
func (e *enc) text(s string) {
	if n := len(e.b); len(s) > 0 && s[0] == ',' && n > 0 && (e.b[n-1] == '{' || e.b[n-1] == '[') {
		s = s[1:]
	}
	e.b = append(e.b, s...)
}

func empty(v any) bool {
	switch x := v.(type) {
	case string:
		return x == ""
	case int:
		return x == 0
	case int64:
		return x == 0
	case float64:
		return x == 0
	case bool:
		return !x
	case json.RawMessage:
		return len(x) == 0
	case func():
		return x == nil
	}
	panic("tape: encode: a value of a type without an omitempty rule")
}

func (e *enc) value(v any) {
	switch x := v.(type) {
	case string:
		e.b = jsonlex.AppendString(e.b, x, false)
	case int:
		e.b = strconv.AppendInt(e.b, int64(x), 10)
	case int64:
		e.b = strconv.AppendInt(e.b, x, 10)
	case bool:
		e.b = strconv.AppendBool(e.b, x)
	case float64:
		var ok bool
		if e.b, ok = jsonlex.AppendFloat(e.b, x); !ok {
			e.ok = false
		}
	case *float64:
		if x == nil {
			e.b = append(e.b, "null"...)
		} else {
			e.value(*x)
		}
	case *string:
		if x == nil {
			e.b = append(e.b, "null"...)
		} else {
			e.value(*x)
		}
	case json.RawMessage:
		var ok bool
		if e.b, ok = jsonlex.AppendRaw(e.b, x); !ok {
			e.ok = false
		}
	case func():
		x()
	default:
		panic("tape: encode: a value of a type without a rule")
	}
}

// strs writes a map of strings (sorted keys; nil: null).
func (e *enc) strs(m map[string]string) func() {
	return func() { strMap(e, m, func(s string) { e.value(s) }) }
}

// strList writes a list of strings; empty, it is an omitempty field left out.
func (e *enc) strList(s []string) func() {
	if len(s) == 0 {
		return nil
	}
	return func() { list(e, s, func(s *string) { e.value(*s) }) }
}

// at writes a time as its MarshalJSON does.
func (e *enc) at(t time.Time) func() {
	return func() {
		b, err := t.MarshalJSON()
		e.ok = e.ok && err == nil
		e.b = append(e.b, b...)
	}
}

// strMap writes a map with sorted keys, as encoding/json does; nil is null.
func strMap[V any](e *enc, m map[string]V, val func(V)) {
	if m == nil {
		e.b = append(e.b, "null"...)
		return
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	e.b = append(e.b, '{')
	for i, k := range keys {
		if i > 0 {
			e.b = append(e.b, ',')
		}
		e.value(k)
		e.b = append(e.b, ':')
		val(m[k])
	}
	e.b = append(e.b, '}')
}

// list writes a slice; nil is null.
func list[T any](e *enc, s []T, elem func(*T)) {
	if s == nil {
		e.b = append(e.b, "null"...)
		return
	}
	e.b = append(e.b, '[')
	for i := range s {
		if i > 0 {
			e.b = append(e.b, ',')
		}
		elem(&s[i])
	}
	e.b = append(e.b, ']')
}

// ptrs writes a slice of pointers; nil (the slice or an element) is null.
func ptrs[T any](e *enc, s []*T, elem func(*T)) {
	list(e, s, func(p **T) {
		if *p == nil {
			e.b = append(e.b, "null"...)
			return
		}
		elem(*p)
	})
}

// opt is write for a non-nil p, and nil (an omitempty field left out) for nil.
func opt[T any](p *T, write func(*T)) func() {
	if p == nil {
		return nil
	}
	return func() { write(p) }
}

// nullable is write for a non-nil p; for nil it writes null.
func nullable[T any](e *enc, p *T, write func(*T)) func() {
	return func() {
		if p == nil {
			e.b = append(e.b, "null"...)
			return
		}
		write(p)
	}
}

func (e *enc) tape(t *Tape) {
	e.obj(`{"version":%v,"meta":%v,"threads":%v,"digest":%o}`, t.Version, func() { e.meta(&t.Meta) },
		func() { ptrs(e, t.Threads, e.thread) }, opt(t.Digest, func(d *Digest) {
			e.obj(`{"algorithm":%v,"meta":%v,"root":%v,"public_key":%o,"signature":%o}`,
				d.Algorithm, d.Meta, d.Root, d.PublicKey, d.Signature)
		}))
}

func (e *enc) meta(m *Meta) {
	e.obj(`{"tape_id":%v,"harness":%v,"harness_version":%v,"provider":%v,"model":%v,"cwd":%o,`+
		`"started_at":%v,"task":%v,"replay_of":%v,"labels":%v,"workspace":%o,"limits":%o,"forked_from":%o,"ended":%v,"redactions":%o}`,
		m.TapeID, m.Harness, m.HarnessVersion, string(m.Provider), m.Model, m.Cwd,
		e.at(m.StartedAt), e.strs(m.Task), m.ReplayOf, e.strs(m.Labels), opt(m.Workspace, e.workspace), opt(m.Limits, func(l *Limits) {
			e.obj(`{"max_cost_usd":%o,"max_steps":%o,"max_thread_steps":%o,"max_tokens":%o,"max_repeat":%o}`,
				l.MaxCostUSD, l.MaxSteps, l.MaxThreadSteps, l.MaxTokens, l.MaxRepeat)
		}), opt(m.ForkedFrom, func(f *ForkedFrom) {
			e.obj(`{"tape_id":%v,"thread":%v,"step":%v,"served":%v,"overrides":%v}`, f.TapeID, f.Thread, f.Step,
				func() { strMap(e, f.Served, func(n int) { e.value(n) }) }, e.strs(f.Overrides))
		}), nullable(e, m.Ended, func(x *Ended) {
			e.obj(`{"reason":%v,"at":%v,"detail":%o,"limit":%o}`, string(x.Reason), e.at(x.At), x.Detail, x.Limit)
		}), e.redactions(m.Redactions))
}

// redactions writes meta.redactions; empty, it is an omitempty field left out.
func (e *enc) redactions(rs []Redaction) func() {
	if len(rs) == 0 {
		return nil
	}
	return func() {
		list(e, rs, func(r *Redaction) { e.obj(`{"rule":%v,"pointer":%v}`, r.Rule, r.Pointer) })
	}
}

func (e *enc) workspace(w *Workspace) {
	var end func()
	if w.End != nil { // omitzero: an empty manifest is written as []
		end = func() {
			list(e, w.End, func(f *FileEntry) {
				e.obj(`{"path":%v,"type":%v,"mode":%v,"size":%v,"sha256":%o,"link":%o}`, f.Path, f.Type, f.Mode, f.Size, f.SHA256, f.Link)
			})
		}
	}
	e.obj(`{"snapshot":%o,"digest":%o,"size":%o,"files":%o,"bytes":%o,"exclude":%o,"end":%o}`,
		w.Snapshot, w.Digest, w.Size, w.Files, w.Bytes, e.strList(w.Exclude), end)
}

func (e *enc) thread(th *Thread) {
	parent := nullable(e, th.Parent, func(p *Parent) {
		// Parent's MarshalJSON is json.Marshal's, which escapes HTML.
		e.b = jsonlex.AppendString(append(e.b, '['), p.ThreadID, true)
		e.b = append(jsonlex.AppendString(append(e.b, ','), p.ToolCallID, true), ']')
	})
	e.obj(`{"id":%v,"parent":%v,"steps":%v}`, th.ID, parent, func() { ptrs(e, th.Steps, e.step) })
}

func (e *enc) step(s *Step) {
	t := &s.Timing
	e.obj(`{"request":%v,"response":%v,"tool_calls":%v,"tool_results":%v,`+
		`"timing":{"request_at":%v,"first_byte_at":%v,"last_byte_at":%v,"next_request_at":%v},"served_from_tape":%o,"digest":%o}`,
		func() { e.request(&s.Request) }, func() { e.response(&s.Response) },
		func() { list(e, s.ToolCalls, e.toolCall) }, func() { list(e, s.ToolResults, e.toolResult) },
		t.RequestAt, t.FirstByteAt, t.LastByteAt, t.NextRequestAt, s.ServedFromTape, s.Digest)
}

func (e *enc) request(r *Request) {
	messages := func() {
		list(e, r.Messages, func(m *Message) {
			e.obj(`{"role":%v,"content":%v}`, m.Role, func() { e.blocks(m.Content) })
		})
	}
	tools := func() {
		list(e, r.Tools, func(t *Tool) {
			e.obj(`{"name":%v,"description":%o,"kind":%v,"input_schema":%o}`, t.Name, t.Description, t.Kind, t.InputSchema)
		})
	}
	params := func() { strMap(e, r.Params, func(v json.RawMessage) { e.value(v) }) }
	e.obj(`{"path":%v,"system":%v,"messages":%v,"tools":%v,"params":%v,"stream":%v,"headers":%v,"raw":%v}`,
		r.Path, r.System, messages, tools, params, r.Stream, e.strs(r.Headers), r.Raw)
}

func (e *enc) response(r *Response) {
	u := &r.Usage
	chunks := func() {
		list(e, r.Chunks, func(c *Chunk) { e.obj(`{"at_ms":%v,"data":%v}`, c.AtMS, c.Data) })
	}
	e.obj(`{"status":%v,"headers":%v,"content":%v,"stop_reason":%v,"usage":{"input_tokens":%v,"output_tokens":%v,`+
		`"cache_read_input_tokens":%v,"cache_creation_input_tokens":%v,"reasoning_tokens":%v},"raw":%v,"chunks":%v}`,
		r.Status, e.strs(r.Headers), func() { e.blocks(r.Content) }, r.StopReason,
		u.InputTokens, u.OutputTokens, u.CacheReadInputTokens, u.CacheCreationInputTokens, u.ReasoningTokens, r.Raw, chunks)
}

func (e *enc) toolCall(c *ToolCall) {
	e.obj(`{"id":%v,"name":%v,"input":%v,"kind":%o,"namespace":%o}`, c.ID, c.Name, c.Input, c.Kind, c.Namespace)
}

func (e *enc) toolResult(r *ToolResult) {
	e.obj(`{"tool_call_id":%v,"content":%v,"is_error":%v,"duration_ms":%v,"copied_from_tape":%o}`,
		r.ToolCallID, func() { e.blocks(r.Content) }, r.IsError, r.DurationMS, r.CopiedFromTape)
}

func (e *enc) blocks(bs []Block) { list(e, bs, e.block) }

func (e *enc) block(k *Block) {
	var content func()
	if len(k.Content) > 0 {
		content = func() { e.blocks(k.Content) }
	}
	e.obj(`{"type":%v,"text":%o,"id":%o,"name":%o,"input":%o,"tool_call_id":%o,"content":%o,"is_error":%o,"raw":%o}`,
		k.Type, k.Text, k.ID, k.Name, k.Input, k.ToolCallID, content, k.IsError, k.Raw)
}

// AppendToolResult appends r as encoding/json encodes it without HTML escaping (a nil
// slice as null, invalid UTF-8 as \ufffd), for readers of their own (the executor
// protocol's). It reports false where encoding/json would fail (a NaN duration, an invalid
// raw value): encode r with encoding/json then, which words the error.
func AppendToolResult(b []byte, r *ToolResult) ([]byte, bool) {
	e := enc{b: b, ok: true}
	e.toolResult(r)
	return e.b, e.ok
}

// AppendToolCall appends c as AppendToolResult appends a result.
func AppendToolCall(b []byte, c *ToolCall) ([]byte, bool) {
	e := enc{b: b, ok: true}
	e.toolCall(c)
	return e.b, e.ok
}
