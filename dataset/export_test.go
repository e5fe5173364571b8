package dataset

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/parquet-go/parquet-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/internal/testutil/tapegen"
	"github.com/tapebox/tapebox/internal/testutil/treetest"
	"github.com/tapebox/tapebox/schema"
	"github.com/tapebox/tapebox/tape"
)

// requireRoundTrip imports dir and checks that every input comes back byte for byte as
// the canonical encoding of its tape.
func requireRoundTrip(t *testing.T, dir string, inputs []Input, opts ImportOptions) {
	t.Helper()
	if opts.Out == "" {
		opts.Out = filepath.Join(t.TempDir(), "imported")
	}
	res, err := Import(t.Context(), dir, opts)
	require.NoError(t, err)
	require.Equal(t, len(inputs), res.Tapes)
	require.Len(t, treetest.Files(t, opts.Out), len(inputs), "one file per tape, no temporary files")
	for _, in := range inputs {
		want := canonical(t, in.Path)
		got, err := os.ReadFile(filepath.Join(opts.Out, importedName(t, inputs, in)))
		require.NoError(t, err, in.Path)
		require.True(t, string(want) == string(got), "%s: imported tape differs from tape.Marshal of the original", in.Path)
	}
}

func TestExportImportRoundTrip(t *testing.T) {
	inputs := append(smallCorpus(t, 12, 1), goldenInputs(t)...)
	tests := []struct {
		format Format
		files  []string
	}{
		{Parquet, []string{"README.md", "data/steps/train-00000-of-00001.parquet", "data/tapes/train-00000-of-00001.parquet"}},
		{Arrow, []string{"README.md", "data/steps/train-00000-of-00001.arrow", "data/tapes/train-00000-of-00001.arrow"}},
		{Both, []string{"README.md", "data/steps/train-00000-of-00001.arrow", "data/steps/train-00000-of-00001.parquet",
			"data/tapes/train-00000-of-00001.arrow", "data/tapes/train-00000-of-00001.parquet"}},
	}
	for _, tt := range tests {
		t.Run(tt.format.String(), func(t *testing.T) {
			dir, res := export(t, inputs, ExportOptions{Format: tt.format, Jobs: 3})
			require.Equal(t, len(inputs), res.Tapes)
			require.Empty(t, res.Skipped)
			assert.Equal(t, tt.files, treetest.Files(t, dir))
			var steps int64
			for _, in := range inputs {
				tp, err := tape.LoadFile(in.Path)
				require.NoError(t, err)
				steps += int64(tp.Totals().Steps)
			}
			require.Equal(t, steps, res.Steps)

			rep := requireValid(t, dir)
			// Checked in each format, counted once.
			assert.Equal(t, int64(len(inputs)), rep.Tapes)
			assert.Equal(t, steps, rep.Steps)
			requireRoundTrip(t, dir, inputs, ImportOptions{Verify: true})
		})
	}
}

// TestExportImportKeepsCwd: meta.cwd is a column of the tapes table (null when the tape
// does not say), and a tape comes back byte for byte with or without it.
func TestExportImportKeepsCwd(t *testing.T) {
	in := t.TempDir()
	with := tapegen.Tape(tapegen.Options{Seed: 5, MeanSteps: 2, Lean: true}, 0)
	with.Meta.Cwd = "/tmp/tapebox e2e/<é>"
	without := tapegen.Tape(tapegen.Options{Seed: 5, MeanSteps: 2, Lean: true}, 1)
	without.Meta.Cwd = ""
	inputs := []Input{writeTapeFile(t, in, "with.json", with), writeTapeFile(t, in, "without.json", without)}
	for _, format := range []Format{Parquet, Arrow} {
		t.Run(format.String(), func(t *testing.T) {
			dir, _ := export(t, inputs, ExportOptions{Format: format})
			requireValid(t, dir)
			requireRoundTrip(t, dir, inputs, ImportOptions{Verify: true})
			if format != Parquet {
				return
			}
			l, err := scanLayout(dir)
			require.NoError(t, err)
			got := map[string]*string{}
			for r, err := range rowsOf[TapeRow](l[configTapes]["train"]["parquet"], tapesTable, 1) {
				require.NoError(t, err)
				got[r.v.TapeID] = r.v.Cwd
			}
			require.NotNil(t, got[with.Meta.TapeID])
			assert.Equal(t, with.Meta.Cwd, *got[with.Meta.TapeID])
			assert.Nil(t, got[without.Meta.TapeID])
		})
	}
}

