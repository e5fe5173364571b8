package corpus

import (
	"errors"
	"iter"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/dataset"
)

func keys(ks ...string) iter.Seq2[[2]string, error] {
	return func(yield func([2]string, error) bool) {
		for _, k := range ks {
			if !yield([2]string{k, "/c/" + k}, nil) {
				return
			}
		}
	}
}

func TestJournalQueueAndResume(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "j.db")
	j, err := OpenJournal(ctx, path, "/c")
	require.NoError(t, err)
	n, err := j.Enqueue(ctx, keys("a.json", "b.json", "c.json"))
	require.NoError(t, err)
	require.Equal(t, 3, n)
	n, err = j.Enqueue(ctx, keys("a.json", "d.json"))
	require.NoError(t, err)
	require.Equal(t, 1, n, "a known key is not queued again")

	a, ok, err := j.Claim(ctx)
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, Entry{Key: "a.json", Path: "/c/a.json", Attempt: 1}, a)
	require.NoError(t, j.Finish(ctx, dataset.ResultRow{Key: "a.json", State: StateDone, Verdict: VerdictIdentical, Steps: 3}))
	b, _, err := j.Claim(ctx)
	require.NoError(t, err)
	require.Equal(t, "b.json", b.Key)
	require.NoError(t, j.Close()) // b is left running, as by a killed process

	j, err = OpenJournal(ctx, path, "/c")
	require.NoError(t, err)
	defer j.Close()
	c, err := j.Counts(ctx)
	require.NoError(t, err)
	require.Equal(t, Counts{Queued: 3, Done: 1, Identical: 1}, c)
	var order []string
	for {
		e, ok, err := j.Claim(ctx)
		require.NoError(t, err)
		if !ok {
			break
		}
		order = append(order, e.Key)
		if e.Key == "b.json" {
			require.Equal(t, 2, e.Attempt, "an interrupted tape is started again")
		}
		require.NoError(t, j.Finish(ctx, dataset.ResultRow{Key: e.Key, State: StateFailed, Error: "boom"}))
	}
	require.Equal(t, []string{"b.json", "c.json", "d.json"}, order, "the done tape is not handed out again")
	var rows []dataset.ResultRow
	for r, err := range j.Results(ctx) {
		require.NoError(t, err)
		rows = append(rows, r)
	}
	require.Len(t, rows, 4)
	require.Equal(t, dataset.ResultRow{Key: "a.json", State: StateDone, Verdict: VerdictIdentical, Steps: 3, Attempts: 1}, rows[0])
	require.Equal(t, int64(2), rows[1].Attempts)
}

func TestJournalRefusesSecondProcessAndOtherCorpus(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "j.db")
	j, err := OpenJournal(ctx, path, "/c")
	require.NoError(t, err)
	// flock locks belong to the open file, so a second open in this process stands for a
	// second process.
	_, err = OpenJournal(ctx, path, "/c")
	require.True(t, errors.Is(err, ErrLocked), "got %v", err)
	require.ErrorContains(t, err, path)
	require.NoError(t, j.Close())

	_, err = OpenJournal(ctx, path, "/other")
	require.True(t, errors.Is(err, ErrOtherCorpus), "got %v", err)
	require.ErrorContains(t, err, "/c")

	j, err = OpenJournal(ctx, path, "/c")
	require.NoError(t, err, "the lock is released on close")
	require.NoError(t, j.Close())
}

func TestJournalRejectsNonJournal(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j.db")
	require.NoError(t, writeFile(path, "this is not sqlite, it is a text file of some length............"))
	_, err := OpenJournal(t.Context(), path, "/c")
	require.Error(t, err)
	require.ErrorContains(t, err, path)
}
