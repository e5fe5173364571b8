package workspace

import (
	"fmt"
	"io"
)

// Limits on what a stranger's tape can make TapeBox write or read of a workspace. A tape
// records its snapshot's Info, so a snapshot of a few megabytes can say it holds terabytes
// of zeros (zstd packs 128 KiB of one byte in 4); and a replay's sandbox ran the tape's
// commands, which can leave a sparse file of terabytes or millions of empty files for its
// end manifest to read.
const (
	// UntrustedMaxBytes bounds the file content a snapshot may hold (Info.Bytes) for
	// Verify, Restore and Tar, and what an end manifest with Options.Untrusted hashes: 4 GiB,
	// 16 times DefaultMaxBytes, what a recording takes unless told otherwise.
	UntrustedMaxBytes = 4 << 30
	// UntrustedMaxEntries bounds the entries of a snapshot (Info.Files) and of a manifest
	// with Options.Untrusted: 1,048,576.
	UntrustedMaxEntries = 1 << 20
	// MaxNameBytes bounds a snapshot entry's name and a link's target: PATH_MAX, which no
	// file a recording walked can pass. archive/tar takes names of up to 1 MiB.
	MaxNameBytes = 4096
	// UntrustedMaxNameBytes bounds the names of a snapshot's entries together (what a
	// restore keeps in memory to check each entry against the earlier ones): 256 MiB, 256
	// bytes for each of UntrustedMaxEntries.
	UntrustedMaxNameBytes = 256 << 20
	// archiveOverhead bounds the tar bytes of one entry besides its content: its header,
	// a PAX or GNU long-name header of up to MaxNameBytes twice (name and link), padding.
	archiveOverhead = 16 << 10
)

// The limits as the code applies them: variables, so that tests can lower them.
var (
	untrustedMaxBytes   int64 = UntrustedMaxBytes
	untrustedMaxEntries       = UntrustedMaxEntries
)

// checkInfo refuses an Info that records more than a restore takes, before a byte of the
// snapshot is decompressed.
func checkInfo(name string, want Info) error {
	switch {
	case want.Bytes > untrustedMaxBytes:
		return fmt.Errorf("%s: %w: the tape records %s of files, over the %s a replay restores", name, ErrTooBig, sizeString(want.Bytes), sizeString(untrustedMaxBytes))
	case want.Files > untrustedMaxEntries:
		return fmt.Errorf("%s: %w: the tape records %d entries, over the %d a replay restores", name, ErrTooBig, want.Files, untrustedMaxEntries)
	case want.Bytes < 0 || want.Files < 0:
		return fmt.Errorf("%s: %w: the tape records %d entries and %d bytes of files", name, ErrMismatch, want.Files, want.Bytes)
	}
	return nil
}

// archiveLimit bounds the decompressed tar stream of a snapshot described by want: its
// content, and archiveOverhead for each entry (and the end-of-archive blocks). Beyond it
// the headers are padding a few compressed bytes turned into gigabytes.
func archiveLimit(r io.Reader, name string, want *Info) io.Reader {
	if want == nil {
		return r
	}
	return &limitReader{r: r, left: want.Bytes + int64(want.Files+4)*archiveOverhead, name: name}
}

type limitReader struct {
	r    io.Reader
	left int64
	name string
}

func (l *limitReader) Read(p []byte) (int, error) {
	if l.left <= 0 {
		return 0, fmt.Errorf("%s: %w: more tar than the recorded entries and bytes of files take (headers or padding no snapshot holds)", l.name, ErrUnsafe)
	}
	if int64(len(p)) > l.left {
		p = p[:l.left]
	}
	n, err := l.r.Read(p)
	l.left -= int64(n)
	return n, err
}
