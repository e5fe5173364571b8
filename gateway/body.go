package gateway

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync/atomic"

	"github.com/tapebox/tapebox/tape"
)

// requestBody is a model call's request body as the gateway forwards and records it: whole
// in data when it is within the recording limit, else streamed upstream as it arrives,
// counted, and recorded as a truncation marker.
type requestBody struct {
	data []byte
	// cut is set when the body is over the limit; the upstream then reads up.
	cut    bool
	up     *countingReader
	length int64 // the request's Content-Length, -1 when unknown
	// read is what was read ahead to find the body over the limit; released with the call.
	read *spill
}

// release drops what the body holds once the call is over.
func (b *requestBody) release() {
	if b.read != nil {
		b.read.Reset()
	}
}

// truncation is the marker recorded for a body over the limit: its length when the
// request said it, else what the upstream has read of it so far.
func (b *requestBody) truncation(limit int64) tape.Truncation {
	n := b.length
	if n < 0 {
		n = b.up.n.Load()
	}
	return tape.Truncation{Bytes: n, Limit: limit}
}

// readRequest reads a model call's body whole when it is within the recording limit. A
// body whose Content-Length is over the limit is not read ahead at all, and one of unknown
// length only up to the limit (spilling past spillAt): the rest then streams upstream as
// it arrives, after what was read ahead.
func (g *Gateway) readRequest(r *http.Request) (*requestBody, error) {
	limit, n := g.maxRecord, r.ContentLength
	switch {
	case limit < 0 || n >= 0 && n <= limit:
		data, err := readBody(r)
		if err != nil {
			return nil, err
		}
		return &requestBody{data: data}, nil
	case n > limit:
		return &requestBody{cut: true, up: &countingReader{r: r.Body}, length: n}, nil
	}
	ahead := g.newSpill()
	if _, err := io.CopyN(ahead, r.Body, limit+1); err != nil {
		if !errors.Is(err, io.EOF) {
			ahead.Reset()
			return nil, fmt.Errorf("read request body: %w", err)
		}
		data, err := ahead.Bytes()
		ahead.Reset()
		if err != nil {
			return nil, err
		}
		return &requestBody{data: data}, nil
	}
	return &requestBody{cut: true, up: &countingReader{r: io.MultiReader(ahead.Reader(), r.Body)}, read: ahead, length: -1}, nil
}

// countingReader counts the bytes read through it, for another goroutine to see.
type countingReader struct {
	r io.Reader
	n atomic.Int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}
