package dataset

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strconv"

	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/parquet-go/parquet-go"

	"github.com/tapebox/tapebox/tape"
)

// Format selects the files an export writes.
type Format int

// Formats. Both writes each shard twice, as Parquet and as Arrow, with the same rows.
const (
	Parquet Format = 1 << iota
	Arrow
	Both = Parquet | Arrow
)

// String returns parquet, arrow or both.
func (f Format) String() string {
	switch f {
	case Parquet:
		return "parquet"
	case Arrow:
		return "arrow"
	case Both:
		return "both"
	}
	return "Format(" + strconv.Itoa(int(f)) + ")"
}

// ParseFormat parses parquet, arrow or both.
func ParseFormat(s string) (Format, error) {
	switch s {
	case "parquet":
		return Parquet, nil
	case "arrow":
		return Arrow, nil
	case "both":
		return Both, nil
	}
	return 0, fmt.Errorf("unknown format %q (want parquet, arrow or both)", s)
}

// Keys of the Parquet key-value metadata each shard carries.
const (
	metaTable    = "tapebox.table"
	metaNumBytes = "tapebox.num_bytes"
	metaVersion  = "tapebox.dataset_version"
	// datasetVersion is the layout version of the tables.
	datasetVersion = "1"
)

// Sizes of the pieces of a dataset, in bytes of uncompressed row data (rowBytes).
const (
	DefaultShardBytes    = 500 << 20
	DefaultRowGroupBytes = 100 << 20
	// arrowBatchBytes bounds an Arrow record batch: its builders hold the rows
	// uncompressed until the batch is written.
	arrowBatchBytes = 4 << 20
)

var parquetZstd = newZstdCodec()

// shardSet writes the rows of one table of one split as numbered shards under temporary
// names; finish renames them to their final names once their count is known.
type shardSet[R any] struct {
	dir           string // data/<config>
	split         string
	t             *table
	formats       Format
	shardBytes    int64
	rowGroupBytes int64
	// createdBy is the Parquet footer's created_by (default: CreatedBy("")).
	createdBy string

	cur  *shard[R]
	done []*shard[R]
}

// shard is one shard being written, or written under its temporary names.
type shard[R any] struct {
	index    int
	rows     int64
	numBytes int64

	pqTmp string
	pqF   *os.File
	pw    *parquet.GenericWriter[R]
	rgB   int64

	arTmp string
	arF   *os.File
	aw    *ipc.Writer
	rb    *recordBuilder
	batB  int64
}

func newShardSet[R any](dir, split string, t *table, formats Format, shardBytes, rowGroupBytes int64) *shardSet[R] {
	return &shardSet[R]{dir: dir, split: split, t: t, formats: formats, shardBytes: shardBytes, rowGroupBytes: rowGroupBytes}
}

// write appends rows, whose sizes (table.rowBytes) are given, opening, flushing and
// closing shards, row groups and batches as their sizes require.
func (s *shardSet[R]) write(rows []R, sizes []int64) error {
	for len(rows) > 0 {
		if s.cur == nil {
			if err := s.open(); err != nil {
				return err
			}
		}
		sh := s.cur
		// Take rows up to the end of the current row group, shard or batch.
		n, size := 0, int64(0)
		for n < len(rows) {
			size += sizes[n]
			n++
			if sh.numBytes+size >= s.shardBytes || sh.rgB+size >= s.rowGroupBytes || sh.batB+size >= arrowBatchBytes {
				break
			}
		}
		chunk := rows[:n]
		rows, sizes = rows[n:], sizes[n:]
		sh.rows += int64(n)
		sh.numBytes += size
		if sh.pw != nil {
			if _, err := sh.pw.Write(chunk); err != nil {
				return s.errorf(sh, "write rows: %w", err)
			}
			sh.rgB += size
			if sh.rgB >= s.rowGroupBytes {
				if err := sh.pw.Flush(); err != nil {
					return s.errorf(sh, "flush row group: %w", err)
				}
				sh.rgB = 0
			}
		}
		if sh.aw != nil {
			for i := range chunk {
				sh.rb.append(reflect.ValueOf(&chunk[i]).Elem())
			}
			sh.batB += size
			if sh.batB >= arrowBatchBytes {
				if err := sh.writeBatch(); err != nil {
					return s.errorf(sh, "write record batch: %w", err)
				}
			}
		}
		if sh.numBytes >= s.shardBytes {
			if err := s.closeCurrent(); err != nil {
				return err
			}
		}
	}
	return nil
}

