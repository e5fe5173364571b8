package gateway

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// spillAt is how much of a body being recorded the gateway holds in memory; past it, the
// body goes to a spill file beside the tape until it is recorded or found over the
// recording limit. Model calls are far smaller, so this costs them nothing; it keeps a body
// that turns out too large to record from sitting in memory on its way to the limit.
const spillAt = 4 << 20

// spill is a body being recorded: in memory up to spillAt bytes, then in a temporary file
// in dir, unlinked as soon as it is made (so that nothing is left behind, even by a
// killed gateway, where the file system allows it). It is used by one goroutine at a time.
type spill struct {
	dir  string
	base string // the tape's file name, for the spill file's name
	mem  []byte
	f    *os.File
	n    int64
	logf func(string, ...any)
}

// newSpill returns an empty spill for a body of the tape at path.
func (g *Gateway) newSpill() *spill {
	return &spill{dir: filepath.Dir(g.cfg.Output), base: filepath.Base(g.cfg.Output), logf: g.logf}
}

// Len returns how many bytes were written.
func (s *spill) Len() int64 { return s.n }

// Write appends p. When the spill file cannot be made or written, the body stays in
// memory, as it would without a spill file.
func (s *spill) Write(p []byte) (int, error) {
	if s.f == nil && len(s.mem)+len(p) > spillAt {
		s.open()
	}
	if s.f != nil {
		if _, err := s.f.Write(p); err == nil {
			s.n += int64(len(p))
			return len(p), nil
		}
		if err := s.unspill(); err != nil {
			return 0, err
		}
	}
	s.mem = append(s.mem, p...)
	s.n += int64(len(p))
	return len(p), nil
}

// open moves what is in memory to a new spill file.
func (s *spill) open() {
	f, err := os.CreateTemp(s.dir, "."+s.base+".spill-*")
	if err != nil {
		s.logf("spill a large body to disk: %v; holding it in memory", err)
		return
	}
	os.Remove(f.Name()) // open files stay readable; where it fails (Windows), Reset removes it
	if _, err := f.Write(s.mem); err != nil {
		s.logf("spill a large body to disk: %v; holding it in memory", err)
		s.closeFile(f)
		return
	}
	s.f, s.mem = f, nil
}

// unspill brings the spill file's content back into memory after a failed write.
func (s *spill) unspill() error {
	f := s.f
	s.f = nil
	defer s.closeFile(f)
	mem := make([]byte, s.n, s.n+spillAt)
	_, err := f.ReadAt(mem, 0)
	if err != nil {
		return fmt.Errorf("read back a spilled body: %w", err)
	}
	s.logf("spill a large body to disk failed; holding it in memory")
	s.mem = mem
	return nil
}

func (s *spill) closeFile(f *os.File) {
	name := f.Name()
	f.Close()
	os.Remove(name)
}

// Bytes returns the whole body, read back from the spill file if it spilled.
func (s *spill) Bytes() ([]byte, error) {
	if s.f == nil {
		return s.mem, nil
	}
	b := make([]byte, s.n)
	if _, err := s.f.ReadAt(b, 0); err != nil {
		return nil, fmt.Errorf("read back a spilled body: %w", err)
	}
	return b, nil
}

// Reader returns a reader of the whole body from its start; writes after it are not seen.
func (s *spill) Reader() io.Reader {
	if s.f == nil {
		return bytes.NewReader(s.mem)
	}
	return io.NewSectionReader(s.f, 0, s.n)
}

// Reset empties the spill, removing its file, and drops what it held.
func (s *spill) Reset() {
	if s.f != nil {
		s.closeFile(s.f)
		s.f = nil
	}
	s.mem, s.n = nil, 0
}
