package schema

import "bytes"

// A tape repeats itself: every request carries the conversation so far, the system prompt
// and the tools of the request before it, once normalized (messages, unit instances) and
// once as the raw body the harness sent (an open value). The memos below let the decoder
// take over what an earlier value of the same place already proved: a byte-equal prefix
// that is a complete JSON value (an object, an array or a string ends itself) is that
// value, with the same syntax and, for a unit instance, the same reduced encoding. This
// keeps validation close to linear in the length of a conversation.

// memoMin is the size of an open object worth remembering: smaller ones are scanned
// again, which costs less than keeping their spans.
const memoMin = 4 << 10

// openKey names a place that holds an open value: a property of an object shape.
type openKey struct {
	parent *shape
	name   string
}

// openMemo remembers the last open object met at one place, once one was big.
type openMemo struct {
	depth int
	keys  [][]byte // the members' raw keys
	vals  [][]byte // the members' values
	elems [][][]byte
}

// itemsMemo remembers the last array of unit instances of one definition: each item's
// bytes and its distinct instance.
type itemsMemo struct {
	depth int
	spans [][]byte
	runs  []*unitRun
}

// reuse reports whether span, a complete value met earlier at this depth, comes next,
// and moves past it if so.
func (d *decoder) reuse(span []byte) bool {
	if !endsItself(span) || !bytes.HasPrefix(d.data[d.i:], span) {
		return false
	}
	d.i += len(span)
	return true
}

// endsItself reports whether span, a complete value, cannot be the start of a longer one:
// a number can (12 and 123), a literal cannot be followed by anything valid but is rare.
func endsItself(span []byte) bool {
	if len(span) == 0 {
		return false
	}
	c := span[len(span)-1]
	return c == '}' || c == ']' || c == '"'
}

// openValue moves past the open value at d.i, an object, found at place k.
func (d *decoder) openValue(k openKey) error {
	m := d.open[k]
	if m == nil {
		start := d.i
		if err := d.skip(); err != nil {
			return err
		}
		if d.i-start >= memoMin {
			if d.open == nil {
				d.open = map[openKey]*openMemo{}
			}
			d.open[k] = &openMemo{depth: -1}
		}
		return nil
	}
	next, err := d.objectReusing(m)
	if err != nil {
		return err
	}
	d.open[k] = next
	return nil
}

// objectReusing is skip for an object, taking over the members of prev (and the elements
// of its array members) that come again, and returns the memo of this object.
func (d *decoder) objectReusing(prev *openMemo) (*openMemo, error) {
	if prev.depth != d.depth {
		prev = &openMemo{}
	}
	if err := d.deeper(); err != nil {
		return nil, err
	}
	defer func() { d.depth-- }()
	m := &openMemo{
		depth: d.depth - 1,
		keys:  make([][]byte, 0, len(prev.keys)),
		vals:  make([][]byte, 0, len(prev.keys)),
		elems: make([][][]byte, 0, len(prev.keys)),
	}
	err := d.members(func() error {
		start, end, err := d.scanString()
		if err != nil {
			return err
		}
		key := d.data[start:end]
		if err := d.colon(); err != nil {
			return err
		}
		var cand []byte
		var candElems [][]byte
		// Members mostly come in the same order: look where this one was first.
		for j := range prev.keys {
			if i := (len(m.keys) + j) % len(prev.keys); bytes.Equal(prev.keys[i], key) {
				cand, candElems = prev.vals[i], prev.elems[i]
				break
			}
		}
		d.ws()
		vs := d.i
		var elems [][]byte
		switch {
		case d.reuse(cand):
			elems = candElems
		case d.i < len(d.data) && d.data[d.i] == '[':
			if elems, err = d.arrayReusing(candElems); err != nil {
				return err
			}
		default:
			if err := d.skip(); err != nil {
				return err
			}
		}
		m.keys = append(m.keys, key)
		m.vals = append(m.vals, d.data[vs:d.i])
		m.elems = append(m.elems, elems)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return m, nil
}

// arrayReusing is skip for an array, taking over the elements of prev that come again at
// the same index, and returns the spans of its elements.
func (d *decoder) arrayReusing(prev [][]byte) ([][]byte, error) {
	if err := d.deeper(); err != nil {
		return nil, err
	}
	defer func() { d.depth-- }()
	elems := make([][]byte, 0, len(prev)+2)
	err := d.elements(func() error {
		d.ws()
		start := d.i
		if k := len(elems); k >= len(prev) || !d.reuse(prev[k]) {
			if err := d.skip(); err != nil {
				return err
			}
		}
		elems = append(elems, d.data[start:d.i])
		return nil
	})
	if err != nil {
		return nil, err
	}
	return elems, nil
}
