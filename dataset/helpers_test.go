package dataset

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/internal/testutil/tapegen"
	"github.com/tapebox/tapebox/tape"
)

// smallCorpus writes a generated corpus of n short tapes and returns its inputs.
func smallCorpus(t testing.TB, n int, seed uint64) []Input {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "tapes")
	_, err := tapegen.Generate(t.Context(), dir, tapegen.Options{Tapes: n, Seed: seed, MeanSteps: 6, MeanToolOutput: 600, Lean: true})
	require.NoError(t, err)
	inputs, err := ExpandInputs([]string{dir})
	require.NoError(t, err)
	require.Len(t, inputs, n)
	return inputs
}

// goldenInputs returns the golden tapes of the repository (testdata/**.json), if any.
func goldenInputs(t testing.TB) []Input {
	t.Helper()
	if _, err := os.Stat("../testdata"); err != nil {
		return nil
	}
	inputs, err := ExpandInputs([]string{"../testdata"})
	require.NoError(t, err)
	return inputs
}

// canonical returns tape.Marshal of the tape in a file.
func canonical(t testing.TB, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	return canonicalOf(t, data)
}

// canonicalOf returns the canonical encoding of the tape data holds, by the reference
// path: tape.Marshal of tape.Unmarshal.
func canonicalOf(t testing.TB, data []byte) []byte {
	t.Helper()
	tp, err := tape.Unmarshal(data)
	require.NoError(t, err)
	enc, err := tape.Marshal(tp)
	require.NoError(t, err)
	return enc
}

// export runs Export into a fresh folder and returns the folder.
func export(t testing.TB, inputs []Input, opts ExportOptions) (string, *ExportResult) {
	t.Helper()
	if opts.Out == "" {
		opts.Out = filepath.Join(t.TempDir(), "dataset")
	}
	res, err := Export(t.Context(), inputs, opts)
	require.NoError(t, err)
	return opts.Out, res
}

// requireValid fails the test when Validate finds problems in dir.
func requireValid(t testing.TB, dir string) *Report {
	t.Helper()
	rep, err := Validate(t.Context(), dir, ValidateOptions{})
	require.NoError(t, err)
	require.NoError(t, rep.Err())
	return rep
}

func unmarshalJSON(b []byte, v any) error { return json.Unmarshal(b, v) }

// jsonOf encodes v the way tape.Marshal does.
func jsonOf(v any) ([]byte, error) {
	var e pieceEncoder
	return e.encode(v)
}

func jsonIndent(dst *bytes.Buffer, src []byte) error { return json.Indent(dst, src, "", "  ") }

// importedName is the file name Import gives the tape of input in when inputs were
// exported together: the input's own name when no other input has it, else the tape id's
// (TapeFileName). (The rule for names that are another tape's id name is left out: no
// corpus of these tests has one; TestImportKeepsSourceNames tests it.)
func importedName(t testing.TB, inputs []Input, in Input) string {
	t.Helper()
	base := filepath.Base(in.Path)
	n := 0
	for _, o := range inputs {
		if filepath.Base(o.Path) == base {
			n++
		}
	}
	if n == 1 && filepath.Ext(base) == ".json" {
		return base
	}
	data, err := os.ReadFile(in.Path)
	require.NoError(t, err)
	tp, err := tape.Unmarshal(data)
	require.NoError(t, err)
	return TapeFileName(tp.Meta.TapeID)
}
