//go:build unix

package secrets

import (
	"os"
	"syscall"
)

// mapFile maps the file f of size bytes read-only, or returns nil when it cannot.
func mapFile(f *os.File, size int) []byte {
	b, err := syscall.Mmap(int(f.Fd()), 0, size, syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil
	}
	return b
}

// unmapFile undoes mapFile.
func unmapFile(b []byte) { _ = syscall.Munmap(b) }
