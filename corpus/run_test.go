package corpus

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
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

// TestRunPoolDifferenceCounted: with a warm pool, a tape whose recorded result was altered
// replays as "differs", so the identical count can fail.
func TestRunPoolDifferenceCounted(t *testing.T) {
	dir := t.TempDir()
	corp := filepath.Join(dir, "corpus")
	reID(t, "../testdata/replay/codex.json", filepath.Join(corp, "same.json"), "same")
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
	sum, err := Run(t.Context(), Options{Corpus: corp, Journal: filepath.Join(dir, "j.db"), Sandbox: "local", Jobs: 2, Pool: 2})
	require.NoError(t, err)
	require.Equal(t, 2, sum.Done)
	require.Equal(t, 1, sum.Identical)
	require.Equal(t, 1, sum.Differs)
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
