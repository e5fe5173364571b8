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
		for {
			d.ws()
			if d.i >= len(d.data) || d.data[d.i] == '}' {
				d.i++
				return true
			}
			if d.data[d.i] == ',' {
				d.i++
				d.ws()
			}
			start, end, esc, err := d.scanStringAt()
			if err != nil {
				return false
			}
			key := string(d.data[start+1 : end-1])
			if esc {
				key = d.unescape(d.data[start+1 : end-1])
			}
			if d.colon() != nil {
				return false
			}
			f.path = append(f.path, key)
			more := f.value()
			f.path = f.path[:len(f.path)-1]
			if !more {
				return false
			}
		}
	case '[':
		d.i++
		for n := 0; ; n++ {
			d.ws()
			if d.i >= len(d.data) || d.data[d.i] == ']' {
				d.i++
				return true
			}
			if d.data[d.i] == ',' {
				d.i++
			}
			f.path = append(f.path, strconv.Itoa(n))
			more := f.value()
			f.path = f.path[:len(f.path)-1]
			if !more {
				return false
			}
		}
	}
	return d.skip() == nil
}
