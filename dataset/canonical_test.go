package dataset

import (
	"bytes"
	"os"
	"reflect"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/internal/testutil/tapegen"
	"github.com/tapebox/tapebox/tape"
	"github.com/tapebox/tapebox/tape/seal"
)

func TestIsCanonicalAgreesWithMarshal(t *testing.T) {
	// isCanonical writes the top-level layout of tape.Marshal itself: the fields of Tape
	// and Thread, in order. A change in package tape must show up here.
	fields := func(v any) []string {
		rt := reflect.TypeOf(v)
		var out []string
		for i := range rt.NumField() {
			out = append(out, rt.Field(i).Tag.Get("json"))
		}
		return out
	}
	require.Equal(t, []string{"version", "meta", "threads", "digest,omitempty"}, fields(tape.Tape{}))
	require.Equal(t, []string{"id", "parent", "steps"}, fields(tape.Thread{}))

	var tapes []*tape.Tape
	for i := range 12 {
		tapes = append(tapes, tapegen.Tape(tapegen.Options{Seed: 61, MeanSteps: 4, Lean: true}, i))
	}
	for _, in := range goldenInputs(t) {
		tp, err := tape.LoadFile(in.Path)
		require.NoError(t, err)
		tapes = append(tapes, tp)
	}
	empty := tape.New(tape.ProviderAnthropic, tapegen.Epoch)
	sealed := tapegen.Tape(tapegen.Options{Seed: 62, MeanSteps: 4, Lean: true}, 0)
	require.NoError(t, seal.Tape(sealed, nil))
	tapes = append(tapes, empty, edgeTape(), sealed)
	for i, tp := range tapes {
		data, err := tape.Marshal(tp)
		require.NoError(t, err)
		back, err := tape.Unmarshal(data)
		require.NoError(t, err)
		assert.True(t, isCanonical(back, data), "tape %d: its canonical encoding is canonical", i)

		for name, mutate := range map[string]func([]byte) []byte{
			"space":          func(b []byte) []byte { return bytes.Replace(b, []byte(`":`), []byte(`": `), 1) },
			"no newline":     func(b []byte) []byte { return b[:len(b)-1] },
			"two newlines":   func(b []byte) []byte { return append(bytes.Clone(b), '\n') },
			"escaped letter": func(b []byte) []byte { return bytes.Replace(b, []byte(`"meta"`), []byte(`"met\u0061"`), 1) },
			"key order": func(b []byte) []byte {
				return bytes.Replace(b, []byte(`{"version":1,"meta":`), []byte(`{"meta":`), 1)
			},
		} {
			bad := mutate(data)
			if bytes.Equal(bad, data) {
				continue
			}
			assert.False(t, isCanonical(back, bad), "tape %d: %s", i, name)
		}
	}
}

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
