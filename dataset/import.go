package dataset

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/tapebox/tapebox/tape"
)

// ImportOptions configures Import.
type ImportOptions struct {
	// Out is the folder the tape files go to; it is created if needed.
	Out string
	// Splits limits the import to these splits (default: every split).
	Splits []string
	// Verify validates each tape against the schema and checks that it is in canonical
	// encoding before writing it.
	Verify bool
	// Progress, when set, receives a progress line that rewrites itself.
	Progress io.Writer
}

// ImportResult says what an import did.
type ImportResult struct {
	Tapes   int
	Bytes   int64
	Elapsed time.Duration
}

// tapeJSON is the projection of the tapes table that Import reads.
type tapeJSON struct {
	TapeID   string `parquet:"tape_id"`
	TapeJSON []byte `parquet:"tape_json,string"`
}

// Import rebuilds tape files from the tapes table of the dataset in dir: one file per row,
// named after the tape id (TAPE_ID.json; characters that do not belong in a file name are
// %-escaped), holding the row's tape_json, which is the canonical encoding of the tape
// that was exported, byte for byte. Each file is written to a temporary name and renamed.
func Import(ctx context.Context, dir string, opts ImportOptions) (*ImportResult, error) {
	start := time.Now()
	if opts.Out == "" {
		return nil, errors.New("import: no output folder")
	}
	l, err := scanLayout(dir)
	if err != nil {
		return nil, fmt.Errorf("import: %w", err)
	}
	splits := l.splits(configTapes)
	if len(opts.Splits) > 0 {
		for _, s := range opts.Splits {
			if _, ok := l[configTapes][s]; !ok {
				return nil, fmt.Errorf("import: %s has no split %q (it has %s)", dir, s, strings.Join(splits, ", "))
			}
		}
		splits = opts.Splits
	}
	if len(splits) == 0 {
		return nil, fmt.Errorf("import: %s: no tapes table under data/%s", dir, configTapes)
	}
	var files []shardFile
	for _, s := range splits {
		_, fs := l.primary(configTapes, s)
		files = append(files, fs...)
	}
	if err := os.MkdirAll(opts.Out, 0o755); err != nil {
		return nil, fmt.Errorf("import: %w", err)
	}
	prog := newProgress(opts.Progress, "import", 0, 0)
	defer prog.stop()

	// One goroutine reads (decompression), two write files.
	res := &ImportResult{}
	g, ctx := errgroup.WithContext(ctx)
	rows := make(chan located[tapeJSON], 4)
	seen := map[string]string{}
	g.Go(func() error {
		defer close(rows)
		for r, err := range rowsOf[tapeJSON](files, tapesTable, 1) {
			if err != nil {
				return err
			}
			where := fmt.Sprintf("%s row %d", r.file, r.row)
			if first, dup := seen[r.v.TapeID]; dup {
				return fmt.Errorf("%s: tape_id %q is also at %s", where, r.v.TapeID, first)
			}
			seen[r.v.TapeID] = where
			select {
			case rows <- r:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		return nil
	})
	counts := make([]ImportResult, 2)
	for w := range counts {
		g.Go(func() error {
			for r := range rows {
				if err := writeTape(opts, r); err != nil {
					return err
				}
				counts[w].Tapes++
				counts[w].Bytes += int64(len(r.v.TapeJSON))
				prog.add(int64(len(r.v.TapeJSON)))
			}
			return nil
		})
	}
	err = g.Wait()
	for range rows { // let the reader finish after a writer failed
	}
	if err != nil {
		return nil, fmt.Errorf("import: %w", err)
	}
	if err := syncDir(opts.Out); err != nil {
		return nil, fmt.Errorf("import: %w", err)
	}
	for _, c := range counts {
		res.Tapes += c.Tapes
		res.Bytes += c.Bytes
	}
	res.Elapsed = time.Since(start)
	return res, nil
}

func writeTape(opts ImportOptions, r located[tapeJSON]) error {
	where := fmt.Sprintf("%s row %d (tape %s)", r.file, r.row, r.v.TapeID)
	if opts.Verify {
		if err := verifyTape(r.v.TapeJSON); err != nil {
			return fmt.Errorf("%s: %w", where, err)
		}
	}
	path := filepath.Join(opts.Out, TapeFileName(r.v.TapeID))
	f, err := os.CreateTemp(opts.Out, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	_, err = f.Write(r.v.TapeJSON)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(f.Name(), 0o644)
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		os.Remove(f.Name())
		return fmt.Errorf("%s: write %s: %w", where, path, err)
	}
	return nil
}

// verifyTape checks that data is a valid tape in canonical encoding.
func verifyTape(data []byte) error {
	if err := validateTape(data); err != nil {
		return err
	}
	t, err := tape.Unmarshal(data)
	if err != nil {
		return err
	}
	if !isCanonical(t, data) {
		return errors.New("tape_json is not the canonical encoding of its tape")
	}
	return nil
}

// TapeFileName is the file name Import gives a tape: its id followed by .json, with every
// byte other than ASCII letters, digits, '-', '_' and a '.' that does not start the name
// written as %XX, so that any id gives one safe name in one directory.
func TapeFileName(id string) string {
	var b strings.Builder
	for i := 0; i < len(id); i++ {
		c := id[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '-', c == '_':
			b.WriteByte(c)
		case c == '.' && i > 0:
			b.WriteByte(c)
		default:
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	if b.Len() == 0 {
		b.WriteString("%")
	}
	return b.String() + ".json"
}
