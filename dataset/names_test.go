package dataset

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/internal/testutil/tapegen"
	"github.com/tapebox/tapebox/internal/testutil/treetest"
)

// rewriteSourceFiles replaces the source_file of the tapes table's rows of dir (one
// Parquet shard), as a dataset from someone else may have them.
func rewriteSourceFiles(t *testing.T, dir string, names map[string]*string) {
	t.Helper()
	l, err := scanLayout(dir)
	require.NoError(t, err)
	_, files := l.primary(configTapes, "train")
	require.Len(t, files, 1)
	var rows []TapeRow
	require.NoError(t, readShard(files[0], tapesTable, 64, func(_ int64, rs []TapeRow) error {
		rows = append(rows, rs...)
		return nil
	}))
	set := newShardSet[TapeRow](filepath.Join(dir, "data", configTapes), "train", tapesTable, Parquet, DefaultShardBytes, DefaultRowGroupBytes)
	for i := range rows {
		if n, ok := names[rows[i].TapeID]; ok {
			rows[i].SourceFile = n
		}
		require.NoError(t, set.write(rows[i:i+1], []int64{tapesTable.rowBytes(reflect.ValueOf(&rows[i]).Elem())}))
	}
	require.NoError(t, set.closeCurrentOrEmpty())
	_, err = set.publish()
	require.NoError(t, err)
}

// TestImportKeepsSourceNames: export keeps each tape's file name (source_file) and import
// gives it back where it is a plain .json name of one tape only; a name two tapes share, a
// name that is another tape's id name, one that is not a plain .json file name (a control
// character, hidden, no .json), or one planted in the table to climb out of the folder,
// gives the id name instead, listed with why. Imported, exported and imported again, the
// names stay.
func TestImportKeepsSourceNames(t *testing.T) {
	root := t.TempDir()
	gen := func(i int) *tapeInput {
		tp := tapegen.Tape(tapegen.Options{Seed: 40, MeanSteps: 2, Lean: true}, i)
		return &tapeInput{id: tp.Meta.TapeID, write: func(dir, name string) Input {
			require.NoError(t, os.MkdirAll(filepath.Join(root, dir), 0o755))
			return writeTapeFile(t, filepath.Join(root, dir), name, tp)
		}}
	}
	tapes := make([]*tapeInput, 11)
	for i := range tapes {
		tapes[i] = gen(i)
	}
	named := []struct {
		dir, name string
	}{
		{"a", "alpha.json"},               // kept
		{"b", "run.json"},                 // shared with c: neither kept
		{"c", "run.json"},                 //
		{"d", TapeFileName(tapes[5].id)},  // another tape's id name
		{"e", "x\n.json"},                 // a control character
		{"f", "spaced ünï (1).json"},      // kept
		{"g", "noext"},                    // not .json
		{"h", ".hidden.json"},             // hidden
		{"i", "evil.json"},                // planted: ../evil.json
		{"j", "nested.json"},              // planted: sub/dir.json
		{"k", TapeFileName(tapes[10].id)}, // its own id name: kept
	}
	var inputs []Input
	for i, n := range named {
		inputs = append(inputs, tapes[i].write(n.dir, n.name))
	}
	dir, _ := export(t, inputs, ExportOptions{})
	requireValid(t, dir)
	evil, nested := "../evil.json", "sub/dir.json"
	rewriteSourceFiles(t, dir, map[string]*string{tapes[8].id: &evil, tapes[9].id: &nested})

	back := filepath.Join(t.TempDir(), "back")
	res, err := Import(t.Context(), dir, ImportOptions{Out: back, Verify: true})
	require.NoError(t, err)
	idName := func(i int) string { return TapeFileName(tapes[i].id) }
	want := []string{"alpha.json", idName(1), idName(2), idName(3), idName(4), "spaced ünï (1).json", idName(6), idName(7), idName(8), idName(9), idName(10)}
	for i, name := range want {
		requireSameFile(t, inputs[i].Path, filepath.Join(back, name))
	}
	slices.Sort(want)
	assert.Equal(t, want, treetest.Files(t, back), "one file per tape, under these names, nothing else")
	assert.NoFileExists(t, filepath.Join(filepath.Dir(back), "evil.json"))
	assert.Equal(t, 3, res.NamesKept)
	assert.Equal(t, []IDNamedTape{
		{TapeID: tapes[1].id, SourceFile: "run.json", Why: "2 tapes have that name"},
		{TapeID: tapes[2].id, SourceFile: "run.json", Why: "2 tapes have that name"},
		{TapeID: tapes[3].id, SourceFile: idName(5), Why: "the id name of tape " + tapes[5].id},
		{TapeID: tapes[4].id, SourceFile: "x\n.json", Why: "not a plain file name ending in .json"},
		{TapeID: tapes[6].id, SourceFile: "noext", Why: "not a plain file name ending in .json"},
		{TapeID: tapes[7].id, SourceFile: ".hidden.json", Why: "not a plain file name ending in .json"},
		{TapeID: tapes[8].id, SourceFile: "../evil.json", Why: "not a plain file name ending in .json"},
		{TapeID: tapes[9].id, SourceFile: "sub/dir.json", Why: "not a plain file name ending in .json"},
	}, res.IDNamed)

	// A tape without a source_file (an older export) is named by its id, silently.
	rewriteSourceFiles(t, dir, map[string]*string{tapes[0].id: nil})
	back2 := filepath.Join(t.TempDir(), "back2")
	res, err = Import(t.Context(), dir, ImportOptions{Out: back2})
	require.NoError(t, err)
	assert.FileExists(t, filepath.Join(back2, idName(0)))
	assert.Equal(t, 2, res.NamesKept)
	assert.Len(t, res.IDNamed, 8)

	// Round trip: the imported folder exported and imported again keeps every name.
	again, err := ExpandInputs([]string{back})
	require.NoError(t, err)
	dir2, _ := export(t, again, ExportOptions{})
	back3 := filepath.Join(t.TempDir(), "back3")
	res, err = Import(t.Context(), dir2, ImportOptions{Out: back3})
	require.NoError(t, err)
	assert.Equal(t, treetest.Files(t, back), treetest.Files(t, back3))
	assert.Equal(t, len(again), res.NamesKept, "every name of the imported folder is kept")
	assert.Empty(t, res.IDNamed)
}

