package cli

import (
	"fmt"
	"io"
	"syscall"
)

// RedirectStdout keeps the process's real stdout for the protocol and points fd 1 at
// stderr, so that anything written to fd 1 afterwards (by this process or a child that
// inherits it) lands in the log instead of the channel. It returns the protocol's output.
func RedirectStdout() (io.WriteCloser, error) {
	fd, err := syscall.Dup(1)
	if err != nil {
		return nil, fmt.Errorf("redirect stdout: dup fd 1: %w", err)
	}
	syscall.CloseOnExec(fd)
	if err := syscall.Dup3(2, 1, 0); err != nil {
		syscall.Close(fd)
		return nil, fmt.Errorf("redirect stdout: point fd 1 at stderr: %w", err)
	}
	return streamFile(fd, "protocol-out"), nil
}

// ProtocolStdin returns the protocol's input: a copy of fd 0 read without blocking a
// thread (see rawFile). O_NONBLOCK is set on the open file, which fd 0 shares; the
// executor's children get /dev/null or pipes of their own as stdin, never fd 0.
func ProtocolStdin() (io.ReadCloser, error) {
	fd, err := syscall.Dup(0)
	if err != nil {
		return nil, fmt.Errorf("read stdin: dup fd 0: %w", err)
	}
	syscall.CloseOnExec(fd)
	return streamFile(fd, "protocol-in"), nil
}
