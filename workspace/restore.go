package workspace

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/klauspost/compress/zstd"
)

// Errors Verify, Restore and Tar wrap, with the snapshot and the entry.
var (
	// ErrMismatch: the snapshot is not the one its Info describes (digest, size, entries or
	// bytes differ).
	ErrMismatch = errors.New("snapshot does not match its record")
	// ErrUnsafe: an entry of the snapshot is refused (see the package doc).
	ErrUnsafe = errors.New("unsafe snapshot entry")
	// ErrNotEmpty: Restore's target directory already holds something.
	ErrNotEmpty = errors.New("directory not empty")
)

// snapshotName names src in errors: its file name when it has one.
func snapshotName(src io.ReaderAt) string {
	if n, ok := src.(interface{ Name() string }); ok {
		return n.Name()
	}
	return "snapshot"
}

// entry is a checked tar entry.
type entry struct {
	name    string // clean, relative
	typ     byte   // tar.TypeReg, TypeDir, TypeSymlink or TypeLink
	perm    fs.FileMode
	size    int64
	link    string // symlink target or hard link's earlier file
	mtime   time.Time
	parents []string // missing directories to create first, outermost first
	again   bool     // a directory created earlier as a missing parent
}

// checker holds what earlier entries of an archive made, to check the next one.
type checker struct {
	seen     map[string]byte // path -> tar type; 0 for a directory made as a parent
	files    int
	bytes    int64
	maxFiles int   // -1: no limit
	maxBytes int64 // -1: no limit
	names    int64 // bytes of the names in seen
	name     string
}

func newChecker(name string, want *Info) *checker {
	c := &checker{seen: map[string]byte{}, maxFiles: -1, maxBytes: -1, name: name}
	if want != nil {
		c.maxFiles, c.maxBytes = want.Files, want.Bytes
	}
	return c
}

func (c *checker) refuse(hdr *tar.Header, format string, args ...any) error {
	return fmt.Errorf("%s: %w %q: %s", c.name, ErrUnsafe, hdr.Name, fmt.Sprintf(format, args...))
}

// check checks the next header; skip is set for the root's own entry.
func (c *checker) check(hdr *tar.Header) (e entry, skip bool, err error) {
	name := strings.TrimSuffix(strings.TrimPrefix(hdr.Name, "./"), "/")
	if name == "" || name == "." {
		if hdr.Typeflag != tar.TypeDir {
			return e, false, c.refuse(hdr, "names the root but is not a directory")
		}
		return e, true, nil
	}
	if strings.HasPrefix(hdr.Name, "/") {
		return e, false, c.refuse(hdr, "absolute path")
	}
	if !fs.ValidPath(name) || strings.ContainsRune(name, 0) {
		return e, false, c.refuse(hdr, "not a clean relative path (no . or .. elements, no empty ones)")
	}
	if len(name) > MaxNameBytes || len(hdr.Linkname) > MaxNameBytes {
		return e, false, c.refuse(hdr, "a name or link target over %d bytes", MaxNameBytes)
	}
	if c.names += int64(len(name)); c.maxFiles >= 0 && c.names > UntrustedMaxNameBytes {
		return e, false, fmt.Errorf("%s: %w: names of more than %s together", c.name, ErrTooBig, sizeString(UntrustedMaxNameBytes))
	}
	if isSparse(hdr) {
		// A few bytes of sparse map can stand for a terabyte of zeros.
		return e, false, c.refuse(hdr, "sparse file: not restored")
	}
	e = entry{name: name, typ: hdr.Typeflag, perm: fs.FileMode(hdr.Mode).Perm(), mtime: hdr.ModTime}
	if prev, ok := c.seen[name]; ok {
		if !(prev == 0 && e.typ == tar.TypeDir) {
			return e, false, c.refuse(hdr, "appears twice")
		}
		e.again = true
	}
	for i := range len(name) {
		if name[i] != '/' {
			continue
		}
		dir := name[:i]
		switch t, ok := c.seen[dir]; {
		case !ok:
			e.parents = append(e.parents, dir)
		case t == tar.TypeSymlink:
			return e, false, c.refuse(hdr, "lies under %s, a symbolic link of the archive", dir)
		case t != tar.TypeDir && t != 0:
			return e, false, c.refuse(hdr, "lies under %s, which is not a directory", dir)
		}
	}
	switch e.typ {
	case tar.TypeReg:
		e.size = hdr.Size
	case tar.TypeDir:
	case tar.TypeSymlink:
		if hdr.Linkname == "" || strings.ContainsRune(hdr.Linkname, 0) {
			return e, false, c.refuse(hdr, "symbolic link without a target")
		}
		e.link, e.perm = hdr.Linkname, 0o777
	case tar.TypeLink:
		target := strings.TrimPrefix(hdr.Linkname, "./")
		if t, ok := c.seen[target]; !ok || t != tar.TypeReg || !fs.ValidPath(target) {
			return e, false, c.refuse(hdr, "hard link to %q: only links to an earlier regular file of the archive are restored", hdr.Linkname)
		}
		e.link = target
	default:
		return e, false, c.refuse(hdr, "type %q: only regular files, directories, symbolic links and hard links are restored", hdr.Typeflag)
	}
	for _, p := range e.parents {
		c.seen[p] = 0
	}
	if e.typ == tar.TypeLink {
		c.seen[name] = tar.TypeReg
	} else {
		c.seen[name] = e.typ
	}
	// Files counts what Restore creates: parents it adds, not a directory it made already.
	c.files += len(e.parents)
	if !e.again {
		c.files++
	}
	c.bytes += e.size
	if c.maxFiles >= 0 && c.files > c.maxFiles {
		return e, false, fmt.Errorf("%s: %w: more than the %d entries recorded", c.name, ErrMismatch, c.maxFiles)
	}
	if c.maxBytes >= 0 && c.bytes > c.maxBytes {
		return e, false, fmt.Errorf("%s: %w: more than the %d bytes of files recorded", c.name, ErrMismatch, c.maxBytes)
	}
	return e, false, nil
}

