//go:build linux

package action

import (
	"fmt"
	"os"
	"strconv"
	"syscall"
	"unsafe"
)

// openPTY allocates a pseudo-terminal with the Linux /dev/ptmx ioctls (no cgo): the
// master, and the slave to give a command as its terminal. The slave keeps the kernel's
// default line discipline (echo, ICRNL, ONLCR, canonical input, ^D as end of file) and
// gets Codex's size, 80 columns by 24 rows.
func openPTY() (master, slave *os.File, err error) {
	master, err = os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("open pty: %w", err)
	}
	var n uint32
	unlock := int32(0)
	err = ioctl(master, syscall.TIOCSPTLCK, unsafe.Pointer(&unlock))
	if err == nil {
		err = ioctl(master, syscall.TIOCGPTN, unsafe.Pointer(&n))
	}
	if err != nil {
		master.Close()
		return nil, nil, fmt.Errorf("open pty: %w", err)
	}
	slave, err = os.OpenFile("/dev/pts/"+strconv.FormatUint(uint64(n), 10), os.O_RDWR|syscall.O_NOCTTY|syscall.O_CLOEXEC, 0)
	if err != nil {
		master.Close()
		return nil, nil, fmt.Errorf("open pty: %w", err)
	}
	size := [4]uint16{24, 80, 0, 0} // struct winsize: rows, columns, pixels
	if err := ioctl(slave, syscall.TIOCSWINSZ, unsafe.Pointer(&size)); err != nil {
		master.Close()
		slave.Close()
		return nil, nil, fmt.Errorf("open pty: size: %w", err)
	}
	return master, slave, nil
}

// ioctl runs an ioctl through SyscallConn, which, unlike Fd, leaves the file in
// non-blocking mode, so a Read of the master stays interruptible by Close.
func ioctl(f *os.File, req uintptr, arg unsafe.Pointer) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var errno syscall.Errno
	if err := rc.Control(func(fd uintptr) {
		_, _, errno = syscall.Syscall(syscall.SYS_IOCTL, fd, req, uintptr(arg))
	}); err != nil {
		return err
	}
	if errno != 0 {
		return errno
	}
	return nil
}

// ttyAttr makes the slave, the child's stdin (fd 0), its controlling terminal in a new
// session.
func ttyAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
}
