package jsonlex

import (
	"encoding/base64"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"unicode"
)

// Unmarshal decodes the JSON document b into v, a non-nil pointer, by encoding/json's rules,
// so that the executor can decode without linking encoding/json (its reflection and tables
// are about a tenth of the binary). It gives the values encoding/json gives (unmarshal_test.go
// and FuzzUnmarshal hold it to that):
//   - b is checked whole first; a syntax error is an *Error and leaves v as it was;
//   - object keys match a struct field's JSON name exactly, else without regard to case; other
//     keys are skipped; a repeated key decodes again into the same field;
//   - null sets a pointer, slice, map or interface to nil and leaves anything else alone;
//   - a value of the wrong type is a *TypeError, worded as encoding/json's
//     UnmarshalTypeError, and decoding goes on past it; the first one is returned;
//   - a type with an UnmarshalJSON method (json.RawMessage, time.Time) decodes itself, and one
//     with UnmarshalText does from a string;
//   - an interface{} gets map[string]any, []any, float64, string, bool or nil.
//
// Kinds encoding/json handles and this does not are an *UnsupportedError: a struct field
// embedded without a JSON name, the ",string" option, map keys other than strings and
// integers, and channels, functions and complex numbers.
func Unmarshal(b []byte, v any) error {
	i := Space(b, 0)
	end, serr := Skip(b, i)
	if serr != nil {
		return serr
	}
	if j := Space(b, end); j < len(b) {
		return bad(b, j, "invalid character %s after top-level value")
	}
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return &UnsupportedError{Type: reflect.TypeOf(v), Why: "Unmarshal needs a non-nil pointer"}
	}
	d := decoder{b: b}
	d.fields = d.stack[:0]
	if _, err := d.value(i, rv); err != nil {
		return err
	}
	return d.saved
}

// TypeError is a JSON value that cannot go into the Go value at its place. Its fields and its
// message are encoding/json's UnmarshalTypeError's.
type TypeError struct {
	// Value describes the JSON value: "string", "bool", "array", "object", "number" or
	// "number 1.5" (a number the Go type cannot hold), or "null".
	Value string
	Type  reflect.Type // the Go type it could not go into
	Off   int          // the offset of the value in the input
	// Struct is the name of the struct type holding the field, Field the JSON names of the
	// struct fields from the top down to the value, dot-separated; both empty at the top.
	Struct string
	Field  string
}

func (e *TypeError) Error() string {
	if e.Struct != "" || e.Field != "" {
		return "json: cannot unmarshal " + e.Value + " into Go struct field " + e.Struct + "." + e.Field + " of type " + e.Type.String()
	}
	return "json: cannot unmarshal " + e.Value + " into Go value of type " + e.Type.String()
}

// UnsupportedError is a Go type Unmarshal does not decode into (see Unmarshal).
type UnsupportedError struct {
	Type reflect.Type
	Why  string
}

func (e *UnsupportedError) Error() string { return fmt.Sprintf("jsonlex: %v: %s", e.Type, e.Why) }

type jsonUnmarshaler interface{ UnmarshalJSON([]byte) error }
type textUnmarshaler interface{ UnmarshalText([]byte) error }

// decoder walks a document already checked by Skip, so it meets no syntax errors.
type decoder struct {
	b      []byte
	saved  error    // the first *TypeError
	fields []string // the JSON names of the struct fields down to the current value
	within reflect.Type
	stack  [8]string // fields' first backing array
}

func (d *decoder) save(e *TypeError) {
	if d.saved != nil {
		return
	}
	if len(d.fields) > 0 {
		e.Field = strings.Join(d.fields, ".")
		if d.within != nil {
			e.Struct = d.within.Name()
		}
	}
	d.saved = e
}

