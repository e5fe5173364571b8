package conformance

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestMain holds an exclusive lock on the cases' fixed root (caseRoot) for the whole run:
// two test processes on one machine (two checkouts, or go test of this package twice)
// would otherwise lay out and remove each other's case directories under the same path.
// The second waits for the first.
func TestMain(m *testing.M) {
	lock := filepath.Dir(caseRoot("x")) + ".lock"
	f, err := os.OpenFile(lock, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		fmt.Fprintf(os.Stderr, "conformance: lock %s: %v\n", lock, err)
		os.Exit(2)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		fmt.Fprintf(os.Stderr, "conformance: lock %s: %v\n", lock, err)
		os.Exit(2)
	}
	code := m.Run()
	_ = f.Close()
	os.Exit(code)
}
