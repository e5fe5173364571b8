package tape

import (
	"errors"
	"hash"
)

// Crypto is what digests need of cryptography: SHA-256 for the chains and the root, and
// ed25519 for an optional signature. Package tape does not import crypto itself: the
// executor links tape, and crypto/sha256 alone would take 160 KB of its 3 MiB budget
// (ed25519 another 65 KB). Package tape/seal registers the standard library's
// implementations when it is imported; gateway, cli and dataset import it.
type Crypto struct {
	// NewHash returns a SHA-256 hash whose state marshals (encoding.BinaryMarshaler), as
	// crypto/sha256's does.
	NewHash func() hash.Hash
	// Sign signs message with an ed25519 private key; Public gives the key's public half.
	Sign   func(privateKey, message []byte) []byte
	Public func(privateKey []byte) []byte
	// Verify checks an ed25519 signature; PublicKeySize is the size of a public key.
	Verify        func(publicKey, message, sig []byte) bool
	PublicKeySize int
}

var crypt *Crypto

// RegisterCrypto makes c the digests' cryptography. Package tape/seal calls it from its
// init; call it yourself only to supply another implementation of the same algorithms.
func RegisterCrypto(c Crypto) { crypt = &c }

// ErrNoCrypto is returned (or, deep in a Writer, panicked with) when digests are asked for
// in a program that did not import package tape/seal.
var ErrNoCrypto = errors.New("tape: digests need SHA-256 and ed25519: import github.com/tapebox/tapebox/tape/seal")

// sumSize is the size of a SHA-256 digest.
const sumSize = 32

func newHash() hash.Hash {
	if crypt == nil {
		panic(ErrNoCrypto)
	}
	return crypt.NewHash()
}

func sum256(b []byte) (s sum) {
	h := newHash()
	h.Write(b)
	h.Sum(s[:0])
	return s
}
