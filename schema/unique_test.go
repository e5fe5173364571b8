package schema

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestDuplicateKeys: a key repeated in a tape's structure, in a raw body (which the decoder
// skips) or differing only in case is a problem at its pointer; the tape as it is passes.
func TestDuplicateKeys(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "every-field.json"))
	require.NoError(t, err)
	require.NoError(t, Validate(data))
	for name, c := range map[string]struct{ old, new, ptr string }{
		"meta":       {`"harness":`, `"harness":"x","harness":`, "/meta/harness"},
		"raw body":   {`"raw":{"model":"claude-sonnet-4-5"`, `"raw":{"model":"a","model":"claude-sonnet-4-5"`, "/threads/0/steps/0/request/raw/model"},
		"case":       {`"stop_reason":"tool_use"`, `"stop_reason":"tool_use","Stop_Reason":"end_turn"`, "/threads/0/steps/0/response/Stop_Reason"},
		"tool input": {`"input":{"command":"ls"}`, `"input":{"command":"ls","command":"rm -rf /"}`, "/command"},
	} {
		t.Run(name, func(t *testing.T) {
			doc := strings.Replace(string(data), c.old, c.new, 1)
			require.NotEqual(t, string(data), doc)
			err := Validate([]byte(doc))
			var ve *ValidationError
			require.True(t, errors.As(err, &ve), "%v", err)
			require.Len(t, ve.Problems, 1)
			require.True(t, strings.HasSuffix(ve.Problems[0].Pointer, c.ptr), "%s", ve.Problems[0].Pointer)
			require.Contains(t, ve.Problems[0].Message, "duplicate object key")
		})
	}
}
