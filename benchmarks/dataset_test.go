package benchmarks

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/tapebox/tapebox/dataset"
	"github.com/tapebox/tapebox/internal/testutil/tapegen"
	"github.com/tapebox/tapebox/schema"
)

// corpusTapes is the size of the generated corpus: about 75 MB of realistic Claude Code and
// Codex tapes (tapegen.Generate, seed 1), enough for a second or so per export.
const corpusTapes = 12

// genCorpus is the generated corpus on disk, shared by every benchmark of the run.
type genCorpus struct {
	dir    string
	inputs []dataset.Input
	paths  []string
	bytes  int64
}

var generated = generatedCorpus("tapebox-bench-corpus-", 5*time.Minute, tapegen.Options{Tapes: corpusTapes, Seed: 1})

// generatedCorpus is a corpus that tapegen.Generate writes with opts (within timeout) into
// a fresh scratch directory named after prefix, the first time it is asked for.
func generatedCorpus(prefix string, timeout time.Duration, opts tapegen.Options) func() (*genCorpus, error) {
	return sync.OnceValues(func() (*genCorpus, error) {
		dir, err := scratchDir(prefix)
		if err != nil {
			return nil, err
		}
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		if _, err := tapegen.Generate(ctx, dir, opts); err != nil {
			return nil, fmt.Errorf("generate the corpus: %w", err)
		}
		return corpusAt(dir)
	})
}

// corpusAt lists the tapes in dir as a genCorpus.
func corpusAt(dir string) (*genCorpus, error) {
	inputs, err := dataset.ExpandInputs([]string{dir})
	if err != nil {
		return nil, err
	}
	c := &genCorpus{dir: dir, inputs: inputs}
	for _, in := range inputs {
		c.paths = append(c.paths, in.Path)
		c.bytes += in.Size
	}
	return c, nil
}

func corpusOf(b *testing.B) *genCorpus {
	b.Helper()
	c, err := generated()
	if err != nil {
		b.Fatal(err)
	}
	return c
}

// indented is the generated corpus as another tool would write it: every tape indented by
// two spaces (json.Indent), valid but not in TapeBox's canonical encoding.
var indented = sync.OnceValues(func() (*genCorpus, error) {
	src, err := generated()
	if err != nil {
		return nil, err
	}
	dir, err := scratchDir("tapebox-bench-indented-")
	if err != nil {
		return nil, err
	}
	for _, p := range src.paths {
		data, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		var out bytes.Buffer
		if err := json.Indent(&out, data, "", "  "); err != nil {
			return nil, fmt.Errorf("indent %s: %w", p, err)
		}
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(p)), out.Bytes(), 0o644); err != nil {
			return nil, err
		}
	}
	return corpusAt(dir)
})

// corpusData is the corpus's files in memory, for the single-core decoding benchmarks.
var corpusData = sync.OnceValues(func() ([][]byte, error) {
	c, err := generated()
	if err != nil {
		return nil, err
	}
	var data [][]byte
	for _, p := range c.paths {
		d, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		data = append(data, d)
	}
	return data, nil
})

// decodeJSON decodes a tape with encoding/json into Go values (numbers kept exact), the
// straightforward way to read one and what the schema package's baseline does.
func decodeJSON(data []byte) error {
	var v any
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	return dec.Decode(&v)
}

// benchDecodeFiles decodes every tape of the corpus with encoding/json, on every core
// (decodeFiles).
func benchDecodeFiles(b *testing.B) {
	c := corpusOf(b)
	b.SetBytes(c.bytes)
	for b.Loop() {
		if err := decodeFiles(b.Context(), c.paths); err != nil {
			b.Fatal(err)
		}
	}
}

// decodeFiles reads and decodes every file with encoding/json, on every core.
func decodeFiles(ctx context.Context, paths []string) error {
	g, _ := errgroup.WithContext(ctx)
	g.SetLimit(runtime.GOMAXPROCS(0))
	for _, p := range paths {
		g.Go(func() error {
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			if err := decodeJSON(data); err != nil {
				return fmt.Errorf("decode %s: %w", p, err)
			}
			return nil
		})
	}
	return g.Wait()
}

