package tape

import (
	"os"
	"syscall"
)

const fallocKeepSize = 0x01 // FALLOC_FL_KEEP_SIZE

// preallocate reserves the blocks of f from off to end without changing its size, so that
// writing there later allocates nothing. On ext4 this matters for publishing: renaming a
// file over another one flushes the renamed file's delayed allocations first (the
// auto_da_alloc heuristic), which made every publish several times slower.
func preallocate(f *os.File, off, end int64) error {
	return syscall.Fallocate(int(f.Fd()), fallocKeepSize, off, end-off)
}

// release gives back the blocks preallocate reserved past the end of f, whose size is
// size: truncating a file to its own size frees them (punching a hole past the end does
// not, on ext4).
func release(f *os.File, size int64) error {
	return f.Truncate(size)
}