type tapeInput struct {
	id    string
	write func(dir, name string) Input
}

// TestImportRefuses: an import names a split the dataset lacks, and a tapes table that
// holds one tape twice, by file and row, and writes no tape file of the second.
func TestImportRefuses(t *testing.T) {
	root := t.TempDir()
	var inputs []Input
	for i := range 2 {
		tp := tapegen.Tape(tapegen.Options{Seed: 41, MeanSteps: 2, Lean: true}, i)
		inputs = append(inputs, writeTapeFile(t, root, TapeFileName(tp.Meta.TapeID), tp))
	}
	dir, _ := export(t, inputs, ExportOptions{})

	_, err := Import(t.Context(), dir, ImportOptions{Out: filepath.Join(t.TempDir(), "out"), Splits: []string{"nope"}})
	require.Error(t, err)
	assert.Contains(t, err.Error(), `has no split "nope" (it has train)`)

	// The same row twice, as a dataset from someone else may have it.
	l, err := scanLayout(dir)
	require.NoError(t, err)
	_, files := l.primary(configTapes, "train")
	require.Len(t, files, 1)
	var rows []TapeRow
	require.NoError(t, readShard(files[0], tapesTable, 64, func(_ int64, rs []TapeRow) error {
		rows = append(rows, rs...)
		return nil
	}))
	require.Len(t, rows, 2)
	rows = append(rows, rows[0])
	set := newShardSet[TapeRow](filepath.Join(dir, "data", configTapes), "train", tapesTable, Parquet, DefaultShardBytes, DefaultRowGroupBytes)
	for i := range rows {
		require.NoError(t, set.write(rows[i:i+1], []int64{tapesTable.rowBytes(reflect.ValueOf(&rows[i]).Elem())}))
	}
	require.NoError(t, set.closeCurrentOrEmpty())
	_, err = set.publish()
	require.NoError(t, err)

	_, err = Import(t.Context(), dir, ImportOptions{Out: filepath.Join(t.TempDir(), "out")})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "row 2: tape_id \""+rows[0].TapeID+"\" is also at ")
	assert.Contains(t, err.Error(), "row 0")
}
