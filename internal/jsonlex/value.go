package jsonlex

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
)

// AppendValue appends v as an encoding/json Encoder with SetEscapeHTML(false) writes it,
// without the newline Encode ends with; a non-empty indent indents it as SetIndent("",
// indent) does. It is the executor's encoder of JSON trees, which spares it encoding/json's
// reflective encoder. v is a tree of the values Unmarshal gives into an any: map[string]any
// (keys sorted, as encoding/json sorts them), []any, string, float64, bool and nil; and
// map[string]string, []string and json.RawMessage (compacted; nil: null). Nil maps and
// slices are null.
//
// It returns an error naming the place in v of what encoding/json would refuse too (a NaN
// or infinite float, a raw value that is not valid JSON), of a value of another type, and
// of a tree nested deeper than MaxDepth (encoding/json would go on, or find a cycle).
func AppendValue(dst []byte, v any, indent string) ([]byte, error) {
	if indent == "" {
		out, err := appendValue(dst, v, 0)
		if err != nil {
			return dst, err
		}
		return out, nil
	}
	flat, err := appendValue(nil, v, 0)
	if err != nil {
		return dst, err
	}
	return appendIndent(dst, flat, indent), nil
}

func appendValue(b []byte, v any, depth int) ([]byte, *valueError) {
	if depth > MaxDepth {
		return b, &valueError{msg: maxDepthMsg}
	}
	switch x := v.(type) {
	case nil:
		return append(b, "null"...), nil
	case string:
		return AppendString(b, x, false), nil
	case bool:
		return strconv.AppendBool(b, x), nil
	case float64:
		b, ok := AppendFloat(b, x)
		if !ok {
			return b, &valueError{msg: "unsupported value: " + strconv.FormatFloat(x, 'g', -1, 64)}
		}
		return b, nil
	case json.RawMessage:
		out, ok := AppendRaw(b, x)
		if !ok {
			return b, &valueError{msg: "raw value is not valid JSON"}
		}
		return out, nil
	case map[string]any:
		return appendObject(b, x, depth)
	case map[string]string:
		return appendObject(b, x, depth)
	case []any:
		return appendArray(b, x, depth)
	case []string:
		return appendArray(b, x, depth)
	}
	return b, &valueError{msg: fmt.Sprintf("unsupported type %T", v)}
}

// appendObject appends m (nil: null) with its keys in encoding/json's order, byte-wise.
func appendObject[V any](b []byte, m map[string]V, depth int) ([]byte, *valueError) {
	if m == nil {
		return append(b, "null"...), nil
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	b = append(b, '{')
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(AppendString(b, k, false), ':')
		if strs, ok := any(m).(map[string]string); ok { // a string needs no boxing
			b = AppendString(b, strs[k], false)
			continue
		}
		var err *valueError
		if b, err = appendValue(b, any(m[k]), depth+1); err != nil {
			return b, err.in(strconv.Quote(k))
		}
	}
	return append(b, '}'), nil
}

// appendArray appends s (nil: null).
func appendArray[V any](b []byte, s []V, depth int) ([]byte, *valueError) {
	if s == nil {
		return append(b, "null"...), nil
	}
	b = append(b, '[')
	for i := range s {
		if i > 0 {
			b = append(b, ',')
		}
		if str, ok := any(&s[i]).(*string); ok { // a string needs no boxing
			b = AppendString(b, *str, false)
			continue
		}
		var err *valueError
		if b, err = appendValue(b, any(s[i]), depth+1); err != nil {
			return b, err.in(strconv.Itoa(i))
		}
	}
	return append(b, ']'), nil
}

// valueError is AppendValue's error: what is wrong and where, as the keys (quoted) and
// indexes from the top of the tree, each in brackets.
type valueError struct {
	where string // built as the error goes up
	msg   string
}

func (e *valueError) in(step string) *valueError {
	e.where = "[" + step + "]" + e.where
	return e
}

func (e *valueError) Error() string {
	return "encode JSON: " + cmp.Or(e.where, "the value") + ": " + e.msg
}

// appendIndent appends flat, compact JSON this package wrote, indented as json.Indent
// does with an empty prefix: a newline and depth times indent before each member and
// element and before a closing bracket, a space after a colon, and empty objects and
// arrays kept as {} and [].
func appendIndent(dst, flat []byte, indent string) []byte {
	depth := 0
	for i := 0; i < len(flat); i++ {
		switch c := flat[i]; c {
		case '"':
			end, _, _ := String(flat, i)
			dst = append(dst, flat[i:end]...)
			i = end - 1
			continue
		case '{', '[':
			if i+1 < len(flat) && (flat[i+1] == '}' || flat[i+1] == ']') {
				dst = append(dst, c, flat[i+1])
				i++
				continue
			}
			depth++
			dst = append(dst, c)
		case '}', ']':
			depth--
			dst = newline(dst, indent, depth)
			dst = append(dst, c)
			continue
		case ',':
			dst = append(dst, c)
		case ':':
			dst = append(dst, ':', ' ')
			continue
		default:
			dst = append(dst, c)
			continue
		}
		dst = newline(dst, indent, depth) // after an opening bracket or a comma
	}
	return dst
}

func newline(dst []byte, indent string, depth int) []byte {
	dst = append(dst, '\n')
	for range depth {
		dst = append(dst, indent...)
	}
	return dst
}
