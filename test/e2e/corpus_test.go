package e2e

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/events"
	"github.com/docker/docker/api/types/filters"
	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/corpus"
	"github.com/tapebox/tapebox/dataset"
	"github.com/tapebox/tapebox/internal/testutil/dockertest"
)

// corpusTapes writes n copies of the e2e tapes (testdata/replay, which replay identical in a
// fresh sandbox) into dir, each with its own meta.tape_id, and returns their keys. The wire
// goldens of testdata/*.json are not among them: their commands list a /work that a fresh
// sandbox does not have, so they differ, and a corpus run that differs exits 1.
func corpusTapes(t *testing.T, dir string, n int) []string {
	t.Helper()
	srcs, err := filepath.Glob(filepath.Join(checkoutRoot(t), "testdata", "replay", "*.json"))
	require.NoError(t, err)
	require.NotEmpty(t, srcs)
	var keys []string
	for i := 0; len(keys) < n; i++ {
		src := srcs[i%len(srcs)]
		data, err := os.ReadFile(src)
		require.NoError(t, err)
		var v map[string]any
		require.NoError(t, json.Unmarshal(data, &v))
		meta := v["meta"].(map[string]any)
		meta["tape_id"] = fmt.Sprintf("%s-copy%02d", meta["tape_id"], i)
		key := fmt.Sprintf("%02d-%s", i, filepath.Base(src))
		out, err := json.Marshal(v)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, key), out, 0o644))
		keys = append(keys, key)
	}
	return keys
}

// journalStates reads the journal as another process would (read-only, beside its writer).
func journalStates(t *testing.T, path string) map[string][2]any {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro&_pragma=busy_timeout(5000)")
	require.NoError(t, err)
	defer db.Close()
	rows, err := db.Query(`SELECT key, state, attempts FROM tapes`)
	if err != nil {
		return nil // not created yet
	}
	defer rows.Close()
	got := map[string][2]any{}
	for rows.Next() {
		var key, state string
		var attempts int
		require.NoError(t, rows.Scan(&key, &state, &attempts))
		got[key] = [2]any{state, attempts}
	}
	return got
}

// TestCorpusResumeAfterSIGKILL replays a corpus of 40 tapes in Docker with --jobs 2, kills
// the run with SIGKILL midway and runs it again: all 40 end done, no tape that was done
// before the kill ran again (the journal's attempts and the containers the engine created
// for each tape say so), a second process on the journal is refused while the first runs,
// and no container of the run is left.
func TestCorpusResumeAfterSIGKILL(t *testing.T) {
	cli, _ := dockertest.Image(t, dockertest.SandboxImage)
	r := &rig{dir: t.TempDir()}
	bin := r.tapebox(t)
	dir := t.TempDir()
	corp := filepath.Join(dir, "corpus")
	require.NoError(t, os.MkdirAll(corp, 0o755))
	keys := corpusTapes(t, corp, 40)
	journal := filepath.Join(dir, "run.db")
	args := []string{"replay", "--corpus", corp, "--sandbox", "docker-image:" + dockertest.SandboxImage,
		"--journal", journal, "--output-dir", filepath.Join(dir, "out"), "--jobs", "2", "--speed", "0", "--json"}
	// The engine's create events for the run's containers, streamed from now on.
	evCtx, evCancel := context.WithCancel(t.Context())
	defer evCancel()
	msgs, errs := cli.Events(evCtx, events.ListOptions{Filters: filters.NewArgs(filters.Arg("type", "container"),
		filters.Arg("event", "create"), filters.Arg("label", corpus.LabelTape))})
	createdCh := make(chan map[string]int, 1)
	go func() {
		created := map[string]int{}
		for {
			select {
			case m := <-msgs:
				created[m.Actor.Attributes[corpus.LabelTape]]++
			case <-errs:
				createdCh <- created
				return
			}
		}
	}()
	time.Sleep(200 * time.Millisecond) // the subscription is in place before the first create

	first := startProc(t, dir, os.Environ(), bin, args...)
	var before map[string][2]any
	deadline := time.Now().Add(3 * time.Minute)
	for {
		before = journalStates(t, journal)
		done := 0
		for _, s := range before {
			if s[0] == corpus.StateDone {
				done++
			}
		}
		if done >= 10 {
			break
		}
		require.False(t, time.Now().After(deadline), "10 tapes not done in 3 minutes:\n%s", first.stderr())
		time.Sleep(50 * time.Millisecond)
	}
	second := startProc(t, dir, os.Environ(), bin, args...)
	require.Equal(t, 1, second.wait(t, time.Minute), "a second process on the journal is refused")
	require.Contains(t, second.stderr(), "in use by another process")
	first.kill() // SIGKILL to its process group
	<-first.waitResult
	// What was done at the moment of the kill (read after it: nothing can change since).
	before = journalStates(t, journal)
	var doneBefore []string
	for k, s := range before {
		if s[0] == corpus.StateDone {
			doneBefore = append(doneBefore, k)
		}
	}
	require.Less(t, len(doneBefore), 40, "the kill came after the end: the test proves nothing")
	t.Logf("killed with %d of 40 done", len(doneBefore))

	rerun := startProc(t, dir, os.Environ(), bin, args...)
	code := rerun.wait(t, 5*time.Minute)
	require.Equal(t, 0, code, "stderr:\n%s", rerun.stderr())
	var sum corpus.Summary
	require.NoError(t, json.Unmarshal([]byte(rerun.stdout()), &sum), rerun.stdout())
	require.Equal(t, 40, sum.Total)
	require.Equal(t, 40, sum.Done)
	require.Equal(t, 40-len(doneBefore), sum.Finished, "the rerun ran exactly the tapes not done")
	time.Sleep(500 * time.Millisecond) // the last events reach the stream

	after := journalStates(t, journal)
	require.Len(t, after, 40)
	for _, k := range keys {
		require.Equal(t, corpus.StateDone, after[k][0], k)
	}
	for _, k := range doneBefore {
		require.Equal(t, 1, after[k][1], "%s was done before the kill: started once", k)
	}

	// The engine's own record: containers created per tape, streamed from before the first
	// run (the engine keeps only its last 256 events for a later query).
	evCancel()
	created := <-createdCh
	for _, k := range doneBefore {
		require.Equal(t, 1, created[k], "containers created for %s, done before the kill", k)
	}
	for _, k := range keys {
		require.GreaterOrEqual(t, created[k], 1, "no container was created for %s", k)
	}

	rows, err := dataset.ReadResults(corpus.ResultsPath(journal))
	require.NoError(t, err)
	require.Len(t, rows, 40)
	left, err := cli.ContainerList(t.Context(), container.ListOptions{All: true, Filters: filters.NewArgs(filters.Arg("label", corpus.LabelTape))})
	require.NoError(t, err)
	require.Empty(t, left, "containers of the corpus run left behind")
}
