package action

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"syscall"
)

// StateDir is the executor's own state directory (background tasks, saved outputs). Nothing
// is created until Make asks for a subdirectory, so a session that needs no state leaves no
// directory behind.
type StateDir struct {
	// Path is the directory.
	Path string
	// Shared says Path is the default, in the system's temporary directory. Any user may
	// create entries there, and a tape's commands may have planted one at this predictable
	// name (a symbolic link to a directory of the user's, say), so Make creates Path mode
	// 0700 and refuses it when it is a symbolic link or not a directory owned by this user;
	// Prune removes it once empty.
	Shared bool

	// mu orders Make against Prune: a directory being made is not removed as empty.
	mu sync.Mutex
}

// ErrUnsafeStateDir is returned by Make for a shared state directory it refuses to use.
var ErrUnsafeStateDir = errors.New("refusing to use the state directory")

// Make creates the state directory and its subdirectory elem (a path below it, such as
// "tasks", id), where missing, and returns the subdirectory's path.
func (d *StateDir) Make(elem ...string) (string, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	var err error
	// Another executor on the same state directory (a "tapebox-exec call" beside a session)
	// may Prune what this one has just made: start again, a few times.
	for range 3 {
		var p string
		if p, err = d.make(elem); err == nil || !errors.Is(err, fs.ErrNotExist) {
			return p, err
		}
	}
	return "", err
}

func (d *StateDir) make(elem []string) (string, error) {
	if err := d.makeRoot(); err != nil {
		return "", err
	}
	p := d.Path
	for _, e := range elem {
		p = filepath.Join(p, e)
		if err := os.Mkdir(p, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
			return "", fmt.Errorf("state directory: %w", err)
		}
	}
	return p, nil
}

func (d *StateDir) makeRoot() error {
	if !d.Shared {
		if err := os.MkdirAll(d.Path, 0o700); err != nil {
			return fmt.Errorf("state directory: %w", err)
		}
		return nil
	}
	// Mkdir does not follow a symbolic link in the last element: whatever it finds in the
	// way is checked with Lstat.
	err := os.Mkdir(d.Path, 0o700)
	if err == nil {
		return nil
	}
	if !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("state directory: %w", err)
	}
	fi, err := os.Lstat(d.Path)
	if err != nil {
		return fmt.Errorf("state directory: %w", err)
	}
	why := ""
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		why = "it is a symbolic link"
	case !fi.IsDir():
		why = "it is not a directory"
	default:
		if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Getuid() {
			why = fmt.Sprintf("it belongs to uid %d, not %d", st.Uid, os.Getuid())
		}
	}
	if why != "" {
		return fmt.Errorf("%w %s: %s (remove it, or name another in hello's state_dir)", ErrUnsafeStateDir, d.Path, why)
	}
	return nil
}

// Prune removes the subdirectory sub once it is empty, and then the state directory itself
// when it is the shared default and empty too. An explicit state directory may be the
// caller's own, so it stays.
func (d *StateDir) Prune(sub string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if syscall.Rmdir(filepath.Join(d.Path, sub)) == nil && d.Shared {
		_ = syscall.Rmdir(d.Path)
	}
}
