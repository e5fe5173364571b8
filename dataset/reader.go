package dataset

import (
	"errors"
	"fmt"
	"io"
	"iter"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"

	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/parquet-go/parquet-go"
)

// shardFile is one data file of a dataset folder.
type shardFile struct {
	path   string // full path
	config string
	split  string
	index  int
	count  int
	ext    string // parquet or arrow
	size   int64
}

var shardPattern = regexp.MustCompile(`^([A-Za-z0-9_]+)-([0-9]{5,})-of-([0-9]{5,})\.(parquet|arrow)$`)

// parseShardName parses "<split>-NNNNN-of-MMMMM.<ext>".
func parseShardName(name string) (shardFile, bool) {
	m := shardPattern.FindStringSubmatch(name)
	if m == nil {
		return shardFile{}, false
	}
	i, err1 := strconv.Atoi(m[2])
	n, err2 := strconv.Atoi(m[3])
	if err1 != nil || err2 != nil {
		return shardFile{}, false
	}
	return shardFile{split: m[1], index: i, count: n, ext: m[4]}, true
}

// layout is what a dataset folder's data directory holds: per config, per split, per
// format, the shards in index order.
type layout map[string]map[string]map[string][]shardFile

// splits returns the split names of a config, sorted with train first.
func (l layout) splits(config string) []string {
	var out []string
	for s := range l[config] {
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b string) int {
		ra, rb := splitRank(a), splitRank(b)
		if ra != rb {
			return ra - rb
		}
		if a < b {
			return -1
		}
		if a > b {
			return 1
		}
		return 0
	})
	return out
}

func splitRank(s string) int {
	switch s {
	case "train":
		return 0
	case "validation":
		return 1
	case "test":
		return 2
	}
	return 3
}

// primary returns the format the card describes for a config's split: Parquet when
// present, else Arrow.
func (l layout) primary(config, split string) (string, []shardFile) {
	if fs := l[config][split]["parquet"]; len(fs) > 0 {
		return "parquet", fs
	}
	return "arrow", l[config][split]["arrow"]
}

// scanLayout lists the shards under dir/data. Files that are not shards (temporary files,
// anything else) are ignored; a set of shards with a gap or a disagreeing count is an
// error.
func scanLayout(dir string) (layout, error) { return scanLayoutExcept(dir, "") }

// scanLayoutExcept is scanLayout without the shards of one split (one an export is about
// to replace, whose set may be broken).
func scanLayoutExcept(dir, skip string) (layout, error) {
	l := layout{}
	for _, config := range configs {
		cdir := filepath.Join(dir, "data", config)
		entries, err := os.ReadDir(cdir)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		for _, e := range entries {
			sf, ok := parseShardName(e.Name())
			if !ok || e.IsDir() || (skip != "" && sf.split == skip) {
				continue
			}
			info, err := e.Info()
			if err != nil {
				return nil, err
			}
			sf.path, sf.config, sf.size = filepath.Join(cdir, e.Name()), config, info.Size()
			if l[config] == nil {
				l[config] = map[string]map[string][]shardFile{}
			}
			if l[config][sf.split] == nil {
				l[config][sf.split] = map[string][]shardFile{}
			}
			l[config][sf.split][sf.ext] = append(l[config][sf.split][sf.ext], sf)
		}
	}
	for config, splits := range l {
		for split, formats := range splits {
			for ext, fs := range formats {
				slices.SortFunc(fs, func(a, b shardFile) int { return a.index - b.index })
				for i, f := range fs {
					if f.index != i || f.count != len(fs) {
						return nil, fmt.Errorf("data/%s: the %s shards of split %s are not a complete set %s-00000-of-%05d ... (found %s)",
							config, ext, split, split, len(fs), filepath.Base(f.path))
					}
				}
			}
		}
	}
	return l, nil
}

// parquetFile is an open Parquet shard.
type parquetFile struct {
	f    *os.File
	file *parquet.File
}

func openParquet(path string) (*parquetFile, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	info, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	pf, err := parquet.OpenFile(f, info.Size(), parquet.SkipBloomFilters(true))
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &parquetFile{f: f, file: pf}, nil
}

func (p *parquetFile) Close() error { return p.f.Close() }

// lookup returns a key of the file's key-value metadata.
func (p *parquetFile) lookup(key string) (string, bool) { return p.file.Lookup(key) }

// readParquet reads the rows of a Parquet shard as R (a row type or a projection of one:
// only R's columns are read) and hands them to fn in batches of at most batch rows, with
// the index of the batch's first row.
func readParquet[R any](path string, batch int, fn func(first int64, rows []R) error) error {
	p, err := openParquet(path)
	if err != nil {
		return err
	}
	defer p.Close()
	var first int64
	for _, rg := range p.file.RowGroups() {
		r := parquet.NewGenericRowGroupReader[R](rg)
		buf := make([]R, batch)
		for {
			n, err := r.Read(buf)
			if n > 0 {
				if ferr := fn(first, buf[:n]); ferr != nil {
					r.Close()
					return ferr
				}
				first += int64(n)
				clear(buf[:n])
			}
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				r.Close()
				return fmt.Errorf("%s: row %d: %w", path, first, err)
			}
		}
		if err := r.Close(); err != nil {
			return err
		}
	}
	return nil
}

// readArrow reads the rows of an Arrow IPC stream shard of table t and hands them to fn
// in batches, with the index of the batch's first row.
func readArrow[R any](path string, t *table, fn func(first int64, rows []R) error) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	r, err := ipc.NewReader(f)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	defer r.Release()
	if err := checkArrowSchema(t, r.Schema()); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	var first int64
	for r.Next() {
		rows, err := rowsFromRecord[R](t, r.RecordBatch())
		if err != nil {
			return fmt.Errorf("%s: rows from %d: %w", path, first, err)
		}
		if err := fn(first, rows); err != nil {
			return err
		}
		first += int64(len(rows))
	}
	if err := r.Err(); err != nil {
		return fmt.Errorf("%s: row %d: %w", path, first, err)
	}
	return nil
}

// readShard reads a shard of either format, in batches of at most batch rows for Parquet
// (an Arrow stream comes in its own record batches).
func readShard[R any](sf shardFile, t *table, batch int, fn func(first int64, rows []R) error) error {
	if sf.ext == "arrow" {
		return readArrow(sf.path, t, fn)
	}
	return readParquet(sf.path, batch, fn)
}

// located is a row with where it was read.
type located[R any] struct {
	file string
	row  int64 // index in the file
	v    R
}

// rowsOf yields the rows of shards in order.
func rowsOf[R any](files []shardFile, t *table, batch int) iter.Seq2[located[R], error] {
	return func(yield func(located[R], error) bool) {
		stop := errors.New("stop")
		for _, f := range files {
			err := readShard(f, t, batch, func(first int64, rows []R) error {
				for i := range rows {
					if !yield(located[R]{file: f.path, row: first + int64(i), v: rows[i]}, nil) {
						return stop
					}
				}
				return nil
			})
			if err == stop {
				return
			}
			if err != nil {
				yield(located[R]{file: f.path}, err)
				return
			}
		}
	}
}
