package workspace

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// rleBomb is a zstd snapshot, written by hand, of one file "bomb" of size zeros: the tar
// header as a raw block, then the content, its padding and the end-of-archive blocks as RLE
// blocks of 4 bytes for each 128 KiB. 4 GiB take 128 KiB. Its Info is an honest one.
func rleBomb(t testing.TB, size int64) ([]byte, Info) {
	t.Helper()
	var hdr bytes.Buffer
	tw := tar.NewWriter(&hdr)
	require.NoError(t, tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: "bomb", Mode: 0o644, Size: size, ModTime: stamp}))
	out := []byte{0x28, 0xb5, 0x2f, 0xfd, 0x00, 7 << 3} // magic; no content size; a 128 KiB window
	block := func(typ byte, n int, last bool) {
		h := uint32(n)<<3 | uint32(typ)<<1
		if last {
			h |= 1
		}
		out = append(out, byte(h), byte(h>>8), byte(h>>16))
	}
	block(0, hdr.Len(), false)
	out = append(out, hdr.Bytes()...)
	zeros := size + (512-size%512)%512 + 1024
	const max = 128 << 10
	for zeros > 0 {
		n := min(zeros, max)
		zeros -= n
		block(1, int(n), zeros == 0)
		out = append(out, 0)
	}
	sum := sha256.Sum256(out)
	return out, Info{Digest: "sha256:" + hex.EncodeToString(sum[:]), Size: int64(len(out)), Files: 1, Bytes: size}
}

// TestRleBombIsASnapshot shows the bomb is a valid snapshot: a small one restores, so the
// refusal below is the limit's and not a broken archive's.
func TestRleBombIsASnapshot(t *testing.T) {
	b, info := rleBomb(t, 300<<10)
	dir := filepath.Join(t.TempDir(), "ws")
	require.NoError(t, Restore(t.Context(), writeSnapshot(t, b), info, dir))
	fi, err := os.Stat(filepath.Join(dir, "bomb"))
	require.NoError(t, err)
	assert.Equal(t, int64(300<<10), fi.Size())
}

// TestRestoreRefusesBomb: a tape's snapshot of 128 KiB that holds (and records) 4 GiB and a
// byte of zeros is refused before a byte is decompressed; before the limit, Restore
// decompressed it twice and wrote 4 GiB into the sandbox's directory, and a tape could
// record a terabyte as easily. Tar (the Docker restore) refuses it too.
func TestRestoreRefusesBomb(t *testing.T) {
	b, info := rleBomb(t, UntrustedMaxBytes+1)
	require.Less(t, len(b), 200<<10)
	f := writeSnapshot(t, b)
	dir := filepath.Join(t.TempDir(), "ws")
	err := Restore(t.Context(), f, info, dir)
	require.ErrorIs(t, err, ErrTooBig)
	assert.Contains(t, err.Error(), "4.0 GiB")
	assert.NoFileExists(t, filepath.Join(dir, "bomb"))
	_, err = Tar(f, info, Owner{})
	require.ErrorIs(t, err, ErrTooBig)
}

// TestRestoreRefusesTooManyEntries: a tape that records more entries than a restore takes
// (each costs an inode on the host's disk and a name in memory) is refused before anything
// is read.
func TestRestoreRefusesTooManyEntries(t *testing.T) {
	old := untrustedMaxEntries
	untrustedMaxEntries = 3
	t.Cleanup(func() { untrustedMaxEntries = old })
	f, info, _ := snapshotOf(t, map[string]node{"a": {data: "1"}, "b": {data: "2"}, "c": {data: "3"}, "d": {data: "4"}})
	err := Restore(t.Context(), f, info, filepath.Join(t.TempDir(), "ws"))
	require.ErrorIs(t, err, ErrTooBig)
	assert.Contains(t, err.Error(), "4 entries, over the 3")
}