func (s *shardSet[R]) errorf(sh *shard[R], format string, args ...any) error {
	return fmt.Errorf("%s shard %d of %s: %w", s.t.name, sh.index, s.split, fmt.Errorf(format, args...))
}

func (s *shardSet[R]) open() error {
	if err := os.MkdirAll(s.dir, 0o755); err != nil {
		return err
	}
	sh := &shard[R]{index: len(s.done)}
	s.cur = sh
	base := fmt.Sprintf(".%s-%05d", s.split, sh.index)
	if s.formats&Parquet != 0 {
		f, err := tape.CreateTemp(s.dir, base+".parquet.tmp-", 0o644)
		if err != nil {
			return err
		}
		sh.pqF, sh.pqTmp = f, f.Name()
		// parquet.CreatedBy writes "version X(build Y)", without the space the Parquet
		// spec's form has; a WriterConfig sets the string as it is.
		opts := append([]parquet.WriterOption{
			parquet.Compression(parquetZstd),
			&parquet.WriterConfig{CreatedBy: cmp.Or(s.createdBy, CreatedBy(""))},
			parquet.KeyValueMetadata(metaTable, s.t.name),
			parquet.KeyValueMetadata(metaVersion, datasetVersion),
		}, s.t.parquetOptions()...)
		sh.pw = parquet.NewGenericWriter[R](f, opts...)
	}
	if s.formats&Arrow != 0 {
		f, err := tape.CreateTemp(s.dir, base+".arrow.tmp-", 0o644)
		if err != nil {
			return err
		}
		sh.arF, sh.arTmp = f, f.Name()
		sh.rb = newRecordBuilder(s.t)
		sh.aw = ipc.NewWriter(f, ipc.WithSchema(sh.rb.b.Schema()), ipc.WithZstd())
	}
	return nil
}

func (sh *shard[R]) writeBatch() error {
	sh.batB = 0
	if sh.rb.n == 0 {
		return nil
	}
	rec := sh.rb.flush()
	defer rec.Release()
	return sh.aw.Write(rec)
}

// closeCurrent completes the current shard under its temporary names.
func (s *shardSet[R]) closeCurrent() error {
	sh := s.cur
	if sh == nil {
		return nil
	}
	s.cur = nil
	s.done = append(s.done, sh)
	if sh.pw != nil {
		sh.pw.SetKeyValueMetadata(metaNumBytes, strconv.FormatInt(sh.numBytes, 10))
		err := syncClose(sh.pqF, sh.pw.Close())
		sh.pqF = nil
		if err != nil {
			return s.errorf(sh, "close parquet: %w", err)
		}
	}
	if sh.aw != nil {
		err := sh.writeBatch()
		if cerr := sh.aw.Close(); err == nil {
			err = cerr
		}
		sh.rb.release()
		err = syncClose(sh.arF, err)
		sh.arF = nil
		if err != nil {
			return s.errorf(sh, "close arrow: %w", err)
		}
	}
	return nil
}

