package tape

import (
	"encoding/json"
	"slices"
	"time"

	"github.com/tapebox/tapebox/internal/jsonlex"
)

// The canonical encoding is written by the field table (codec.go), not by encoding/json:
// its reflection, and above all the second pass it makes over every raw body (a
// json.RawMessage is validated and compacted again on each encode, a byte at a time), were
// half the time of exporting a corpus of tapes another tool wrote. The writers below give
// encoding/json's bytes for this package's types (an Encoder without HTML escaping: field
// order, omitempty, sorted map keys, its string escapes and number formats; encode_test.go
// and FuzzEncode hold them to it). Anything encoding/json would refuse or that they do not
// handle (NaN, an invalid raw value, a time it cannot write) makes them report false, and
// the caller encodes with encoding/json, which words the error.

// enc appends JSON to b; ok turns false at the first value it cannot write.
type enc struct {
	b  []byte
	ok bool
}

func (e *enc) null() { e.b = append(e.b, "null"...) }

func (e *enc) float(x float64) {
	var ok bool
	if e.b, ok = jsonlex.AppendFloat(e.b, x); !ok {
		e.ok = false
	}
}

// raw writes a raw value compacted; nil is null.
func (e *enc) raw(r json.RawMessage) {
	var ok bool
	if e.b, ok = jsonlex.AppendRaw(e.b, r); !ok {
		e.ok = false
	}
}

// time writes a time as its MarshalJSON does.
func (e *enc) time(t time.Time) {
	b, err := t.MarshalJSON()
	e.ok = e.ok && err == nil
	e.b = append(e.b, b...)
}

// writeObject writes v as an object of type o.
func writeObject[T any](e *enc, o *object[T], v *T) {
	e.b = append(e.b, '{')
	writeMembers(e, o, v, 0, len(o.fields), true)
	e.b = append(e.b, '}')
}

// writeMembers writes the members from..to-1 of v (those the encoding does not leave
// out), each after a comma unless first and none was written before it in this call. It
// reports whether it wrote any.
func writeMembers[T any](e *enc, o *object[T], v *T, from, to int, first bool) bool {
	wrote := false
	for i := from; i < to; i++ {
		f := &o.fields[i]
		if f.omit != nil && f.omit(v) {
			continue
		}
		if !first || wrote {
			e.b = append(e.b, ',')
		}
		wrote = true
		e.b = append(e.b, f.member...)
		f.enc(e, v)
	}
	return wrote
}

// writeMap writes a map with sorted keys, as encoding/json does; nil is null.
func writeMap[M ~map[string]V, V any](e *enc, m M, val func(*enc, V)) {
	if m == nil {
		e.null()
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
		e.b = append(jsonlex.AppendString(e.b, k, false), ':')
		val(e, m[k])
	}
	e.b = append(e.b, '}')
}

// writeList writes a slice; nil is null.
func writeList[E any](e *enc, s []E, elem func(*enc, *E)) {
	if s == nil {
		e.null()
		return
	}
	e.b = append(e.b, '[')
	for i := range s {
		if i > 0 {
			e.b = append(e.b, ',')
		}
		elem(e, &s[i])
	}
	e.b = append(e.b, ']')
}

// writePtrs writes a slice of pointers to objects of type o; nil (the slice or an
// element) is null.
func writePtrs[E any](e *enc, s []*E, o *object[E]) {
	writeList(e, s, func(e *enc, p **E) {
		if *p == nil {
			e.null()
			return
		}
		writeObject(e, o, *p)
	})
}

func (e *enc) tape(t *Tape) { writeObject(e, tapeTable(), t) }
func (e *enc) step(s *Step) { writeObject(e, stepTable(), s) }

// AppendToolResult appends r as encoding/json encodes it without HTML escaping (a nil
// slice as null, invalid UTF-8 as \ufffd), for readers of their own (the executor
// protocol's). It reports false where encoding/json would fail (a NaN duration, an invalid
// raw value): encode r with encoding/json then, which words the error.
func AppendToolResult(b []byte, r *ToolResult) ([]byte, bool) {
	e := enc{b: b, ok: true}
	writeObject(&e, toolResultTable(), r)
	return e.b, e.ok
}

// AppendToolCall appends c as AppendToolResult appends a result.
func AppendToolCall(b []byte, c *ToolCall) ([]byte, bool) {
	e := enc{b: b, ok: true}
	writeObject(&e, toolCallTable(), c)
	return e.b, e.ok
}
