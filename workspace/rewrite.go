package workspace

import (
	"archive/tar"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"slices"
)

// Cut replaces Length bytes of a file's content, from Offset, with With.
type Cut struct {
	Offset, Length int64
	With           string
}

// Edit changes one entry of a snapshot as Rewrite copies it.
type Edit struct {
	// Name, when not empty, is the entry's new path (relative, slash-separated, as the
	// archive names it without a directory's trailing slash).
	Name string
	// Link, when not nil, gives a symbolic link's new target from its old one (a hard
	// link follows the file it names instead).
	Link func(target string) string
	// Cuts change a regular file's content. They may come in any order; overlapping cuts
	// are an error.
	Cuts []Cut
}

// Changed is a regular file whose content Rewrite changed.
type Changed struct {
	// Name is the file's path in the rewritten snapshot.
	Name string
	// OldSHA256 and NewSHA256 are the content's digests (hex) before and after; OldSize
	// and NewSize its sizes.
	OldSHA256, NewSHA256 string
	OldSize, NewSize     int64
}

// Rewrite verifies the snapshot in src against want (see Verify) and writes it to w
// re-packed, with edits applied: edits are keyed by an entry's path in src (without a
// directory's trailing slash). Every entry is written in the form Snapshot writes it
// (name, type, permission bits, modification time, size or link target), so a snapshot
// Snapshot made comes out byte for byte the same where no edit applies. A hard link to a
// renamed file follows it. The rewritten archive is checked as Restore checks one (two
// entries may not end up with one name), and ctx cancels between entries. It returns the
// new snapshot's Info and the files whose content changed.
func Rewrite(ctx context.Context, src io.ReaderAt, want Info, w io.Writer, edits map[string]Edit) (Info, []Changed, error) {
	name := snapshotName(src)
	if err := Verify(src, want); err != nil {
		return Info{}, nil, fmt.Errorf("rewrite %w", err)
	}
	info, changed, err := rewrite(ctx, src, want, w, edits)
	if err != nil {
		return Info{}, nil, fmt.Errorf("rewrite %s: %w", name, err)
	}
	return info, changed, nil
}

func rewrite(ctx context.Context, src io.ReaderAt, want Info, w io.Writer, edits map[string]Edit) (Info, []Changed, error) {
	name := snapshotName(src)
	dec, err := newDecoder(io.NewSectionReader(src, 0, want.Size))
	if err != nil {
		return Info{}, nil, err
	}
	defer dec.Close()
	tr := tar.NewReader(archiveLimit(dec, name, &want))
	in := newChecker(name, &want)
	out := newChecker(name+" (rewritten)", nil)

	dw := &digestWriter{w: w, h: sha256.New()}
	zw, err := newEncoder(dw)
	if err != nil {
		return Info{}, nil, err
	}
	defer zw.Close()
	tw := tar.NewWriter(zw)
	renamed := map[string]string{}
	used := map[string]bool{}
	var (
		changed []Changed
		bytes   int64
	)
	for {
		if err := ctx.Err(); err != nil {
			return Info{}, nil, err
		}
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return Info{}, nil, fmt.Errorf("read the archive: %w", err)
		}
		e, skip, err := in.check(hdr)
		if err != nil {
			return Info{}, nil, err
		}
		if skip {
			continue
		}
		ed, hasEdit := edits[e.name]
		if hasEdit {
			used[e.name] = true
		}
		newName := cmp.Or(ed.Name, e.name)
		if ed.Name != "" {
			renamed[e.name] = newName
		}
		oh := rewrittenHeader(e, newName, ed.Link, renamed)
		cuts, err := sortedCuts(e, ed)
		if err != nil {
			return Info{}, nil, err
		}
		for _, c := range cuts {
			oh.Size += int64(len(c.With)) - c.Length
		}
		if _, _, err := out.check(oh); err != nil {
			return Info{}, nil, err
		}
		if err := tw.WriteHeader(oh); err != nil {
			return Info{}, nil, fmt.Errorf("%s: %w", newName, err)
		}
		if e.typ != tar.TypeReg {
			continue
		}
		bytes += oh.Size
		if len(cuts) == 0 {
			if _, err := io.CopyN(tw, tr, e.size); err != nil {
				return Info{}, nil, fmt.Errorf("read %s in the archive: %w", e.name, err)
			}
			continue
		}
		c, err := copyCut(tw, tr, e.size, cuts)
		if err != nil {
			return Info{}, nil, fmt.Errorf("read %s in the archive: %w", e.name, err)
		}
		c.Name = newName
		changed = append(changed, c)
	}
	for n := range edits {
		if !used[n] {
			return Info{}, nil, fmt.Errorf("an edit of %q, which the archive does not hold", n)
		}
	}
	if err := tw.Close(); err != nil {
		return Info{}, nil, err
	}
	if err := zw.Close(); err != nil {
		return Info{}, nil, err
	}
	return Info{Digest: dw.digest(), Size: dw.n, Files: out.files, Bytes: bytes}, changed, nil
}