func TestExportIsDeterministic(t *testing.T) {
	inputs := smallCorpus(t, 8, 2)
	a, _ := export(t, inputs, ExportOptions{Format: Both, Jobs: 1})
	b, _ := export(t, inputs, ExportOptions{Format: Both, Jobs: 4})
	for _, f := range treetest.Files(t, a) {
		x, err := os.ReadFile(filepath.Join(a, f))
		require.NoError(t, err)
		y, err := os.ReadFile(filepath.Join(b, f))
		require.NoError(t, err)
		assert.True(t, string(x) == string(y), "%s differs between two exports of the same tapes", f)
	}
}

// writeTapeFile writes tp (canonical) into dir and returns its input.
func writeTapeFile(t *testing.T, dir, name string, tp *tape.Tape) Input {
	t.Helper()
	data, err := tape.Marshal(tp)
	require.NoError(t, err)
	return writeBytes(t, dir, name, data)
}

func writeBytes(t *testing.T, dir, name string, data []byte) Input {
	t.Helper()
	p := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(p, data, 0o644))
	return Input{Path: p, Size: int64(len(data))}
}

func TestExportInvalidTapes(t *testing.T) {
	good := smallCorpus(t, 6, 3)
	bad := t.TempDir()
	opts := tapegen.Options{Seed: 9, MeanSteps: 3, Lean: true}
	badProvider := tapegen.Tape(opts, 0)
	badProvider.Meta.Provider = "bogus"
	dupData, err := os.ReadFile(good[2].Path)
	require.NoError(t, err)

	tests := []struct {
		name  string
		input Input
		want  []string // in the error
	}{
		{"schema", writeTapeFile(t, bad, "provider.json", badProvider), []string{"provider.json: /meta/provider"}},
		{"truncated", writeBytes(t, bad, "truncated.json", dupData[:len(dupData)/2]), []string{"truncated.json"}},
		{"not json", writeBytes(t, bad, "text.json", []byte("hello\n")), []string{"text.json"}},
		{"duplicate id", writeBytes(t, bad, "copy.json", dupData), []string{"copy.json", "already in the dataset", good[2].Path}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			inputs := slices.Insert(slices.Clone(good), 4, tt.input)
			out := filepath.Join(t.TempDir(), "dataset")
			_, err := Export(t.Context(), inputs, ExportOptions{Out: out, Format: Both, ShardBytes: 4 << 10})
			var ite *InvalidTapesError
			require.ErrorAs(t, err, &ite)
			require.Len(t, ite.Invalid, 1)
			assert.Equal(t, tt.input.Path, ite.Invalid[0].Path)
			for _, w := range tt.want {
				assert.Contains(t, err.Error(), w)
			}
			if _, statErr := os.Stat(out); statErr == nil {
				assert.Empty(t, treetest.Files(t, out), "a failed export leaves no file")
			}

			dir, res := export(t, inputs, ExportOptions{Format: Both, SkipInvalid: true})
			require.Len(t, res.Skipped, 1)
			assert.Equal(t, tt.input.Path, res.Skipped[0].Path)
			assert.Equal(t, len(good), res.Tapes)
			requireValid(t, dir)
			requireRoundTrip(t, dir, good, ImportOptions{})
		})
	}
}

