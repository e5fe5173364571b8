package cli

import (
	"fmt"
	"os"
	"syscall"
)

// RedirectStdout keeps the process's real stdout for the protocol and points fd 1 at
// stderr, so that anything written to fd 1 afterwards (by this process or a child that
// inherits it) lands in the log instead of the channel. It returns the protocol's file.
func RedirectStdout() (*os.File, error) {
	fd, err := syscall.Dup(1)
	if err != nil {
		return nil, fmt.Errorf("redirect stdout: dup fd 1: %w", err)
	}
	syscall.CloseOnExec(fd)
	if err := syscall.Dup3(2, 1, 0); err != nil {
		syscall.Close(fd)
		return nil, fmt.Errorf("redirect stdout: point fd 1 at stderr: %w", err)
	}
	return os.NewFile(uintptr(fd), "protocol"), nil
}