// rewrittenHeader is the header entry e gets in the rewritten archive: its name (newName),
// a symlink's target as link changes it (nil: kept), and a hard link pointing at its file's
// new name when that file was renamed (renamed).
func rewrittenHeader(e entry, newName string, link func(string) string, renamed map[string]string) *tar.Header {
	oh := &tar.Header{Typeflag: e.typ, Name: newName, Mode: int64(e.perm), ModTime: e.mtime}
	switch e.typ {
	case tar.TypeDir:
		oh.Name += "/"
	case tar.TypeSymlink:
		oh.Linkname = e.link
		if link != nil {
			oh.Linkname = link(e.link)
		}
	case tar.TypeLink:
		oh.Linkname = e.link
		if n, ok := renamed[e.link]; ok {
			oh.Linkname = n
		}
	case tar.TypeReg:
		oh.Size = e.size
	}
	return oh
}

// sortedCuts are ed's content cuts of entry e by offset, each checked to lie within the
// file and over no other; only a regular file takes cuts.
func sortedCuts(e entry, ed Edit) ([]Cut, error) {
	if len(ed.Cuts) > 0 && e.typ != tar.TypeReg {
		return nil, fmt.Errorf("%s: content cuts in an entry that is not a regular file", e.name)
	}
	cuts := slices.Clone(ed.Cuts)
	slices.SortFunc(cuts, func(a, b Cut) int { return int(a.Offset - b.Offset) })
	for i, c := range cuts {
		if c.Offset < 0 || c.Length < 0 || c.Offset+c.Length > e.size || (i > 0 && c.Offset < cuts[i-1].Offset+cuts[i-1].Length) {
			return nil, fmt.Errorf("%s: cut of %d bytes at %d: outside the file's %d bytes or over another cut", e.name, c.Length, c.Offset, e.size)
		}
	}
	return cuts, nil
}

// copyCut copies size bytes from r to w with cuts (sorted, within size, not
// overlapping) applied, and hashes both sides.
func copyCut(w io.Writer, r io.Reader, size int64, cuts []Cut) (Changed, error) {
	oldH, newH := sha256.New(), sha256.New()
	src := io.TeeReader(r, oldH)
	dst := io.MultiWriter(w, newH)
	var at, n int64
	for _, c := range cuts {
		if _, err := io.CopyN(dst, src, c.Offset-at); err != nil {
			return Changed{}, err
		}
		if _, err := io.CopyN(io.Discard, src, c.Length); err != nil {
			return Changed{}, err
		}
		if _, err := io.WriteString(dst, c.With); err != nil {
			return Changed{}, err
		}
		at = c.Offset + c.Length
		n += int64(len(c.With)) - c.Length
	}
	if _, err := io.CopyN(dst, src, size-at); err != nil {
		return Changed{}, err
	}
	return Changed{
		OldSHA256: hex.EncodeToString(oldH.Sum(nil)), NewSHA256: hex.EncodeToString(newH.Sum(nil)),
		OldSize: size, NewSize: size + n,
	}, nil
}
