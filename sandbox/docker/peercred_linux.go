package docker

import (
	"fmt"
	"net"
	"syscall"
)

// peerCredSupported says whether peerPID works here.
const peerCredSupported = true

// peerPID returns the pid of the process that connected c (SO_PEERCRED), in this process's
// pid namespace.
func peerPID(c *net.UnixConn) (int, error) {
	rc, err := c.SyscallConn()
	if err != nil {
		return 0, fmt.Errorf("read the peer's credentials: %w", err)
	}
	var cred *syscall.Ucred
	var cerr error
	if err := rc.Control(func(fd uintptr) {
		cred, cerr = syscall.GetsockoptUcred(int(fd), syscall.SOL_SOCKET, syscall.SO_PEERCRED)
	}); err != nil {
		return 0, fmt.Errorf("read the peer's credentials: %w", err)
	}
	if cerr != nil {
		return 0, fmt.Errorf("read the peer's credentials: %w", cerr)
	}
	return int(cred.Pid), nil
}
