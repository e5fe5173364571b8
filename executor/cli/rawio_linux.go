package cli

import (
	"errors"
	"io"
	"os"
	"syscall"
	"unsafe"
)

// streamFile wraps fd for the protocol. A pipe or a socket becomes a rawFile; other files
// (a regular file, a terminal) stay plain blocking files.
func streamFile(fd int, name string) io.ReadWriteCloser {
	var st syscall.Stat_t
	if syscall.Fstat(fd, &st) == nil {
		if t := st.Mode & syscall.S_IFMT; t == syscall.S_IFIFO || t == syscall.S_IFSOCK {
			if syscall.SetNonblock(fd, true) == nil {
				// os.NewFile registers a nonblocking fd with the runtime's poller.
				f := os.NewFile(uintptr(fd), name)
				if rc, err := f.SyscallConn(); err == nil {
					return &rawFile{f: f, rc: rc}
				}
				return f
			}
		}
	}
	return os.NewFile(uintptr(fd), name)
}

// rawFile reads and writes a nonblocking pipe or socket with raw system calls and waits in
// the runtime's poller when the call would block.
//
// Why: the plain os.File path costs 20 to 25 us a round trip on the Docker exec path of a
// two-core VM. A blocking read parks a whole thread in the kernel, and every system call
// made through syscall.Syscall tells the scheduler it is entering one, which wakes the
// runtime's monitor thread (sysmon) from its deep sleep and keeps it polling every 20 us:
// a cross-CPU wake-up per message plus a busy neighbour for dockerd and containerd-shim.
// A read or write of a nonblocking descriptor never blocks, so the raw call is safe, and
// waiting happens in the poller, which involves neither.
type rawFile struct {
	f  *os.File
	rc syscall.RawConn
}

func (r *rawFile) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	var n int
	var errno syscall.Errno
	err := r.rc.Read(func(fd uintptr) bool {
		for {
			r1, _, e := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
			if e == syscall.EINTR {
				continue
			}
			n, errno = int(r1), e
			return e != syscall.EAGAIN
		}
	})
	switch {
	case errors.Is(err, os.ErrClosed):
		return 0, io.EOF // closed by this process: the session is over
	case err != nil:
		return 0, err
	case errno != 0:
		return 0, &os.PathError{Op: "read", Path: r.f.Name(), Err: errno}
	case n == 0:
		return 0, io.EOF
	}
	return n, nil
}

func (r *rawFile) Write(p []byte) (int, error) {
	done := 0
	var errno syscall.Errno
	err := r.rc.Write(func(fd uintptr) bool {
		for done < len(p) {
			r1, _, e := syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(&p[done])), uintptr(len(p)-done))
			switch e {
			case 0:
				done += int(r1)
			case syscall.EINTR:
			case syscall.EAGAIN:
				return false // wait until writable
			default:
				errno = e
				return true
			}
		}
		return true
	})
	if err != nil {
		return done, err
	}
	if errno != 0 {
		return done, &os.PathError{Op: "write", Path: r.f.Name(), Err: errno}
	}
	return done, nil
}

func (r *rawFile) Close() error { return r.f.Close() }
