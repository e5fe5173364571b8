package dataset

import (
	"bytes"
	"crypto/ed25519"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/tape"
	"github.com/tapebox/tapebox/tape/seal"
)

// sealedInputs writes the golden tapes and generated ones, sealed (one of them signed, one
// ended by the breaker with its limits), as files, and returns them.
func sealedInputs(t *testing.T) []Input {
	t.Helper()
	dir := t.TempDir()
	var inputs []Input
	key := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{7}, ed25519.SeedSize))
	for i, in := range append(goldenInputs(t), smallCorpus(t, 4, 9)...) {
		tp, err := tape.LoadFile(in.Path)
		require.NoError(t, err)
		var k ed25519.PrivateKey
		if i == 1 {
			k = key
		}
		if i == 2 {
			tp.Meta.Limits = &tape.Limits{MaxCostUSD: 1.25, MaxRepeat: 3}
			tp.Meta.Ended = &tape.Ended{Reason: tape.EndBudget, At: tp.Meta.StartedAt.Add(time.Minute), Detail: "the run cost $1.3000 after 7 model calls (--max-cost 1.25)", Limit: "max_cost"}
		}
		require.NoError(t, seal.Tape(tp, k))
		inputs = append(inputs, writeTapeFile(t, dir, filepath.Base(in.Path), tp))
	}
	return inputs
}

// TestExportKeepsDigests: export keeps every step's digest and the root (the fast decoder
// takes the fields as canonical), import gives the tapes back byte for byte so that they
// verify, and validate verifies every row.
func TestExportKeepsDigests(t *testing.T) {
	inputs := sealedInputs(t)
	for _, in := range inputs {
		data, err := os.ReadFile(in.Path)
		require.NoError(t, err)
		tp, canon, err := tape.Decode(data, tape.DecodeOptions{})
		require.NoError(t, err, in.Path)
		require.Equal(t, &data[0], &canon[0], "%s: the decoder reads a sealed tape as canonical", in.Path)
		require.NotNil(t, tp.Digest)
		require.True(t, tape.IsCanonical(tp, data), in.Path)
	}
	dir, res := export(t, inputs, ExportOptions{})
	require.Equal(t, len(inputs), res.Tapes)
	requireValid(t, dir)
	out := filepath.Join(t.TempDir(), "imported")
	requireRoundTrip(t, dir, inputs, ImportOptions{Out: out})
	for _, in := range inputs {
		f, err := os.Open(filepath.Join(out, importedName(t, inputs, in)))
		require.NoError(t, err)
		v, err := seal.Verify(f, nil)
		f.Close()
		require.NoError(t, err)
		require.Equal(t, tape.DigestsOK, v.State, "%s: %s %s", in.Path, v.Pointer, v.Problem)
	}
}

// TestValidateCatchesDigestMismatch: a row whose tape was edited after it was sealed (a
// tool result changed, rows rebuilt to match) fails validate, naming the step.
func TestValidateCatchesDigestMismatch(t *testing.T) {
	tapes, steps, tps := rowsOfTapes(t, 3)
	tp := tps[1]
	require.NoError(t, seal.Tape(tp, nil))
	var target *tape.Step
	for _, s := range tp.Threads[0].Steps {
		if len(s.ToolResults) > 0 {
			target = s
			break
		}
	}
	require.NotNil(t, target, "a step with a tool result")
	target.ToolResults[0].IsError = !target.ToolResults[0].IsError // after sealing
	data, err := tape.Marshal(tp)
	require.NoError(t, err)
	row, st, err := RowsOf(tp, data)
	require.NoError(t, err)
	tapes[1], steps[1] = row, st
	got := problems(t, craft(t, tapes, flatten(steps)))
	requireProblem(t, got, "data/tapes/train-00000-of-00001.parquet row 1: tape_json/threads/0/steps/", "digest mismatch: the step does not match its digest")
}
