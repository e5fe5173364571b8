package pi

import (
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/tapebox/tapebox/internal/jsonlex"
	"github.com/tapebox/tapebox/tape"
)

// args is a tool call's input as Pi's validation sees it (pi-ai's validateToolArguments:
// TypeBox's Value.Convert, then Check): an object's members, in order, as raw JSON.
type args struct {
	tool   string
	raw    []byte
	keys   []string
	vals   map[string][]byte
	errors []string // "path: must have required properties path", in TypeBox's words
}

// parseArgs reads a call's input. An input that is not an object gets a root error.
func parseArgs(call tape.ToolCall) *args {
	a := &args{tool: call.Name, raw: call.Input, vals: map[string][]byte{}}
	if len(a.raw) == 0 {
		a.raw = []byte("{}")
	}
	members, okObj := object(a.raw)
	if !okObj {
		a.errors = append(a.errors, "root: must be object")
		return a
	}
	for _, m := range members {
		if _, dup := a.vals[m.key]; !dup {
			a.keys = append(a.keys, m.key)
		}
		a.vals[m.key] = m.val
	}
	return a
}

type member struct {
	key string
	val []byte
}

// object splits a JSON object into its members; false when b is not one.
func object(b []byte) ([]member, bool) {
	var out []member
	ok := elements(b, '{', '}', func(i int) int {
		if b[i] != '"' {
			return -1
		}
		end, _, err := jsonlex.String(b, i)
		if err != nil {
			return -1
		}
		key := jsonlex.UnquoteString(b[i+1 : end-1])
		if i = jsonlex.Space(b, end); i >= len(b) || b[i] != ':' {
			return -1
		}
		return value(b, jsonlex.Space(b, i+1), func(v []byte) { out = append(out, member{key, v}) })
	})
	return out, ok
}

// array splits a JSON array into its elements; false when b is not one.
func array(b []byte) ([][]byte, bool) {
	var out [][]byte
	ok := elements(b, '[', ']', func(i int) int {
		return value(b, i, func(v []byte) { out = append(out, v) })
	})
	return out, ok
}

// value hands the JSON value at b[i] to keep and returns the offset past it, or -1.
func value(b []byte, i int, keep func([]byte)) int {
	end, err := jsonlex.Skip(b, i)
	if err != nil {
		return -1
	}
	keep(b[i:end])
	return end
}

// elements walks the container (open ... close) that b holds: item reads each entry at
// its offset and returns the offset past it, or -1 when it is malformed. It reports whether
// b is such a container, well formed.
func elements(b []byte, open, close byte, item func(i int) int) bool {
	i := jsonlex.Space(b, 0)
	if i >= len(b) || b[i] != open {
		return false
	}
	if i = jsonlex.Space(b, i+1); i < len(b) && b[i] == close {
		return true
	}
	for i < len(b) {
		if i = item(i); i < 0 {
			return false
		}
		switch i = jsonlex.Space(b, i); {
		case i < len(b) && b[i] == close:
			return true
		case i >= len(b) || b[i] != ',':
			return false
		}
		i = jsonlex.Space(b, i+1)
	}
	return false
}

// optional reads an optional string parameter, def when it is missing or empty.
func (a *args) optional(name, def string) string {
	if s, given := a.str(name, false); given && s != "" {
		return s
	}
	return def
}

// str reads a string parameter (a number or boolean converts to its text, as
// Value.Convert does). A missing parameter is an error only when required.
func (a *args) str(name string, required bool) (string, bool) {
	return a.strAt(a.vals, name, name, required)
}

func (a *args) strAt(vals map[string][]byte, name, path string, required bool) (string, bool) {
	v, present := vals[name]
	if !present {
		if required {
			a.errors = append(a.errors, path+": must have required properties "+name)
		}
		return "", false
	}
	if s, isStr := jsonString(v); isStr {
		return s, true
	}
	switch kind(v) {
	case 'n':
		f, _ := strconv.ParseFloat(string(v), 64)
		return jsNumber(f), true
	case 't':
		return "true", true
	case 'f':
		return "false", true
	}
	a.errors = append(a.errors, path+": must be string")
	return "", false
}

// num reads an optional number parameter (a numeric string converts, as Value.Convert
// does).
func (a *args) num(name string) (float64, bool) {
	v, present := a.vals[name]
	if !present {
		return 0, false
	}
	switch kind(v) {
	case 'n':
		f, _ := strconv.ParseFloat(string(v), 64)
		return f, true
	case '"':
		s, _ := jsonString(v)
		if f, err := strconv.ParseFloat(strings.TrimSpace(s), 64); err == nil && strings.TrimSpace(s) != "" && !math.IsInf(f, 0) {
			return f, true
		}
	case 't':
		return 1, true
	case 'f':
		return 0, true
	}
	a.errors = append(a.errors, name+": must be number")
	return 0, false
}

