package sandbox

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/tapebox/tapebox/workspace"
)

// RestoreWorkspace puts the workspace snapshot at snapshotPath (made by workspace.Snapshot and
// described by info, as a tape records it) into the sandbox's working directory. The
// snapshot is verified first (workspace.Verify): one that does not match info or holds an
// entry that could reach outside is refused before anything reaches the sandbox. In a
// container its entries are copied into Cwd with the Engine API (CopyToContainer), over what
// the image has there, owned by the container's user; locally workspace.Restore extracts it
// into DIR, which must be empty.
func (s *Sandbox) RestoreWorkspace(ctx context.Context, snapshotPath string, info workspace.Info) error {
	if err := s.checkOpen("restore workspace " + snapshotPath); err != nil {
		return err
	}
	f, err := os.Open(snapshotPath)
	if err != nil {
		return fmt.Errorf("restore workspace in %s: %w", s.spec, err)
	}
	defer f.Close()
	return s.b.RestoreWorkspace(ctx, f, info)
}

// WorkspaceManifest returns the manifest of the sandbox's working directory, its end state
// for comparison with a recording's (workspace.Diff), leaving out what opts exclude. A
// container's directory is read as one tar stream from the Engine API (CopyFromContainer)
// and hashed as it arrives, never holding a whole file; a local one is walked.
func (s *Sandbox) WorkspaceManifest(ctx context.Context, opts workspace.Options) (workspace.Manifest, error) {
	if err := s.checkOpen("workspace manifest"); err != nil {
		return nil, err
	}
	return s.b.WorkspaceManifest(ctx, opts)
}

// maxSnapshot bounds the bytes a Snapshot reads into memory.
const maxSnapshot = 2 << 30

// ReadTar turns an archive of a directory, as the Engine API's CopyFromContainer (or tar -c
// -C PARENT BASE) makes it, into Snapshot's map.
// Its entries are named "<base of dir>/<path>"; the first element is dropped and the
// directory's own entry is left out.
func ReadTar(r io.Reader) (map[string]File, error) {
	files := map[string]File{}
	tr := tar.NewReader(r)
	var total int64
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return files, nil
		}
		if err != nil {
			return nil, fmt.Errorf("read the archive: %w", err)
		}
		name := strings.TrimSuffix(path.Clean(hdr.Name), "/")
		_, rel, ok := strings.Cut(name, "/")
		if !ok || rel == "" {
			continue // the directory itself
		}
		f := File{Mode: hdr.FileInfo().Mode()}
		switch hdr.Typeflag {
		case tar.TypeReg:
			total += hdr.Size
			if total > maxSnapshot {
				return nil, fmt.Errorf("more than %d bytes of files: snapshot a smaller directory", maxSnapshot)
			}
			f.Data = make([]byte, hdr.Size)
			if _, err := io.ReadFull(tr, f.Data); err != nil {
				return nil, fmt.Errorf("read %s from the archive: %w", rel, err)
			}
		case tar.TypeLink:
			// A hard link to an earlier entry: the same contents.
			_, target, _ := strings.Cut(path.Clean(hdr.Linkname), "/")
			orig, ok := files[target]
			if !ok {
				return nil, fmt.Errorf("hard link %s to %s: target not in the archive", rel, hdr.Linkname)
			}
			f = File{Mode: orig.Mode, Data: orig.Data}
		case tar.TypeSymlink:
			f.Link = hdr.Linkname
		}
		files[rel] = f
	}
}