func TestExportReportsEveryInvalidTapeWithPointer(t *testing.T) {
	dir := t.TempDir()
	var inputs []Input
	for i := range 3 {
		tp := tapegen.Tape(tapegen.Options{Seed: 4, MeanSteps: 2, Lean: true}, i)
		tp.Threads[0].Steps[0].Request.Messages[0].Role = "robot"
		inputs = append(inputs, writeTapeFile(t, dir, fmt.Sprintf("bad-%d.json", i), tp))
	}
	_, err := Export(t.Context(), inputs, ExportOptions{Out: filepath.Join(dir, "out")})
	var ite *InvalidTapesError
	require.ErrorAs(t, err, &ite)
	require.Len(t, ite.Invalid, 3)
	for i, it := range ite.Invalid {
		var ve *schema.ValidationError
		require.ErrorAs(t, it, &ve)
		assert.Contains(t, it.Error(), fmt.Sprintf("bad-%d.json: /threads/0/steps/0/request/messages/0/role", i))
	}
}

func TestFailedExportLeavesNoPartialShard(t *testing.T) {
	inputs := smallCorpus(t, 20, 5)
	// An earlier export in the same folder must survive a failed one untouched.
	out, _ := export(t, inputs[:3], ExportOptions{Format: Both})
	before := treetest.Files(t, out)
	card, err := os.ReadFile(filepath.Join(out, cardFile))
	require.NoError(t, err)

	missing := slices.Clone(inputs)
	missing[15].Path += ".gone" // fails to read, after several shards were completed
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	for name, run := range map[string]func() error{
		"unreadable input": func() error {
			_, err := Export(t.Context(), missing, ExportOptions{Out: out, Format: Both, ShardBytes: 8 << 10, RowGroupBytes: 2 << 10})
			return err
		},
		"cancelled": func() error {
			_, err := Export(ctx, inputs, ExportOptions{Out: out, Format: Both, ShardBytes: 8 << 10})
			return err
		},
	} {
		t.Run(name, func(t *testing.T) {
			require.Error(t, run())
			assert.Equal(t, before, treetest.Files(t, out), "no partial shard, no temporary file")
			now, err := os.ReadFile(filepath.Join(out, cardFile))
			require.NoError(t, err)
			assert.Equal(t, string(card), string(now))
		})
	}
	requireValid(t, out)
	_, err = Export(t.Context(), missing, ExportOptions{Out: out})
	assert.ErrorIs(t, err, os.ErrNotExist)
}

func TestShardsAndRowGroups(t *testing.T) {
	inputs := smallCorpus(t, 40, 6)
	dir, res := export(t, inputs, ExportOptions{Format: Both, ShardBytes: 64 << 10, RowGroupBytes: 16 << 10})
	l, err := scanLayout(dir)
	require.NoError(t, err)
	for _, config := range []string{configTapes, configSteps} { // no snapshots: no workspaces table
		pq := l[config]["train"]["parquet"]
		ar := l[config]["train"]["arrow"]
		require.Greater(t, len(pq), 1, "%s: several shards", config)
		require.Len(t, ar, len(pq))
		var rows int64
		multi := 0
		for i, f := range pq {
			assert.Equal(t, shardName("train", i, len(pq), "parquet"), filepath.Base(f.path))
			p, err := openParquet(f.path)
			require.NoError(t, err)
			md := p.file.Metadata()
			rows += md.NumRows
			if len(md.RowGroups) > 1 {
				multi++
			}
			for _, rg := range md.RowGroups {
				for _, c := range rg.Columns {
					assert.Positive(t, c.ColumnIndexOffset, "%s: column index of %v", f.path, c.MetaData.PathInSchema)
					assert.Positive(t, c.OffsetIndexOffset, "%s: offset index of %v", f.path, c.MetaData.PathInSchema)
					assert.Equal(t, "ZSTD", c.MetaData.Codec.String())
				}
			}
			v, ok := p.lookup(metaTable)
			assert.True(t, ok)
			assert.Equal(t, config, v)
			require.NoError(t, p.Close())
		}
		assert.Positive(t, multi, "%s: shards of several row groups", config)
		if config == configTapes {
			assert.Equal(t, int64(res.Tapes), rows)
		} else {
			assert.Equal(t, res.Steps, rows)
		}
	}
	card, err := LoadCard(dir)
	require.NoError(t, err)
	assert.Equal(t, []DataFiles{{Split: "train", Path: "data/tapes/train-*.parquet"}}, card.Configs[0].DataFiles)
	requireValid(t, dir)
	requireRoundTrip(t, dir, inputs, ImportOptions{})
}