// isSparse reports a GNU sparse file, in the old GNU format or in PAX records.
func isSparse(hdr *tar.Header) bool {
	if hdr.Typeflag == tar.TypeGNUSparse {
		return true
	}
	for k := range hdr.PAXRecords {
		if strings.HasPrefix(k, "GNU.sparse.") {
			return true
		}
	}
	return false
}

// Verify reads the snapshot in src (want.Size bytes from offset 0) once, without writing
// anything: its digest and size must be want's, every entry must pass the checks of the
// package doc, and its entries and bytes must be want.Files and want.Bytes. A digest that
// differs is reported before a bad entry.
func Verify(src io.ReaderAt, want Info) error {
	_, err := scan(src, &want)
	return err
}

// scan hashes and checks the snapshot, against want when it is not nil, and describes it.
func scan(src io.ReaderAt, want *Info) (Info, error) {
	name := snapshotName(src)
	size := int64(1<<63 - 1)
	if want != nil {
		if !strings.HasPrefix(want.Digest, "sha256:") || len(want.Digest) != len("sha256:")+64 {
			return Info{}, fmt.Errorf("verify %s: %w: the recorded digest %q is not sha256:<64 hex digits>", name, ErrMismatch, want.Digest)
		}
		size = want.Size
		if size < 0 {
			return Info{}, fmt.Errorf("verify %s: %w: the recorded size %d is negative", name, ErrMismatch, size)
		}
		if more, _ := src.ReadAt(make([]byte, 1), size); more > 0 {
			return Info{}, fmt.Errorf("verify %s: %w: more than the %d bytes recorded", name, ErrMismatch, size)
		}
		if err := checkInfo(name, *want); err != nil {
			return Info{}, fmt.Errorf("verify %w", err)
		}
	}
	h := sha256.New()
	sr := io.NewSectionReader(src, 0, size)
	cr := &countReader{r: io.TeeReader(sr, h)}
	c := newChecker(name, want)
	entryErr := func() error {
		dec, err := newDecoder(cr)
		if err != nil {
			return err
		}
		defer dec.Close()
		tr := tar.NewReader(archiveLimit(dec, name, want))
		for {
			hdr, err := tr.Next()
			if errors.Is(err, io.EOF) {
				return nil
			}
			if err != nil {
				return fmt.Errorf("%s: read the archive: %w", name, err)
			}
			if _, _, err := c.check(hdr); err != nil {
				return err
			}
		}
	}()
	// Hash what the decoder did not read: the digest covers the whole file.
	if _, err := io.Copy(io.Discard, cr); err != nil {
		return Info{}, fmt.Errorf("verify %s: %w", name, err)
	}
	got := Info{Digest: "sha256:" + hex.EncodeToString(h.Sum(nil)), Size: cr.n, Files: c.files, Bytes: c.bytes}
	if want != nil {
		switch {
		case got.Size != want.Size:
			return got, fmt.Errorf("verify %s: %w: %d bytes, recorded %d", name, ErrMismatch, got.Size, want.Size)
		case got.Digest != want.Digest:
			return got, fmt.Errorf("verify %s: %w: digest %s, recorded %s", name, ErrMismatch, got.Digest, want.Digest)
		}
	}
	if entryErr != nil {
		return got, fmt.Errorf("verify %w", entryErr)
	}
	if want != nil && (got.Files != want.Files || got.Bytes != want.Bytes) {
		return got, fmt.Errorf("verify %s: %w: %d entries and %d bytes of files, recorded %d and %d", name, ErrMismatch, got.Files, got.Bytes, want.Files, want.Bytes)
	}
	return got, nil
}

