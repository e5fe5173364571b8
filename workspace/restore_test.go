package workspace

import (
	"archive/tar"
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/internal/testutil/treetest"
)

// zst compresses b as Snapshot would and describes the result as an honest recorder would:
// the digest matches, whatever the entries are.
func zst(t testing.TB, b []byte) ([]byte, Info) {
	t.Helper()
	var buf bytes.Buffer
	zw, err := newEncoder(&buf)
	require.NoError(t, err)
	_, err = zw.Write(b)
	require.NoError(t, err)
	require.NoError(t, zw.Close())
	info, _ := scan(bytes.NewReader(buf.Bytes()), nil)
	return buf.Bytes(), info
}

// writeSnapshot writes b to start.tar.zst in a new directory and opens it.
func writeSnapshot(t testing.TB, b []byte) *os.File {
	t.Helper()
	p := filepath.Join(t.TempDir(), "start.tar.zst")
	require.NoError(t, os.WriteFile(p, b, 0o644))
	f, err := os.Open(p)
	require.NoError(t, err)
	t.Cleanup(func() { f.Close() })
	return f
}

// snapshotOf snapshots a tree built from nodes into a file.
func snapshotOf(t *testing.T, nodes map[string]node) (*os.File, Info, string) {
	t.Helper()
	src := t.TempDir()
	build(t, src, nodes)
	out := filepath.Join(t.TempDir(), "start.tar.zst")
	info, err := SnapshotFile(t.Context(), src, out, Options{})
	require.NoError(t, err)
	f, err := os.Open(out)
	require.NoError(t, err)
	t.Cleanup(func() { f.Close() })
	return f, info, src
}

func TestRestoreRoundTrip(t *testing.T) {
	nodes := map[string]node{}
	for k, v := range project {
		nodes[k] = v
	}
	nodes["ro"] = node{dir: true, mode: 0o555}
	nodes["ro/inner"] = node{dir: true, mode: 0o500}
	nodes["ro/inner/f"] = node{data: "deep", mode: 0o400}
	f, info, src := snapshotOf(t, nodes)

	dst := filepath.Join(t.TempDir(), "replay")
	require.NoError(t, Restore(t.Context(), f, info, dst))
	want, err := ManifestDir(t.Context(), src, Options{})
	require.NoError(t, err)
	got, err := ManifestDir(t.Context(), dst, Options{})
	require.NoError(t, err)
	assert.Empty(t, Diff(want, got))
	assert.Equal(t, want, got)

	for _, rel := range []string{"a.txt", "src", "src/main.go", "ro", "ro/inner", "ro/inner/f", "private"} {
		fi, err := os.Stat(filepath.Join(dst, rel))
		require.NoError(t, err)
		assert.True(t, fi.ModTime().Equal(stamp), "%s: time %v", rel, fi.ModTime())
	}
	link, err := os.Readlink(filepath.Join(dst, "passwd"))
	require.NoError(t, err)
	assert.Equal(t, "/etc/passwd", link, "a link pointing outside is restored as a link")

	// The same snapshot again: the directory is no longer empty.
	err = Restore(t.Context(), f, info, dst)
	require.ErrorIs(t, err, ErrNotEmpty)
	assert.Contains(t, err.Error(), "restore into "+dst)
}