// failed returns Pi's validation error when a parameter was missing or of the wrong type.
func (a *args) failed(call tape.ToolCall) (tape.ToolResult, bool) {
	if len(a.errors) == 0 {
		return tape.ToolResult{}, false
	}
	var b strings.Builder
	b.WriteString("Validation failed for tool \"" + a.tool + "\":\n")
	for _, e := range a.errors {
		b.WriteString("  - " + e + "\n")
	}
	b.WriteString("\nReceived arguments:\n")
	b.Write(stringify(a.raw, ""))
	return fail(call, b.String()), true
}

func kind(v []byte) byte {
	if len(v) == 0 {
		return 0
	}
	switch c := v[0]; {
	case c == '-' || (c >= '0' && c <= '9'):
		return 'n'
	default:
		return c
	}
}

func jsonString(v []byte) (string, bool) {
	if len(v) < 2 || v[0] != '"' {
		return "", false
	}
	return jsonlex.UnquoteString(v[1 : len(v)-1]), true
}

// jsNumber formats f as JavaScript's Number.prototype.toString does.
func jsNumber(f float64) string {
	if f == 0 {
		return "0"
	}
	if math.IsNaN(f) {
		return "NaN"
	}
	sign := ""
	if f < 0 {
		sign, f = "-", -f
	}
	if math.IsInf(f, 0) {
		return sign + "Infinity"
	}
	// The shortest digits d1...dk and n with f = 0.d1...dk * 10^n.
	e := strconv.FormatFloat(f, 'e', -1, 64)
	mant, exp, _ := strings.Cut(e, "e")
	digits := strings.Replace(mant, ".", "", 1)
	x, _ := strconv.Atoi(exp)
	n, k := x+1, len(digits)
	switch {
	case k <= n && n <= 21:
		return sign + digits + strings.Repeat("0", n-k)
	case 0 < n && n <= 21:
		return sign + digits[:n] + "." + digits[n:]
	case -6 < n && n <= 0:
		return sign + "0." + strings.Repeat("0", -n) + digits
	}
	out := digits[:1]
	if k > 1 {
		out += "." + digits[1:]
	}
	if n-1 >= 0 {
		return sign + out + "e+" + strconv.Itoa(n-1)
	}
	return sign + out + "e" + strconv.Itoa(n-1)
}

// stringify writes the JSON value v as JavaScript's JSON.stringify(v, null, 2) does:
// two-space indents, array-index keys first in ascending order, numbers and strings in
// JavaScript's spelling.
func stringify(v []byte, indent string) []byte {
	v = v[jsonlex.Space(v, 0):]
	switch kind(v) {
	case '{':
		members, _ := object(v)
		vals := map[string][]byte{}
		var keys []string
		for _, m := range members {
			if _, dup := vals[m.key]; !dup {
				keys = append(keys, m.key)
			}
			vals[m.key] = m.val
		}
		if len(keys) == 0 {
			return []byte("{}")
		}
		sort.SliceStable(keys, func(i, j int) bool {
			a, aIdx := arrayIndex(keys[i])
			b, bIdx := arrayIndex(keys[j])
			if aIdx && bIdx {
				return a < b
			}
			return aIdx && !bIdx
		})
		out := []byte("{\n")
		for i, k := range keys {
			if i > 0 {
				out = append(out, ",\n"...)
			}
			out = append(out, indent+"  "...)
			out = jsQuote(out, k)
			out = append(out, ": "...)
			out = append(out, stringify(vals[k], indent+"  ")...)
		}
		return append(append(append(out, '\n'), indent...), '}')
	case '[':
		elems, _ := array(v)
		if len(elems) == 0 {
			return []byte("[]")
		}
		out := []byte("[\n")
		for i, e := range elems {
			if i > 0 {
				out = append(out, ",\n"...)
			}
			out = append(out, indent+"  "...)
			out = append(out, stringify(e, indent+"  ")...)
		}
		return append(append(append(out, '\n'), indent...), ']')
	case '"':
		s, _ := jsonString(v)
		return jsQuote(nil, s)
	case 'n':
		f, _ := strconv.ParseFloat(string(v), 64)
		if math.IsInf(f, 0) {
			return []byte("null")
		}
		return []byte(jsNumber(f))
	}
	return v
}

// arrayIndex says whether a key is an array index (a canonical integer below 2^32-1),
// which JavaScript objects list first.
func arrayIndex(k string) (uint64, bool) {
	n, err := strconv.ParseUint(k, 10, 32)
	if err != nil || n == math.MaxUint32 || strconv.FormatUint(n, 10) != k {
		return 0, false
	}
	return n, true
}

// jsQuote appends s quoted as JSON.stringify quotes it.
func jsQuote(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch e := strings.IndexByte("\"\\\b\f\n\r\t", c); {
		case e >= 0:
			dst = append(dst, '\\', `"\bfnrt`[e])
		case c < 0x20:
			dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&15])
		default:
			dst = append(dst, c) // the rest as is, non-ASCII too (Unquote made it valid UTF-8)
		}
	}
	return append(dst, '"')
}
