package workspace

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// item is one entry found by walk.
type item struct {
	rel   string // slash-separated, relative to the workspace
	typ   string
	perm  fs.FileMode
	size  int64 // regular files
	mtime time.Time
	link  string // symbolic links
}

// tree is a walked workspace: its entries in walk order and what was left out.
type tree struct {
	dir     string // absolute, symbolic links resolved
	items   []item
	skipped []string // named pipes, sockets, devices
	bytes   int64    // file content
}

// walk lists the workspace dir without following symbolic links (dir itself may be one),
// leaving out what opts exclude.
func walk(ctx context.Context, dir string, opts Options) (*tree, error) {
	m, err := opts.matcher()
	if err != nil {
		return nil, err
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	if abs, err = filepath.EvalSymlinks(abs); err != nil {
		return nil, err
	}
	if fi, err := os.Stat(abs); err != nil {
		return nil, err
	} else if !fi.IsDir() {
		return nil, fmt.Errorf("%s is not a directory", abs)
	}
	t := &tree{dir: abs}
	maxBytes, maxEntries := opts.manifestLimit()
	root, err := os.OpenRoot(abs)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	// Through root (WalkRoot): a replay's sandbox may still run the tape's commands.
	err = WalkRoot(root, func(p string, fi fs.FileInfo) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		if m.excludes(p) {
			return fs.SkipDir // an excluded directory with all it holds, or an excluded file
		}
		it := item{rel: p, perm: fi.Mode().Perm(), mtime: fi.ModTime().Truncate(time.Second)}
		switch mode := fi.Mode(); {
		case mode.IsRegular():
			it.typ, it.size = TypeFile, fi.Size()
			t.bytes += fi.Size()
		case mode.IsDir():
			it.typ = TypeDir
		case mode&fs.ModeSymlink != 0:
			it.typ, it.perm = TypeSymlink, 0o777
			var err error
			if it.link, err = root.Readlink(filepath.FromSlash(p)); err != nil {
				return err
			}
		default:
			t.skipped = append(t.skipped, p)
			return nil
		}
		t.items = append(t.items, it)
		if maxEntries >= 0 && len(t.items) > maxEntries {
			return fmt.Errorf("%w: more than %d entries, the most a sandbox's manifest reads", ErrTooBig, maxEntries)
		}
		if maxBytes >= 0 && t.bytes > maxBytes {
			return fmt.Errorf("%w: more than %s of files (%s is %s), the most a sandbox's manifest hashes", ErrTooBig, sizeString(maxBytes), p, sizeString(it.size))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return t, nil
}

// open opens the regular file it of the tree through root and checks that it is still the
// file the walk saw.
func (t *tree) open(root *os.Root, it item) (*os.File, error) {
	f, err := root.Open(filepath.FromSlash(it.rel))
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !fi.Mode().IsRegular() || fi.Size() != it.size {
		f.Close()
		return nil, fmt.Errorf("%s changed while it was read (was a %d-byte file, now %v, %d bytes)", it.rel, it.size, fi.Mode().Type(), fi.Size())
	}
	return f, nil
}