type countReader struct {
	r io.Reader
	n int64
}

func (c *countReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// Restore extracts the snapshot in src into dir, which must be empty or missing (it is
// created). It verifies the snapshot first (see Verify): a snapshot that does not match want
// or holds a bad entry is refused before anything is written. Permission bits and
// modification times are restored (those of symbolic links excepted); owners, setuid, setgid
// and sticky bits are not. Nothing is written outside dir: every write goes through an
// os.Root opened on it. want.Bytes bounds the content written; it comes from the tape, so
// check it against a limit of your own first when the tape is a stranger's.
func Restore(ctx context.Context, src io.ReaderAt, want Info, dir string) error {
	if err := Verify(src, want); err != nil {
		return fmt.Errorf("restore into %s: %w", dir, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("restore into %s: %w", dir, err)
	}
	if names, err := readNames(dir); err != nil {
		return fmt.Errorf("restore into %s: %w", dir, err)
	} else if len(names) > 0 {
		return fmt.Errorf("restore into %s: %w: it holds %s; restore into an empty directory", dir, ErrNotEmpty, strings.Join(names, ", "))
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return fmt.Errorf("restore into %s: %w", dir, err)
	}
	defer root.Close()
	if err := extract(ctx, src, want, root); err != nil {
		return fmt.Errorf("restore into %s: %w", dir, err)
	}
	return nil
}

// readNames lists up to three names in dir.
func readNames(dir string) ([]string, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	names, err := f.Readdirnames(3)
	if errors.Is(err, io.EOF) {
		err = nil
	}
	return names, err
}

// extract is Restore's second pass: it checks every entry again (src may have changed since
// Verify) and the digest at the end.
func extract(ctx context.Context, src io.ReaderAt, want Info, root *os.Root) error {
	name := snapshotName(src)
	h := sha256.New()
	raw := io.TeeReader(io.NewSectionReader(src, 0, want.Size), h)
	dec, err := newDecoder(raw)
	if err != nil {
		return err
	}
	defer dec.Close()
	tr := tar.NewReader(archiveLimit(dec, name, &want))
	c := newChecker(name, &want)
	type dirTimes struct {
		name  string
		perm  fs.FileMode
		mtime time.Time
	}
	var dirs []dirTimes
	buf := make([]byte, 256<<10)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("%s: read the archive: %w", name, err)
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		e, skip, err := c.check(hdr)
		if err != nil {
			return err
		}
		if skip {
			continue
		}
		for _, p := range e.parents {
			if err := root.Mkdir(filepath.FromSlash(p), 0o755); err != nil {
				return fmt.Errorf("%s: create %s: %w", name, p, err)
			}
		}
		osName := filepath.FromSlash(e.name)
		switch e.typ {
		case tar.TypeDir:
			// Owner-writable until the end, so that what it holds can be created.
			if !e.again {
				if err := root.Mkdir(osName, 0o700); err != nil {
					return fmt.Errorf("%s: create %s: %w", name, e.name, err)
				}
			}
			dirs = append(dirs, dirTimes{osName, e.perm, e.mtime})
		case tar.TypeReg:
			if err := writeFile(root, osName, tr, e, buf); err != nil {
				return fmt.Errorf("%s: write %s: %w", name, e.name, err)
			}
		case tar.TypeSymlink:
			if err := root.Symlink(e.link, osName); err != nil {
				return fmt.Errorf("%s: create %s: %w", name, e.name, err)
			}
		case tar.TypeLink:
			if err := root.Link(filepath.FromSlash(e.link), osName); err != nil {
				return fmt.Errorf("%s: link %s: %w", name, e.name, err)
			}
		}
	}
	// The tar reader stops at the end-of-archive blocks; hash what follows as Verify did.
	dec.Close()
	if _, err := io.Copy(io.Discard, raw); err != nil {
		return fmt.Errorf("%s: read the archive: %w", name, err)
	}
	if got := "sha256:" + hex.EncodeToString(h.Sum(nil)); got != want.Digest {
		return fmt.Errorf("%s: %w: changed while it was restored (digest %s, recorded %s)", name, ErrMismatch, got, want.Digest)
	}
	// Innermost first: a directory made read-only must not stop its subdirectories.
	slices.Reverse(dirs)
	for _, d := range dirs {
		if err := root.Chmod(d.name, d.perm); err != nil {
			return fmt.Errorf("%s: chmod %s: %w", name, d.name, err)
		}
		if err := root.Chtimes(d.name, d.mtime, d.mtime); err != nil {
			return fmt.Errorf("%s: set the time of %s: %w", name, d.name, err)
		}
	}
	return nil
}

func writeFile(root *os.Root, name string, r io.Reader, e entry, buf []byte) error {
	// O_EXCL: the directory was empty and names are unique, so the file cannot exist; a
	// symbolic link put there meanwhile is not followed.
	f, err := root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	n, err := io.CopyBuffer(struct{ io.Writer }{f}, r, buf)
	if err == nil && n != e.size {
		err = fmt.Errorf("%d bytes of %d", n, e.size)
	}
	if err == nil {
		err = f.Chmod(e.perm)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = root.Chtimes(name, e.mtime, e.mtime)
	}
	return err
}

// Owner is whom the entries of a Tar stream belong to, by number; the zero value is root.
type Owner struct{ UID, GID int }

// Tar verifies the snapshot in src (see Verify) and returns its content as an uncompressed
// tar stream, entries checked again as they are read and rewritten in a normal form: clean
// relative names, missing parent directories added, permission bits only, owned by owner. It
// is for the Docker Engine API's CopyToContainer, which extracts it under a directory with
// the owners the headers give. A digest that differs at the end of the stream (src changed
// since) makes the last Read fail. Close releases the decoder.
func Tar(src io.ReaderAt, want Info, owner Owner) (io.ReadCloser, error) {
	if err := Verify(src, want); err != nil {
		return nil, err
	}
	h := sha256.New()
	raw := io.TeeReader(io.NewSectionReader(src, 0, want.Size), h)
	dec, err := newDecoder(raw)
	if err != nil {
		return nil, err
	}
	name := snapshotName(src)
	s := &tarStream{name: name, want: want.Digest, owner: owner, h: h, raw: raw, dec: dec, tr: tar.NewReader(archiveLimit(dec, name, &want)), c: newChecker(name, &want)}
	s.tw = tar.NewWriter(&s.buf)
	return s, nil
}

// tarStream rewrites the snapshot's tar as it is read, with no goroutine: each Read refills
// buf with the next header or the next piece of content.
type tarStream struct {
	name, want string
	owner      Owner
	h          hash.Hash
	raw        io.Reader // the compressed snapshot, through h
	dec        *zstd.Decoder
	tr         *tar.Reader
	tw         *tar.Writer
	c          *checker
	buf        bytes.Buffer
	left       int64 // content of the current entry still to copy
	err        error
}

func (s *tarStream) Read(p []byte) (int, error) {
	for s.buf.Len() == 0 && s.err == nil {
		s.err = s.fill()
	}
	if s.buf.Len() > 0 {
		return s.buf.Read(p)
	}
	return 0, s.err
}

func (s *tarStream) Close() error {
	s.dec.Close()
	if s.err == nil {
		s.err = errors.New("tar stream closed")
	}
	return nil
}

const chunk = 256 << 10

func (s *tarStream) fill() error {
	if s.left > 0 {
		n, err := io.CopyN(s.tw, s.tr, min(s.left, chunk))
		s.left -= n
		if err != nil {
			return fmt.Errorf("%s: read the archive: %w", s.name, err)
		}
		return nil
	}
	hdr, err := s.tr.Next()
	if errors.Is(err, io.EOF) {
		s.dec.Close()
		if _, err := io.Copy(io.Discard, s.raw); err != nil {
			return fmt.Errorf("%s: read the archive: %w", s.name, err)
		}
		if got := "sha256:" + hex.EncodeToString(s.h.Sum(nil)); got != s.want {
			return fmt.Errorf("%s: %w: changed while it was read (digest %s, recorded %s)", s.name, ErrMismatch, got, s.want)
		}
		if err := s.tw.Close(); err != nil {
			return err
		}
		return io.EOF
	}
	if err != nil {
		return fmt.Errorf("%s: read the archive: %w", s.name, err)
	}
	e, skip, err := s.c.check(hdr)
	if err != nil || skip {
		return err
	}
	for _, p := range e.parents {
		if err := s.tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: p + "/", Mode: 0o755, ModTime: e.mtime, Uid: s.owner.UID, Gid: s.owner.GID}); err != nil {
			return err
		}
	}
	out := &tar.Header{Typeflag: e.typ, Name: e.name, Mode: int64(e.perm), ModTime: e.mtime, Uid: s.owner.UID, Gid: s.owner.GID}
	switch e.typ {
	case tar.TypeDir:
		out.Name += "/"
	case tar.TypeReg:
		out.Size, s.left = e.size, e.size
	case tar.TypeSymlink, tar.TypeLink:
		out.Linkname = e.link
	}
	return s.tw.WriteHeader(out)
}
