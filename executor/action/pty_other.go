//go:build !linux

package action

import (
	"errors"
	"os"
	"syscall"
)

func openPTY() (master, slave *os.File, err error) {
	return nil, nil, errors.New("open pty: pseudo-terminals are supported on Linux only")
}

func ttyAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setsid: true} }
