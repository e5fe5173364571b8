package seal

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/tapebox/tapebox/tape"
)

// ErrTampered is wrapped by Check's error: the tape carries digests and they do not match,
// so it was changed after they were written (or they were forged without a signature).
var ErrTampered = errors.New("tape changed after its digests were written")

// Check is the one check of a tape's digests that every verb acting on a tape runs first
// (replay, fork, dataset export and import; each has --allow-tampered to act anyway). It
// returns nil for a tape that carries no digests or whose digests verify, and otherwise an
// error naming the first part that does not match by JSON pointer (a step:
// /threads/0/steps/3), wrapping ErrTampered and tape.ErrNotVerified. data is the whole
// tape and t, when the caller has it, the tape a strict loader decoded from data: then a
// tape that claims no digests (no root, no step digest) costs nothing more. A tape that
// is not one at all is left to the loader, which words the error.
func Check(t *tape.Tape, data []byte) error {
	if t != nil && !claimsDigests(t) {
		return nil
	}
	if t == nil && !mayHaveDigests(data) {
		return nil
	}
	v, err := tape.Verify(bytes.NewReader(data), tape.VerifyOptions{Hashing: Hashing(nil)})
	if err != nil || v.State != tape.DigestsMismatch {
		return nil
	}
	where := v.Pointer
	if where == "" {
		where = "the top"
	}
	return fmt.Errorf("%w: %w at %s: %s", ErrTampered, tape.ErrNotVerified, where, v.Problem)
}

// claimsDigests says whether t carries a root digest or any step digest.
func claimsDigests(t *tape.Tape) bool {
	if t.Digest != nil {
		return true
	}
	for _, th := range t.Threads {
		for _, st := range th.Steps {
			if st.Digest != "" {
				return true
			}
		}
	}
	return false
}

// mayHaveDigests is false when data cannot hold a digest member: the word is not there,
// nor a \u escape that could spell it.
func mayHaveDigests(data []byte) bool {
	return bytes.Contains(data, []byte("digest")) || bytes.Contains(data, []byte(`\u`))
}
