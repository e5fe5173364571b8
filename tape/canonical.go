package tape

import (
	"bytes"
	"errors"
	"fmt"
)

// DecodeOptions are Decode's options.
type DecodeOptions struct {
	// NoChunkData leaves each stream chunk's Data empty when data is canonical: the chunks
	// are there and checked, their data not kept (a reader that only counts them, as
	// dataset's rows do, saves their copy). Such a tape must not be encoded again: its
	// encoding is the one Decode returns.
	NoChunkData bool
}

// Decode decodes data as Unmarshal does, with the same checks and errors, and returns the
// tape with its canonical encoding: data itself (no copy) when data is canonical, as every
// tape TapeBox writes is, else Marshal's. A valid tape in another form (whitespace, key
// order, escapes of another encoder) is decoded on the same path and encoded again. The
// tape's raw bodies are slices of data, which must not change while the tape is in use.
func Decode(data []byte, opts DecodeOptions) (*Tape, []byte, error) {
	t, canonical, complete, err := decodeTape(data, decodeOptions{alias: true, lean: opts.NoChunkData})
	if err == nil && canonical {
		return t, data, nil
	}
	if err == nil && !complete {
		// Valid but written by another tool, noticed past its start: the encoding needs
		// the chunk data the lean decoding left out.
		t, _, _, err = decodeTape(data, decodeOptions{alias: true})
	}
	if err != nil {
		var fe *fieldError
		if errors.As(err, &fe) && !fe.unknown {
			return nil, nil, fmt.Errorf("tape: %w", err)
		}
		if t, err = unmarshalReference(data, err); err != nil {
			return nil, nil, err
		}
	}
	enc, err := Marshal(t)
	if err != nil {
		return nil, nil, err
	}
	if bytes.Equal(enc, data) {
		enc = data
	}
	return t, enc, nil
}

// IsCanonical reports whether data is Marshal(t), without building the whole encoding: it
// encodes the tape a piece at a time (the head with the meta, each thread's head, each
// step, the tail), as the Writer does, and compares each piece with data as it goes, so
// memory stays at the size of one step (Marshal would hold the whole encoding; a tape can
// be tens of megabytes). t must be normalized, as a decoded tape is.
func IsCanonical(t *Tape, data []byte) bool {
	layout()
	c := canonicalChecker{rest: data, e: enc{ok: true}}
	c.e.b = append(c.e.b, '{')
	writeMembers(&c.e, tapeTable(), t, 0, tapeThreads, true)
	c.e.b = append(append(append(c.e.b, ','), tapeTable().fields[tapeThreads].member...), '[')
	if !c.piece() {
		return false
	}
	for i, th := range t.Threads {
		if th == nil {
			return false
		}
		if i > 0 {
			c.e.b = append(c.e.b, ',')
		}
		c.e.b = append(c.e.b, '{')
		writeMembers(&c.e, threadTable(), th, 0, threadSteps, true)
		c.e.b = append(append(append(c.e.b, ','), threadTable().fields[threadSteps].member...), '[')
		for j, s := range th.Steps {
			if s == nil {
				return false
			}
			if j > 0 {
				c.e.b = append(c.e.b, ',')
			}
			c.e.step(s)
			if !c.piece() {
				return false
			}
		}
		c.e.b = append(c.e.b, "]}"...)
	}
	c.e.b = append(c.e.b, ']')
	writeMembers(&c.e, tapeTable(), t, tapeDigest, len(tapeTable().fields), false)
	c.e.b = append(c.e.b, "}\n"...)
	return c.piece() && len(c.rest) == 0
}

type canonicalChecker struct {
	rest []byte
	e    enc
}

// piece consumes what was encoded since the last piece from the front of the data.
func (c *canonicalChecker) piece() bool {
	b := fixReplacement(c.e.b)
	if !c.e.ok || !bytes.HasPrefix(c.rest, b) {
		return false
	}
	c.rest = c.rest[len(b):]
	c.e.b = c.e.b[:0]
	return true
}
