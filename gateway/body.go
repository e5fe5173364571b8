package gateway

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"

	"github.com/tapebox/tapebox/tape"
)

// requestBody is a model call's request body as the gateway forwards and records it. It is
// forwarded as it arrives, whatever its size and whether its length is known (the
// transport reads it through Read), and kept on the way for the recording, up to the
// recording limit, in a spill: in memory within spillAt, else in a spill file. A body over
// the limit is forwarded whole all the same and recorded as a truncation marker.
type requestBody struct {
	src    io.Reader
	limit  int64 // the recording limit; negative for none
	length int64 // the request's Content-Length, -1 when unknown
	logf   func(string, ...any)
	n      atomic.Int64 // bytes read from src so far

	// mu serializes the transport's reads and finish's.
	mu       sync.Mutex
	detached bool   // finish took over: the transport reads no more
	kept     *spill // what was read, while within the limit
	cut      bool   // over the limit
	err      error  // reading src failed (not at its end)
	// decided is closed once the body is whole (read to its end within the limit), known to
	// be over the limit, or broken; cut, err and kept do not change after it.
	decided    chan struct{}
	decideOnce sync.Once
}

// errDetached is what the transport reads once finish took the body over.
var errDetached = errors.New("tapebox gateway: the request body was taken over to be recorded")

// readRequest returns a model call's body, to be forwarded as it arrives. A body whose
// Content-Length is over the limit is known to be cut at once and keeps nothing.
func (g *Gateway) readRequest(r *http.Request) *requestBody {
	b := &requestBody{src: r.Body, limit: g.maxRecord, length: r.ContentLength, logf: g.logf, kept: g.newSpill(), decided: make(chan struct{})}
	switch {
	case r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0:
		b.decide()
	case b.limit >= 0 && r.ContentLength > b.limit:
		b.cut = true
		b.decide()
	}
	return b
}

func (b *requestBody) decide() { b.decideOnce.Do(func() { close(b.decided) }) }

// Read reads the client's body for the upstream, keeping what it reads.
func (b *requestBody) Read(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	// Whole comes first: the transport reads once more past Content-Length to see the
	// end, and finish (at the step's commit) may have read that end before it. An error
	// there would make the transport drop the upstream connection mid-answer.
	select {
	case <-b.decided:
		if !b.cut && b.err == nil { // whole: nothing more to read
			return 0, io.EOF
		}
	default:
	}
	if b.detached {
		return 0, errDetached
	}
	n, err := b.src.Read(p)
	b.consume(p[:n], err)
	return n, err
}

// consume keeps p (read from the client) and notes how the read ended. Called with mu held.
func (b *requestBody) consume(p []byte, err error) {
	if len(p) > 0 {
		total := b.n.Add(int64(len(p)))
		if !b.cut {
			if b.limit >= 0 && total > b.limit {
				b.cut = true
				b.kept.Reset()
				b.decide()
			} else if _, werr := b.kept.Write(p); werr != nil {
				b.logf("keep a request body: %v; recording it as a truncation marker", werr)
				b.cut = true
				b.kept.Reset()
				b.decide()
			}
		}
	}
	switch {
	case err == io.EOF:
		b.decide()
	case err != nil:
		if !b.cut {
			b.err = err
		}
		b.decide()
	}
}

// finish makes sure the body is decided: what the transport did not read (an upstream that
// failed, or answered before reading it all) is read here, until the body is whole or
// known over the limit. The transport reads no more of it afterwards. Called before the
// call is recorded.
func (b *requestBody) finish() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.detached = true
	p, buf := getBuffer()
	defer buffers.Put(p)
	for {
		select {
		case <-b.decided:
			return
		default:
		}
		n, err := b.src.Read(buf)
		b.consume(buf[:n], err)
		if err != nil {
			b.decide()
		}
	}
}

// whole returns the body when it was read whole within the limit (from the spill file if
// it spilled), after decided. A body that broke off is returned as far as it came, with
// the error.
func (b *requestBody) whole() ([]byte, error) {
	data, err := b.kept.Bytes()
	if err != nil {
		return nil, err
	}
	if b.err != nil {
		return data, fmt.Errorf("the request body broke off after %d bytes: %w", b.n.Load(), b.err)
	}
	return data, nil
}

// spilled says whether the body kept waits in a spill file (it is larger than spillAt).
func (b *requestBody) spilled() bool { return b.kept.f != nil }

// release drops what the body holds once the call is over.
func (b *requestBody) release() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.detached = true
	b.kept.Reset()
}

// truncation is the marker recorded for a body over the limit: its length when the
// request said it, else what was read of it so far.
func (b *requestBody) truncation(limit int64) tape.Truncation {
	n := b.length
	if n < 0 {
		n = b.n.Load()
	}
	return tape.Truncation{Bytes: n, Limit: limit}
}