func TestRestoreModes(t *testing.T) {
	setuid := reg("suid", "#!/bin/sh\n")
	setuid.hdr.Mode = 0o4755
	setgid := dirEnt("sgid/")
	setgid.hdr.Mode = 0o2775
	sticky := dirEnt("tmp/")
	sticky.hdr.Mode = 0o1777
	owned := reg("owned", "x")
	owned.hdr.Uid, owned.hdr.Gid, owned.hdr.Uname = 1234, 5678, "someone"
	b, info := zst(t, tarOf(t, setuid, setgid, sticky, owned))
	f := writeSnapshot(t, b)

	dst := t.TempDir()
	require.NoError(t, Restore(t.Context(), f, info, dst))
	for name, want := range map[string]fs.FileMode{"suid": 0o755, "sgid": fs.ModeDir | 0o775, "tmp": fs.ModeDir | 0o777, "owned": 0o644} {
		fi, err := os.Lstat(filepath.Join(dst, name))
		require.NoError(t, err)
		assert.Equal(t, want, fi.Mode(), "%s: permission bits only", name)
	}

	// Tar rewrites the same way.
	rc, err := Tar(f, info, Owner{})
	require.NoError(t, err)
	defer rc.Close()
	for _, h := range listTar(t, rc) {
		assert.Zero(t, h.Mode&^0o777, "%s: mode %o", h.Name, h.Mode)
		assert.Zero(t, h.Uid, h.Name)
		assert.Zero(t, h.Gid, h.Name)
		assert.Empty(t, h.Uname, h.Name)
	}
}

func TestRestoreHardLinkInside(t *testing.T) {
	b, info := zst(t, tarOf(t, reg("a", "shared"), dirEnt("d/"), hardlink("d/b", "a")))
	f := writeSnapshot(t, b)
	dst := t.TempDir()
	require.NoError(t, Restore(t.Context(), f, info, dst))
	a, err := os.Stat(filepath.Join(dst, "a"))
	require.NoError(t, err)
	bfi, err := os.Stat(filepath.Join(dst, "d", "b"))
	require.NoError(t, err)
	assert.True(t, os.SameFile(a, bfi), "a hard link to an earlier file of the archive is restored as one")
}

// TestRestoreParentsAndDotSlash: archives made by other tools ("tar -C dir .") name the root
// "./" and may leave out directories.
func TestRestoreParentsAndDotSlash(t *testing.T) {
	b, info := zst(t, tarOf(t, dirEnt("./"), reg("./x/y/z", "z"), dirEnt("./x/"), reg("./top", "t")))
	f := writeSnapshot(t, b)
	assert.Equal(t, 4, info.Files, "x, x/y, x/y/z and top; x counted once")
	dst := t.TempDir()
	require.NoError(t, Restore(t.Context(), f, info, dst))
	assert.Equal(t, []string{"top", "x/", "x/y/", "x/y/z"}, treetest.List(t, dst))

	rc, err := Tar(f, info, Owner{})
	require.NoError(t, err)
	defer rc.Close()
	assert.Equal(t, []string{"x/", "x/y/", "x/y/z", "x/", "top"}, names(listTar(t, rc)),
		"missing parents are added; the later entry for x/ gives its mode")
}