// value decodes the value at b[i] into v (not valid: skip it) and returns the offset past it.
func (d *decoder) value(i int, v reflect.Value) (int, error) {
	c := d.b[i]
	if !v.IsValid() || c != '{' && c != '[' {
		var end int
		var f Str // a string's flags, so that unquoting it need not scan it again
		if c == '"' {
			end, f, _ = String(d.b, i)
		} else {
			end, _ = Skip(d.b, i)
		}
		if !v.IsValid() {
			return end, nil
		}
		return end, d.literal(i, end, f, v)
	}
	u, tu, pv := indirect(v, false)
	switch {
	case u != nil:
		end, _ := Skip(d.b, i)
		return end, u.UnmarshalJSON(d.b[i:end])
	case tu != nil:
		kind := "object"
		if c == '[' {
			kind = "array"
		}
		d.save(&TypeError{Value: kind, Type: v.Type(), Off: i + 1})
		end, _ := Skip(d.b, i)
		return end, nil
	case pv.Kind() == reflect.Interface && pv.NumMethod() == 0:
		end, x := d.anyValue(i)
		pv.Set(reflect.ValueOf(x))
		return end, nil
	case c == '{':
		return d.object(i, pv)
	}
	return d.array(i, pv)
}

// indirect follows pointers from v, allocating nil ones, to the value to decode into, as
// encoding/json's indirect does. With null it stops at the last settable pointer, so that it
// can be set to nil. A type with UnmarshalJSON (or UnmarshalText) comes back as u (or tu).
func indirect(v reflect.Value, null bool) (u jsonUnmarshaler, tu textUnmarshaler, _ reflect.Value) {
	v0 := v
	haveAddr := false
	if v.Kind() != reflect.Pointer && v.Type().Name() != "" && v.CanAddr() {
		haveAddr = true
		v = v.Addr()
	}
	for {
		if v.Kind() == reflect.Interface && !v.IsNil() {
			if e := v.Elem(); e.Kind() == reflect.Pointer && !e.IsNil() && (!null || e.Elem().Kind() == reflect.Pointer) {
				haveAddr = false
				v = e
				continue
			}
		}
		if v.Kind() != reflect.Pointer || null && v.CanSet() {
			break
		}
		if v.Elem().Kind() == reflect.Interface && v.Elem().Elem().Equal(v) {
			v = v.Elem()
			break
		}
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		if v.Type().NumMethod() > 0 && v.CanInterface() {
			if u, ok := v.Interface().(jsonUnmarshaler); ok {
				return u, nil, reflect.Value{}
			}
			if !null {
				if tu, ok := v.Interface().(textUnmarshaler); ok {
					return nil, tu, reflect.Value{}
				}
			}
		}
		if haveAddr {
			v = v0
			haveAddr = false
		} else {
			v = v.Elem()
		}
	}
	return nil, nil, v
}

