package schema

import (
	"encoding/binary"
	"fmt"
)

// unitRun is one distinct instance of a unit definition and where it occurs.
type unitRun struct {
	def        *unitDef
	key        string // the reduced encoding
	start, end int    // the first occurrence's bytes
	// at is the byte offset of every occurrence, collected only when locating (the error
	// path), so that validating a valid tape keeps one record per distinct instance.
	at []int
}

// value builds the instance as the validator sees it, its own units as placeholders.
func (r *unitRun) value(data []byte) (any, error) {
	d := &decoder{data: data[:r.end], i: r.start}
	v, err := d.value(r.def.shape)
	if err != nil {
		return nil, fmt.Errorf("decode %s at byte %d: %w", r.def.name, r.start, err)
	}
	return v, nil
}

// units collects the distinct instances of unit definitions met while decoding.
//
// Two instances are the same when the values the decoder would build for them are equal:
// the validator then reports the same problems for both, relative to where they stand.
// Rather than build every instance, the decoder writes a reduced encoding of it (enc) that
// holds exactly what the built value would hold: for each value a tag, and the text of
// keys, of strings and of numbers the value keeps, length-prefixed. Equal encodings mean
// equal values, so instances are told apart by their encodings, and only the first of each
// kind is built and validated.
type units struct {
	runs   []*unitRun
	seen   map[string]*unitRun // by reduced encoding
	enc    []byte              // encodings of the instances being reduced, innermost last
	locate bool                // collect every occurrence's offset
}

// Tags of the reduced encoding.
const (
	tagObject      = '{' // then entries, then tagEnd
	tagArray       = '[' // then items, then tagEnd
	tagEnd         = '.'
	tagKey         = 'k' // then the key's raw text
	tagString      = 's' // then the raw text
	tagNumber      = 'n' // then the literal
	tagTrue        = 't'
	tagFalse       = 'f'
	tagNull        = 'z'
	tagOpen        = 'o' // any value, not built
	tagUnit        = 'u' // a nested unit instance, recorded on its own
	tagSomeString  = 'S' // placeholders of type-only values
	tagSomeObject  = 'O'
	tagSomeArray   = 'A'
	tagSomeInteger = 'I'
)

func (u *units) tag(t byte) { u.enc = append(u.enc, t) }

func (u *units) text(t byte, b []byte) {
	u.enc = append(u.enc, t)
	u.enc = binary.AppendUvarint(u.enc, uint64(len(b)))
	u.enc = append(u.enc, b...)
}

// reduceUnit reduces the unit instance at d.i, records it and returns its distinct
// instance.
func (d *decoder) reduceUnit(def *unitDef) (*unitRun, error) {
	d.ws()
	start := d.i
	mark := len(d.units.enc)
	d.units.text(tagKey, []byte(def.name)) // instances of different definitions differ
	if err := d.reduce(def.shape); err != nil {
		return nil, err
	}
	enc := d.units.enc[mark:]
	r, ok := d.units.seen[string(enc)]
	if !ok {
		r = &unitRun{def: def, key: string(enc), start: start, end: d.i}
		if d.units.seen == nil {
			d.units.seen = map[string]*unitRun{}
		}
		d.units.seen[r.key] = r
		d.units.runs = append(d.units.runs, r)
	}
	if d.units.locate {
		r.at = append(r.at, start)
	}
	d.units.enc = d.units.enc[:mark]
	return r, nil
}

// reduce moves past the value at d.i, checking its syntax, and appends its reduced
// encoding: what value(sh) would build, without building it.
func (d *decoder) reduce(sh *shape) error {
	u := &d.units
	d.ws()
	if d.i >= len(d.data) {
		return d.eof("looking for a value")
	}
	c := d.data[d.i]
	if sh != nil {
		switch sh.mode {
		case modeOpen:
			u.tag(tagOpen)
			return d.skip()
		case modeUnit:
			u.tag(tagUnit)
			_, err := d.reduceUnit(sh.unit)
			return err
		case modeTypeOnly:
			switch c {
			case '"':
				u.tag(tagSomeString)
				_, _, err := d.scanString()
				return err
			case '{':
				u.tag(tagSomeObject)
				return d.skip()
			case '[':
				u.tag(tagSomeArray)
				return d.skip()
			case 't', 'f', 'n':
			default:
				start := d.i
				v, err := d.typeOnlyNumber()
				if err != nil {
					return err
				}
				if v == someInteger {
					u.tag(tagSomeInteger)
				} else {
					u.text(tagNumber, d.data[start:d.i])
				}
				return nil
			}
		case modeEnum:
			if c == '"' {
				start, end, _, err := d.scanStringAt()
				if err != nil {
					return err
				}
				raw := d.data[start+1 : end-1]
				if limit := enumLimit(sh.maxEnum); len(raw) > limit {
					raw = raw[:limit+1] // all that decides the value enumString builds
				}
				u.text(tagString, raw)
				return nil
			}
		}
	}
	switch c {
	case '{', '[':
		if err := d.deeper(); err != nil {
			return err
		}
		var err error
		if c == '{' {
			err = d.reduceObject(sh)
		} else {
			err = d.reduceArray(sh)
		}
		d.depth--
		return err
	case '"':
		start, end, _, err := d.scanStringAt()
		if err != nil {
			return err
		}
		u.text(tagString, d.data[start+1:end-1])
		return nil
	case 't':
		u.tag(tagTrue)
		return d.literal("true")
	case 'f':
		u.tag(tagFalse)
		return d.literal("false")
	case 'n':
		u.tag(tagNull)
		return d.literal("null")
	}
	start := d.i
	if err := d.scanNumber(); err != nil {
		return err
	}
	u.text(tagNumber, d.data[start:d.i])
	return nil
}

func (d *decoder) reduceArray(sh *shape) error {
	u := &d.units
	if sh != nil && sh.unitItems {
		u.tag(tagSomeArray)
		return d.unitItems(sh.items.unit)
	}
	var items *shape
	if sh != nil {
		items = sh.items
	}
	u.tag(tagArray)
	if err := d.elements(func() error { return d.reduce(items) }); err != nil {
		return err
	}
	u.tag(tagEnd)
	return nil
}

func (d *decoder) reduceObject(sh *shape) error {
	u := &d.units
	u.tag(tagObject)
	err := d.members(func() error {
		start, end, esc, err := d.scanStringAt()
		if err != nil {
			return err
		}
		raw := d.data[start+1 : end-1]
		u.text(tagKey, raw)
		if err := d.colon(); err != nil {
			return err
		}
		return d.reduce(d.childShape(sh, raw, esc))
	})
	if err != nil {
		return err
	}
	u.tag(tagEnd)
	return nil
}

// childShape returns the shape of the value of the key whose raw text is raw.
func (d *decoder) childShape(sh *shape, raw []byte, esc bool) *shape {
	if sh == nil {
		return nil
	}
	if !esc {
		if p, ok := sh.prop(raw); ok {
			return p.shape
		}
		return sh.other
	}
	if p, ok := sh.prop([]byte(d.unescape(raw))); ok {
		return p.shape
	}
	return sh.other
}
