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
	"github.com/tapebox/tapebox/internal/testutil/tapegen"
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
var interopCorpus = generatedCorpus("tapebox-bench-interop-", 20*time.Minute, tapegen.Options{Tapes: max(1, interopMB()*80/309), Seed: 2})

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
// converted, files written), and import of the exported session files back into tapes, per
// format (read, converted, encoded, written), and of Pi sessions written from the corpus. MB/s is of the tapes' JSON for the exports, of
// the session files for the imports, which also report the tape bytes they write per second
// (tape-MB/s), the unit of the dataset export's MB/s. Neither side scans for secrets or
// validates (the CLI does both, at the same cost to both).
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
	// The exports the imports read: the native one (claude-code/ and codex/) and STS.
	kept := map[interop.Format]string{}
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
				if old, ok := kept[f]; ok {
					os.RemoveAll(old)
				}
				if f == "" || f == interop.STS {
					kept[f] = out
				} else {
					os.RemoveAll(out)
				}
			}
			b.ReportMetric(float64(written)/1e6, "MB-written")
		})
	}
	defer func() {
		for _, dir := range kept {
			os.RemoveAll(dir)
		}
	}()
	for _, f := range []interop.Format{interop.ClaudeCode, interop.Codex, interop.STS} {
		dir := filepath.Join(kept[""], string(f))
		if f == interop.STS {
			dir = kept[interop.STS]
		}
		if _, err := os.Stat(dir); kept[""] == "" || err != nil {
			continue
		}
		b.Run("import-"+string(f), func(b *testing.B) { benchImport(b, f, dir) })
	}
	// Pi has no export: its sessions are written from the corpus's main threads.
	piDir, err := scratchDir("tapebox-bench-interop-pi-")
	if err != nil {
		b.Fatal(err)
	}
	defer os.RemoveAll(piDir)
	if _, err := writePiSessions(c.paths, piDir); err != nil {
		b.Fatal(err)
	}
	b.Run("import-pi", func(b *testing.B) { benchImport(b, interop.Pi, piDir) })
}

// benchImport imports the session files of format f under dir into tapes, written with 2
// workers.
func benchImport(b *testing.B, f interop.Format, dir string) {
	var sessionBytes int64
	_ = filepath.Walk(dir, func(_ string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() {
			sessionBytes += fi.Size()
		}
		return nil
	})
	b.SetBytes(sessionBytes)
	var tapeBytes int64
	for b.Loop() {
		out, err := scratchDir("tapebox-bench-interop-imp-")
		if err != nil {
			b.Fatal(err)
		}
		tapes, err := interop.Import(f, dir)
		if err != nil {
			b.Fatal(err)
		}
		g, _ := errgroup.WithContext(b.Context())
		g.SetLimit(2)
		var mu sync.Mutex
		tapeBytes = 0
		for _, tp := range tapes {
			g.Go(func() error {
				data, err := tape.Marshal(tp)
				if err != nil {
					return err
				}
				mu.Lock()
				tapeBytes += int64(len(data))
				mu.Unlock()
				return tape.WriteFileAtomic(filepath.Join(out, tp.Meta.TapeID+".json"), data)
			})
		}
		if err := g.Wait(); err != nil {
			b.Fatal(err)
		}
		os.RemoveAll(out)
	}
	// An imported tape repeats the conversation in every step's request, as a recorded one
	// does: it is much larger than the session file.
	b.ReportMetric(float64(tapeBytes)/1e6, "MB-tapes-written")
	b.ReportMetric(float64(tapeBytes)*float64(b.N)/1e6/b.Elapsed().Seconds(), "tape-MB/s")
}
