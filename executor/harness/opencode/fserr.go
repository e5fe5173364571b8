package opencode

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
)

// fsError words a failed file system operation as opencode's Effect platform does when a
// tool lets it through: "TAG: FileSystem.METHOD (PATH)", the tag from the errno (ENOENT
// NotFound, EACCES PermissionDenied, EEXIST AlreadyExists, EISDIR, ENOTDIR and ELOOP
// BadResource, EBUSY Busy, else Unknown).
func fsError(method, path string, err error) string {
	tag := "Unknown"
	var errno syscall.Errno
	if errors.As(err, &errno) {
		switch errno {
		case syscall.ENOENT:
			tag = "NotFound"
		case syscall.EACCES, syscall.EPERM:
			tag = "PermissionDenied"
		case syscall.EEXIST:
			tag = "AlreadyExists"
		case syscall.EISDIR, syscall.ENOTDIR, syscall.ELOOP:
			tag = "BadResource"
		case syscall.EBUSY:
			tag = "Busy"
		}
	}
	return tag + ": FileSystem." + method + " (" + path + ")"
}

// writeWithDirs is opencode's AppFileSystem.writeWithDirs: the file written (mode 0644
// when new), and when its directory is missing, the directories made first and the write
// tried again. The error is worded as fsError words it.
func writeWithDirs(p, text string, withBOM bool) error {
	if withBOM {
		text = bom + text
	}
	err := os.WriteFile(p, []byte(text), 0o644)
	if errors.Is(err, syscall.ENOENT) {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return errors.New(fsError("makeDirectory", filepath.Dir(p), err))
		}
		err = os.WriteFile(p, []byte(text), 0o644)
	}
	if err != nil {
		return errors.New(fsError("writeFile", p, err))
	}
	return nil
}
