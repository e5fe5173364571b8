package workspace

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
)

// WalkRoot calls fn for every entry under root, depth first and in name order, with its
// slash-separated path and its Lstat. It never follows a symbolic link: a tree that may
// still change (a sandbox whose background tasks run on) can swap a directory for a link to
// the host's files between its listing and its reading, so each directory is opened through
// root and checked to be the one Lstat saw (OpenSame), and an entry removed meanwhile is
// passed over. fn returning fs.SkipDir for a directory leaves out what it holds.
func WalkRoot(root *os.Root, fn func(rel string, fi fs.FileInfo) error) error {
	top, err := root.Lstat(".")
	if err != nil {
		return err
	}
	return walkRoot(root, ".", top, fn)
}

func walkRoot(root *os.Root, rel string, dir fs.FileInfo, fn func(rel string, fi fs.FileInfo) error) error {
	d, err := OpenSame(root, rel, dir)
	if err != nil {
		return err
	}
	names, err := d.Readdirnames(-1)
	d.Close()
	if err != nil {
		return err
	}
	slices.Sort(names)
	for _, n := range names {
		p := n
		if rel != "." {
			p = rel + "/" + n
		}
		fi, err := root.Lstat(filepath.FromSlash(p))
		if errors.Is(err, fs.ErrNotExist) {
			continue // removed since the directory was read
		} else if err != nil {
			return err
		}
		switch err := fn(p, fi); {
		case errors.Is(err, fs.SkipDir):
			continue
		case err != nil:
			return err
		}
		if fi.IsDir() {
			if err := walkRoot(root, p, fi, fn); err != nil {
				return err
			}
		}
	}
	return nil
}

// OpenSame opens rel (slash-separated) through root and checks that it is still the entry
// Lstat found as fi: the same file, of the same type.
func OpenSame(root *os.Root, rel string, fi fs.FileInfo) (*os.File, error) {
	f, err := root.Open(filepath.FromSlash(rel))
	if err != nil {
		return nil, err
	}
	got, err := f.Stat()
	if err == nil && (!os.SameFile(fi, got) || got.Mode().Type() != fi.Mode().Type()) {
		err = fmt.Errorf("%s changed while it was read (was %v, now %v)", rel, fi.Mode().Type(), got.Mode().Type())
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}