func TestSplitsAccumulateAndReplace(t *testing.T) {
	inputs := smallCorpus(t, 30, 7)
	out := filepath.Join(t.TempDir(), "dataset")
	export(t, inputs[:20], ExportOptions{Out: out, ShardBytes: 32 << 10})
	export(t, inputs[20:], ExportOptions{Out: out, Split: "test"})
	rep := requireValid(t, out)
	require.Len(t, rep.Splits, 2)
	assert.Equal(t, []string{"train", "test"}, []string{rep.Splits[0].Name, rep.Splits[1].Name})
	assert.Equal(t, []int64{20, 10}, []int64{rep.Splits[0].Tapes, rep.Splits[1].Tapes})
	assert.Equal(t, rep.Steps, rep.Splits[0].Steps+rep.Splits[1].Steps)
	imported, err := Import(t.Context(), out, ImportOptions{Out: filepath.Join(t.TempDir(), "all")})
	require.NoError(t, err)
	assert.Equal(t, []ImportedSplit{{"train", 20}, {"test", 10}}, imported.Splits)
	card, err := LoadCard(out)
	require.NoError(t, err)
	for _, info := range card.DatasetInfo {
		require.Len(t, info.Splits, 2)
		assert.Equal(t, "train", info.Splits[0].Name)
		assert.Equal(t, "test", info.Splits[1].Name)
	}
	assert.Equal(t, int64(20), card.DatasetInfo[0].Splits[0].NumExamples)
	assert.Equal(t, int64(10), card.DatasetInfo[0].Splits[1].NumExamples)
	requireRoundTrip(t, out, inputs[20:], ImportOptions{Splits: []string{"test"}})

	// A smaller train split replaces the older one: no stale shard is left behind.
	export(t, inputs[:2], ExportOptions{Out: out})
	requireValid(t, out)
	for _, config := range []string{configTapes, configSteps} {
		matches, err := filepath.Glob(filepath.Join(out, "data", config, "train-*"))
		require.NoError(t, err)
		assert.Equal(t, []string{filepath.Join(out, "data", config, "train-00000-of-00001.parquet")}, matches)
	}
	requireRoundTrip(t, out, slices.Concat(inputs[:2], inputs[20:]), ImportOptions{})
}