// TestRestoreHostile: a snapshot whose digest matches (its recorder made it on purpose) but
// whose entries reach outside is refused before anything is written, inside or outside.
func TestRestoreHostile(t *testing.T) {
	outside := t.TempDir()
	etcName := "/etc/tapebox-evil-" + randomHex(4)
	fifo := reg("pipe", "")
	fifo.hdr.Typeflag = tar.TypeFifo
	dev := reg("null", "")
	dev.hdr.Typeflag, dev.hdr.Devmajor, dev.hdr.Devminor = tar.TypeChar, 1, 3
	for _, tc := range []struct {
		name    string
		entries []tent
		entry   string // the entry the error names
		why     string
	}{
		{"dot dot", []tent{reg("ok", "ok"), reg("../evil", "x")}, "../evil", "not a clean relative path"},
		{"dot dot inside", []tent{dirEnt("a/"), reg("a/../../evil", "x")}, "a/../../evil", "not a clean relative path"},
		{"absolute", []tent{reg(etcName, "x")}, etcName, "absolute path"},
		{"absolute into a known directory", []tent{reg(filepath.Join(outside, "evil"), "x")}, filepath.Join(outside, "evil"), "absolute path"},
		{"through a symlink to /", []tent{symlink("link", "/"), reg("link"+etcName, "x")}, "link" + etcName, "lies under link, a symbolic link of the archive"},
		{"through a symlink outside", []tent{symlink("out", outside), reg("out/evil", "x")}, "out/evil", "lies under out, a symbolic link"},
		{"through a symlink inside", []tent{dirEnt("d/"), symlink("l", "d"), reg("l/x", "x")}, "l/x", "lies under l, a symbolic link"},
		{"a dir over a symlink", []tent{symlink("l", outside), dirEnt("l/")}, "l/", "appears twice"},
		{"a file over a symlink", []tent{symlink("l", filepath.Join(outside, "evil")), reg("l", "x")}, "l", "appears twice"},
		{"under a file", []tent{reg("f", "x"), reg("f/g", "x")}, "f/g", "lies under f, which is not a directory"},
		{"hard link to /etc/passwd", []tent{hardlink("pw", "/etc/passwd")}, "pw", `hard link to "/etc/passwd"`},
		{"hard link up", []tent{hardlink("pw", "../outside/x")}, "pw", "only links to an earlier regular file"},
		{"hard link to a later file", []tent{hardlink("h", "a"), reg("a", "a")}, "h", "only links to an earlier regular file"},
		{"hard link to a directory", []tent{dirEnt("d/"), hardlink("h", "d")}, "h", "only links to an earlier regular file"},
		{"fifo", []tent{fifo}, "pipe", "type '6'"},
		{"device", []tent{dev}, "null", "type '3'"},
		{"sparse", nil, "big", "sparse file"},
		{"the root as a file", []tent{reg(".", "")}, ".", "names the root but is not a directory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			raw := tarOf(t, tc.entries...)
			if tc.entries == nil {
				raw = sparseTar(t, tc.entry)
			}
			b, info := zst(t, raw)
			f := writeSnapshot(t, b)
			parent := t.TempDir()
			dst := filepath.Join(parent, "replay")
			err := Restore(t.Context(), f, info, dst)
			require.ErrorIs(t, err, ErrUnsafe)
			assert.Contains(t, err.Error(), `"`+tc.entry+`"`, "the error names the entry")
			assert.Contains(t, err.Error(), tc.why)
			assert.Contains(t, err.Error(), f.Name(), "the error names the snapshot")
			assert.NoDirExists(t, dst, "nothing written: the target is not even created")
			assert.Empty(t, treetest.List(t, parent))
			assert.Empty(t, treetest.List(t, outside))
			assert.NoFileExists(t, etcName)

			_, err = Tar(f, info, Owner{})
			assert.ErrorIs(t, err, ErrUnsafe)
		})
	}
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func TestRestoreMismatch(t *testing.T) {
	f, info, _ := snapshotOf(t, project)
	b, err := io.ReadAll(io.NewSectionReader(f, 0, info.Size))
	require.NoError(t, err)
	flipped := bytes.Clone(b)
	flipped[len(flipped)/2] ^= 1
	otherDigest := info
	otherDigest.Digest = "sha256:" + hex.EncodeToString(make([]byte, 32))

	for _, tc := range []struct {
		name string
		data []byte
		info Info
		want string
	}{
		{"a byte flipped", flipped, info, "digest sha256:"},
		{"another digest recorded", b, otherDigest, "recorded sha256:0000000000"},
		{"truncated", b[:len(b)-1], info, "bytes, recorded"},
		{"longer", append(bytes.Clone(b), 0), info, "more than the"},
		{"other entry count", b, Info{Digest: info.Digest, Size: info.Size, Files: info.Files - 1, Bytes: info.Bytes}, "entries recorded"},
		{"other byte count", b, Info{Digest: info.Digest, Size: info.Size, Files: info.Files, Bytes: info.Bytes + 1}, "bytes of files, recorded"},
		{"a bad digest", b, Info{Digest: "md5:abc", Size: info.Size}, "is not sha256:<64 hex digits>"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := writeSnapshot(t, tc.data)
			dst := filepath.Join(t.TempDir(), "replay")
			err := Restore(t.Context(), f, tc.info, dst)
			require.ErrorIs(t, err, ErrMismatch)
			assert.Contains(t, err.Error(), tc.want)
			assert.Contains(t, err.Error(), f.Name(), "the error names the snapshot file")
			assert.NoDirExists(t, dst, "refused before anything is written")
			_, err = Tar(f, tc.info, Owner{})
			assert.ErrorIs(t, err, ErrMismatch)
		})
	}
}

