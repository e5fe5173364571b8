package tape

import (
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
)

// entries lists dir's names, sorted.
func entries(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names
}

func readString(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func umask() os.FileMode {
	m := syscall.Umask(0)
	syscall.Umask(m)
	return os.FileMode(m)
}

// TestAtomicFile: the path keeps its old content until Commit, a Close without Commit
// leaves it and no temporary file, and the file gets the mode asked for (less the umask).
func TestAtomicFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "sub", "snap.tar.zst")
	if err := WriteFileAtomic(p, []byte("old")); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != 0o644&^umask() {
		t.Fatalf("WriteFileAtomic: mode %v, err %v; want %v", fi.Mode(), err, 0o644&^umask())
	}

	f, err := CreateAtomic(p, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte("half")); err != nil {
		t.Fatal(err)
	}
	if got := readString(t, p); got != "old" {
		t.Errorf("before Commit the path holds %q, want the old content", got)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if got, names := readString(t, p), entries(t, filepath.Dir(p)); got != "old" || !slices.Equal(names, []string{"snap.tar.zst"}) {
		t.Errorf("after Close without Commit: %q, entries %v; want the old content alone", got, names)
	}

	f, err = CreateAtomic(p, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write([]byte("new")); err != nil {
		t.Fatal(err)
	}
	if err := f.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Errorf("Close after Commit: %v", err)
	}
	if got := readString(t, p); got != "new" {
		t.Errorf("after Commit the path holds %q, want new", got)
	}
	if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != 0o600&^umask() {
		t.Errorf("mode %v, err %v; want %v", fi.Mode(), err, 0o600&^umask())
	}
	if names := entries(t, filepath.Dir(p)); !slices.Equal(names, []string{"snap.tar.zst"}) {
		t.Errorf("entries %v: a temporary file was left", names)
	}
}

// TestAtomicBatch: files land whole with no temporary files left; with SyncFiles, Sync
// syncs them, and a file that vanished before Sync is Sync's error; without, Sync syncs
// the folder only.
func TestAtomicBatch(t *testing.T) {
	dir := t.TempDir()
	b := &AtomicBatch{Dir: dir, SyncFiles: true}
	for _, name := range []string{"a.json", "b.json", "c.json"} {
		if err := b.WriteFile(name, []byte(name)); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.WriteFile("a.json", []byte("again")); err != nil {
		t.Fatal(err)
	}
	if names := entries(t, dir); !slices.Equal(names, []string{"a.json", "b.json", "c.json"}) {
		t.Errorf("entries %v", names)
	}
	if got := readString(t, filepath.Join(dir, "a.json")); got != "again" {
		t.Errorf("a.json holds %q, want the second write", got)
	}
	if fi, err := os.Stat(filepath.Join(dir, "b.json")); err != nil || fi.Mode().Perm() != 0o644&^umask() {
		t.Errorf("mode %v, err %v", fi.Mode(), err)
	}
	if err := b.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := b.WriteFile("d.json", nil); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, "d.json")); err != nil {
		t.Fatal(err)
	}
	if err := b.Sync(); err == nil {
		t.Error("Sync of a file that is gone: no error")
	}
	if err := b.Sync(); err != nil {
		t.Errorf("a second Sync has nothing left to fail on: %v", err)
	}
	b.SyncFiles = false
	if err := b.WriteFile("e.json", nil); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, "e.json")); err != nil {
		t.Fatal(err)
	}
	if err := b.Sync(); err != nil {
		t.Errorf("Sync without SyncFiles syncs the folder alone: %v", err)
	}
	if err := (&AtomicBatch{Dir: filepath.Join(dir, "none")}).WriteFile("x", nil); err == nil {
		t.Error("WriteFile into a folder that does not exist: no error")
	}
	if err := (&AtomicBatch{Dir: filepath.Join(dir, "none")}).Sync(); err == nil {
		t.Error("Sync of a folder that does not exist: no error")
	}
}
