package replay_test

import (
	"errors"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/internal/testutil/codexcapture"
	"github.com/tapebox/tapebox/replay"
	"github.com/tapebox/tapebox/tape"
	"github.com/tapebox/tapebox/tape/unsupported"
)

// TestRunRefusesCodexMultiAgentV2: Run (every caller's replay: the command line, a corpus,
// testkit) refuses a tape with a Codex multi_agent_v2 request before any sandbox opens, and
// plays the same tape without it.
func TestRunRefusesCodexMultiAgentV2(t *testing.T) {
	src := filepath.Join("..", "testdata", "replay", "codex.json")
	rec, err := tape.LoadFile(src)
	require.NoError(t, err)
	_, root, err := codexcapture.Load("v2-1-root-request-initial.txt", "")
	require.NoError(t, err)
	orig := rec.Main().Steps[0].Request.Raw
	rec.Main().Steps[0].Request.Raw = root

	dir := filepath.Join(t.TempDir(), "work")
	_, err = replay.Run(t.Context(), rec, "local:"+dir, replay.Options{TapePath: src})
	var ue *unsupported.Error
	require.True(t, errors.As(err, &ue), "%v", err)
	assert.Equal(t, "main", ue.Thread)
	assert.Equal(t, 0, ue.Step)
	assert.Equal(t, "/tools/5", ue.Finding.Pointer)
	assert.NoDirExists(t, dir, "no sandbox opened")

	rec.Main().Steps[0].Request.Raw = orig
	res, err := replay.Run(t.Context(), rec, "local:"+dir, replay.Options{TapePath: src})
	require.NoError(t, err)
	assert.NotNil(t, res)
}