// literal decodes the string (with flags f), number, true, false or null at b[i:end] into v.
func (d *decoder) literal(i, end int, f Str, v reflect.Value) error {
	item := d.b[i:end]
	c := item[0]
	u, tu, pv := indirect(v, c == 'n')
	if u != nil {
		return u.UnmarshalJSON(item)
	}
	kind := "number"
	switch c {
	case 'n':
		kind = "null"
	case 't', 'f':
		kind = "bool"
	case '"':
		kind = "string"
	}
	if tu != nil {
		if c != '"' {
			d.save(&TypeError{Value: kind, Type: v.Type(), Off: i})
			return nil
		}
		return tu.UnmarshalText(unquote(item, f))
	}
	v = pv
	empty := v.Kind() == reflect.Interface && v.NumMethod() == 0
	switch c {
	case 'n':
		switch v.Kind() {
		case reflect.Interface, reflect.Pointer, reflect.Map, reflect.Slice:
			v.SetZero()
		}
		return nil
	case 't', 'f':
		switch {
		case v.Kind() == reflect.Bool:
			v.SetBool(c == 't')
		case empty:
			v.Set(reflect.ValueOf(c == 't'))
		default:
			d.save(&TypeError{Value: kind, Type: v.Type(), Off: end})
		}
		return nil
	case '"':
		switch {
		case v.Kind() == reflect.String:
			s := unquoteString(item, f)
			if isNumberType(v.Type()) {
				if n, _, err := Number([]byte(s), 0); err != nil || n != len(s) {
					return fmt.Errorf("json: invalid number literal, trying to unmarshal %q into Number", item)
				}
			}
			v.SetString(s)
		case empty:
			v.Set(reflect.ValueOf(unquoteString(item, f)))
		case v.Kind() == reflect.Slice && v.Type().Elem().Kind() == reflect.Uint8:
			s := unquote(item, f)
			out := make([]byte, base64.StdEncoding.DecodedLen(len(s)))
			n, err := base64.StdEncoding.Decode(out, s)
			if err != nil {
				if d.saved == nil {
					d.saved = err
				}
				return nil
			}
			v.SetBytes(out[:n])
		default:
			d.save(&TypeError{Value: kind, Type: v.Type(), Off: end})
		}
		return nil
	}
	s := string(item)
	switch v.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || v.OverflowInt(n) {
			d.save(&TypeError{Value: "number " + s, Type: v.Type(), Off: end})
			return nil
		}
		v.SetInt(n)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil || v.OverflowUint(n) {
			d.save(&TypeError{Value: "number " + s, Type: v.Type(), Off: end})
			return nil
		}
		v.SetUint(n)
	case reflect.Float32, reflect.Float64:
		n, err := strconv.ParseFloat(s, v.Type().Bits())
		if err != nil || v.OverflowFloat(n) {
			d.save(&TypeError{Value: "number " + s, Type: v.Type(), Off: end})
			return nil
		}
		v.SetFloat(n)
	case reflect.String:
		if !isNumberType(v.Type()) {
			d.save(&TypeError{Value: kind, Type: v.Type(), Off: end})
			return nil
		}
		v.SetString(s)
	case reflect.Interface:
		if !empty {
			d.save(&TypeError{Value: kind, Type: v.Type(), Off: end})
			return nil
		}
		if f, ok := d.float(i, s); ok {
			v.Set(reflect.ValueOf(f))
		}
	default:
		d.save(&TypeError{Value: kind, Type: v.Type(), Off: end})
	}
	return nil
}

// float reads a number for an interface{}: a float64, or a saved error when it overflows.
func (d *decoder) float(off int, s string) (float64, bool) {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		d.save(&TypeError{Value: "number " + s, Type: reflect.TypeFor[float64](), Off: off})
		return 0, false
	}
	return f, true
}

// isNumberType reports encoding/json's Number, a string that holds a number's text.
func isNumberType(t reflect.Type) bool { return t.Name() == "Number" && t.PkgPath() == "encoding/json" }

// unquote returns the value of the string item (quotes included), which String scanned
// with flags f.
func unquote(item []byte, f Str) []byte {
	body := item[1 : len(item)-1]
	if f.Plain(body) {
		return body
	}
	return Unquote(make([]byte, 0, len(body)), body)
}

// unquoteString is unquote as a new string.
func unquoteString(item []byte, f Str) string {
	body := item[1 : len(item)-1]
	if !f.Plain(body) {
		return UnquoteString(body)
	}
	return string(body)
}

// next returns the offset of the first byte after whitespace and, if it is one, a comma.
func (d *decoder) next(i int) int {
	i = Space(d.b, i)
	if d.b[i] == ',' {
		i = Space(d.b, i+1)
	}
	return i
}

