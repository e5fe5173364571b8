package secrets

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tapebox/tapebox/internal/testutil/tapegen"
	"github.com/tapebox/tapebox/tape"
)

// BenchmarkScan scans the golden tapes one after another on one goroutine; MB/s is tape
// JSON scanned per second.
func BenchmarkScan(b *testing.B) {
	var docs [][]byte
	for _, p := range goldenTapes(b) {
		data, err := os.ReadFile(p)
		if err != nil {
			b.Fatal(err)
		}
		docs = append(docs, data)
	}
	benchScanJSON(b, docs, false)
}

// BenchmarkScanFiles is what tapebox scan does with the golden tapes: read and scan
// them on GOMAXPROCS goroutines.
func BenchmarkScanFiles(b *testing.B) {
	paths := goldenTapes(b)
	var size int64
	for _, p := range paths {
		fi, err := os.Stat(p)
		if err != nil {
			b.Fatal(err)
		}
		size += fi.Size()
	}
	b.SetBytes(size)
	cpu := startCPU()
	for b.Loop() {
		for _, r := range ScanFiles(b.Context(), paths) {
			if r.Err != nil {
				b.Fatal(r.Err)
			}
		}
	}
	cpu.report(b, size)
}

// BenchmarkScanCorpus scans generated tapes of the size dataset export meets (25 steps on
// average, every request carrying the whole conversation, long tool outputs), one after
// another on one goroutine.
func BenchmarkScanCorpus(b *testing.B) {
	var docs [][]byte
	for i := range 4 {
		data, err := tape.Marshal(tapegen.Tape(tapegen.Options{Seed: 14}, i))
		if err != nil {
			b.Fatal(err)
		}
		docs = append(docs, data)
	}
	benchScanJSON(b, docs, true)
}

// benchScanJSON scans docs one after another on one goroutine with the default scanner;
// with clean, a finding fails b.
func benchScanJSON(b *testing.B, docs [][]byte, clean bool) {
	s, err := Default()
	if err != nil {
		b.Fatal(err)
	}
	var size int64
	for _, d := range docs {
		size += int64(len(d))
	}
	b.SetBytes(size)
	cpu := startCPU()
	for b.Loop() {
		for _, d := range docs {
			found, err := s.ScanJSON(b.Context(), bytes.NewReader(d))
			if err != nil {
				b.Fatal(err)
			}
			if clean && len(found) > 0 {
				b.Fatalf("generated tape: %d findings, first %s", len(found), found[0])
			}
		}
	}
	cpu.report(b, size)
}

// cpuClock measures the process's CPU time (user and system) over a benchmark: on a
// machine other processes share, MB per CPU-second is what the code costs, where MB/s
// also counts the time others had the cores.
type cpuClock struct{ start time.Duration }

func startCPU() cpuClock { return cpuClock{processCPU()} }

// report adds cpu-MB/s: bytes scanned per op over CPU seconds per op, the whole process
// (every goroutine) counted.
func (c cpuClock) report(b *testing.B, bytesPerOp int64) {
	used := processCPU() - c.start
	if used > 0 && b.N > 0 {
		b.ReportMetric(float64(bytesPerOp)*float64(b.N)/1e6/used.Seconds(), "cpu-MB/s")
	}
}

func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// benchCorpora are the generated tapes of BenchmarkScanTape and BenchmarkScanDir, written
// once per run into scratch directories that TestMain removes.
var benchCorpora struct {
	mu   sync.Mutex
	dirs []string
}

func TestMain(m *testing.M) {
	code := m.Run()
	benchCorpora.mu.Lock()
	for _, d := range benchCorpora.dirs {
		os.RemoveAll(d)
	}
	benchCorpora.mu.Unlock()
	os.Exit(code)
}