// TestRestoreRefusesHeaderBomb: GNU long-name headers stack (archive/tar keeps the last of
// any number before an entry, each up to 1 MiB), so one recorded entry could stand for a
// terabyte of headers to decompress. Tar beyond what the recorded entries take is refused.
func TestRestoreRefusesHeaderBomb(t *testing.T) {
	var raw bytes.Buffer
	long := strings.Repeat("x", 1000) + "\x00"
	for range 200 {
		raw.Write(gnuHeader(t, tar.TypeGNULongName, int64(len(long))))
		raw.WriteString(long)
		raw.Write(make([]byte, (512-len(long)%512)%512))
	}
	raw.Write(tarOf(t, reg("f", "content")))
	b, info := zst(t, raw.Bytes())
	require.Equal(t, 1, info.Files, "archive/tar reads one entry")
	err := Restore(t.Context(), writeSnapshot(t, b), info, filepath.Join(t.TempDir(), "ws"))
	require.ErrorIs(t, err, ErrUnsafe)
	assert.Contains(t, err.Error(), "more tar than the recorded entries")
}

// gnuHeader is a bare GNU-format header block of type typ for size bytes, which
// archive/tar's writer does not make for long names.
func gnuHeader(t testing.TB, typ byte, size int64) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	require.NoError(t, tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: "././@LongLink", Size: 0, Format: tar.FormatGNU}))
	blk := buf.Bytes()[:512]
	blk[156] = typ
	copy(blk[124:136], []byte(strings.Repeat("0", 11-len(octal(size)))+octal(size)+"\x00"))
	var sum int64
	copy(blk[148:156], "        ")
	for _, c := range blk {
		sum += int64(c)
	}
	copy(blk[148:156], []byte(strings.Repeat("0", 6-len(octal(sum)))+octal(sum)+"\x00 "))
	return append([]byte(nil), blk...)
}

func octal(n int64) string { return strconv.FormatInt(n, 8) }

// TestRestoreRefusesLongNames: a name longer than PATH_MAX cannot come from a walked
// directory; archive/tar takes them up to 1 MiB, which a restore would keep in memory.
func TestRestoreRefusesLongNames(t *testing.T) {
	b, info := zst(t, tarOf(t, reg(strings.Repeat("n", MaxNameBytes+1), "x")))
	err := Restore(t.Context(), writeSnapshot(t, b), info, filepath.Join(t.TempDir(), "ws"))
	require.ErrorIs(t, err, ErrUnsafe)
	assert.Contains(t, err.Error(), "over 4096 bytes")
}

// TestManifestUntrusted: with Options.Untrusted both manifests refuse more entries or file
// content than the limits, from sizes and counts alone; without it they take any amount.
func TestManifestUntrusted(t *testing.T) {
	oldBytes, oldEntries := untrustedMaxBytes, untrustedMaxEntries
	t.Cleanup(func() { untrustedMaxBytes, untrustedMaxEntries = oldBytes, oldEntries })
	untrustedMaxBytes, untrustedMaxEntries = 10, 3
	dir := t.TempDir()
	build(t, dir, map[string]node{"a": {data: "12345"}, "b": {data: "12345"}, "c": {data: "1"}})
	archive := tarOf(t, reg("a", "12345"), reg("b", "12345"), reg("c", "1"))

	_, err := ManifestDir(t.Context(), dir, Options{Untrusted: true})
	require.ErrorIs(t, err, ErrTooBig)
	assert.Contains(t, err.Error(), "(c is 1 byte)")
	_, err = ManifestTar(bytes.NewReader(archive), "", Options{Untrusted: true})
	require.ErrorIs(t, err, ErrTooBig)
	assert.Contains(t, err.Error(), "(c is 1 byte)")
	for _, opts := range []Options{{}, {Untrusted: false, MaxBytes: 1}} {
		m, err := ManifestDir(t.Context(), dir, opts)
		require.NoError(t, err)
		assert.Len(t, m, 3)
		m, err = ManifestTar(bytes.NewReader(archive), "", opts)
		require.NoError(t, err)
		assert.Len(t, m, 3)
	}

	untrustedMaxBytes, untrustedMaxEntries = 100, 2
	_, err = ManifestDir(t.Context(), dir, Options{Untrusted: true})
	require.ErrorIs(t, err, ErrTooBig)
	assert.Contains(t, err.Error(), "more than 2 entries")
	_, err = ManifestTar(bytes.NewReader(archive), "", Options{Untrusted: true})
	require.ErrorIs(t, err, ErrTooBig)
	assert.Contains(t, err.Error(), "more than 2 entries")
}
