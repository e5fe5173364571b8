package seal_test

import (
	"bytes"
	"crypto/ed25519"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/tape"
	"github.com/tapebox/tapebox/tape/seal"
)

// TestSealVerify: a tape sealed with a key verifies with that key and no other; one
// written by a Writer with seal.Writer verifies after every step; an edit is caught.
func TestSealVerify(t *testing.T) {
	pub, key, err := ed25519.GenerateKey(nil)
	require.NoError(t, err)
	other, _, err := ed25519.GenerateKey(nil)
	require.NoError(t, err)
	tp, err := tape.LoadFile(filepath.Join("..", "..", "testdata", "openai-responses-stream.json"))
	require.NoError(t, err)
	require.NoError(t, seal.Tape(tp, key))
	data, err := tape.Marshal(tp)
	require.NoError(t, err)
	v, err := seal.Verify(bytes.NewReader(data), pub)
	require.NoError(t, err)
	require.Equal(t, tape.DigestsOK, v.State, v.Problem)
	require.True(t, v.SignatureOK)
	v, err = seal.Verify(bytes.NewReader(data), other)
	require.NoError(t, err)
	require.Equal(t, tape.DigestsMismatch, v.State)

	path := filepath.Join(t.TempDir(), "run.json")
	w, err := tape.Create(path, tape.New(tape.ProviderAnthropic, tp.Meta.StartedAt), seal.Writer(key))
	require.NoError(t, err)
	main, err := w.AddThread("main", nil)
	require.NoError(t, err)
	for _, s := range tp.Threads[0].Steps {
		_, err := w.AppendStep(main, s)
		require.NoError(t, err)
		require.NoError(t, w.Sync())
		f, err := tape.LoadFile(path)
		require.NoError(t, err)
		b, err := tape.Marshal(f)
		require.NoError(t, err)
		v, err := seal.Verify(bytes.NewReader(b), pub)
		require.NoError(t, err)
		require.Equal(t, tape.DigestsOK, v.State, v.Problem)
	}
	require.NoError(t, w.Finish(tape.EndComplete, tp.Meta.StartedAt, ""))
	edited := bytes.Replace(data, []byte(`"status":200`), []byte(`"status":201`), 1)
	v, err = seal.Verify(bytes.NewReader(edited), nil)
	require.NoError(t, err)
	require.Equal(t, tape.DigestsMismatch, v.State)
	require.Equal(t, "/threads/0/steps/0", v.Pointer)
}
