package dataset

import (
	"bytes"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/internal/testutil/tapegen"
	"github.com/tapebox/tapebox/tape"
)

// readWithArrowGo reads every column of a Parquet file with arrow-go's Parquet
// implementation (not parquet-go, which wrote it) and decodes the rows.
func readWithArrowGo[R any](t *testing.T, path string, tb *table) []R {
	t.Helper()
	rdr, err := file.OpenParquetFile(path, false)
	require.NoError(t, err)
	defer rdr.Close()
	for i := range rdr.NumRowGroups() {
		md := rdr.MetaData().RowGroup(i)
		for c := range md.NumColumns() {
			cc, err := md.ColumnChunk(c)
			require.NoError(t, err)
			ci := cc.GetColumnIndexLocation()
			oi := cc.GetOffsetIndexLocation()
			assert.NotNil(t, ci, "%s: row group %d column %s has a column index", path, i, cc.PathInSchema())
			assert.NotNil(t, oi, "%s: row group %d column %s has an offset index", path, i, cc.PathInSchema())
		}
	}
	fr, err := pqarrow.NewFileReader(rdr, pqarrow.ArrowReadProperties{BatchSize: 64}, memory.DefaultAllocator)
	require.NoError(t, err)
	schema, err := fr.Schema()
	require.NoError(t, err)
	require.Equal(t, len(tb.columns), schema.NumFields(), "%s: every column", path)
	for i, c := range tb.columns {
		f := schema.Field(i)
		require.Equal(t, c.name, f.Name)
		want := c.arrowType()
		if l, ok := want.(*arrow.ListType); ok {
			got, ok := f.Type.(*arrow.ListType)
			require.True(t, ok, "%s: %s is a list", path, c.name)
			require.True(t, arrow.TypeEqual(l.Elem(), got.Elem()), "%s: %s: %s", path, c.name, f.Type)
		} else {
			require.True(t, arrow.TypeEqual(want, f.Type), "%s: %s is %s, want %s", path, c.name, f.Type, want)
		}
	}
	rr, err := fr.GetRecordReader(t.Context(), nil, nil)
	require.NoError(t, err)
	defer rr.Release()
	var rows []R
	for rr.Next() {
		batch, err := rowsFromRecord[R](tb, rr.RecordBatch())
		require.NoError(t, err)
		rows = append(rows, batch...)
	}
	require.NoError(t, rr.Err())
	return rows
}

func TestInteropArrowGoReadsEveryColumn(t *testing.T) {
	inputs := append(smallCorpus(t, 10, 21), goldenInputs(t)...)
	dir, _ := export(t, inputs, ExportOptions{Format: Parquet, ShardBytes: 256 << 10, RowGroupBytes: 64 << 10})

	var wantTapes []TapeRow
	var wantSteps []StepRow
	for _, in := range inputs {
		row, steps := rowsOfFile(t, in.Path)
		wantTapes = append(wantTapes, row)
		wantSteps = append(wantSteps, steps...)
	}

	l, err := scanLayout(dir)
	require.NoError(t, err)
	gotTapes := readSplitWithArrowGo[TapeRow](t, l, configTapes, tapesTable)
	gotSteps := readSplitWithArrowGo[StepRow](t, l, configSteps, stepsTable)
	require.Len(t, gotTapes, len(wantTapes))
	require.Len(t, gotSteps, len(wantSteps))
	for i := range wantTapes {
		assertRowEqual(t, tapesTable, i, &wantTapes[i], &gotTapes[i])
	}
	for i := range wantSteps {
		assertRowEqual(t, stepsTable, i, &wantSteps[i], &gotSteps[i])
	}
}

// rowsOfFile returns the rows of the tape in a file, derived by the reference path from
// its canonical encoding, and the one column the export takes from the file: its name.
func rowsOfFile(t *testing.T, path string) (TapeRow, []StepRow) {
	t.Helper()
	data := canonical(t, path)
	tp, err := tape.Unmarshal(data)
	require.NoError(t, err)
	row, steps, err := RowsOf(tp, data)
	require.NoError(t, err)
	name := filepath.Base(path)
	row.SourceFile = &name
	return row, steps
}

