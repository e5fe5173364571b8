package workspace

import (
	"archive/tar"
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/tapebox/tapebox/internal/testutil/treetest"
)

// seeds are tar streams for the fuzzers: ordinary ones and the hostile shapes of
// TestRestoreHostile, with absolute names pointing into outside.
func seeds(f *testing.F, outside string) [][]byte {
	fifo := reg("pipe", "")
	fifo.hdr.Typeflag = tar.TypeFifo
	return [][]byte{
		tarOf(f, dirEnt("d/"), reg("d/a", "a"), symlink("l", "d/a"), hardlink("h", "d/a")),
		tarOf(f, dirEnt("./"), reg("./x/y", "y")),
		tarOf(f, reg("../evil", "x")),
		tarOf(f, reg(filepath.Join(outside, "evil"), "x")),
		tarOf(f, symlink("out", outside), reg("out/evil", "x")),
		tarOf(f, symlink("up", ".."), reg("up/evil", "x")),
		tarOf(f, hardlink("pw", "/etc/passwd")),
		tarOf(f, hardlink("pw", filepath.Join(outside, "x"))),
		tarOf(f, symlink("l", filepath.Join(outside, "evil")), reg("l", "x")),
		tarOf(f, fifo),
		{},
	}
}

// FuzzRestore restores arbitrary tar streams (compressed, with an honest Info) and checks
// that nothing escapes the target directory, whatever is refused.
func FuzzRestore(f *testing.F) {
	outside := f.TempDir()
	for _, s := range seeds(f, outside) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		z, info := zst(t, b)
		parent := t.TempDir()
		dst := filepath.Join(parent, "replay")
		t.Cleanup(func() { makeRemovable(dst) })
		err := Restore(t.Context(), bytes.NewReader(z), info, dst)
		for _, p := range treetest.List(t, parent) {
			if p != "replay/" && !bytes.HasPrefix([]byte(p), []byte("replay/")) {
				t.Fatalf("restore wrote %s beside its directory (err %v)", p, err)
			}
		}
		if got := treetest.List(t, outside); len(got) > 0 {
			t.Fatalf("restore wrote %v outside (err %v)", got, err)
		}
		if err != nil {
			if _, statErr := os.Stat(dst); statErr == nil && Verify(bytes.NewReader(z), info) != nil {
				t.Fatalf("restore wrote into its directory what Verify refuses: %v", err)
			}
			return
		}
		// What Restore accepts, Tar accepts, and it reads back as the same tree.
		rc, err := Tar(bytes.NewReader(z), info, Owner{})
		if err != nil {
			t.Fatalf("Restore accepted what Tar refuses: %v", err)
		}
		defer rc.Close()
		fromTar, err := ManifestTar(rc, "", Options{NoDefaultExclude: true})
		if err != nil {
			t.Fatalf("ManifestTar of Tar's stream: %v", err)
		}
		fromDir, err := ManifestDir(t.Context(), dst, Options{NoDefaultExclude: true})
		if err != nil {
			t.Fatalf("ManifestDir of the restored tree: %v", err)
		}
		if d := Diff(fromTar, fromDir); len(d) > 0 {
			t.Fatalf("the restored tree differs from Tar's stream: %v", d)
		}
	})
}

// FuzzManifestTar reads arbitrary tar streams: errors are fine, panics are not.
func FuzzManifestTar(f *testing.F) {
	for _, s := range seeds(f, "/nonexistent") {
		f.Add(s, "")
		f.Add(s, "d")
	}
	f.Fuzz(func(t *testing.T, b []byte, prefix string) {
		m, err := ManifestTar(bytes.NewReader(b), prefix, Options{Exclude: []string{"x*"}})
		if err != nil {
			return
		}
		for i, e := range m {
			if i > 0 && m[i-1].Path >= e.Path {
				t.Fatalf("not sorted or not unique: %q then %q", m[i-1].Path, e.Path)
			}
		}
	})
}

// makeRemovable gives the owner full access to every directory under dir, so that a restored
// mode 0000 directory does not stop the test's cleanup when not running as root.
func makeRemovable(dir string) {
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			os.Chmod(p, 0o700)
		}
		return nil
	})
}
