package e2e

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/gateway"
	"github.com/tapebox/tapebox/schema"
	"github.com/tapebox/tapebox/tape"
)

// TestRecordingValidBeforeFirstCall: a gateway's tape is a valid tape from the start, before
// any model call, and after it is finished with none.
func TestRecordingValidBeforeFirstCall(t *testing.T) {
	out := filepath.Join(t.TempDir(), "run.json")
	g, err := gateway.New(gateway.Config{Output: out})
	require.NoError(t, err)
	data, err := os.ReadFile(out)
	require.NoError(t, err)
	require.NoError(t, schema.Validate(data))
	require.NoError(t, g.Finish(tape.EndCut, "no call"))
	data, err = os.ReadFile(out)
	require.NoError(t, err)
	require.NoError(t, schema.Validate(data))
}