// TestExportRefusesTapeOfAnotherSplit: a tape already in another split fails the export
// before anything is written, naming the tape file and the split, shard and row that hold
// it, in either format; exporting the same split again replaces it.
func TestExportRefusesTapeOfAnotherSplit(t *testing.T) {
	inputs := smallCorpus(t, 6, 71)
	for _, format := range []Format{Parquet, Arrow} {
		t.Run(format.String(), func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "dataset")
			export(t, inputs[:4], ExportOptions{Out: out, Format: format})
			before := dirContents(t, out)

			_, err := Export(t.Context(), inputs[3:], ExportOptions{Out: out, Split: "test", Format: format})
			var invalid *InvalidTapesError
			require.ErrorAs(t, err, &invalid)
			require.Len(t, invalid.Invalid, 1)
			tp, err := tape.LoadFile(inputs[3].Path)
			require.NoError(t, err)
			assert.Equal(t, fmt.Sprintf("%s: tape_id %q is already in split train, at data/tapes/train-00000-of-00001.%s row 3 (a tape goes to one split)",
				inputs[3].Path, tp.Meta.TapeID, format), invalid.Invalid[0].Error())
			assert.Equal(t, before, dirContents(t, out), "nothing written")

			// The same split again is a replacement, not a duplicate.
			export(t, inputs[2:], ExportOptions{Out: out, Format: format})
			export(t, inputs[:2], ExportOptions{Out: out, Split: "test", Format: format})
			requireValid(t, out)
		})
	}
	t.Run("broken other split", func(t *testing.T) {
		out := filepath.Join(t.TempDir(), "dataset")
		export(t, inputs[:2], ExportOptions{Out: out, Split: "test"})
		require.NoError(t, os.Rename(filepath.Join(out, "data", configTapes, "test-00000-of-00001.parquet"),
			filepath.Join(out, "data", configTapes, "test-00000-of-00002.parquet")))
		before := dirContents(t, out)
		_, err := Export(t.Context(), inputs[2:], ExportOptions{Out: out})
		require.ErrorContains(t, err, "the parquet shards of split test are not a complete set")
		assert.Equal(t, before, dirContents(t, out), "refused before anything is written")
		// Its own split may be broken: the export replaces it.
		export(t, inputs[:2], ExportOptions{Out: out, Split: "test"})
		requireValid(t, out)
	})
}

// dirContents maps every file under dir to its content.
func dirContents(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, f := range treetest.Files(t, dir) {
		data, err := os.ReadFile(filepath.Join(dir, f))
		require.NoError(t, err)
		out[f] = string(data)
	}
	return out
}

func TestExportEmptySplit(t *testing.T) {
	bad := t.TempDir()
	tp := tapegen.Tape(tapegen.Options{Seed: 1, MeanSteps: 2, Lean: true}, 0)
	tp.Meta.Provider = "bogus"
	dir, res := export(t, []Input{writeTapeFile(t, bad, "bad.json", tp)}, ExportOptions{SkipInvalid: true})
	assert.Zero(t, res.Tapes)
	requireValid(t, dir)
	card, err := LoadCard(dir)
	require.NoError(t, err)
	assert.Equal(t, int64(0), card.DatasetInfo[0].Splits[0].NumExamples)
}

func TestExportOptionsErrors(t *testing.T) {
	inputs := smallCorpus(t, 1, 1)
	for name, opts := range map[string]ExportOptions{
		"no out":    {},
		"bad split": {Out: t.TempDir(), Split: "train-1"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Export(t.Context(), inputs, opts)
			require.Error(t, err)
			var ite *InvalidTapesError
			assert.False(t, errors.As(err, &ite))
		})
	}
}

func TestStepsHoldOnlyNewMessages(t *testing.T) {
	tp := tapegen.Tape(tapegen.Options{Seed: 11, MeanSteps: 25}, 3)
	data, err := tape.Marshal(tp)
	require.NoError(t, err)
	_, rows, err := RowsOf(tp, data)
	require.NoError(t, err)
	require.Len(t, rows, tp.Totals().Steps)

	var deltaBytes, fullBytes int
	i := 0
	for _, th := range tp.Threads {
		var prev []tape.Message
		for si, s := range th.Steps {
			r := rows[i]
			i++
			require.Equal(t, th.ID, r.ThreadID)
			require.Equal(t, int64(si), r.StepIndex)
			var msgs []tape.Message
			require.NoError(t, unmarshalJSON(r.NewMessages, &msgs))
			rebuilt := append(slices.Clone(prev[:r.MessageOffset]), msgs...)
			want, _ := jsonOf(s.Request.Messages)
			got, _ := jsonOf(rebuilt)
			require.Equal(t, string(want), string(got), "thread %s step %d: messages rebuilt from the steps table", th.ID, si)
			prev = rebuilt
			deltaBytes += len(r.NewMessages)
			fullBytes += len(want)
			if si == 0 {
				require.NotNil(t, r.System)
				require.NotNil(t, r.ToolsJSON)
			} else {
				assert.Nil(t, r.System, "system unchanged: not repeated")
				assert.Nil(t, r.ToolsJSON, "tools unchanged: not repeated")
			}
		}
	}
	t.Logf("%d steps: %d bytes of new messages, %d bytes of full conversations", len(rows), deltaBytes, fullBytes)
	assert.Less(t, deltaBytes*4, fullBytes, "the steps table grows linearly, the conversations quadratically")
}

