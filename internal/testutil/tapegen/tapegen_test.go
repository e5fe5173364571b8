package tapegen

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/klauspost/compress/zstd"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/schema"
	"github.com/tapebox/tapebox/tape"
)

func TestGenerate(t *testing.T) {
	opts := Options{Tapes: 24, Seed: 3, MeanSteps: 10, MeanToolOutput: 800}
	a, b := t.TempDir(), t.TempDir()
	st, err := Generate(t.Context(), a, opts)
	require.NoError(t, err)
	opts.Jobs = 5
	_, err = Generate(t.Context(), b, opts)
	require.NoError(t, err)

	var steps, subagents, replays, anthropic, responses int
	var size int64
	for i := range opts.Tapes {
		name := filepath.Base(filepath.Join(a, "tape-"+pad5(i)+".json"))
		x, err := os.ReadFile(filepath.Join(a, name))
		require.NoError(t, err)
		y, err := os.ReadFile(filepath.Join(b, name))
		require.NoError(t, err)
		require.Equal(t, string(x), string(y), "%s: the same options give the same bytes", name)
		require.NoError(t, schema.Validate(x), name)
		tp, err := tape.Unmarshal(x)
		require.NoError(t, err)
		again, err := tape.Marshal(tp)
		require.NoError(t, err)
		require.Equal(t, string(x), string(again), "%s is canonical", name)
		size += int64(len(x))
		steps += tp.Totals().Steps
		if len(tp.Threads) > 1 {
			subagents++
			_, _, ok := tp.ParentCall(tp.Threads[1])
			assert.True(t, ok, "%s: the subagent's parent call is in the tape", name)
		}
		if tp.Meta.ReplayOf != nil {
			replays++
		}
		switch tp.Meta.Provider {
		case tape.ProviderAnthropic:
			anthropic++
		case tape.ProviderOpenAIResponses:
			responses++
		}
		// Every request carries the whole conversation: the next request of a thread
		// starts with all the messages of this one.
		for _, th := range tp.Threads {
			for k := 1; k < len(th.Steps); k++ {
				prev, cur := th.Steps[k-1].Request.Messages, th.Steps[k].Request.Messages
				require.GreaterOrEqual(t, len(cur), len(prev), "%s thread %s step %d", name, th.ID, k)
				require.Equal(t, prev, cur[:len(prev)], "%s thread %s step %d", name, th.ID, k)
			}
		}
	}
	assert.Equal(t, st.Steps, steps)
	assert.Equal(t, st.Bytes, size)
	assert.InDelta(t, 10, float64(steps)/float64(opts.Tapes), 4, "mean steps")
	assert.Positive(t, anthropic)
	assert.Positive(t, responses)
	assert.Positive(t, subagents+replays)
}

func pad5(i int) string {
	s := "0000" + strconv.Itoa(i)
	return s[len(s)-5:]
}

// TestGeneratedSnapshotIsATarZst: the corpus's snapshots are real: a tar compressed with
// zstd holding the entries meta.workspace counts.
func TestGeneratedSnapshotIsATarZst(t *testing.T) {
	opts := Options{Seed: 3, Workspaces: 2, SnapshotBytes: 1000}
	snap := Snapshot(opts, 1)
	assert.Equal(t, snap, Snapshot(opts, 1), "deterministic")
	dec, err := zstd.NewReader(bytes.NewReader(snap))
	require.NoError(t, err)
	defer dec.Close()
	tr := tar.NewReader(dec)
	var names []string
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		names = append(names, h.Name)
	}
	assert.Equal(t, []string{"README.md", "data.bin", "src/", "src/main.go"}, names)
	w := Tape(opts, 3).Meta.Workspace
	require.NotNil(t, w)
	sum := sha256.Sum256(snap)
	assert.Equal(t, "sha256:"+hex.EncodeToString(sum[:]), w.Digest, "tape 3 starts from snapshot 3 mod 2")
	assert.Equal(t, len(names), w.Files)

	// Generate writes each tape's snapshot beside it; the tapes pass the schema.
	dir := t.TempDir()
	opts.Tapes = 3
	_, err = Generate(t.Context(), dir, opts)
	require.NoError(t, err)
	for i := range opts.Tapes {
		data, err := os.ReadFile(filepath.Join(dir, SnapshotName(i)))
		require.NoError(t, err)
		assert.Equal(t, Snapshot(opts, i%2), data)
		tp, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("tape-%05d.json", i)))
		require.NoError(t, err)
		require.NoError(t, schema.Validate(tp))
	}
}
