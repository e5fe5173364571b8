package corpus

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/dataset"
)

func writeFile(path, s string) error { return os.WriteFile(path, []byte(s), 0o644) }

// reID copies the tape at src to dst with a new meta.tape_id.
func reID(t *testing.T, src, dst, id string) {
	t.Helper()
	data, err := os.ReadFile(src)
	require.NoError(t, err)
	var v map[string]any
	require.NoError(t, json.Unmarshal(data, &v))
	v["meta"].(map[string]any)["tape_id"] = id
	out, err := json.Marshal(v)
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll(filepath.Dir(dst), 0o755))
	require.NoError(t, os.WriteFile(dst, out, 0o644))
}

// TestRunLocal replays a small corpus on the local sandbox (a fresh directory per tape):
// every good tape ends done and identical, the invalid one failed with its file and
// pointer named, the results table says the same, and a second run redoes nothing.
func TestRunLocal(t *testing.T) {
	dir := t.TempDir()
	corp := filepath.Join(dir, "corpus")
	for _, id := range []string{"a", "b", "c"} {
		reID(t, "../testdata/replay/codex.json", filepath.Join(corp, "sub", id+".json"), "codex-"+id)
	}
	require.NoError(t, writeFile(filepath.Join(corp, "bad.json"), `{"version": 1, "meta": {}}`))
	journal := filepath.Join(dir, "run.db")
	opts := Options{Corpus: corp, Journal: journal, OutputDir: filepath.Join(dir, "out"), Sandbox: "local", Jobs: 2}
	sum, err := Run(t.Context(), opts)
	require.NoError(t, err)
	require.Equal(t, 4, sum.Total)
	require.Equal(t, 3, sum.Done)
	require.Equal(t, 3, sum.Identical)
	require.Equal(t, 1, sum.Failed)
	require.Equal(t, 4, sum.Finished)
	require.Len(t, sum.Problems, 1)
	require.Equal(t, Problem{Key: "bad.json", State: StateFailed, Detail: sum.Problems[0].Detail}, sum.Problems[0])
	require.Contains(t, sum.Problems[0].Detail, "/meta/harness: required field is missing")

	rows, err := dataset.ReadResults(ResultsPath(journal))
	require.NoError(t, err)
	require.Len(t, rows, 4)
	for _, r := range rows {
		if r.Key == "bad.json" {
			require.Equal(t, StateFailed, r.State)
			require.Contains(t, r.Error, filepath.Join(corp, "bad.json"))
			require.Contains(t, r.Error, "/meta/harness: required field is missing")
			continue
		}
		require.Equal(t, StateDone, r.State, r.Error)
		require.Equal(t, VerdictIdentical, r.Verdict)
		require.Empty(t, r.Error)
		require.True(t, strings.HasPrefix(r.TapeID, "codex-"))
		require.Positive(t, r.Steps)
		require.Positive(t, r.WallMS)
		require.FileExists(t, r.Output)
	}
	require.FileExists(t, filepath.Join(dir, "out", "sub", "a.replay.json"))

	opts.Pool = 2
	sum, err = Run(t.Context(), opts)
	require.NoError(t, err)
	require.Equal(t, 0, sum.Finished, "a finished tape is never redone")
	require.Equal(t, 3, sum.Identical)
}

// plantDifference writes the codex tape to corp/changed.json with a tool result altered.
func plantDifference(t *testing.T, corp string) {
	t.Helper()
	data, err := os.ReadFile("../testdata/replay/codex.json")
	require.NoError(t, err)
	var v map[string]any
	require.NoError(t, json.Unmarshal(data, &v))
	planted := false
	for _, th := range v["threads"].([]any) {
		for _, st := range th.(map[string]any)["steps"].([]any) {
			for _, tr := range asList(st.(map[string]any)["tool_results"]) {
				for _, b := range asList(tr.(map[string]any)["content"]) {
					m := b.(map[string]any)
					if s, ok := m["text"].(string); ok && strings.Contains(s, "Success.") && !planted {
						m["text"] = s + "planted difference\n"
						planted = true
					}
				}
			}
		}
	}
	require.True(t, planted, "no tool result output to alter in the test tape")
	out, _ := json.Marshal(v)
	require.NoError(t, os.WriteFile(filepath.Join(corp, "changed.json"), out, 0o644))
}

