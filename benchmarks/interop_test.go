package benchmarks

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/tapebox/tapebox/dataset"
	"github.com/tapebox/tapebox/internal/tapegen"
	"github.com/tapebox/tapebox/interop"
	"github.com/tapebox/tapebox/tape"
)

// interopMB is the size of the interop benchmarks' corpus (TAPEBOX_BENCH_INTEROP_MB,
// default 500): the issue measures export and import on 500 MB of tapes against dataset
// export of the same tapes.
func interopMB() int {
	if v, err := strconv.Atoi(os.Getenv("TAPEBOX_BENCH_INTEROP_MB")); err == nil && v > 0 {
		return v
	}
	return 500
}

// interopCorpus is a generated corpus of about interopMB() MB (tapegen.Generate,
// seed 2: 80 tapes make 309 MB).
var interopCorpus = sync.OnceValues(func() (*genCorpus, error) {
	dir, err := scratchDir("tapebox-bench-interop-")
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	n := max(1, interopMB()*80/309)
	if _, err := tapegen.Generate(ctx, dir, tapegen.Options{Tapes: n, Seed: 2}); err != nil {
		return nil, fmt.Errorf("generate the corpus: %w", err)
	}
	return corpusAt(dir)
})

// nativeFormat is the harness-native format of a tape of the corpus.
func nativeFormat(tp *tape.Tape) interop.Format {
	if tp.Meta.Provider == tape.ProviderOpenAIResponses {
		return interop.Codex
	}
	return interop.ClaudeCode
}

// exportAll exports every tape (read, decoded, converted, written) with jobs workers and
// returns the bytes written. format "" is each tape's native format, into claude-code/ and
// codex/ under out.
func exportAll(ctx context.Context, paths []string, out string, format interop.Format) (int64, error) {
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(2)
	var mu sync.Mutex
	var written int64
	for _, p := range paths {
		g.Go(func() error {
			tp, err := interop.LoadFor(p, format)
			if err != nil {
				return err
			}
			f := format
			dir := out
			if f == "" {
				f = nativeFormat(tp)
				dir = filepath.Join(out, string(f))
			}
			files, err := interop.Export(tp, f, interop.Options{})
			if err != nil {
				return fmt.Errorf("%s: %w", p, err)
			}
			var n int64
			for _, fl := range files {
				path := filepath.Join(dir, filepath.FromSlash(fl.Path))
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					return err
				}
				if err := os.WriteFile(path, fl.Data, 0o644); err != nil {
					return err
				}
				n += int64(len(fl.Data))
			}
			mu.Lock()
			written += n
			mu.Unlock()
			return ctx.Err()
		})
	}
	return written, g.Wait()
}

// BenchmarkInterop measures, on one corpus of about 500 MB of tapes (2 workers each, the
// machine's cores): dataset export (Parquet), export to each interop format (tapes read,
// converted, files written), and import of the exported session files back into tapes
// (read, converted, encoded, written). MB/s is of the tapes' JSON for the exports, of the
// session files for the import.
func BenchmarkInterop(b *testing.B) {
	c, err := interopCorpus()
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("corpus: %d tapes, %.1f MB", len(c.paths), float64(c.bytes)/1e6)
	b.Run("dataset-export", func(b *testing.B) {
		b.SetBytes(c.bytes)
		for b.Loop() {
			out, err := scratchDir("tapebox-bench-interop-ds-")
			if err != nil {
				b.Fatal(err)
			}
			if _, err := dataset.Export(b.Context(), c.inputs, dataset.ExportOptions{Out: out, Jobs: 2}); err != nil {
				b.Fatal(err)
			}
			os.RemoveAll(out)
		}
	})
	var native string
	for _, f := range []interop.Format{"", interop.STS, interop.ATIF, interop.OTLP} {
		name := "export-" + string(f)
		if f == "" {
			name = "export-native"
		}
		b.Run(name, func(b *testing.B) {
			b.SetBytes(c.bytes)
			var written int64
			for b.Loop() {
				out, err := scratchDir("tapebox-bench-interop-x-")
				if err != nil {
					b.Fatal(err)
				}
				if written, err = exportAll(b.Context(), c.paths, out, f); err != nil {
					b.Fatal(err)
				}
				if f == "" {
					native = out
				} else {
					os.RemoveAll(out)
				}
			}
			b.ReportMetric(float64(written)/1e6, "MB-written")
		})
	}
	if native == "" {
		return
	}
	var sessionBytes int64
	_ = filepath.Walk(native, func(_ string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() {
			sessionBytes += fi.Size()
		}
		return nil
	})
	b.Run("import-native", func(b *testing.B) {
		b.SetBytes(sessionBytes)
		var tapeBytes int64
		var mu sync.Mutex
		for b.Loop() {
			tapeBytes = 0
			out, err := scratchDir("tapebox-bench-interop-imp-")
			if err != nil {
				b.Fatal(err)
			}
			g, _ := errgroup.WithContext(b.Context())
			g.SetLimit(2)
			for _, f := range []interop.Format{interop.ClaudeCode, interop.Codex} {
				g.Go(func() error {
					dir := filepath.Join(native, string(f))
					if _, err := os.Stat(dir); err != nil {
						return nil
					}
					tapes, err := interop.Import(f, dir)
					if err != nil {
						return err
					}
					for _, tp := range tapes {
						data, err := tape.Marshal(tp)
						if err != nil {
							return err
						}
						if err := tape.WriteFileAtomic(filepath.Join(out, tp.Meta.TapeID+".json"), data); err != nil {
							return err
						}
						mu.Lock()
						tapeBytes += int64(len(data))
						mu.Unlock()
					}
					return nil
				})
			}
			if err := g.Wait(); err != nil {
				b.Fatal(err)
			}
			os.RemoveAll(out)
		}
		// An imported tape repeats the conversation in every step's request, as a recorded
		// one does: it is much larger than the session file.
		b.ReportMetric(float64(tapeBytes)/1e6, "MB-tapes-written")
	})
}