// generateBenchDir writes a tapegen corpus with opts into a fresh scratch directory and
// returns the tape files and the bytes a scan reads (tapes and snapshots).
func generateBenchDir(opts tapegen.Options, only ...int) (paths []string, size int64, err error) {
	dir, err := os.MkdirTemp("", "tapebox-scan-bench-")
	if err != nil {
		return nil, 0, err
	}
	benchCorpora.mu.Lock()
	benchCorpora.dirs = append(benchCorpora.dirs, dir)
	benchCorpora.mu.Unlock()
	if len(only) == 0 {
		if _, err := tapegen.Generate(context.Background(), dir, opts); err != nil {
			return nil, 0, err
		}
		only = make([]int, opts.Tapes)
		for i := range only {
			only[i] = i
		}
	} else {
		for _, i := range only {
			data, err := tape.Marshal(tapegen.Tape(opts, i))
			if err != nil {
				return nil, 0, err
			}
			if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("tape-%05d.json", i)), data, 0o644); err != nil {
				return nil, 0, err
			}
			if opts.Workspaces > 0 {
				if err := os.WriteFile(filepath.Join(dir, tapegen.SnapshotName(i)), tapegen.Snapshot(opts, i%opts.Workspaces), 0o644); err != nil {
					return nil, 0, err
				}
			}
		}
	}
	for _, i := range only {
		paths = append(paths, filepath.Join(dir, fmt.Sprintf("tape-%05d.json", i)))
	}
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		fi, err := d.Info()
		size += fi.Size()
		return err
	})
	return paths, size, err
}

// largeTape is one generated tape of about 50 MB (75 steps on average, every request
// carrying the whole conversation) with a start snapshot of 4 MB of incompressible data.
var largeTape = sync.OnceValues(func() ([]string, error) {
	paths, _, err := generateBenchDir(tapegen.Options{Seed: 2, MeanSteps: 75, Workspaces: 1, SnapshotBytes: 4 << 20}, 4)
	return paths, err
})

// tapeDir is a directory of 24 generated tapes (about 90 MB) sharing 4 start snapshots of
// 256 KiB of data each, as dataset export and tapebox scan DIR meet it.
var tapeDir = sync.OnceValues(func() ([]string, error) {
	paths, _, err := generateBenchDir(tapegen.Options{Tapes: 24, Seed: 2, Workspaces: 4, SnapshotBytes: 256 << 10})
	return paths, err
})

// BenchmarkScanTape is tapebox scan of one large tape and its snapshot (largeTape); MB/s
// counts the tape's and the snapshot's bytes.
func BenchmarkScanTape(b *testing.B) { benchScanFiles(b, largeTape) }

// BenchmarkScanDir is tapebox scan of a directory of tapes (tapeDir), snapshots included.
func BenchmarkScanDir(b *testing.B) { benchScanFiles(b, tapeDir) }

// benchScanFiles scans the files that corpus returns with ScanFiles (on every core) and
// requires them clean.
func benchScanFiles(b *testing.B, corpus func() ([]string, error)) {
	paths, err := corpus()
	if err != nil {
		b.Fatal(err)
	}
	if _, err := Default(); err != nil { // compiles the rules, off the clock
		b.Fatal(err)
	}
	var size int64
	for _, p := range paths {
		for _, f := range []string{p, snapshotBeside(p)} {
			if fi, err := os.Stat(f); err == nil {
				size += fi.Size()
			}
		}
	}
	b.SetBytes(size)
	cpu := startCPU()
	for b.Loop() {
		for _, r := range ScanFiles(b.Context(), paths) {
			if r.Err != nil || len(r.Findings) > 0 {
				b.Fatalf("%s: %v, %d findings", r.Path, r.Err, len(r.Findings))
			}
		}
	}
	cpu.report(b, size)
}

// snapshotBeside is the start snapshot tapegen writes beside a tape it generated.
func snapshotBeside(tapePath string) string {
	return strings.TrimSuffix(tapePath, ".json") + ".workspace.tar.zst"
}
