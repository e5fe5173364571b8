package controller

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestCompareNeedsTheReplaysEnd: a replay tape that does not say how it ended (killed after
// its last step was written, before the writer finished it) did not reach the end, even with
// every step present and every result the same.
func TestCompareNeedsTheReplaysEnd(t *testing.T) {
	rec := pairTape("claude-code", "hello")
	rep := replayOf(t, rec, "hello")
	require.True(t, Compare(rec, rep).Identical, "the planted replay is otherwise identical")
	rep.Meta.Ended = nil
	r := Compare(rec, rep)
	require.False(t, r.ReachedEnd)
	require.False(t, r.Identical)
	require.Equal(t, "running or cut short", r.Ended)
}
