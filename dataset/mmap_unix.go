//go:build unix

package dataset

import (
	"os"
	"syscall"
)

// mapFile maps the file f of size bytes read-only, or returns nil when it cannot.
func mapFile(f *os.File, size int) []byte {
	if size <= 0 || int64(size) != int64(int(size)) {
		return nil
	}
	b, err := syscall.Mmap(int(f.Fd()), 0, size, syscall.PROT_READ, syscall.MAP_SHARED|mapPopulate)
	if err != nil {
		return nil
	}
	return b
}

// unmapFile undoes mapFile.
func unmapFile(b []byte) { _ = syscall.Munmap(b) }
