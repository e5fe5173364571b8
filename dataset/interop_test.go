package dataset

import (
	"reflect"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

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
		data := canonical(t, in.Path)
		tp, err := tape.Unmarshal(data)
		require.NoError(t, err)
		row, steps, err := RowsOf(tp, data)
		require.NoError(t, err)
		wantTapes = append(wantTapes, row)
		wantSteps = append(wantSteps, steps...)
	}

	l, err := scanLayout(dir)
	require.NoError(t, err)
	var gotTapes []TapeRow
	for _, f := range l[configTapes]["train"]["parquet"] {
		gotTapes = append(gotTapes, readWithArrowGo[TapeRow](t, f.path, tapesTable)...)
	}
	var gotSteps []StepRow
	for _, f := range l[configSteps]["train"]["parquet"] {
		gotSteps = append(gotSteps, readWithArrowGo[StepRow](t, f.path, stepsTable)...)
	}
	require.Len(t, gotTapes, len(wantTapes))
	require.Len(t, gotSteps, len(wantSteps))
	for i := range wantTapes {
		for _, d := range diffRow(tapesTable, reflect.ValueOf(&wantTapes[i]).Elem(), reflect.ValueOf(&gotTapes[i]).Elem()) {
			t.Errorf("tapes row %d: %s: %s", i, d.column, d.message)
		}
	}
	for i := range wantSteps {
		for _, d := range diffRow(stepsTable, reflect.ValueOf(&wantSteps[i]).Elem(), reflect.ValueOf(&gotSteps[i]).Elem()) {
			t.Errorf("steps row %d: %s: %s", i, d.column, d.message)
		}
	}
}
