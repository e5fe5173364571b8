package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/prices"
)

// tapebox cost over a directory: the real Claude Code tape (claude-opus-5-5) is priced at
// $4 / $20 per million tokens, the fake-model tapes are unknown and named, and so is the
// total; with a price table that has fake-model, everything is known and adds up. A file
// that is not a tape fails, naming it.
func TestCost(t *testing.T) {
	dir := t.TempDir()
	copyTo(t, filepath.Join("..", "viewer", "testdata", "claude-code.json"), dir)
	sub := filepath.Join(dir, "codex")
	require.NoError(t, os.Mkdir(sub, 0o755))
	copyTo(t, filepath.Join("..", "testdata", "replay", "codex.json"), sub)

	code, out, stderr := runVerbForTest(t, "cost", "--json", dir)
	require.Equal(t, ExitOK, code, stderr)
	var r costReport
	require.NoError(t, json.Unmarshal([]byte(out), &r))
	w := newListWalk()
	checkLists[costReport](t, w, out)
	assert.Empty(t, w.nulls)
	require.Len(t, r.Tapes, 2)
	assert.Equal(t, prices.Default().Date, r.PricesDate)
	cc := r.Tapes[0]
	assert.Equal(t, filepath.Join(dir, "claude-code.json"), cc.Path)
	require.Len(t, cc.Models, 1)
	assert.Equal(t, "claude-opus-5-5", cc.Models[0].Model)
	u := cc.Models[0].Usage
	want := (float64(u.InputTokens)*4 + float64(u.OutputTokens)*20 + float64(u.CacheReadInputTokens)*0.2 + float64(u.CacheCreationInputTokens)*5) / 1e6
	require.NotNil(t, cc.USD)
	assert.InDelta(t, want, *cc.USD, 1e-12)
	assert.Nil(t, r.Tapes[1].USD, "fake-model has no price")
	assert.Nil(t, r.Total.USD, "one unknown makes the total unknown")
	assert.Equal(t, []string{"fake-model"}, r.Unpriced)
	assert.Equal(t, 2, r.Total.Tapes)
	assert.Equal(t, cc.Models[0].Steps+r.Tapes[1].Models[0].Steps, r.Total.Steps)

	code, out, _ = runVerbForTest(t, "cost", dir)
	require.Equal(t, ExitOK, code)
	assert.Contains(t, out, "claude-opus-5-5")
	assert.Contains(t, out, "no price for fake-model (their cost is unknown, never 0")
	assert.Regexp(t, `(?m)^total +2 tapes +\d+ .* unknown$`, out)

	// with a price for fake-model
	table := filepath.Join(t.TempDir(), "prices.json")
	require.NoError(t, os.WriteFile(table, []byte(`{"date":"2026-01-02","models":{"fake-model":{"input":1,"output":2,"cache_read":0,"cache_write":0},"claude-opus-5-5":{"input":4,"output":20,"cache_read":0.2,"cache_write":5}}}`), 0o644))
	code, out, stderr = runVerbForTest(t, "cost", "--json", "--prices", table, dir)
	require.Equal(t, ExitOK, code, stderr)
	r = costReport{}
	require.NoError(t, json.Unmarshal([]byte(out), &r))
	require.NotNil(t, r.Total.USD)
	fu := r.Tapes[1].Models[0].Usage
	assert.InDelta(t, want+(float64(fu.InputTokens)*1+float64(fu.OutputTokens)*2)/1e6, *r.Total.USD, 1e-12)
	assert.Empty(t, r.Unpriced)
	require.Len(t, r.Models, 2)

	// a file that is not a tape
	bad := writeBytes(t, sub, "notes.json", []byte(`{"hello": 1}`))
	code, _, stderr = runVerbForTest(t, "cost", dir)
	assert.Equal(t, ExitFailure, code)
	assert.Contains(t, stderr, bad)
	code, _, stderr = runVerbForTest(t, "cost", t.TempDir())
	assert.Equal(t, ExitFailure, code)
	assert.True(t, strings.Contains(stderr, "no tape (*.json) in"), stderr)
}
