package cli

import (
	"crypto/ed25519"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/tapebox/tapebox/gateway"
	"github.com/tapebox/tapebox/tape"
)

// ExitBudget is record's exit code when the breaker stopped the run.
const ExitBudget = 3

// breaker fills cfg's limits, prices and signing key from the flags, and says at start
// what --max-cost counts.
func (gf *gatewayFlags) breaker(env *Env, verb string, cfg *gateway.Config) error {
	l := gf.limits
	switch {
	case l.MaxCostUSD < 0:
		return errors.New("--max-cost: want a positive amount of US dollars, or 0 for no limit")
	case l.MaxSteps < 0, l.MaxThreadSteps < 0, l.MaxTokens < 0, l.MaxRepeat < 0:
		return errors.New("--max-steps, --max-thread-steps, --max-tokens, --max-repeat: want a positive number, or 0 for no limit")
	}
	cfg.Limits = l
	table, err := loadPrices(gf.pricesFile)
	if err != nil {
		return fmt.Errorf("--prices: %w", err)
	}
	cfg.Cost = func(model string, u tape.Usage) (float64, bool) {
		p, ok := table.Lookup(model)
		if !ok {
			return 0, false
		}
		return p.Cost(u), true
	}
	if l.MaxCostUSD > 0 {
		fmt.Fprintf(env.Stderr, "tapebox %s: --max-cost $%g at the prices of the table dated %s; the calls of a model it has no price for count tokens only (said at its first call)\n", verb, l.MaxCostUSD, table.Date)
	}
	cfg.NoDigests = gf.noDigests
	if gf.signKey != "" {
		if gf.noDigests {
			return errors.New("--sign signs the digests: it cannot go with --no-digests")
		}
		key, err := readSigningKey(gf.signKey)
		if err != nil {
			return fmt.Errorf("--sign: %w", err)
		}
		cfg.Signer = key
	}
	return nil
}

// readSigningKey reads an ed25519 private key: 64 hex digits of seed, 128 of key, or PEM
// PKCS#8 ("openssl genpkey -algorithm ed25519").
func readSigningKey(path string) (ed25519.PrivateKey, error) {
	return readKey(path, x509.ParsePKCS8PrivateKey, func(text string) (ed25519.PrivateKey, error) {
		raw, err := hex.DecodeString(text)
		switch {
		case err != nil:
			return nil, fmt.Errorf("neither PEM nor hex: %w", err)
		case len(raw) == ed25519.SeedSize:
			return ed25519.NewKeyFromSeed(raw), nil
		case len(raw) == ed25519.PrivateKeySize:
			return ed25519.PrivateKey(raw), nil
		}
		return nil, fmt.Errorf("%d bytes: want a 32-byte seed or a 64-byte key", len(raw))
	})
}

// readPublicKey reads an ed25519 public key: 64 hex digits, or PEM PKIX.
func readPublicKey(path string) (ed25519.PublicKey, error) {
	return readKey(path, x509.ParsePKIXPublicKey, func(text string) (ed25519.PublicKey, error) {
		raw, err := hex.DecodeString(text)
		if err != nil || len(raw) != ed25519.PublicKeySize {
			return nil, errors.New("want 64 hex digits or PEM of an ed25519 public key")
		}
		return ed25519.PublicKey(raw), nil
	})
}

// readKey reads the key file path: a PEM block's bytes go to parsePEM, whose key must be a K;
// any other content, trimmed, goes to parseHex. Errors name path.
func readKey[K any](path string, parsePEM func([]byte) (any, error), parseHex func(string) (K, error)) (K, error) {
	var zero K
	b, err := os.ReadFile(path)
	if err != nil {
		return zero, err
	}
	if blk, _ := pem.Decode(b); blk != nil {
		k, err := parsePEM(blk.Bytes)
		if err != nil {
			return zero, fmt.Errorf("%s: %w", path, err)
		}
		key, ok := k.(K)
		if !ok {
			return zero, fmt.Errorf("%s: a %T, not an ed25519 key", path, k)
		}
		return key, nil
	}
	key, err := parseHex(strings.TrimSpace(string(b)))
	if err != nil {
		return zero, fmt.Errorf("%s: %w", path, err)
	}
	return key, nil
}