// array decodes the array at b[i] into v, a value indirect has reached.
func (d *decoder) array(i int, v reflect.Value) (int, error) {
	if v.Kind() != reflect.Slice && v.Kind() != reflect.Array {
		d.save(&TypeError{Value: "array", Type: v.Type(), Off: i + 1})
		end, _ := Skip(d.b, i)
		return end, nil
	}
	n := 0
	j := Space(d.b, i+1)
	for d.b[j] != ']' {
		if v.Kind() == reflect.Slice {
			if n >= v.Cap() {
				v.Grow(1)
			}
			if n >= v.Len() {
				v.SetLen(n + 1)
			}
		}
		elem := reflect.Value{}
		if n < v.Len() {
			elem = v.Index(n)
		}
		end, err := d.value(j, elem)
		if err != nil {
			return end, err
		}
		n++
		j = d.next(end)
	}
	if n < v.Len() {
		if v.Kind() == reflect.Array {
			for ; n < v.Len(); n++ {
				v.Index(n).SetZero()
			}
		} else {
			v.SetLen(n)
		}
	}
	if n == 0 && v.Kind() == reflect.Slice {
		v.Set(reflect.MakeSlice(v.Type(), 0, 0))
	}
	return j + 1, nil
}

// object decodes the object at b[i] into v, a value indirect has reached.
func (d *decoder) object(i int, v reflect.Value) (int, error) {
	t := v.Type()
	var fields []field
	switch v.Kind() {
	case reflect.Map:
		switch t.Key().Kind() {
		case reflect.String, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
			reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		default:
			return i, &UnsupportedError{Type: t, Why: "map keys must be strings or integers"}
		}
		if v.IsNil() {
			v.Set(reflect.MakeMap(t))
		}
	case reflect.Struct:
		var err error
		if fields, err = structFields(t); err != nil {
			return i, err
		}
	default:
		d.save(&TypeError{Value: "object", Type: t, Off: i + 1})
		end, _ := Skip(d.b, i)
		return end, nil
	}
	depth, within := len(d.fields), d.within
	var elem reflect.Value
	j := Space(d.b, i+1)
	for d.b[j] != '}' {
		kend, f, _ := String(d.b, j)
		key := unquote(d.b[j:kend], f)
		j = Space(d.b, Space(d.b, kend)+1) // past the colon
		var sub reflect.Value
		if v.Kind() == reflect.Map {
			if !elem.IsValid() {
				elem = reflect.New(t.Elem()).Elem()
			} else {
				elem.SetZero()
			}
			sub = elem
		} else if f := lookup(fields, key); f != nil {
			sub = v.Field(f.index)
			d.within = t
			d.fields = append(d.fields, f.name)
		}
		end, err := d.value(j, sub)
		if err != nil {
			return end, err
		}
		if v.Kind() == reflect.Map {
			if kv, ok := d.mapKey(j, t.Key(), key); ok {
				v.SetMapIndex(kv, sub)
			}
		}
		d.fields, d.within = d.fields[:depth], within
		j = d.next(end)
	}
	return j + 1, nil
}

// mapKey converts an object key to a map's key type (a string or an integer kind).
func (d *decoder) mapKey(off int, kt reflect.Type, key []byte) (reflect.Value, bool) {
	kv := reflect.New(kt).Elem()
	switch kt.Kind() {
	case reflect.String:
		kv.SetString(string(key))
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n, err := strconv.ParseInt(string(key), 10, 64)
		if err != nil || kt.OverflowInt(n) {
			d.save(&TypeError{Value: "number " + string(key), Type: kt, Off: off})
			return kv, false
		}
		kv.SetInt(n)
	default:
		n, err := strconv.ParseUint(string(key), 10, 64)
		if err != nil || kt.OverflowUint(n) {
			d.save(&TypeError{Value: "number " + string(key), Type: kt, Off: off})
			return kv, false
		}
		kv.SetUint(n)
	}
	return kv, true
}

// anyValue decodes the value at b[i] as encoding/json does into an interface{}.
func (d *decoder) anyValue(i int) (int, any) {
	switch d.b[i] {
	case '{':
		return d.anyObject(i)
	case '[':
		return d.anyArray(i)
	case '"':
		end, f, _ := String(d.b, i)
		return end, unquoteString(d.b[i:end], f)
	case 't', 'f', 'n':
		end, v, _ := Keyword(d.b, i)
		return end, v
	}
	end, _, _ := Number(d.b, i)
	if f, ok := d.float(end, string(d.b[i:end])); ok {
		return end, f
	}
	return end, nil
}

