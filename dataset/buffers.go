package dataset

import (
	"errors"
	"io"
	"os"
	"slices"
	"sync"
)

// bufferPool recycles the buffers tape files are read into. An export reads as many bytes
// as the corpus holds; reusing a few buffers, instead of leaving each to the collector,
// keeps the heap small and its pages mapped (under a memory limit the runtime would
// otherwise return them to the system and fault them back in for every tape).
type bufferPool struct {
	mu    sync.Mutex
	free  [][]byte
	bytes int // capacity held in free
	limit int // most capacity held in free
}

func newBufferPool(limit int) *bufferPool { return &bufferPool{limit: limit} }

// get returns an empty buffer with capacity of at least n.
func (p *bufferPool) get(n int) []byte {
	p.mu.Lock()
	defer p.mu.Unlock()
	best := -1
	for i, b := range p.free {
		if cap(b) >= n && (best < 0 || cap(b) < cap(p.free[best])) {
			best = i
		}
	}
	if best < 0 {
		return make([]byte, 0, n+n/8)
	}
	b := p.free[best]
	p.free = slices.Delete(p.free, best, best+1)
	p.bytes -= cap(b)
	return b[:0]
}

// put gives a buffer back; the caller must not use it afterwards. The pool drops its
// smallest buffers to stay within its limit.
func (p *bufferPool) put(b []byte) {
	if cap(b) == 0 || cap(b) > p.limit {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.free = append(p.free, b[:0])
	p.bytes += cap(b)
	for p.bytes > p.limit {
		small := 0
		for i, f := range p.free {
			if cap(f) < cap(p.free[small]) {
				small = i
			}
		}
		p.bytes -= cap(p.free[small])
		p.free = slices.Delete(p.free, small, small+1)
	}
}

// readFile reads the file at path into a buffer from the pool.
func (p *bufferPool) readFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	size := 0
	if info, err := f.Stat(); err == nil {
		size = int(info.Size())
	}
	b := p.get(size + 1) // one more byte to see EOF without growing
	for {
		n, err := f.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if errors.Is(err, io.EOF) {
			return b, nil
		}
		if err != nil {
			p.put(b)
			return nil, err
		}
		if len(b) == cap(b) {
			b = slices.Grow(b, cap(b)/2+1)
		}
	}
}
