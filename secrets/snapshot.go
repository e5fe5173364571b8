package secrets

import (
	"archive/tar"
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"

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

// scanTar scans an uncompressed tar. The archive is read on the calling goroutine; what
// it holds (names, link targets, the chunks of each file's content) goes in batches of
// about partSize bytes to the free cores (sc.workers), and the findings are put back in
// the archive's order.
func (sc *scan) scanTar(r io.Reader) error {
	if sc.workers != nil {
		sc.memo.share()
	}
	lim := &budget{r: r, left: snapshotMaxBytes}
	b := &snapBatches{sc: sc}
	err := readTar(sc.ctx, lim, b.add)
	b.dispatch()
	b.wg.Wait()
	if cerr := sc.collect(b.items); cerr != nil {
		return cerr
	}
	return err
}

// snapBatches hands a snapshot's items to the scan in batches of about partBytes, on the
// scan's workers when it has them (else at once), and keeps every item in archive order.
type snapBatches struct {
	sc      *scan
	items   []*snapItem
	batch   []*snapItem
	pending int // bytes in batch
	wg      sync.WaitGroup
}

// add queues it, and hands the batch on once it holds partBytes.
func (b *snapBatches) add(it *snapItem) {
	b.items = append(b.items, it)
	b.batch = append(b.batch, it)
	if b.pending += len(it.text); b.pending >= partBytes {
		b.dispatch()
	}
}

// dispatch hands the batch on, if any.
func (b *snapBatches) dispatch() {
	if len(b.batch) == 0 {
		return
	}
	batch := b.batch
	b.batch, b.pending = nil, 0
	run := func() {
		sub := b.sc.sub()
		for _, it := range batch {
			sub.scanItem(it)
		}
	}
	if b.sc.workers != nil {
		b.sc.workers.spawn(&b.wg, run)
	} else {
		run()
	}
}

// readTar reads the tar lim holds and gives add, in archive order, each entry's name, its
// link target, and a regular file's content in chunks (readContent), until the archive's
// end or ctx is done. Each entry adds snapshotOverhead to the bytes lim lets through.
func readTar(ctx context.Context, lim *budget, add func(*snapItem)) error {
	tr := tar.NewReader(lim)
	for entries := 0; ; entries++ {
		if err := ctx.Err(); err != nil {
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
		add(&snapItem{entry: entries, member: member, field: "path", in: InName, text: []byte(member)})
		if hdr.Linkname != "" {
			add(&snapItem{entry: entries, member: member, field: "link", in: InLink, text: []byte(hdr.Linkname)})
		}
		if hdr.Typeflag != tar.TypeReg && hdr.Typeflag != tar.TypeRegA {
			continue
		}
		if err := readContent(tr, hdr, entries, add); err != nil {
			return err
		}
	}
}

// readContent gives add the content of the regular file entry (hdr) in chunks of chunkSize
// bytes, each with the last chunkOverlap bytes of the one before, so that a secret across
// two chunks is whole in one; an empty file gives one empty chunk. Whether the file is
// binary is told from its first chunk.
func readContent(tr *tar.Reader, hdr *tar.Header, entry int, add func(*snapItem)) error {
	size := int(min(hdr.Size, chunkSize)) + chunkOverlap
	var (
		base   int64  // file offset of the chunk's first byte
		prev   []byte // the chunk before, for the overlap
		binary bool
	)
	for first := true; ; first = false {
		buf := make([]byte, size)
		keep := copy(buf, prev)
		n, err := io.ReadFull(tr, buf[keep:])
		buf = buf[:keep+n]
		last := err != nil
		if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
			return fmt.Errorf("read %s in the archive: %w", hdr.Name, err)
		}
		if first {
			binary = isBinary(buf)
		}
		if len(buf) > 0 && (n > 0 || first) {
			add(&snapItem{entry: entry, member: hdr.Name, content: true, binary: binary, text: buf, base: base})
		}
		if last {
			return nil
		}
		keep = min(chunkOverlap, len(buf))
		prev = buf[len(buf)-keep:]
		base += int64(len(buf) - keep)
	}
}

// collect puts the findings of items into the scan in archive order, a secret in the
// overlap of two chunks of a file once; it returns the first item's error.
func (sc *scan) collect(items []*snapItem) error {
	type seen struct {
		offset int64
		rule   string
	}
	var reported map[seen]bool
	entry := -1
	for _, it := range items {
		if it.err != nil {
			return it.err
		}
		if it.content && it.entry != entry {
			entry, reported = it.entry, map[seen]bool{}
		}
		for i, f := range it.found {
			if it.content {
				k := seen{int64(f.Offset), f.Rule}
				if reported[k] {
					continue
				}
				reported[k] = true
			}
			sc.found = append(sc.found, f)
			sc.secretOf = append(sc.secretOf, it.secretOf[i])
		}
	}
	return nil
}

// snapItem is one string of a snapshot to scan: an entry's name or link target, or a
// chunk of a file's content; and what was found in it.
type snapItem struct {
	entry   int
	member  string
	field   string // for a name: "path" or "link"
	in      string // Finding.In
	content bool
	// binary is set for a file that holds a NUL byte in its first chunk: it is scanned
	// as the runs of printable text in it (binaryRuns).
	binary bool
	text   []byte
	base   int64 // the file offset of text[0], for content

	found    []Finding
	secretOf []string
	err      error
}

// scanItem scans it into it.found, with sc's scratch and memo.
func (sc *scan) scanItem(it *snapItem) {
	sc.found, sc.secretOf = nil, nil
	defer func() {
		it.found, it.secretOf, it.text = sc.found, sc.secretOf, nil
	}()
	if !it.content {
		hits, err := sc.hits(it.field, string(it.text))
		if err != nil {
			it.err = err
			return
		}
		for _, h := range hits {
			sc.add(h, Finding{Pointer: SnapshotPointer, Member: it.member, In: it.in})
		}
		return
	}
	place := func(h hit, at int64) {
		sc.add(h, Finding{Pointer: SnapshotPointer, Member: it.member})
		sc.found[len(sc.found)-1].Offset = int(at)
	}
	if !it.binary {
		hits, err := sc.hits("", bytesString(it.text))
		if err != nil {
			it.err = err
			return
		}
		for _, h := range hits {
			place(h, it.base+int64(h.offset))
		}
		return
	}
	for _, run := range binaryRuns(it.text) {
		hits, err := sc.scanOne("", bytesString(it.text[run[0]:run[1]]))
		if err != nil {
			it.err = err
			return
		}
		for _, h := range hits {
			place(h, it.base+int64(run[0]+h.offset))
		}
	}
}

// binarySniff is how much of a file's start isBinary looks at, as git does.
const binarySniff = 8000

// isBinary reports whether a file whose content starts with b is binary: a NUL byte in
// its first binarySniff bytes, git's test.
func isBinary(b []byte) bool {
	return bytes.IndexByte(b[:min(len(b), binarySniff)], 0) >= 0
}

// minRun is the shortest run of printable text binaryRuns returns: no rule matches fewer
// bytes.
const minRun = 8

// binaryRuns returns the runs of at least minRun printable ASCII bytes (tabs and line
// breaks included) in b, as strings(1) finds text in a binary file: a secret in a binary
// file (a key compiled into an executable, a token in a database page) is such a run,
// and the rules need not read the bytes between (a file of random bytes sent whole to the
// rules and gitleaks' decoders costs a second per megabyte).
func binaryRuns(b []byte) [][2]int {
	var runs [][2]int
	for i := 0; i < len(b); {
		if !printable(b[i]) {
			i++
			continue
		}
		j := i
		for j < len(b) && printable(b[j]) {
			j++
		}
		if j-i >= minRun {
			runs = append(runs, [2]int{i, j})
		}
		i = j
	}
	return runs
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
