package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"

	"github.com/tapebox/tapebox/executor"
)

// maxSocketPath is the longest path a unix socket address holds (sun_path is 108 bytes,
// NUL included).
const maxSocketPath = 107

// listenUnix listens on a unix socket at path for one connection. A socket already at path
// (left by an executor that died) is removed first; another kind of file is an error. The
// socket is made connectable by any user: the directory that holds it decides who reaches it.
func listenUnix(path string) (*os.File, error) {
	if len(path) > maxSocketPath {
		return nil, fmt.Errorf("listen on unix:%s: the path is %d bytes, over the %d a unix socket address holds", path, len(path), maxSocketPath)
	}
	var st syscall.Stat_t
	if err := syscall.Lstat(path, &st); err == nil {
		if st.Mode&syscall.S_IFMT != syscall.S_IFSOCK {
			return nil, fmt.Errorf("listen on unix:%s: a file that is not a socket is in the way", path)
		}
		if err := syscall.Unlink(path); err != nil {
			return nil, fmt.Errorf("listen on unix:%s: remove the stale socket: %w", path, err)
		}
	}
	fd, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC|syscall.SOCK_NONBLOCK, 0)
	if err != nil {
		return nil, fmt.Errorf("listen on unix:%s: socket: %w", path, err)
	}
	if err := syscall.Bind(fd, &syscall.SockaddrUnix{Name: path}); err != nil {
		syscall.Close(fd)
		return nil, fmt.Errorf("listen on unix:%s: bind: %w (is the directory there and writable?)", path, err)
	}
	if err := syscall.Chmod(path, 0o666); err != nil {
		syscall.Close(fd)
		syscall.Unlink(path)
		return nil, fmt.Errorf("listen on unix:%s: chmod: %w", path, err)
	}
	if err := syscall.Listen(fd, 1); err != nil {
		syscall.Close(fd)
		syscall.Unlink(path)
		return nil, fmt.Errorf("listen on unix:%s: listen: %w", path, err)
	}
	return os.NewFile(uintptr(fd), "unix:"+path), nil // nonblocking: the poller waits for accept
}

// acceptOne waits for one connection on ln and returns it as the protocol's stream. Closing
// ln ends the wait with an error.
func acceptOne(ln *os.File) (io.ReadWriteCloser, error) {
	rc, err := ln.SyscallConn()
	if err != nil {
		return nil, fmt.Errorf("accept on %s: %w", ln.Name(), err)
	}
	nfd := -1
	var aerr error
	err = rc.Read(func(fd uintptr) bool {
		nfd, _, aerr = syscall.Accept4(int(fd), syscall.SOCK_CLOEXEC|syscall.SOCK_NONBLOCK)
		return !errors.Is(aerr, syscall.EAGAIN) && !errors.Is(aerr, syscall.EINTR)
	})
	if err == nil {
		err = aerr
	}
	if err != nil {
		return nil, fmt.Errorf("accept on %s: %w", ln.Name(), err)
	}
	return streamFile(nfd, "protocol-conn"), nil
}

// serveUnix runs one protocol session on a connection to a unix socket at path instead of
// stdin/stdout. ready (the exec's stdout) gets one line, "listening unix:PATH", once a client
// may connect; the socket file is removed once one has. stdin is the session's lifeline: its
// end (the controller closed the exec stream) ends the wait or the session, like the end of
// the connection does.
func serveUnix(ctx context.Context, path string, stdin io.Reader, ready io.Writer, stderr io.Writer) error {
	ln, err := listenUnix(path)
	if err != nil {
		return err
	}
	defer ln.Close()
	defer syscall.Unlink(path) // in case no client came
	if _, err := fmt.Fprintf(ready, "listening unix:%s\n", path); err != nil {
		return fmt.Errorf("announce unix:%s: %w", path, err)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		_, _ = io.Copy(io.Discard, stdin)
		cancel()
	}()
	stop := context.AfterFunc(ctx, func() { ln.Close() })
	conn, err := acceptOne(ln)
	stop()
	if err != nil {
		if ctx.Err() != nil {
			return nil // told to stop before a client came
		}
		return err
	}
	syscall.Unlink(path)
	ln.Close()
	defer conn.Close()
	context.AfterFunc(ctx, func() { conn.Close() })
	return executor.Serve(ctx, conn, conn, stderr)
}
