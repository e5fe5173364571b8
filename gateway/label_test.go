package gateway_test

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/gateway"
	"github.com/tapebox/tapebox/tape"
)

// TestSetLabel: a label set before Finish is in the tape file; after Finish it is refused
// and the file keeps what it had. View sees the tape recorded so far.
func TestSetLabel(t *testing.T) {
	out := filepath.Join(tapeDir(t), "run.json")
	g, err := gateway.New(gateway.Config{Output: out, Upstream: "http://127.0.0.1:9", Harness: "codex", Logf: t.Logf})
	require.NoError(t, err)
	require.NoError(t, g.SetLabel("tapebox.codex_model_provider", "mine"))
	var harness string
	g.View(func(tp *tape.Tape) { harness = tp.Meta.Harness })
	assert.Equal(t, "codex", harness)
	require.NoError(t, g.Finish(tape.EndComplete, ""))
	assert.Error(t, g.SetLabel("late", "x"), "the recording is finished")
	tp, err := tape.LoadFile(out)
	require.NoError(t, err)
	assert.Equal(t, "mine", tp.Meta.Labels["tapebox.codex_model_provider"])
	assert.NotContains(t, tp.Meta.Labels, "late")
}