func TestTenThousandTapes(t *testing.T) {
	if testing.Short() {
		t.Skip("10 000 tapes: skipped with -short")
	}
	n := 10_000
	if raceEnabled {
		n = 1_000 // the race detector makes it ten times slower
	}
	dir := filepath.Join(t.TempDir(), "tapes")
	st, err := tapegen.Generate(t.Context(), dir, tapegen.Options{Tapes: n, Seed: 10, MeanSteps: 2, MeanToolOutput: 200, Lean: true, Jobs: 4})
	require.NoError(t, err)
	inputs, err := ExpandInputs([]string{dir})
	require.NoError(t, err)
	require.Len(t, inputs, n)
	out, res := export(t, inputs, ExportOptions{})
	require.Equal(t, n, res.Tapes)
	require.Equal(t, int64(st.Steps), res.Steps)

	back := filepath.Join(t.TempDir(), "back")
	ir, err := Import(t.Context(), out, ImportOptions{Out: back})
	require.NoError(t, err)
	require.Equal(t, n, ir.Tapes)
	require.Equal(t, st.Bytes, ir.Bytes)
	for _, in := range inputs {
		want, err := os.ReadFile(in.Path) // generated tapes are canonical
		require.NoError(t, err)
		got, err := os.ReadFile(filepath.Join(back, importedName(t, inputs, in)))
		require.NoError(t, err)
		if string(want) != string(got) {
			t.Fatalf("%s: imported tape differs", in.Path)
		}
	}
	card, err := LoadCard(out)
	require.NoError(t, err)
	if n == 10_000 {
		assert.Equal(t, []string{"10K<n<100K"}, card.SizeCategories)
	}
}

func TestTapeFileName(t *testing.T) {
	for id, want := range map[string]string{
		"0123abcd":      "0123abcd.json",
		"run-1_b.2":     "run-1_b.2.json",
		"../etc/passwd": "%2E.%2Fetc%2Fpasswd.json",
		".hidden":       "%2Ehidden.json",
		"a b/c":         "a%20b%2Fc.json",
		"":              "%.json",
		"\u00e9t\u00e9": "%C3%A9t%C3%A9.json",
	} {
		assert.Equal(t, want, TapeFileName(id), "id %q", id)
	}
	assert.False(t, strings.Contains(TapeFileName("a/../b"), "/"))
}

func TestParquetSchemaOfTables(t *testing.T) {
	// The Parquet schema of each table maps to the features the card lists.
	for _, tb := range []*table{tapesTable, stepsTable} {
		var s *parquet.Schema
		if tb == tapesTable {
			s = parquet.SchemaOf(TapeRow{})
		} else {
			s = parquet.SchemaOf(StepRow{})
		}
		fs, err := featuresOfParquet(s)
		require.NoError(t, err)
		assert.Equal(t, tb.features(), fs)
		fa, err := featuresOfArrow(tb.arrowSchema())
		require.NoError(t, err)
		assert.Equal(t, tb.features(), fa)
	}
}

