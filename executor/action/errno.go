package action

import (
	"errors"
	"syscall"
)

func errnoCode(err error) (int, bool) {
	var en syscall.Errno
	if errors.As(err, &en) {
		return int(en), true
	}
	return 0, false
}
