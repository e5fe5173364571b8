package cli

import (
	"os"
	"syscall"
	"testing"
)

// TestSameFile: the output stays blocking when stdout and stderr are one pipe, since the
// nonblocking flag would reach children writing to stderr.
func TestSameFile(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	dup, err := syscall.Dup(int(w.Fd()))
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(dup)
	if !sameFile(int(w.Fd()), dup) {
		t.Error("a pipe and its duplicate are the same file")
	}
	if !sameFile(int(w.Fd()), int(r.Fd())) {
		t.Error("both ends of a pipe are the same pipe")
	}
	other, err := os.CreateTemp(t.TempDir(), "x")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if sameFile(int(w.Fd()), int(other.Fd())) {
		t.Error("a pipe and a regular file are different files")
	}
}
