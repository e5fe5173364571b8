package viewer

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"runtime"
	"sync"

	"github.com/klauspost/compress/gzip"
)

// blobs writes each step's detail into the page as JSON, gzipped and base64-encoded. The
// encoding runs on every core while the tape is decoded; the blobs are written in the order
// they were submitted, and close returns each one's offset and length in base64 characters.
type blobs struct {
	ctx     context.Context
	jobs    chan blobJob
	results chan blobResult
	workers sync.WaitGroup
	done    chan struct{}
	next    int

	// owned by the collector until done is closed
	w       *bufio.Writer
	off     int64
	offsets [][2]int64
	err     error
}

type blobJob struct {
	seq int
	d   *detail
}

type blobResult struct {
	seq int
	b   []byte
	err error
}

func newBlobs(ctx context.Context, w *bufio.Writer) *blobs {
	n := runtime.GOMAXPROCS(0)
	e := &blobs{ctx: ctx, w: w, jobs: make(chan blobJob, 4*n), results: make(chan blobResult, 4*n), done: make(chan struct{})}
	for range n {
		e.workers.Add(1)
		go func() {
			defer e.workers.Done()
			c := newBlobCoder()
			for j := range e.jobs {
				js, err := j.d.marshal()
				if err != nil {
					e.results <- blobResult{seq: j.seq, err: fmt.Errorf("encode step detail: %w", err)}
					continue
				}
				b, err := c.encode(js)
				e.results <- blobResult{seq: j.seq, b: b, err: err}
			}
		}()
	}
	go e.collect()
	return e
}

// submit queues d and returns its number.
func (e *blobs) submit(d *detail) (int, error) {
	seq := e.next
	e.next++
	select {
	case e.jobs <- blobJob{seq: seq, d: d}:
		return seq, nil
	case <-e.ctx.Done():
		return 0, e.ctx.Err()
	}
}

func (e *blobs) collect() {
	defer close(e.done)
	pending := map[int][]byte{}
	next := 0
	for r := range e.results {
		if r.err != nil && e.err == nil {
			e.err = r.err
		}
		pending[r.seq] = r.b
		for {
			b, ok := pending[next]
			if !ok {
				break
			}
			delete(pending, next)
			if e.err == nil {
				if _, err := e.w.Write(b); err != nil {
					e.err = fmt.Errorf("write page: %w", err)
				}
			}
			e.offsets = append(e.offsets, [2]int64{e.off, int64(len(b))})
			e.off += int64(len(b))
			next++
		}
	}
}

// close waits for every blob to be written and returns their offsets by number.
func (e *blobs) close() ([][2]int64, error) {
	close(e.jobs)
	e.workers.Wait()
	close(e.results)
	<-e.done
	return e.offsets, e.err
}

// blobCoder gzips and base64-encodes, reusing its compressor.
type blobCoder struct {
	gz  *gzip.Writer
	buf bytes.Buffer
}

func newBlobCoder() *blobCoder {
	gz, _ := gzip.NewWriterLevel(io.Discard, gzip.BestSpeed)
	return &blobCoder{gz: gz}
}

func (c *blobCoder) encode(b []byte) ([]byte, error) {
	c.buf.Reset()
	c.gz.Reset(&c.buf)
	if _, err := c.gz.Write(b); err != nil {
		return nil, fmt.Errorf("compress page data: %w", err)
	}
	if err := c.gz.Close(); err != nil {
		return nil, fmt.Errorf("compress page data: %w", err)
	}
	out := make([]byte, base64.StdEncoding.EncodedLen(c.buf.Len()))
	base64.StdEncoding.Encode(out, c.buf.Bytes())
	return out, nil
}
