package tape

import (
	"crypto/ed25519"
	"crypto/sha256"
)

// testHashing is what package tape/seal gives (which these tests cannot import: it imports
// tape).
var testHashing = Hashing{New: sha256.New, Check: func(pub, msg, sig []byte) bool {
	return len(pub) == ed25519.PublicKeySize && ed25519.Verify(pub, msg, sig)
}}

// signing is testHashing signing with key.
func signing(key ed25519.PrivateKey) Hashing {
	hs := testHashing
	if key != nil {
		pub := key.Public().(ed25519.PublicKey)
		hs.Sign = func(m []byte) ([]byte, []byte) { return pub, ed25519.Sign(key, m) }
	}
	return hs
}
