//go:build !linux

package docker

import (
	"errors"
	"net"
)

// peerCredSupported says whether peerPID works here.
const peerCredSupported = false

func peerPID(c *net.UnixConn) (int, error) {
	return 0, errors.New("reading a unix socket peer's pid needs Linux")
}
