package secrets

import (
	"io"
	"os"
)

// mapMin is the size from which a tape file is mapped into memory rather than read: the
// scan then holds no copy of it on the Go heap (dataset export sets a soft heap limit).
const mapMin = 1 << 20

// readFile returns the bytes of the file at path and a function that releases them. The
// bytes are read-only and must not be used after release.
func readFile(path string) ([]byte, func(), error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, nil, err
	}
	if size := fi.Size(); size >= mapMin && size == int64(int(size)) {
		if b := mapFile(f, int(size)); b != nil {
			return b, func() { unmapFile(b) }, nil
		}
	}
	b, err := io.ReadAll(f)
	if err != nil {
		return nil, nil, err
	}
	return b, func() {}, nil
}
