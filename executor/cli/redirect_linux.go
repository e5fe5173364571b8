package cli

import (
	"fmt"
	"io"
	"os"
	"strconv"
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
	// O_NONBLOCK belongs to the open file, not the descriptor: when stdout and stderr are
	// one pipe (2>&1), children writing to stderr would share it and fail with EAGAIN
	// on a full pipe. Such an output stays blocking.
	shared := sameFile(fd, 2)
	if err := syscall.Dup3(2, 1, 0); err != nil {
		syscall.Close(fd)
		return nil, fmt.Errorf("redirect stdout: point fd 1 at stderr: %w", err)
	}
	if shared {
		return os.NewFile(uintptr(fd), "protocol-out"), nil
	}
	return streamFile(fd, "protocol-out"), nil
}

// sameFile says whether two descriptors refer to the same file (the same pipe, socket or
// inode), in which case they may share one open file and its flags.
func sameFile(a, b int) bool {
	var sa, sb syscall.Stat_t
	if syscall.Fstat(a, &sa) != nil || syscall.Fstat(b, &sb) != nil {
		return false
	}
	return sa.Dev == sb.Dev && sa.Ino == sb.Ino
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

// NotDumpable makes the process not dumpable (prctl PR_SET_DUMPABLE 0): the tape's
// commands run as the executor's user, and a process of the same user may otherwise open
// the executor's descriptors through /proc/PID/fd (reopening its protocol pipes, to write
// calls the controller never sent or replies it never asked for), read its memory or
// ptrace it. Without the capability to ptrace, none of that is allowed now. Its children
// are dumpable again once they exec.
func NotDumpable() error {
	if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, syscall.PR_SET_DUMPABLE, 0, 0); errno != 0 {
		return fmt.Errorf("make the executor not dumpable: %w", errno)
	}
	return nil
}

// KeepInheritedFiles marks every descriptor above 2 that the process inherited
// close-on-exec, so that none reaches the tape's commands. The executor's own are already;
// inherited ones are whatever the controller's process was given without FD_CLOEXEC and
// passed on (a local sandbox's bwrap passes its namespaces' descriptors, and its caller's
// leaks): a directory of the host among them would let a command open the host's files
// through /proc/self/fd/N. The executor keeps them, and, not dumpable, lets nobody take
// them.
func KeepInheritedFiles() error {
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return fmt.Errorf("list the executor's descriptors: %w", err)
	}
	for _, e := range entries {
		fd, err := strconv.Atoi(e.Name())
		if err != nil || fd <= 2 {
			continue
		}
		syscall.CloseOnExec(fd) // the directory's own descriptor, closed by now, fails harmlessly
	}
	return nil
}