func (d *decoder) anyArray(i int) (int, []any) {
	a := []any{}
	j := Space(d.b, i+1)
	for d.b[j] != ']' {
		end, v := d.anyValue(j)
		a = append(a, v)
		j = d.next(end)
	}
	return j + 1, a
}

func (d *decoder) anyObject(i int) (int, map[string]any) {
	m := map[string]any{}
	j := Space(d.b, i+1)
	for d.b[j] != '}' {
		kend, f, _ := String(d.b, j)
		key := unquoteString(d.b[j:kend], f)
		end, v := d.anyValue(Space(d.b, Space(d.b, kend)+1))
		m[key] = v
		j = d.next(end)
	}
	return j + 1, m
}

// field is a struct field that JSON names: its name, its index in the struct, and whether
// its tag gave the name.
type field struct {
	name   string
	index  int
	tagged bool
}

var fieldCache sync.Map // reflect.Type -> []field or *UnsupportedError

// structFields lists the fields of struct type t that a JSON object's keys can name: the
// exported ones not tagged "-", by their tag's name or else their Go name.
func structFields(t reflect.Type) ([]field, error) {
	if c, ok := fieldCache.Load(t); ok {
		if err, bad := c.(*UnsupportedError); bad {
			return nil, err
		}
		return c.([]field), nil
	}
	var fs []field
	var err *UnsupportedError
	for i := range t.NumField() {
		sf := t.Field(i)
		tag := sf.Tag.Get("json")
		if tag == "-" || !sf.IsExported() && !sf.Anonymous {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if sf.Anonymous && name == "" {
			err = &UnsupportedError{Type: t, Why: "embedded field " + sf.Name + " has no JSON name"}
			break
		}
		if !sf.IsExported() {
			continue
		}
		if hasOption(opts, "string") {
			err = &UnsupportedError{Type: t, Why: "field " + sf.Name + " has the \",string\" option"}
			break
		}
		tagged := validTag(name)
		if !tagged {
			name = sf.Name
		}
		fs = append(fs, field{name: name, index: i, tagged: tagged})
	}
	if err != nil {
		fieldCache.Store(t, err)
		return nil, err
	}
	fs = dominant(fs)
	fieldCache.Store(t, fs)
	return fs, nil
}

// dominant keeps, of fields sharing a name, the one field whose tag gives the name, as
// encoding/json does; when none or several do, no field takes that name.
func dominant(fs []field) []field {
	out := fs[:0:0]
	for _, f := range fs {
		named, tagged := 0, 0
		for _, g := range fs {
			if g.name == f.name {
				named++
				if g.tagged {
					tagged++
				}
			}
		}
		if named == 1 || f.tagged && tagged == 1 {
			out = append(out, f)
		}
	}
	return out
}

func hasOption(opts, want string) bool {
	for opts != "" {
		var o string
		o, opts, _ = strings.Cut(opts, ",")
		if o == want {
			return true
		}
	}
	return false
}

// lookup finds the field a key names: by its exact name, else by a name equal to it without
// regard to case.
func lookup(fs []field, key []byte) *field {
	for i := range fs {
		if fs[i].name == string(key) {
			return &fs[i]
		}
	}
	for i := range fs {
		if strings.EqualFold(fs[i].name, string(key)) {
			return &fs[i]
		}
	}
	return nil
}

// validTag is encoding/json's rule for a tag's name: letters, digits and the punctuation
// !#$%&()*+-./:;<=>?@[]^_{|}~ and space.
func validTag(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if !strings.ContainsRune("!#$%&()*+-./:;<=>?@[]^_{|}~ ", c) && !unicode.IsLetter(c) && !unicode.IsDigit(c) {
			return false
		}
	}
	return true
}
