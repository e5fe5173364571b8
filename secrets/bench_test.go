package secrets

import (
	"bytes"
	"os"
	"testing"

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
	for b.Loop() {
		for _, r := range ScanFiles(b.Context(), paths) {
			if r.Err != nil {
				b.Fatal(r.Err)
			}
		}
	}
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
}
