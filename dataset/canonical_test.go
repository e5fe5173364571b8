package dataset

import (
	"bytes"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/internal/testutil/tapegen"
	"github.com/tapebox/tapebox/tape"
)

func TestExportStoresCanonicalEncoding(t *testing.T) {
	// A tape file that is not canonical (indented) is stored, and imported, as tape.Marshal
	// of its tape.
	tp := tapegen.Tape(tapegen.Options{Seed: 62, MeanSteps: 3, Lean: true}, 0)
	data, err := tape.Marshal(tp)
	require.NoError(t, err)
	var indented bytes.Buffer
	require.NoError(t, jsonIndent(&indented, data))
	dir := t.TempDir()
	in := writeBytes(t, dir, "indented.json", indented.Bytes())
	out, _ := export(t, []Input{in}, ExportOptions{})
	requireValid(t, out)
	back := t.TempDir()
	_, err = Import(t.Context(), out, ImportOptions{Out: back, Verify: true})
	require.NoError(t, err)
	got, err := os.ReadFile(back + "/indented.json")
	require.NoError(t, err)
	assert.Equal(t, string(data), string(got))
}

// TestRowsOfLeanDecode: the rows of a tape decoded without its chunk data (what Export
// runs) are the rows of the tape decoded whole.
func TestRowsOfLeanDecode(t *testing.T) {
	inputs := append(smallCorpus(t, 6, 71), goldenInputs(t)...)
	for _, in := range inputs {
		data := canonical(t, in.Path)
		ref, err := tape.Unmarshal(data)
		require.NoError(t, err)
		rb, sb, err := RowsOf(ref, data)
		require.NoError(t, err)
		lean, enc, err := tape.Decode(data, tape.DecodeOptions{NoChunkData: true})
		require.NoError(t, err)
		require.Equal(t, &data[0], &enc[0], "%s: canonical data is its own encoding", in.Path)
		ra, sa, err := RowsOf(lean, enc)
		require.NoError(t, err)
		assert.Equal(t, rb, ra, in.Path)
		assert.Equal(t, sb, sa, in.Path)
	}
}