// heapPeak samples the Go heap (allocated objects, garbage not yet swept included) every
// few milliseconds from start until stop, which returns the peak above the heap at start.
func heapPeak() (stop func() uint64) {
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	read := func() uint64 {
		metrics.Read(sample)
		return sample[0].Value.Uint64()
	}
	runtime.GC()
	base, peak := read(), uint64(0)
	done, finished := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(5 * time.Millisecond)
		defer t.Stop()
		for {
			if v := read(); v > peak {
				peak = v
			}
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	return func() uint64 {
		close(done)
		<-finished
		if peak < base {
			return 0
		}
		return peak - base
	}
}

// BenchmarkDatasetExport converts the generated corpus (about 75 MB of tape JSON) and
// reports MB/s of tape JSON read, side by side:
//
//	duckdb-read-json         the peer: DuckDB read_json -> one zstd Parquet file, 2 threads
//	                         (dataset/bench/duckdb.mjs; runs only when TAPEBOX_BENCH_DUCKDB names a
//	                         directory whose node_modules holds @duckdb/node-api); peak-rss-MB
//	encoding-json-decode     reading and decoding every tape with encoding/json on every core:
//	                         the floor of a converter built on the standard library
//	tapebox-parquet          dataset.Export to zstd Parquet (tapes and steps tables)
//	tapebox-parquet+arrow    the same, with Arrow IPC streams beside the Parquet shards
//
// TapeBox's exports also report peak-heap-MB, the Go heap's peak above where it started
// (target: >= 2x DuckDB's MB/s in < 256 MB).
func BenchmarkDatasetExport(b *testing.B) {
	b.Run("duckdb-read-json", func(b *testing.B) { benchDuckDB(b, corpusOf(b)) })
	b.Run("encoding-json-decode", benchDecodeFiles)
	for _, f := range []struct {
		name   string
		format dataset.Format
	}{{"tapebox-parquet", dataset.Parquet}, {"tapebox-parquet+arrow", dataset.Both}} {
		b.Run(f.name, func(b *testing.B) { benchExport(b, corpusOf(b), f.format) })
	}
}

// BenchmarkDatasetExportIndented is BenchmarkDatasetExport's DuckDB peer and Parquet export
// on the same tapes indented (as another tool writes them): the export's fast path reads
// any valid tape, not only its own canonical files (target: >= 2x DuckDB's MB/s).
func BenchmarkDatasetExportIndented(b *testing.B) {
	c := func(b *testing.B) *genCorpus {
		c, err := indented()
		if err != nil {
			b.Fatal(err)
		}
		return c
	}
	b.Run("duckdb-read-json", func(b *testing.B) { benchDuckDB(b, c(b)) })
	b.Run("tapebox-parquet", func(b *testing.B) { benchExport(b, c(b), dataset.Parquet) })
}

// benchExport exports corpus c to Parquet (and Arrow with dataset.Both) and reports its
// peak heap.
func benchExport(b *testing.B, c *genCorpus, format dataset.Format) {
	b.SetBytes(c.bytes)
	var peak uint64
	for b.Loop() {
		b.StopTimer()
		out := filepath.Join(b.TempDir(), "dataset")
		stop := heapPeak()
		b.StartTimer()
		res, err := dataset.Export(b.Context(), c.inputs, dataset.ExportOptions{Out: out, Format: format})
		b.StopTimer()
		peak = max(peak, stop())
		if err != nil {
			b.Fatalf("export: %v", err)
		}
		if res.Tapes != len(c.inputs) || res.InputBytes != c.bytes {
			b.Fatalf("export: %d tapes of %d bytes, want %d of %d", res.Tapes, res.InputBytes, len(c.inputs), c.bytes)
		}
		os.RemoveAll(out)
		b.StartTimer()
	}
	b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MB")
}

// duckDBEnv names a directory whose node_modules holds @duckdb/node-api, for the DuckDB
// peer of BenchmarkDatasetExport.
const duckDBEnv = "TAPEBOX_BENCH_DUCKDB"

func benchDuckDB(b *testing.B, c *genCorpus) {
	mods := os.Getenv(duckDBEnv)
	if mods == "" {
		b.Skipf("set %s to a directory with node_modules/@duckdb/node-api (npm install @duckdb/node-api there) to measure the DuckDB peer", duckDBEnv)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		b.Skipf("no node on PATH for the DuckDB peer: %v", err)
	}
	if _, err := os.Stat(filepath.Join(mods, "node_modules", "@duckdb", "node-api")); err != nil {
		b.Fatalf("%s=%s: %v", duckDBEnv, mods, err)
	}
	// The script resolves its import from node_modules beside it: run a copy in a directory
	// that links to the given node_modules.
	script, err := os.ReadFile(filepath.Join("..", "dataset", "bench", "duckdb.mjs"))
	if err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	if err := os.Symlink(filepath.Join(mods, "node_modules"), filepath.Join(dir, "node_modules")); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "duckdb.mjs"), script, 0o644); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(c.bytes)
	var rss int64
	for b.Loop() {
		out := filepath.Join(dir, "out.parquet")
		cmd := exec.CommandContext(b.Context(), node, filepath.Join(dir, "duckdb.mjs"), c.dir, out, "2")
		if msg, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("duckdb: %v: %s", err, msg)
		}
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			rss = max(rss, ru.Maxrss) // KiB on Linux
		}
		b.StopTimer()
		os.Remove(out)
		b.StartTimer()
	}
	b.ReportMetric(float64(rss)/1024, "peak-rss-MB")
}

