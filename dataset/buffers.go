package dataset

import (
	"errors"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"sync"
)

// bufferPool gives the bytes of tape files. A big file (mapMin or more) is mapped into
// memory where the system allows it: its pages are the system's file cache, read with no
// copy and never part of the Go heap, which then stays small and collects less often.
// Smaller files are read into buffers that the pool recycles: an export reads as many
// bytes as the corpus holds, and reusing a few buffers, instead of leaving each to the
// collector, keeps the heap small and its pages mapped (under a memory limit the runtime
// would otherwise return them to the system and fault them back in for every tape).
//
// A mapped file that shrinks while it is read makes the next access to its lost pages
// fault: code that reads a buffer runs under guard, which turns the fault into an error.
type bufferPool struct {
	mu     sync.Mutex
	free   [][]byte
	bytes  int // capacity held in free
	limit  int // most capacity held in free
	mapped map[*byte]bool
}

// mapMin is the size from which files are mapped rather than read.
const mapMin = 1 << 20

// errFileChanged reports a fault while reading a mapped file: it shrank meanwhile.
var errFileChanged = errors.New("the file changed (shrank) while it was read")

// guard runs fn and returns errFileChanged if fn faulted on a memory address, as reading
// a mapped file that shrank does. Other panics go on.
func guard(fn func() error) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			if re, ok := r.(runtime.Error); ok && isFault(re) {
				err = errFileChanged
				return
			}
			panic(r)
		}
	}()
	return fn()
}

// isFault tells a memory fault (which SetPanicOnFault turns into a panic whose value has
// an Addr method) from other runtime errors.
func isFault(err runtime.Error) bool {
	_, ok := err.(interface{ Addr() uintptr })
	return ok
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
	if cap(b) == 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if first := &b[:1][0]; p.mapped[first] {
		delete(p.mapped, first)
		unmapFile(b[:cap(b)])
		return
	}
	if cap(b) > p.limit {
		return
	}
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
	if size >= mapMin {
		if b := mapFile(f, size); b != nil {
			p.mu.Lock()
			if p.mapped == nil {
				p.mapped = map[*byte]bool{}
			}
			p.mapped[&b[0]] = true
			p.mu.Unlock()
			return b, nil
		}
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