// TestRestoreDigestBeforeEntries: when both the digest and an entry are bad, the digest is
// what the error reports: the snapshot is not the recorded one at all.
func TestRestoreDigestBeforeEntries(t *testing.T) {
	b, info := zst(t, tarOf(t, reg("../evil", "x")))
	info.Digest = "sha256:" + hex.EncodeToString(make([]byte, 32))
	err := Restore(t.Context(), bytes.NewReader(b), info, t.TempDir())
	require.ErrorIs(t, err, ErrMismatch)
	assert.NotErrorIs(t, err, ErrUnsafe)
	assert.Contains(t, err.Error(), "verify snapshot:", "a reader without a name is called snapshot")
}

func TestTar(t *testing.T) {
	f, info, src := snapshotOf(t, project)
	rc, err := Tar(f, info, Owner{})
	require.NoError(t, err)
	m, err := ManifestTar(rc, "", Options{})
	require.NoError(t, err)
	require.NoError(t, rc.Close())
	want, err := ManifestDir(t.Context(), src, Options{})
	require.NoError(t, err)
	assert.Equal(t, want, m)

	// Small reads see the same stream as one big one.
	rc, err = Tar(f, info, Owner{})
	require.NoError(t, err)
	var small bytes.Buffer
	p := make([]byte, 7)
	for {
		n, err := rc.Read(p)
		small.Write(p[:n])
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
	}
	rc.Close()
	rc, err = Tar(f, info, Owner{})
	require.NoError(t, err)
	big, err := io.ReadAll(rc)
	require.NoError(t, err)
	rc.Close()
	assert.Equal(t, big, small.Bytes())
	assert.Equal(t, unzst(t, mustRead(t, f, info.Size)), big, "Snapshot's own archive is already in the normal form")

	// An owner other than root is in every header.
	rc, err = Tar(f, info, Owner{UID: 1234, GID: 5678})
	require.NoError(t, err)
	for _, h := range listTar(t, rc) {
		assert.Equal(t, [2]int{1234, 5678}, [2]int{h.Uid, h.Gid}, h.Name)
	}
	rc.Close()

	// Reading after Close fails.
	rc, err = Tar(f, info, Owner{})
	require.NoError(t, err)
	require.NoError(t, rc.Close())
	_, err = rc.Read(p)
	assert.Error(t, err)
}

func mustRead(t *testing.T, r io.ReaderAt, n int64) []byte {
	t.Helper()
	b, err := io.ReadAll(io.NewSectionReader(r, 0, n))
	require.NoError(t, err)
	return b
}

// TestRestoreChangedBetweenPasses: a snapshot file rewritten after Verify (here: between
// the two reads) fails the second pass's digest check.
func TestRestoreChangedBetweenPasses(t *testing.T) {
	b, info := zst(t, tarOf(t, reg("a", "first")))
	other, _ := zst(t, tarOf(t, reg("a", "other")))
	require.Equal(t, len(b), len(other))
	src := &swapReader{first: b, then: other, after: 1}
	err := Restore(t.Context(), src, info, t.TempDir())
	require.ErrorIs(t, err, ErrMismatch)
	assert.Contains(t, err.Error(), "changed while it was restored")
}

// swapReader serves first to the first after passes (reads at offset 0), then then.
type swapReader struct {
	first, then []byte
	after       int
	reads       int
}

func (s *swapReader) ReadAt(p []byte, off int64) (int, error) {
	if off == 0 {
		s.reads++
	}
	b := s.first
	if s.reads > s.after {
		b = s.then
	}
	return bytes.NewReader(b).ReadAt(p, off)
}
