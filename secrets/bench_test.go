package secrets

import (
	"bytes"
	"os"
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
