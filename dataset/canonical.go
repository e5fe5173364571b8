package dataset

import (
	"bytes"
	"encoding/json"
	"strconv"

	"github.com/tapebox/tapebox/tape"
)

// isCanonical reports whether data is tape.Marshal(t) for a tape t decoded from data by
// tape.Unmarshal, without building the whole encoding: it encodes the tape piece by piece
// (the meta, each thread's head, each step) with encoding/json in the layout tape.Marshal
// writes and compares each piece with data as it goes, so memory stays at the size of one
// step (tape.Marshal would hold the whole encoding twice over; a tape can be tens of
// megabytes). It is the reference check Validate and Import use; Export's fast decoder
// checks the same thing while it decodes. TestIsCanonicalAgreesWithMarshal keeps the
// layout in step with package tape.
func isCanonical(t *tape.Tape, data []byte) bool {
	c := canonicalChecker{rest: data}
	c.enc = json.NewEncoder(&c.buf)
	c.enc.SetEscapeHTML(false)
	ok := c.lit(`{"version":`+strconv.Itoa(t.Version)+`,"meta":`) && c.value(t.Meta) && c.lit(`,"threads":[`)
	for i, th := range t.Threads {
		if !ok {
			return false
		}
		if i > 0 {
			ok = c.lit(",")
		}
		ok = ok && c.lit(`{"id":`) && c.value(th.ID) && c.lit(`,"parent":`) && c.value(th.Parent) && c.lit(`,"steps":[`)
		for j, s := range th.Steps {
			if !ok {
				return false
			}
			if j > 0 {
				ok = c.lit(",")
			}
			ok = ok && c.value(s)
		}
		ok = ok && c.lit("]}")
	}
	if ok && t.Digest != nil {
		ok = c.lit(`],"digest":`) && c.value(t.Digest) && c.lit("}\n")
	} else {
		ok = ok && c.lit("]}\n")
	}
	return ok && len(c.rest) == 0
}

type canonicalChecker struct {
	rest []byte
	buf  bytes.Buffer
	enc  *json.Encoder
}

// lit consumes s from the front of the data.
func (c *canonicalChecker) lit(s string) bool {
	if len(c.rest) < len(s) || string(c.rest[:len(s)]) != s {
		return false
	}
	c.rest = c.rest[len(s):]
	return true
}

// value consumes the canonical encoding of v from the front of the data.
func (c *canonicalChecker) value(v any) bool {
	c.buf.Reset()
	if err := c.enc.Encode(v); err != nil {
		return false
	}
	b := c.buf.Bytes()
	b = b[:len(b)-1] // the Encoder's newline
	if !bytes.HasPrefix(c.rest, b) {
		return false
	}
	c.rest = c.rest[len(b):]
	return true
}
