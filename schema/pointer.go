package schema

import (
	"slices"
	"strconv"
)

// pointersAt returns the JSON pointer of the value starting at each of offsets in data,
// which holds one well-formed JSON value. It walks the whole document, so it is meant
// for the error path only.
func pointersAt(data []byte, offsets []int) map[int]string {
	want := slices.Clone(offsets)
	slices.Sort(want)
	want = slices.Compact(want)
	f := &pathFinder{d: decoder{data: data}, want: want, out: make(map[int]string, len(want))}
	f.value()
	return f.out
}

type pathFinder struct {
	d    decoder
	path []string
	want []int // sorted offsets not found yet
	out  map[int]string
}

// value walks the value at f.d.i; it returns false when every offset has been found.
func (f *pathFinder) value() bool {
	d := &f.d
	d.ws()
	for len(f.want) > 0 && f.want[0] < d.i {
		f.want = f.want[1:] // not the start of a value: no pointer
	}
	if len(f.want) == 0 || d.i >= len(d.data) {
		return false
	}
	if f.want[0] == d.i {
		f.out[d.i] = pointer(f.path)
		f.want = f.want[1:]
	}
	switch d.data[d.i] {
	case '{':
		d.i++
		for !f.closed('}') {
			start, end, esc, err := d.scanStringAt()
			if err != nil {
				return false
			}
			raw := d.data[start+1 : end-1]
			key := string(raw)
			if esc {
				key = d.unescape(raw)
			}
			if d.colon() != nil || !f.child(key) {
				return false
			}
		}
		return true
	case '[':
		d.i++
		for n := 0; !f.closed(']'); n++ {
			if !f.child(strconv.Itoa(n)) {
				return false
			}
		}
		return true
	}
	return d.skip() == nil
}

// closed moves past the spaces and the comma before a member or element and reports
// whether the object or array ends there instead (or the input does), moving past its
// closing bracket.
func (f *pathFinder) closed(closing byte) bool {
	d := &f.d
	d.ws()
	if d.i >= len(d.data) || d.data[d.i] == closing {
		d.i++
		return true
	}
	if d.data[d.i] == ',' {
		d.i++
		d.ws()
	}
	return false
}

// child walks the value of the member or element called name; it returns false when every
// offset has been found.
func (f *pathFinder) child(name string) bool {
	f.path = append(f.path, name)
	more := f.value()
	f.path = f.path[:len(f.path)-1]
	return more
}
