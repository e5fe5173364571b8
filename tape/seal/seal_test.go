package seal_test

import (
	"bytes"
	"crypto/ed25519"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/tape"
	_ "github.com/tapebox/tapebox/tape/seal"
)

// TestSeal: with seal imported, a sealed and signed tape verifies with its key, and fails
// with another.
func TestSeal(t *testing.T) {
	tp := &tape.Tape{Version: tape.Version, Meta: tape.Meta{TapeID: "0123456789abcdef0123456789abcdef", StartedAt: time.Unix(0, 0)},
		Threads: []*tape.Thread{{ID: "main", Steps: []*tape.Step{{}}}}}
	key := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{7}, ed25519.SeedSize))
	require.NoError(t, tape.Seal(tp, key))
	b, err := tape.Marshal(tp)
	require.NoError(t, err)
	v, err := tape.Verify(bytes.NewReader(b), tape.VerifyOptions{Key: key.Public().(ed25519.PublicKey)})
	require.NoError(t, err)
	require.NoError(t, v.Err())
	require.True(t, v.SignatureOK)
	other := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{8}, ed25519.SeedSize))
	v, err = tape.Verify(bytes.NewReader(b), tape.VerifyOptions{Key: other.Public().(ed25519.PublicKey)})
	require.NoError(t, err)
	require.Error(t, v.Err())
	v, err = tape.Verify(bytes.NewReader(b), tape.VerifyOptions{Key: []byte("short")})
	require.NoError(t, err)
	require.Error(t, v.Err(), "a malformed key fails the check, never panics")
}