// TestArrowConversionFailureLeavesNothing: with both formats, the Arrow shards are written
// from the Parquet ones after the tapes are read; a failure there (here a cancelled
// context) removes every temporary file, Parquet included.
func TestArrowConversionFailureLeavesNothing(t *testing.T) {
	inputs := smallCorpus(t, 4, 3)
	dir := t.TempDir()
	set := newShardSet[TapeRow](dir, "train", tapesTable, Parquet, DefaultShardBytes, DefaultRowGroupBytes)
	for _, in := range inputs {
		data, err := os.ReadFile(in.Path)
		require.NoError(t, err)
		tp, canonical, err := tape.Decode(data, tape.DecodeOptions{NoChunkData: true})
		require.NoError(t, err)
		row, _, err := RowsOf(tp, canonical)
		require.NoError(t, err)
		require.NoError(t, set.write([]TapeRow{row}, []int64{tapesTable.rowBytes(reflect.ValueOf(&row).Elem())}))
	}
	require.NoError(t, set.closeCurrent())
	require.NotEmpty(t, treetest.Files(t, dir), "a Parquet shard under its temporary name")

	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	err := set.addArrow(ctx, newProgress(nil, "arrow", 1, 1))
	require.ErrorIs(t, err, context.Canceled)
	require.NoError(t, set.abort())
	assert.Empty(t, treetest.Files(t, dir))

	// The same shards convert when nothing goes wrong.
	set = newShardSet[TapeRow](dir, "train", tapesTable, Parquet, DefaultShardBytes, DefaultRowGroupBytes)
	require.NoError(t, set.closeCurrentOrEmpty())
	require.NoError(t, set.addArrow(t.Context(), newProgress(nil, "arrow", 1, 1)))
	require.NotEmpty(t, set.done[0].arTmp)
	require.NoError(t, set.abort())
	assert.Empty(t, treetest.Files(t, dir))
}

// TestExportFileModesAndCreatedBy: shards are readable by all (0644 less the umask, not
// os.CreateTemp's 0600), and each Parquet shard's created_by carries the version the
// exporter gave, in the Parquet spec's form, as arrow-go reads it.
func TestExportFileModesAndCreatedBy(t *testing.T) {
	dir, _ := export(t, smallCorpus(t, 3, 61), ExportOptions{Format: Both, Version: "1.2.3-dev"})
	umask := processUmask(t)
	for _, f := range treetest.Files(t, dir) {
		fi, err := os.Stat(filepath.Join(dir, f))
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o644&^umask).String(), fi.Mode().Perm().String(), f)
		if !strings.HasSuffix(f, ".parquet") {
			continue
		}
		rdr, err := file.OpenParquetFile(filepath.Join(dir, f), false)
		require.NoError(t, err)
		md := rdr.MetaData()
		assert.Equal(t, formatCreatedBy("1.2.3-dev", buildInfo().revision), md.GetCreatedBy(), f)
		v := md.WriterVersion()
		assert.Equal(t, "tapebox", v.App, f)
		assert.Equal(t, [3]int{1, 2, 3}, [3]int{v.Version.Major, v.Version.Minor, v.Version.Patch}, f)
		rdr.Close()
	}
}

func TestCreatedBy(t *testing.T) {
	assert.Equal(t, "tapebox version 0.1.0-dev (build 4f2c9a1)", formatCreatedBy("0.1.0-dev", "4f2c9a1"))
	assert.Equal(t, "tapebox version 0.1.0-dev", formatCreatedBy("0.1.0-dev", ""))
	assert.True(t, strings.HasPrefix(CreatedBy(""), "tapebox version "), CreatedBy(""))
	assert.NotContains(t, CreatedBy(""), "(build )")
}

// processUmask reads the umask from /proc without changing it (syscall.Umask would, for
// every goroutine of the test binary).
func processUmask(t *testing.T) os.FileMode {
	t.Helper()
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Skipf("no /proc/self/status: %v", err)
	}
	for line := range strings.Lines(string(data)) {
		if v, ok := strings.CutPrefix(line, "Umask:"); ok {
			m, err := strconv.ParseUint(strings.TrimSpace(v), 8, 32)
			require.NoError(t, err)
			return os.FileMode(m)
		}
	}
	t.Skip("no Umask line in /proc/self/status")
	return 0
}