// BenchmarkSchemaValidate validates the generated corpus against the tape schema and
// reports MB/s, side by side with decoding the same bytes with encoding/json (the first
// half of the straightforward validator; jsonschema would come after it):
//
//	cores=1/encoding-json-decode      every tape, one after the other, from memory
//	cores=1/schema-validate           schema.Validate on the same bytes
//	cores=all/encoding-json-decode    read and decode every file on every core
//	cores=all/schema-validate-files   schema.ValidateFiles on the same files
//
// Peers measured outside this suite (docs/design.md, README): ajv 8 on one core 390 MB/s, encoding/json
// decoding 90 MB/s.
func BenchmarkSchemaValidate(b *testing.B) {
	each := func(b *testing.B, check func([]byte) error) {
		data, err := corpusData()
		if err != nil {
			b.Fatal(err)
		}
		var n int64
		for _, d := range data {
			n += int64(len(d))
		}
		// Off the clock: the schema is compiled on first use, once per process.
		if err := check(data[0]); err != nil {
			b.Fatalf("tape 0: %v", err)
		}
		b.SetBytes(n)
		for b.Loop() {
			for i, d := range data {
				if err := check(d); err != nil {
					b.Fatalf("tape %d: %v", i, err)
				}
			}
		}
	}
	b.Run("cores=1/encoding-json-decode", func(b *testing.B) { each(b, decodeJSON) })
	b.Run("cores=1/schema-validate", func(b *testing.B) { each(b, schema.Validate) })
	b.Run("cores=all/encoding-json-decode", benchDecodeFiles)
	b.Run("cores=all/schema-validate-files", func(b *testing.B) {
		c := corpusOf(b)
		if err := schema.ValidateFile(c.paths[0]); err != nil { // compiles the schema, off the clock
			b.Fatalf("%s: %v", c.paths[0], err)
		}
		b.SetBytes(c.bytes)
		for b.Loop() {
			for _, r := range schema.ValidateFiles(b.Context(), c.paths) {
				if r.Err != nil {
					b.Fatalf("%s: %v", r.Path, r.Err)
				}
			}
		}
	})
}
