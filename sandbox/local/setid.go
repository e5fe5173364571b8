package local

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
)

// setIDBits are the mode bits that make a program run as its owner or group.
const setIDBits = fs.ModeSetuid | fs.ModeSetgid

// stripSetID clears the setuid and setgid bits of the regular files under dir, once the
// jail's processes have ended. DIR is nosuid in the jail, but not on the host, where it
// stays: run as root, a tape's "chmod 4755 x" left a setuid-root program there for any user
// of the machine who can reach DIR (a restore never writes those bits, nor does a manifest
// record them). Every directory is searched, those the tape made unreadable to their owner
// too ("chmod 0111 hide" still lets anyone run hide/sh by its name): such a directory gets
// the owner's read and search bits for the walk and its mode back afterwards. It goes
// through an os.Root on dir and follows no link.
func stripSetID(dir string) error {
	root, err := os.OpenRoot(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil // removed already: nothing left to run
	} else if err != nil {
		return fmt.Errorf("clear setuid bits in %s: %w", dir, err)
	}
	defer root.Close()
	return errors.Join(stripTree(root, dir, ".")...)
}

// stripTree clears the set-id bits under the directory p of root (dir on the host).
func stripTree(root *os.Root, dir, p string) []error {
	host := filepath.Join(dir, filepath.FromSlash(p))
	fi, err := root.Lstat(p)
	if err != nil || !fi.IsDir() {
		return nil // gone, or replaced: nothing of ours to walk
	}
	mode := fi.Mode() & (fs.ModePerm | fs.ModeSetgid | fs.ModeSticky)
	var errs []error
	if os.Geteuid() != 0 && fi.Mode().Perm()&0o500 != 0o500 {
		// Unreadable or unsearchable to its owner (us: the jail maps no other user); root
		// reads it anyway.
		if err := root.Chmod(p, mode|0o700); err != nil {
			return []error{fmt.Errorf("clear setuid bits in %s: open the directory: %w", host, err)}
		}
		defer func() {
			if err := root.Chmod(p, mode); err != nil {
				errs = append(errs, fmt.Errorf("clear setuid bits in %s: give the directory its mode back: %w", host, err))
			}
		}()
	}
	f, err := root.Open(p)
	if err != nil {
		return append(errs, fmt.Errorf("clear setuid bits in %s: %w", host, err))
	}
	entries, err := f.ReadDir(-1)
	f.Close()
	if err != nil {
		errs = append(errs, fmt.Errorf("clear setuid bits in %s: %w", host, err))
	}
	for _, e := range entries {
		child := path.Join(p, e.Name())
		switch {
		case e.IsDir():
			errs = append(errs, stripTree(root, dir, child)...)
		case e.Type().IsRegular():
			fi, err := root.Lstat(child)
			if err != nil || !fi.Mode().IsRegular() || fi.Mode()&setIDBits == 0 {
				continue
			}
			if err := root.Chmod(child, fi.Mode().Perm()|fi.Mode()&fs.ModeSticky); err != nil {
				errs = append(errs, fmt.Errorf("clear the setuid bits of %s: %w", filepath.Join(dir, filepath.FromSlash(child)), err))
			}
		}
	}
	return errs
}

// removeAll is os.RemoveAll for a tree whose directories a sandboxed command may have made
// unwritable to their owner.
func removeAll(dir string) error {
	if os.RemoveAll(dir) == nil {
		return nil
	}
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if d != nil && d.IsDir() {
			_ = os.Chmod(p, 0o700)
		}
		return nil
	})
	return os.RemoveAll(dir)
}
