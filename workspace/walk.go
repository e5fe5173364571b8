package workspace

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
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
	// Through root, and each directory checked to be the one Lstat saw: a replay's sandbox
	// may still run the tape's commands, which can swap a directory for a link to the
	// host's files between its listing and its reading.
	var visit func(rel string, fi fs.FileInfo) error
	visit = func(rel string, fi fs.FileInfo) error {
		names, err := readDirNames(root, rel, fi)
		if err != nil {
			return err
		}
		for _, n := range names {
			p := n
			if rel != "." {
				p = rel + "/" + n
			}
			if err := ctx.Err(); err != nil {
				return err
			}
			if m.excludes(p) {
				continue // an excluded directory with all it holds
			}
			fi, err := root.Lstat(filepath.FromSlash(p))
			if errors.Is(err, fs.ErrNotExist) {
				continue // removed since the directory was read
			} else if err != nil {
				return err
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
				if it.link, err = root.Readlink(filepath.FromSlash(p)); err != nil {
					return err
				}
			default:
				t.skipped = append(t.skipped, p)
				continue
			}
			t.items = append(t.items, it)
			if maxEntries >= 0 && len(t.items) > maxEntries {
				return fmt.Errorf("%w: more than %d entries, the most a sandbox's manifest reads", ErrTooBig, maxEntries)
			}
			if maxBytes >= 0 && t.bytes > maxBytes {
				return fmt.Errorf("%w: more than %s of files (%s is %s), the most a sandbox's manifest hashes", ErrTooBig, sizeString(maxBytes), p, sizeString(it.size))
			}
			if it.typ == TypeDir {
				if err := visit(p, fi); err != nil {
					return err
				}
			}
		}
		return nil
	}
	top, err := root.Lstat(".")
	if err != nil {
		return nil, err
	}
	if err := visit(".", top); err != nil {
		return nil, err
	}
	return t, nil
}

// readDirNames lists the directory rel of root, sorted, after checking that it is the
// directory Lstat found as fi.
func readDirNames(root *os.Root, rel string, fi fs.FileInfo) ([]string, error) {
	f, err := root.Open(filepath.FromSlash(rel))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.IsDir() || !os.SameFile(fi, st) {
		return nil, fmt.Errorf("%s changed while it was read (a directory, now %v)", rel, st.Mode().Type())
	}
	names, err := f.Readdirnames(-1)
	if err != nil {
		return nil, err
	}
	slices.Sort(names)
	return names, nil
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
