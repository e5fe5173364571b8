package benchmarks

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/tapebox/tapebox/dataset"
	"github.com/tapebox/tapebox/secrets"
)

// pythonSpaced is the generated corpus as Python's json.dump writes it: ", " and ": "
// between members and elements, and every character beyond ASCII as a \u escape (issue
// 30's corpus of tapes "written by another tool"). The tapes are valid but not in
// TapeBox's canonical encoding.
var pythonSpaced = sync.OnceValues(func() (*genCorpus, error) {
	src, err := generated()
	if err != nil {
		return nil, err
	}
	dir, err := scratchDir("tapebox-bench-python-")
	if err != nil {
		return nil, err
	}
	for _, p := range src.paths {
		data, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(p)), pythonStyle(data), 0o644); err != nil {
			return nil, err
		}
	}
	return corpusAt(dir)
})

// pythonStyle rewrites compact JSON with json.dump's default spacing and ensure_ascii.
func pythonStyle(data []byte) []byte {
	out := make([]byte, 0, len(data)+len(data)/8)
	inString := false
	for i := 0; i < len(data); {
		c := data[i]
		switch {
		case inString && c == '\\':
			out = append(out, data[i:i+2]...)
			i += 2
			continue
		case c == '"':
			inString = !inString
		case inString && c >= utf8.RuneSelf:
			r, n := utf8.DecodeRune(data[i:])
			if r > 0xffff {
				r1, r2 := utf16.EncodeRune(r)
				out = fmt.Appendf(out, `\u%04x\u%04x`, r1, r2)
			} else {
				out = fmt.Appendf(out, `\u%04x`, r)
			}
			i += n
			continue
		case !inString && (c == ',' || c == ':'):
			out = append(out, c, ' ')
			i++
			continue
		}
		out = append(out, c)
		i++
	}
	return out
}

// BenchmarkScanGate measures the secret scan and the export it gates, side by side on the
// generated corpus written with Python's spacing (about 80 MB; MB/s of tape JSON):
//
//	duckdb-read-json       the peer: DuckDB read_json -> one zstd Parquet file, 2 threads
//	                       (runs when TAPEBOX_BENCH_DUCKDB is set, see BenchmarkDatasetExport)
//	tapebox-scan           secrets.ScanFiles on every core: tapebox scan (target: 400 MB/s)
//	tapebox-parquet        dataset.Export alone
//	tapebox-parquet+gate   secrets.CheckWith, then dataset.Export: tapebox dataset export
//	                       (target: >= 2x DuckDB)
//
// Each also reports cpu-MB/s, the MB of tape JSON per CPU-second of this process (every
// goroutine counted): on a machine other sessions share, what the code costs.
func BenchmarkScanGate(b *testing.B) {
	c := func(b *testing.B) *genCorpus {
		c, err := pythonSpaced()
		if err != nil {
			b.Fatal(err)
		}
		return c
	}
	b.Run("duckdb-read-json", func(b *testing.B) {
		c := c(b)
		start := childCPU()
		benchDuckDB(b, c)
		if used := childCPU() - start; used > 0 && b.N > 0 {
			b.ReportMetric(float64(c.bytes)*float64(b.N)/1e6/used.Seconds(), "cpu-MB/s")
		}
	})
	b.Run("tapebox-scan", func(b *testing.B) {
		c := c(b)
		if _, err := secrets.Default(); err != nil { // compiles the rules, off the clock
			b.Fatal(err)
		}
		b.SetBytes(c.bytes)
		cpu := startCPU()
		for b.Loop() {
			for _, r := range secrets.ScanFiles(b.Context(), c.paths) {
				if r.Err != nil || len(r.Findings) > 0 {
					b.Fatalf("%s: %v, %d findings", r.Path, r.Err, len(r.Findings))
				}
			}
		}
		cpu.report(b, c.bytes)
	})
	for _, gate := range []bool{false, true} {
		name := "tapebox-parquet"
		if gate {
			name += "+gate"
		}
		b.Run(name, func(b *testing.B) {
			c := c(b)
			if _, err := secrets.Default(); err != nil {
				b.Fatal(err)
			}
			b.SetBytes(c.bytes)
			cpu := startCPU()
			for b.Loop() {
				out := filepath.Join(b.TempDir(), "dataset")
				if gate {
					if err := secrets.CheckWith(b.Context(), secrets.Options{}, c.paths...); err != nil {
						b.Fatal(err)
					}
				}
				if _, err := dataset.Export(b.Context(), c.inputs, dataset.ExportOptions{Out: out, Format: dataset.Parquet}); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				os.RemoveAll(out)
				b.StartTimer()
			}
			cpu.report(b, c.bytes)
		})
	}
}

// cpuClock measures the process's CPU time (user and system) over a benchmark.
type cpuClock struct{ start time.Duration }

func startCPU() cpuClock { return cpuClock{processCPU()} }

// report adds cpu-MB/s: bytes per op over CPU seconds per op.
func (c cpuClock) report(b *testing.B, bytesPerOp int64) {
	if used := processCPU() - c.start; used > 0 && b.N > 0 {
		b.ReportMetric(float64(bytesPerOp)*float64(b.N)/1e6/used.Seconds(), "cpu-MB/s")
	}
}

func processCPU() time.Duration { return rusage(syscall.RUSAGE_SELF) }

// childCPU is the CPU time of the child processes waited for (the DuckDB peer).
func childCPU() time.Duration { return rusage(syscall.RUSAGE_CHILDREN) }

func rusage(who int) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(who, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
