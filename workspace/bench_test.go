package workspace

import (
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// The generated workspace of the benchmarks: 5,000 files in 50 directories, 50 MB of content,
// source-like text with one file in ten random bytes (a binary), so that zstd has work of
// both kinds.
const (
	benchDirs  = 50
	benchFiles = 5000
	benchBytes = 50 << 20
)

// benchRoot holds the generated tree once a benchmark asked for it; TestMain removes it.
var benchRoot string

func TestMain(m *testing.M) {
	code := m.Run()
	if benchRoot != "" {
		os.RemoveAll(benchRoot)
	}
	os.Exit(code)
}

var benchTree = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "tapebox-workspace-bench-")
	if err != nil {
		return "", err
	}
	benchRoot = dir
	rng := rand.New(rand.NewPCG(1, 2))
	words := strings.Fields("func return if else for range err nil ctx string int64 package import type struct " +
		"interface map slice append len make error fmt Errorf Sprintf the a of to in and is value name path file " +
		"dir write read open close sync test want got require assert bytes buffer header entry tar zstd snapshot")
	var sb strings.Builder
	for i := range benchFiles {
		d := filepath.Join(dir, fmt.Sprintf("pkg%02d", i%benchDirs))
		if err := os.MkdirAll(d, 0o755); err != nil {
			return "", err
		}
		size := benchBytes / benchFiles
		size += rng.IntN(size) - size/2 // 5 to 15 KiB, 10 KiB on average
		var data []byte
		if i%10 == 9 {
			data = make([]byte, size)
			for j := range data {
				data[j] = byte(rng.Uint32())
			}
		} else {
			sb.Reset()
			for sb.Len() < size {
				sb.WriteString(words[rng.IntN(len(words))])
				if rng.IntN(8) == 0 {
					sb.WriteString("\n\t")
				} else {
					sb.WriteByte(' ')
				}
			}
			data = []byte(sb.String()[:size])
		}
		if err := os.WriteFile(filepath.Join(d, fmt.Sprintf("file%04d.go", i)), data, 0o644); err != nil {
			return "", err
		}
	}
	return dir, nil
})

func benchDir(b *testing.B) (string, int64) {
	b.Helper()
	dir, err := benchTree()
	if err != nil {
		b.Fatal(err)
	}
	var n int64
	m, err := ManifestDir(b.Context(), dir, Options{})
	if err != nil {
		b.Fatal(err)
	}
	for _, e := range m {
		n += e.Size
	}
	return dir, n
}

func BenchmarkSnapshot(b *testing.B) {
	dir, n := benchDir(b)
	b.SetBytes(n)
	var info Info
	for b.Loop() {
		var err error
		if info, err = Snapshot(b.Context(), dir, io.Discard, Options{}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(info.Size)/float64(info.Bytes), "ratio")
}

func BenchmarkRestore(b *testing.B) {
	f, info, n := benchSnapshotFile(b)
	benchRestores(b, n, func(dst string) error { return Restore(b.Context(), f, info, dst) })
}

// BenchmarkRestoreTar is the baseline for BenchmarkRestore, side by side: GNU tar extracting
// the same snapshot (tar --zstd -xf), which neither verifies nor checks entries.
func BenchmarkRestoreTar(b *testing.B) {
	if _, err := exec.LookPath("tar"); err != nil {
		b.Skip("no tar")
	}
	if _, err := exec.LookPath("zstd"); err != nil {
		b.Skip("no zstd for tar --zstd")
	}
	f, _, n := benchSnapshotFile(b)
	benchRestores(b, n, func(dst string) error {
		if err := os.Mkdir(dst, 0o755); err != nil {
			return err
		}
		if out, err := exec.CommandContext(b.Context(), "tar", "--zstd", "-xf", f.Name(), "-C", dst).CombinedOutput(); err != nil {
			return fmt.Errorf("tar: %v\n%s", err, out)
		}
		return nil
	})
}

// BenchmarkVerify is Restore's first pass alone: hash, decompress, check every header.
func BenchmarkVerify(b *testing.B) {
	f, info, n := benchSnapshotFile(b)
	b.SetBytes(n)
	for b.Loop() {
		if err := Verify(f, info); err != nil {
			b.Fatal(err)
		}
	}
}

// benchSnapshotFile snapshots benchDir into a file and returns it open, with its Info and
// the tree's content size.
func benchSnapshotFile(b *testing.B) (*os.File, Info, int64) {
	dir, n := benchDir(b)
	out := filepath.Join(b.TempDir(), "start.tar.zst")
	info, err := SnapshotFile(b.Context(), dir, out, Options{})
	if err != nil {
		b.Fatal(err)
	}
	f, err := os.Open(out)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { f.Close() })
	return f, info, n
}

// benchRestores times restore into a fresh directory each iteration (n bytes each), and
// removes the directory with the timer stopped.
func benchRestores(b *testing.B, n int64, restore func(dst string) error) {
	parent := b.TempDir()
	b.SetBytes(n)
	i := 0
	for b.Loop() {
		dst := filepath.Join(parent, fmt.Sprint(i))
		if err := restore(dst); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		if err := os.RemoveAll(dst); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		i++
	}
}

func BenchmarkManifestDir(b *testing.B) {
	dir, n := benchDir(b)
	b.SetBytes(n)
	for b.Loop() {
		if _, err := ManifestDir(b.Context(), dir, Options{}); err != nil {
			b.Fatal(err)
		}
	}
}
