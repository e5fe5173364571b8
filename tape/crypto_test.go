package tape

import (
	"crypto/ed25519"
	"crypto/sha256"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The internal tests cannot import tape/seal (it imports tape); they register the same
// implementations themselves. seal_test checks that seal registers these.
func init() {
	RegisterCrypto(Crypto{
		NewHash:       sha256.New,
		Sign:          func(key, msg []byte) []byte { return ed25519.Sign(key, msg) },
		Public:        func(key []byte) []byte { return ed25519.PrivateKey(key).Public().(ed25519.PublicKey) },
		Verify:        func(pub, msg, sig []byte) bool { return len(pub) == ed25519.PublicKeySize && ed25519.Verify(pub, msg, sig) },
		PublicKeySize: ed25519.PublicKeySize,
	})
}

// TestNoCrypto: without registered cryptography, asking for digests fails clearly instead
// of writing a tape without them.
func TestNoCrypto(t *testing.T) {
	saved := crypt
	crypt = nil
	defer func() { crypt = saved }()
	tp := &Tape{Version: Version, Meta: Meta{TapeID: "t"}}
	_, err := Create(filepath.Join(t.TempDir(), "t.json"), tp, WithDigests())
	require.ErrorIs(t, err, ErrNoCrypto)
	_, err = Verify(strings.NewReader(`{}`), VerifyOptions{})
	require.ErrorIs(t, err, ErrNoCrypto)
	require.ErrorIs(t, Seal(tp, nil), ErrNoCrypto)
}