// TestRunPoolDifferenceCounted: with a warm pool, a tape whose recorded result was altered
// replays as "differs", so the identical count can fail, and the summary names it with its
// first difference (and not the identical one).
func TestRunPoolDifferenceCounted(t *testing.T) {
	dir := t.TempDir()
	corp := filepath.Join(dir, "corpus")
	reID(t, "../testdata/replay/codex.json", filepath.Join(corp, "same.json"), "same")
	plantDifference(t, corp)
	sum, err := Run(t.Context(), Options{Corpus: corp, Journal: filepath.Join(dir, "j.db"), Sandbox: "local", Jobs: 2, Pool: 2})
	require.NoError(t, err)
	require.Equal(t, 2, sum.Done)
	require.Equal(t, 1, sum.Identical)
	require.Equal(t, 1, sum.Differs)
	require.Len(t, sum.Problems, 1)
	p := sum.Problems[0]
	require.Equal(t, "changed.json", p.Key)
	require.Equal(t, VerdictDiffers, p.Verdict)
	require.Contains(t, p.Detail, "tool_result differs")
	require.Contains(t, p.Detail, "planted difference")
}

// TestRunProgressWithinJobs: the progress never shows more tapes running than Jobs, nor more
// made ready ahead than Pool, whatever the pool; every tape is counted once until it ends.
func TestRunProgressWithinJobs(t *testing.T) {
	for _, tt := range []struct{ jobs, pool int }{{1, 0}, {2, 0}, {1, 2}, {2, 1}, {2, 3}} {
		t.Run(fmt.Sprintf("jobs=%d,pool=%d", tt.jobs, tt.pool), func(t *testing.T) {
			dir := t.TempDir()
			corp := filepath.Join(dir, "corpus")
			const n = 5
			for i := range n {
				reID(t, "../testdata/replay/codex.json", filepath.Join(corp, fmt.Sprintf("t%d.json", i)), fmt.Sprintf("t%d", i))
			}
			var mu sync.Mutex
			var maxRunning, maxReady int
			var bad []string
			sum, err := Run(t.Context(), Options{Corpus: corp, Journal: filepath.Join(dir, "j.db"), Sandbox: "local", Jobs: tt.jobs, Pool: tt.pool,
				Progress: func(p Progress) {
					mu.Lock()
					defer mu.Unlock()
					maxRunning, maxReady = max(maxRunning, p.Running), max(maxReady, p.Ready)
					if p.Total() != n || p.Running < 0 || p.Ready < 0 || p.Queued < 0 {
						bad = append(bad, fmt.Sprintf("%+v", p))
					}
				}})
			require.NoError(t, err)
			require.Equal(t, n, sum.Identical)
			require.Empty(t, sum.Problems)
			require.NotNil(t, sum.Problems, "an empty list, never null in --json")
			mu.Lock()
			defer mu.Unlock()
			require.Empty(t, bad, "every tape counted once")
			require.LessOrEqual(t, maxRunning, tt.jobs, "running never above --jobs")
			require.Positive(t, maxRunning)
			require.LessOrEqual(t, maxReady, tt.pool, "ready never above --pool")
		})
	}
}

func asList(v any) []any {
	l, _ := v.([]any)
	return l
}

func TestRunRefusesReusedSandbox(t *testing.T) {
	_, err := Run(t.Context(), Options{Corpus: t.TempDir(), Journal: filepath.Join(t.TempDir(), "j.db"), Sandbox: "docker:box"})
	require.ErrorContains(t, err, "fresh sandbox")
	_, err = Run(t.Context(), Options{Corpus: t.TempDir(), Journal: filepath.Join(t.TempDir(), "j.db"), Sandbox: "local"})
	require.ErrorContains(t, err, "no tapes")
}