// WriteTar writes WriteFiles's files as an archive, owned by owner. Directories come before what they
// hold.
func WriteTar(w io.Writer, files map[string]File, owner workspace.Owner) error {
	tw := tar.NewWriter(w)
	now := time.Now()
	for _, n := range slices.Sorted(maps.Keys(files)) {
		f := files[n]
		hdr := &tar.Header{Name: n, Mode: int64(f.Mode.Perm()), ModTime: now, Uid: owner.UID, Gid: owner.GID}
		switch {
		case f.Mode.IsDir():
			hdr.Typeflag, hdr.Name = tar.TypeDir, hdr.Name+"/"
			if f.Mode.Perm() == 0 {
				hdr.Mode = 0o755
			}
		case f.Mode&fs.ModeSymlink != 0:
			hdr.Typeflag, hdr.Linkname = tar.TypeSymlink, f.Link
			hdr.Mode = 0o777
		case f.Mode.IsRegular():
			hdr.Typeflag, hdr.Size = tar.TypeReg, int64(len(f.Data))
			if f.Mode.Perm() == 0 {
				hdr.Mode = 0o644
			}
		default:
			return fmt.Errorf("%s: unsupported file type %v: only files, directories and symbolic links", n, f.Mode.Type())
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return fmt.Errorf("%s: %w", n, err)
		}
		if hdr.Typeflag == tar.TypeReg {
			if _, err := tw.Write(f.Data); err != nil {
				return fmt.Errorf("%s: %w", n, err)
			}
		}
	}
	return tw.Close()
}

// ReadDir reads the host directory dir as Snapshot returns it, through an os.Root on dir
// (workspace.WalkRoot, workspace.OpenSame): the tape's commands may still run (background
// tasks) and swap a file or a directory for a symbolic link to the host's files while the
// tree is read, which a path-based read would follow.
func ReadDir(dir string) (map[string]File, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	files := map[string]File{}
	var total int64
	err = workspace.WalkRoot(root, func(p string, fi fs.FileInfo) error {
		f := File{Mode: fi.Mode()}
		var err error
		switch {
		case fi.Mode().IsRegular():
			total += fi.Size()
			if total > maxSnapshot {
				return fmt.Errorf("more than %d bytes of files: snapshot a smaller directory", maxSnapshot)
			}
			if f.Data, err = readSame(root, p, fi); err != nil {
				return err
			}
		case fi.Mode()&fs.ModeSymlink != 0:
			if f.Link, err = root.Readlink(filepath.FromSlash(p)); err != nil {
				return err
			}
		}
		files[p] = f
		return nil
	})
	if err != nil {
		return nil, err
	}
	return files, nil
}

// readSame reads the regular file rel of root, at most the size Lstat found as fi.
func readSame(root *os.Root, rel string, fi fs.FileInfo) ([]byte, error) {
	f, err := workspace.OpenSame(root, rel, fi)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data := make([]byte, fi.Size())
	n, err := io.ReadFull(f, data)
	if errors.Is(err, io.ErrUnexpectedEOF) {
		err = nil // shrunk meanwhile
	}
	return data[:n], err
}

// WriteDir writes files under the host directory dir as WriteFiles does, through an os.Root
// on dir: a name with "..", or a symbolic link the tape's commands left in dir, cannot lead
// a write outside it.
func WriteDir(dir string, files map[string]File) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	for _, n := range slices.Sorted(maps.Keys(files)) {
		f := files[n]
		p := filepath.FromSlash(n)
		if err := root.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		switch {
		case f.Mode.IsDir():
			perm := f.Mode.Perm()
			if perm == 0 {
				perm = 0o755
			}
			if err := root.MkdirAll(p, perm); err != nil {
				return err
			}
			if err := root.Chmod(p, perm); err != nil {
				return err
			}
		case f.Mode&fs.ModeSymlink != 0:
			if err := root.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
			if err := root.Symlink(f.Link, p); err != nil {
				return err
			}
		case f.Mode.IsRegular():
			perm := f.Mode.Perm()
			if perm == 0 {
				perm = 0o644
			}
			if fi, err := root.Lstat(p); err == nil && !fi.Mode().IsRegular() {
				if err := root.RemoveAll(p); err != nil {
					return err
				}
			}
			if err := root.WriteFile(p, f.Data, perm); err != nil {
				return err
			}
			if err := root.Chmod(p, perm); err != nil {
				return err
			}
		default:
			return fmt.Errorf("%s: unsupported file type %v: only files, directories and symbolic links", n, f.Mode.Type())
		}
	}
	return nil
}