// readSplitWithArrowGo reads the rows of the train split of a config, every Parquet file
// of it in order, with readWithArrowGo.
func readSplitWithArrowGo[R any](t *testing.T, l layout, config string, tb *table) []R {
	t.Helper()
	var rows []R
	for _, f := range l[config]["train"]["parquet"] {
		rows = append(rows, readWithArrowGo[R](t, f.path, tb)...)
	}
	return rows
}

// assertRowEqual reports each column in which got, row i of table tb as read back,
// differs from want.
func assertRowEqual[R any](t *testing.T, tb *table, i int, want, got *R) {
	t.Helper()
	for _, d := range diffRow(tb, reflect.ValueOf(want).Elem(), reflect.ValueOf(got).Elem()) {
		t.Errorf("%s row %d: %s: %s", tb.name, i, d.column, d.message)
	}
}

// TestInteropArrowGoReadsWorkspaces: arrow-go reads the workspace columns of the tapes
// table and the workspaces table (binary, not compressed again, no statistics) as written.
func TestInteropArrowGoReadsWorkspaces(t *testing.T) {
	opts := tapegen.Options{Tapes: 8, Seed: 22, MeanSteps: 2, Lean: true, Workspaces: 3, SnapshotBytes: 40 << 10}
	corpus := filepath.Join(t.TempDir(), "tapes")
	_, err := tapegen.Generate(t.Context(), corpus, opts)
	require.NoError(t, err)
	inputs, err := ExpandInputs([]string{corpus})
	require.NoError(t, err)
	dir, res := export(t, inputs, ExportOptions{Format: Parquet, RowGroupBytes: 64 << 10})
	require.Equal(t, 3, res.Workspaces)

	l, err := scanLayout(dir)
	require.NoError(t, err)
	gotTapes := readSplitWithArrowGo[TapeRow](t, l, configTapes, tapesTable)
	require.Len(t, gotTapes, len(inputs))
	for i, in := range inputs {
		want, _ := rowsOfFile(t, in.Path)
		want.WorkspaceIncluded = true
		assertRowEqual(t, tapesTable, i, &want, &gotTapes[i])
	}

	wsFiles := l[configWorkspaces]["train"]["parquet"]
	require.Len(t, wsFiles, 1)
	got := readWithArrowGo[WorkspaceRow](t, wsFiles[0].path, workspacesTable)
	require.Len(t, got, 3)
	var total int64
	for _, r := range got {
		total += r.Size
	}
	assert.Less(t, wsFiles[0].size, total+8<<10, "the bytes once, and no page bounds that copy them")
	for k, r := range got {
		snap := tapegen.Snapshot(opts, k)
		assert.Equal(t, digestOf(snap), r.Digest)
		assert.Equal(t, int64(len(snap)), r.Size)
		assert.True(t, bytes.Equal(snap, r.Snapshot), "snapshot %d", k)
	}
	rdr, err := file.OpenParquetFile(wsFiles[0].path, false)
	require.NoError(t, err)
	defer rdr.Close()
	for i := range rdr.NumRowGroups() {
		cc, err := rdr.MetaData().RowGroup(i).ColumnChunk(2)
		require.NoError(t, err)
		require.Equal(t, "snapshot", cc.PathInSchema().String())
		assert.Equal(t, "UNCOMPRESSED", cc.Compression().String())
		st, err := cc.Statistics()
		require.NoError(t, err)
		if st != nil {
			assert.False(t, st.HasMinMax(), "no min and max: they would copy the bytes into the footer")
		}
		assert.Less(t, rdr.MetaData().Size(), 4<<10, "the footer holds no snapshot bytes")
	}
}
