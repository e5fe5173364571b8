package dataset

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/tapebox/tapebox/internal/testutil/tapegen"
	"github.com/tapebox/tapebox/tape"
)

// benchCorpus generates the benchmark corpus once per benchmark: realistic tapes (25
// steps on average, the whole conversation in every request). TAPEBOX_BENCH_TAPES sets
// the number of tapes (default 40, about 190 MB); dataset/bench/compare.sh runs the CLI on
// a 1 GB corpus against DuckDB.
func benchCorpus(b *testing.B) ([]Input, int64) {
	b.Helper()
	n := 40
	if v, err := strconv.Atoi(os.Getenv("TAPEBOX_BENCH_TAPES")); err == nil && v > 0 {
		n = v
	}
	dir := filepath.Join(b.TempDir(), "tapes")
	st, err := tapegen.Generate(b.Context(), dir, tapegen.Options{Tapes: n, Seed: 1})
	if err != nil {
		b.Fatal(err)
	}
	inputs, err := ExpandInputs([]string{dir})
	if err != nil {
		b.Fatal(err)
	}
	return inputs, st.Bytes
}

func BenchmarkExport(b *testing.B) {
	inputs, size := benchCorpus(b)
	for _, f := range []Format{Parquet, Both} {
		b.Run(f.String(), func(b *testing.B) {
			b.SetBytes(size)
			out := b.TempDir()
			i := 0
			for b.Loop() {
				i++
				if _, err := Export(b.Context(), inputs, ExportOptions{Out: filepath.Join(out, strconv.Itoa(i)), Format: f}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(len(inputs)*b.N)/b.Elapsed().Seconds(), "tapes/s")
		})
	}
}

func BenchmarkImport(b *testing.B) {
	inputs, size := benchCorpus(b)
	dir := filepath.Join(b.TempDir(), "dataset")
	if _, err := Export(b.Context(), inputs, ExportOptions{Out: dir}); err != nil {
		b.Fatal(err)
	}
	out := b.TempDir()
	b.SetBytes(size)
	i := 0
	for b.Loop() {
		i++
		if _, err := Import(b.Context(), dir, ImportOptions{Out: filepath.Join(out, strconv.Itoa(i))}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkValidate(b *testing.B) {
	inputs, size := benchCorpus(b)
	dir := filepath.Join(b.TempDir(), "dataset")
	if _, err := Export(b.Context(), inputs, ExportOptions{Out: dir}); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(size)
	for b.Loop() {
		rep, err := Validate(b.Context(), dir, ValidateOptions{})
		if err != nil || rep.Err() != nil {
			b.Fatal(err, rep.Err())
		}
	}
}

// BenchmarkTape measures the steps of an export on one tape of about 5 MB, one core.
func BenchmarkTape(b *testing.B) {
	tp := tapegen.Tape(tapegen.Options{Seed: 1}, 2)
	data, err := tape.Marshal(tp)
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("tape of %d bytes, %d steps", len(data), tp.Totals().Steps)
	for _, bench := range []struct {
		name string
		run  func() error
	}{
		{"validate", func() error { return validateTape(data) }},
		{"unmarshal", func() error { _, err := tape.Unmarshal(data); return err }},
		{"decode", func() error {
			if _, canon, err := tape.Decode(data, tape.DecodeOptions{NoChunkData: true}); err != nil || len(canon) != len(data) {
				b.Fatal("tape.Decode", err)
			}
			return nil
		}},
		{"marshal", func() error { _, err := tape.Marshal(tp); return err }},
		{"isCanonical", func() error {
			if !tape.IsCanonical(tp, data) {
				b.Fatal("not canonical")
			}
			return nil
		}},
		{"rows", func() error { _, _, err := RowsOf(tp, data); return err }},
	} {
		b.Run(bench.name, func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				if err := bench.run(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
