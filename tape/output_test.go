package tape

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestOutputsNeverReplaceNonRegularFiles: Create, Save, WriteFileAtomic and CreateAtomic refuse a FIFO, a
// copy of a device node, a directory and a symbolic link at the output path, and leave it as
// it was; a regular file or nothing is fine.
func TestOutputsNeverReplaceNonRegularFiles(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	paths := map[string]os.FileMode{fifo: os.ModeNamedPipe}
	null := filepath.Join(dir, "null")
	if err := syscall.Mknod(null, syscall.S_IFCHR|0o666, int(unixMkdev(1, 3))); err == nil {
		paths[null] = os.ModeDevice | os.ModeCharDevice
	} else if os.Getuid() == 0 {
		t.Fatalf("mknod as root: %v", err)
	} else {
		t.Logf("no device node test without root: %v", err)
	}
	sub := filepath.Join(dir, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	paths[sub] = os.ModeDir
	link := filepath.Join(dir, "link")
	if err := os.Symlink(filepath.Join(dir, "target"), link); err != nil {
		t.Fatal(err)
	}
	paths[link] = os.ModeSymlink
	tp := New(ProviderAnthropic, time.Unix(0, 0))
	for p, mode := range paths {
		for name, write := range map[string]func() error{
			"Create": func() error {
				w, err := Create(p, tp)
				if err == nil {
					w.Close()
				}
				return err
			},
			"Save":            func() error { return Save(p, tp) },
			"WriteFileAtomic": func() error { return WriteFileAtomic(p, []byte("x")) },
			"CreateAtomic": func() error {
				f, err := CreateAtomic(p, 0o644)
				if err == nil {
					f.Close()
				}
				return err
			},
		} {
			err := write()
			if !errors.Is(err, ErrNotRegular) {
				t.Errorf("%s(%s): %v, want ErrNotRegular", name, filepath.Base(p), err)
			}
			fi, lerr := os.Lstat(p)
			if lerr != nil || fi.Mode().Type() != mode.Type() {
				t.Errorf("%s(%s) changed the entry: %v %v", name, filepath.Base(p), fi.Mode(), lerr)
			}
		}
	}
	if _, err := os.Lstat(filepath.Join(dir, "target")); !os.IsNotExist(err) {
		t.Errorf("a write went through the link: %v", err)
	}
	regular := filepath.Join(dir, "run.json")
	if err := Save(regular, tp); err != nil {
		t.Fatal(err)
	}
	if err := Save(regular, tp); err != nil {
		t.Errorf("replacing a regular file: %v", err)
	}
}

func unixMkdev(major, minor uint32) uint64 {
	return uint64(major)<<8 | uint64(minor)
}
