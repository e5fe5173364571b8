package tape

import (
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"sync"
)

// The one way TapeBox replaces a file: write a temporary file beside it, sync it, rename it
// over the path and sync the directory, so that the path holds either all of the new
// content or what it held before, and holds it after a crash. WriteFileAtomic does that for
// bytes, AtomicFile for a stream, AtomicBatch for many files of one directory (whose
// content it syncs only when asked to).

// WriteFileAtomic writes data to path (mode 0644 less the umask) through a synced
// temporary file and a rename, and syncs the directory. It refuses a path that holds
// anything but a regular file (CheckOutput) and makes path's directory.
func WriteFileAtomic(path string, data []byte) error {
	f, err := CreateAtomic(path, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	if _, err := f.Write(data); err != nil {
		return err
	}
	return f.Commit()
}

// AtomicFile is a file that replaces path when it is complete: writes go to a temporary
// file beside path, and Commit puts it in place. Close without Commit removes it, leaving
// path as it was.
type AtomicFile struct {
	f    *os.File
	path string
	done bool
}

// CreateAtomic starts an AtomicFile for path, of mode perm less the umask. It refuses a
// path that holds anything but a regular file (CheckOutput) and makes path's directory.
func CreateAtomic(path string, perm os.FileMode) (*AtomicFile, error) {
	if err := CheckOutput(path); err != nil {
		return nil, err
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	f, err := CreateTemp(dir, "."+filepath.Base(path)+".tmp-", perm)
	if err != nil {
		return nil, err
	}
	return &AtomicFile{f: f, path: path}, nil
}

// Write writes to the temporary file.
func (a *AtomicFile) Write(p []byte) (int, error) { return a.f.Write(p) }

// Commit syncs the temporary file, renames it to the path and syncs the directory. After
// a failed Commit the path is as it was and Close removes the temporary file.
func (a *AtomicFile) Commit() error {
	err := a.f.Sync()
	if cerr := a.f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(a.f.Name(), a.path)
	}
	if err != nil {
		os.Remove(a.f.Name())
		a.done = true
		return err
	}
	a.done = true
	return SyncDir(filepath.Dir(a.path))
}

// Close removes the temporary file unless Commit ran; it is safe to defer.
func (a *AtomicFile) Close() error {
	if a.done {
		return nil
	}
	a.done = true
	a.f.Close()
	return os.Remove(a.f.Name())
}

// AtomicBatch writes many files into the directory Dir, each atomically (a temporary file
// renamed into place: a reader sees the old file or the whole new one), and syncs them
// together: Sync syncs the directory once for all the renames, where WriteFileAtomic syncs
// a file and the directory for each. It is safe for concurrent use.
type AtomicBatch struct {
	// Dir is the directory the files go to; it must exist.
	Dir string
	// SyncFiles makes Sync sync every file written since the last Sync too (8 at a time),
	// so that their content is on disk when it returns. Without it (dataset import, which
	// must not wait for the disk file by file) the content is written back when the system
	// gets to it, and a crash before then can leave a renamed file empty or short, though
	// never a mix of the old file and the new.
	SyncFiles bool

	mu      sync.Mutex
	pending []string
}

// WriteFile writes data to the file name of Dir (mode 0644 less the umask) through a
// temporary file and a rename.
func (b *AtomicBatch) WriteFile(name string, data []byte) error {
	path := filepath.Join(b.Dir, name)
	f, err := CreateTemp(b.Dir, "."+name+".tmp-", 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		os.Remove(f.Name())
		return err
	}
	if b.SyncFiles {
		b.mu.Lock()
		b.pending = append(b.pending, path)
		b.mu.Unlock()
	}
	return nil
}

// syncers is how many files AtomicBatch.Sync syncs at once: a file system commits
// concurrent syncs together, where one after another each waits for its own commit.
const syncers = 8

// Sync makes the renames of the files written so far durable, and their content with
// SyncFiles: it syncs each file (with SyncFiles), then the directory.
func (b *AtomicBatch) Sync() error {
	b.mu.Lock()
	pending := b.pending
	b.pending = nil
	b.mu.Unlock()
	if !b.SyncFiles {
		return SyncDir(b.Dir)
	}
	errs := make([]error, len(pending))
	var wg sync.WaitGroup
	next := make(chan int)
	for range min(syncers, len(pending)) {
		wg.Go(func() {
			for i := range next {
				f, err := os.Open(pending[i])
				if err == nil {
					err = f.Sync()
					f.Close()
				}
				errs[i] = err
			}
		})
	}
	for i := range pending {
		next <- i
	}
	close(next)
	wg.Wait()
	return errors.Join(append(errs, SyncDir(b.Dir))...)
}

// CreateTemp creates a new file in dir named prefix and a random suffix, of mode perm less
// the umask (os.CreateTemp's 0600 would survive the rename into a file meant to be read by
// others).
func CreateTemp(dir, prefix string, perm os.FileMode) (*os.File, error) {
	for range 100 {
		name := filepath.Join(dir, prefix+strconv.FormatUint(rand.Uint64(), 36))
		f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, perm)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		return f, err
	}
	return nil, fmt.Errorf("create a temporary file %s* in %s: every name tried exists", prefix, dir)
}

// SyncDir syncs the directory dir, making the renames into it durable.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
