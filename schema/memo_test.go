package schema

import (
	"bytes"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/tape"
)

// TestValidateReusedValues checks the memos (memo.go) where they matter: a tape whose
// requests repeat big raw bodies and messages, broken in its later steps, after the
// values the decoder takes over. Every mutation must get the verdict of the
// straightforward validation: a syntax error exactly when encoding/json finds one, and
// otherwise the reference's problems.
func TestValidateReusedValues(t *testing.T) {
	base := mustMarshal(agentTape(tape.ProviderAnthropic, 10, 600, false))
	require.NoError(t, Validate(base))

	check := func(t *testing.T, data []byte) {
		t.Helper()
		err := Validate(data)
		var se *SyntaxError
		if errors.As(err, &se) != !json.Valid(data) {
			t.Fatalf("Validate: %v, but json.Valid says %v", err, json.Valid(data))
		}
		if se != nil {
			return
		}
		want, ok := reference(t, data)
		require.True(t, ok)
		var got []Problem
		var ve *ValidationError
		if errors.As(err, &ve) {
			got = ve.Problems
		} else {
			require.NoError(t, err)
		}
		require.Equal(t, len(want), len(got), "got %v, want %v", got, want)
		for i := range got {
			require.Equal(t, want[i].Pointer, got[i].Pointer)
		}
	}

	// A number that the previous body had shorter: 32000 is a prefix of 320001.
	t.Run("longer number", func(t *testing.T) {
		i := bytes.LastIndex(base, []byte(`"max_tokens":32000`))
		require.Positive(t, i)
		data := append(append(bytes.Clone(base[:i]), `"max_tokens":320001`...), base[i+len(`"max_tokens":32000`):]...)
		require.NoError(t, Validate(data))
	})
	// Random damage in the last 40% of the tape, where most values are taken over.
	rng := rand.New(rand.NewPCG(1, 2))
	junk := []byte(`"{}[],:0a\ -e`)
	for n := range 300 {
		data := bytes.Clone(base)
		at := len(data)*6/10 + rng.IntN(len(data)*4/10)
		switch n % 3 {
		case 0:
			data[at] = junk[rng.IntN(len(junk))]
		case 1:
			data = append(data[:at], data[at+1:]...)
		case 2:
			data = append(data[:at], append([]byte{junk[rng.IntN(len(junk))]}, data[at:]...)...)
		}
		check(t, data)
	}
}
