package secrets

import (
	"archive/tar"
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/klauspost/compress/zstd"

	"github.com/tapebox/tapebox/workspace"
)

// SnapshotPointer is the Pointer of a finding inside a tape's start snapshot; its Member
// names the file.
const SnapshotPointer = "/meta/workspace/snapshot"

// Limits on what a scan decompresses of a snapshot: a stranger's snapshot of a few
// megabytes can decompress to terabytes. They are the limits a restore applies
// (workspace.UntrustedMaxBytes of file content), with room for the tar headers.
const (
	snapshotMaxBytes = workspace.UntrustedMaxBytes
	snapshotOverhead = 16 << 10 // per entry: a header, long names, padding
	zstdMaxWindow    = 64 << 20 // the zstd window a snapshot may ask for, as Restore allows
)

// The scan of a file's content goes in pieces of chunkSize bytes, each with the last
// chunkOverlap bytes of the one before it, so that memory stays bounded whatever the
// file's size and a secret across two pieces is still seen whole (the longest a rule
// matches in practice is a private key of a few kilobytes).
const (
	chunkSize    = 4 << 20
	chunkOverlap = 64 << 10
)

// ErrSnapshotMissing is wrapped by the error of a scan whose tape names a start snapshot
// that is not beside it: what is published with the tape cannot be checked.
var ErrSnapshotMissing = errors.New("missing")

// scanSnapshot scans the start snapshot that the tape at tapePath names (name, relative
// to the tape's directory).
func (sc *scan) scanSnapshot(tapePath, name string) error {
	local := filepath.FromSlash(name)
	if !filepath.IsLocal(local) {
		return fmt.Errorf("start snapshot: meta.workspace.snapshot %q is not a file beside the tape", name)
	}
	path := filepath.Join(filepath.Dir(tapePath), local)
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("start snapshot %s: %w (meta.workspace.snapshot names no file beside the tape), so it cannot be scanned", path, ErrSnapshotMissing)
	}
	if err != nil {
		return fmt.Errorf("start snapshot: %w", err)
	}
	defer f.Close()
	if err := sc.scanArchive(bufio.NewReaderSize(f, 256<<10)); err != nil {
		return fmt.Errorf("start snapshot %s: %w", path, err)
	}
	return nil
}

// ScanSnapshot returns the findings in a workspace snapshot (a tar compressed with zstd,
// as package workspace writes it) read from r: in the content of every regular file, in
// every entry's name and in every symbolic link's target. Each has Pointer
// SnapshotPointer, Member the entry's name, and In set for a name or a target. It trusts
// nothing in the archive: what it decompresses is bounded (workspace.UntrustedMaxBytes of
// content), and an archive it cannot read to its end is an error, with the findings
// before it.
func (s *Scanner) ScanSnapshot(ctx context.Context, r io.Reader) ([]Finding, error) {
	sc := s.newScan(ctx)
	err := sc.scanArchive(r)
	return sc.found, err
}

// scanArchive scans a zstd-compressed tar.
func (sc *scan) scanArchive(r io.Reader) error {
	dec, err := zstd.NewReader(r, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxWindow(zstdMaxWindow))
	if err != nil {
		return fmt.Errorf("read the archive: %w", err)
	}
	defer dec.Close()
	return sc.scanTar(dec)
}

// scanTar scans an uncompressed tar.
func (sc *scan) scanTar(r io.Reader) error {
	lim := &budget{r: r, left: snapshotMaxBytes}
	tr := tar.NewReader(lim)
	var buf []byte // grown to the largest file's chunk, at most chunkSize+chunkOverlap
	for entries := 0; ; entries++ {
		if err := sc.ctx.Err(); err != nil {
			return err
		}
		lim.left += snapshotOverhead
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read the archive after %d entries: %w", entries, err)
		}
		member := hdr.Name
		if err := sc.scanString(member, "path", InName, member); err != nil {
			return err
		}
		if hdr.Linkname != "" {
			if err := sc.scanString(member, "link", InLink, hdr.Linkname); err != nil {
				return err
			}
		}
		if hdr.Typeflag != tar.TypeReg && hdr.Typeflag != tar.TypeRegA {
			continue
		}
		if want := int(min(hdr.Size, chunkSize)) + chunkOverlap; cap(buf) < want {
			buf = make([]byte, 0, want)
		}
		if buf, err = sc.scanContent(member, tr, buf); err != nil {
			return fmt.Errorf("read %s in the archive: %w", member, err)
		}
	}
}

// scanString scans a name of an entry (its path or a link's target), as a string under
// the member name field; in says which (Finding.In).
func (sc *scan) scanString(member, field, in, value string) error {
	hits, err := sc.hits(field, value)
	if err != nil {
		return err
	}
	for _, h := range hits {
		sc.add(h, Finding{Pointer: SnapshotPointer, Member: member, In: in})
	}
	return nil
}

// scanContent scans the content of one file, read from r in overlapping chunks; it
// returns buf for the next file.
func (sc *scan) scanContent(member string, r io.Reader, buf []byte) ([]byte, error) {
	type seen struct {
		offset int64
		rule   string
	}
	reported := map[seen]bool{}
	var base int64 // file offset of buf[0]
	buf = buf[:0]
	for {
		n, err := io.ReadFull(r, buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		last := err != nil
		if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
			return buf, err
		}
		if len(buf) > 0 && (n > 0 || base == 0) {
			hits, herr := sc.hits("", bytesString(buf))
			if herr != nil {
				return buf, herr
			}
			for _, h := range hits {
				k := seen{base + int64(h.offset), h.rule}
				if reported[k] {
					continue
				}
				reported[k] = true
				sc.add(h, Finding{Pointer: SnapshotPointer, Member: member})
				sc.found[len(sc.found)-1].Offset = int(k.offset)
			}
		}
		if last {
			return buf, nil
		}
		// Keep the overlap for the next chunk.
		keep := min(chunkOverlap, len(buf))
		copy(buf, buf[len(buf)-keep:])
		base += int64(len(buf) - keep)
		buf = buf[:keep]
	}
}

// budget reads at most left bytes from r; beyond, it fails.
type budget struct {
	r    io.Reader
	left int64
}

func (b *budget) Read(p []byte) (int, error) {
	if b.left <= 0 {
		return 0, fmt.Errorf("more than %d bytes decompressed: %w", int64(snapshotMaxBytes), workspace.ErrTooBig)
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.r.Read(p)
	b.left -= int64(n)
	return n, err
}
