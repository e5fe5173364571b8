// Package seal supplies the cryptography of tape digests: importing it registers the
// standard library's SHA-256 and ed25519 with package tape (tape.RegisterCrypto). Package
// tape leaves them out so that the sandbox-side executor, which links tape, stays within its
// size budget. Import it for its side effect in any program that writes or checks digests:
//
//	import _ "github.com/tapebox/tapebox/tape/seal"
package seal

import (
	"crypto/ed25519"
	"crypto/sha256"

	"github.com/tapebox/tapebox/tape"
)

func init() {
	tape.RegisterCrypto(tape.Crypto{
		NewHash:       sha256.New,
		Sign:          func(key, msg []byte) []byte { return ed25519.Sign(key, msg) },
		Public:        func(key []byte) []byte { return ed25519.PrivateKey(key).Public().(ed25519.PublicKey) },
		Verify:        func(pub, msg, sig []byte) bool { return len(pub) == ed25519.PublicKeySize && ed25519.Verify(pub, msg, sig) },
		PublicKeySize: ed25519.PublicKeySize,
	})
}
