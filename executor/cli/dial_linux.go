package cli

import (
	"context"
	"fmt"
	"io"
	"syscall"

	"github.com/tapebox/tapebox/executor"
)

// maxSocketPath is the longest path a unix socket address holds (sun_path is 108 bytes,
// NUL included).
const maxSocketPath = 107

// dialUnix connects to the unix socket at path and returns the connection as the protocol's
// stream. The executor dials out and never listens: the socket belongs to the controller, in a
// directory the sandbox can only read, so nothing in the sandbox can put another in its place.
func dialUnix(path string) (io.ReadWriteCloser, error) {
	if len(path) > maxSocketPath {
		return nil, fmt.Errorf("dial unix:%s: the path is %d bytes, over the %d a unix socket address holds", path, len(path), maxSocketPath)
	}
	fd, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("dial unix:%s: socket: %w", path, err)
	}
	for {
		err = syscall.Connect(fd, &syscall.SockaddrUnix{Name: path})
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		syscall.Close(fd)
		return nil, fmt.Errorf("dial unix:%s: connect: %w", path, err)
	}
	return streamFile(fd, "protocol-conn"), nil // nonblocking from here: the poller waits
}

// serveUnix runs one protocol session on a connection to the unix socket at path instead of
// stdin/stdout. stdin is the session's lifeline: its end (the controller closed the exec
// stream) ends the session, like the end of the connection does.
func serveUnix(ctx context.Context, path string, stdin io.Reader, stderr io.Writer) error {
	conn, err := dialUnix(path)
	if err != nil {
		return err
	}
	defer conn.Close()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		_, _ = io.Copy(io.Discard, stdin)
		cancel()
	}()
	context.AfterFunc(ctx, func() { conn.Close() })
	return executor.Serve(ctx, conn, conn, stderr)
}
