package seal

import (
	"crypto/ed25519"
	"crypto/sha256"
	"io"

	"github.com/tapebox/tapebox/tape"
)

// Hashing is SHA-256 and, with a key, ed25519 signatures of the root; key may be nil.
func Hashing(key ed25519.PrivateKey) tape.Hashing {
	hs := tape.Hashing{New: sha256.New, Check: check}
	if key != nil {
		pub := key.Public().(ed25519.PublicKey)
		hs.Sign = func(message []byte) ([]byte, []byte) { return pub, ed25519.Sign(key, message) }
	}
	return hs
}

func check(publicKey, message, signature []byte) bool {
	return len(publicKey) == ed25519.PublicKeySize && ed25519.Verify(publicKey, message, signature)
}

// Writer is the tape.Create option that writes digests (and, with a key, signs the root).
func Writer(key ed25519.PrivateKey) tape.Option { return tape.WithDigests(Hashing(key)) }

// Tape computes t's digests in place (tape.Seal); key, when set, signs the root.
func Tape(t *tape.Tape, key ed25519.PrivateKey) error { return tape.Seal(t, Hashing(key)) }

// Verify checks the digests of the tape r holds (tape.Verify); key, when set, is the
// public key the tape must be signed with.
func Verify(r io.Reader, key ed25519.PublicKey) (*tape.Verification, error) {
	return tape.Verify(r, tape.VerifyOptions{Hashing: Hashing(nil), Key: key})
}