// syncClose ends a shard file whose writer's close gave err: unless that failed, it syncs
// the file; it closes the file in any case, and returns the first error.
func syncClose(f *os.File, err error) error {
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// shardName is the final name of shard i of n of a split.
func shardName(split string, i, n int, ext string) string {
	return fmt.Sprintf("%s-%05d-of-%05d.%s", split, i, n, ext)
}

// closeCurrentOrEmpty closes the last shard. A split with no rows gets one empty shard,
// so that the card's data files always match a file.
func (s *shardSet[R]) closeCurrentOrEmpty() error {
	if s.cur == nil && len(s.done) == 0 {
		if err := s.open(); err != nil {
			return err
		}
	}
	return s.closeCurrent()
}

// sizes returns the uncompressed size of each closed shard.
func (s *shardSet[R]) sizes() []int64 {
	out := make([]int64, len(s.done))
	for i, sh := range s.done {
		out[i] = sh.numBytes
	}
	return out
}

// publish renames every closed shard to its final name and returns the final paths.
func (s *shardSet[R]) publish() (paths []string, err error) {
	n := len(s.done)
	if n == 0 {
		return nil, nil // a table the split does not have (no snapshots)
	}
	for _, sh := range s.done {
		for _, f := range []struct {
			tmp *string
			ext string
		}{{&sh.pqTmp, "parquet"}, {&sh.arTmp, "arrow"}} {
			if *f.tmp == "" {
				continue
			}
			p := filepath.Join(s.dir, shardName(s.split, sh.index, n, f.ext))
			if err := os.Rename(*f.tmp, p); err != nil {
				return paths, err
			}
			*f.tmp = ""
			paths = append(paths, p)
		}
	}
	return paths, tape.SyncDir(s.dir)
}

// abort closes and removes every temporary file.
func (s *shardSet[R]) abort() error {
	var errs []error
	if sh := s.cur; sh != nil {
		if sh.pqF != nil {
			errs = append(errs, sh.pqF.Close())
		}
		if sh.arF != nil {
			if sh.rb != nil {
				sh.rb.release()
			}
			errs = append(errs, sh.arF.Close())
		}
		s.done = append(s.done, sh)
		s.cur = nil
	}
	for _, sh := range s.done {
		for _, p := range []string{sh.pqTmp, sh.arTmp} {
			if p != "" {
				if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
					errs = append(errs, err)
				}
			}
		}
	}
	return errors.Join(errs...)
}

// addArrow writes an Arrow shard beside each closed Parquet shard, with the same rows,
// read back from the Parquet file. An export in both formats writes Parquet first and
// converts afterwards, so that the Parquet and Arrow writers, which each keep large
// buffers and zstd windows, never hold memory at the same time.
func (s *shardSet[R]) addArrow(ctx context.Context, prog *progress) error {
	// Whole tapes are big rows: read them a few at a time; snapshots one at a time.
	batch := 256
	switch s.t {
	case tapesTable:
		batch = 2
	case workspacesTable:
		batch = 1
	}
	for _, sh := range s.done {
		if sh.pqTmp == "" || sh.arTmp != "" {
			continue
		}
		f, err := tape.CreateTemp(s.dir, fmt.Sprintf(".%s-%05d.arrow.tmp-", s.split, sh.index), 0o644)
		if err != nil {
			return err
		}
		sh.arF, sh.arTmp = f, f.Name()
		sh.rb = newRecordBuilder(s.t)
		sh.aw = ipc.NewWriter(f, ipc.WithSchema(sh.rb.b.Schema()), ipc.WithZstd())
		err = readParquet(sh.pqTmp, batch, func(_ int64, rows []R) error {
			if err := ctx.Err(); err != nil {
				return err
			}
			for i := range rows {
				v := reflect.ValueOf(&rows[i]).Elem()
				sh.rb.append(v)
				if sh.batB += s.t.rowBytes(v); sh.batB >= arrowBatchBytes {
					if err := sh.writeBatch(); err != nil {
						return err
					}
				}
			}
			return nil
		})
		if err == nil {
			err = sh.writeBatch()
		}
		if cerr := sh.aw.Close(); err == nil {
			err = cerr
		}
		sh.rb.release()
		sh.aw, sh.rb = nil, nil
		err = syncClose(f, err)
		sh.arF = nil
		if err != nil {
			return s.errorf(sh, "write arrow: %w", err)
		}
		prog.add(sh.numBytes)
	}
	return nil
}
