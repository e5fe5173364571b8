package dataset

import (
	"errors"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestWriteResultsRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "run.results.parquet")
	rows := []ResultRow{
		{Key: "a.json", TapeID: "a", State: "done", Verdict: "identical", Steps: 7, Attempts: 1, WallMS: 612.5, ToolMS: 500, ReadyMS: 700, Output: "out/a.replay.json"},
		{Key: "b.json", State: "failed", Attempts: 2, Error: "b.json is not a valid tape"},
	}
	seq := func(yield func(ResultRow, error) bool) {
		for _, r := range rows {
			if !yield(r, nil) {
				return
			}
		}
	}
	require.NoError(t, WriteResults(path, seq))
	got, err := ReadResults(path)
	require.NoError(t, err)
	require.Equal(t, rows, got)

	boom := errors.New("journal unreadable")
	err = WriteResults(path, func(yield func(ResultRow, error) bool) { yield(ResultRow{}, boom) })
	require.ErrorIs(t, err, boom)
	got, err = ReadResults(path)
	require.NoError(t, err)
	require.Len(t, got, 2, "a failed write leaves the previous file")
	matches, _ := filepath.Glob(filepath.Join(filepath.Dir(path), ".*tmp*"))
	require.Empty(t, matches, "no temporary file left")
}
