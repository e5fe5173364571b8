package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/corpus"
	"github.com/tapebox/tapebox/tape"
)

func TestCorpusBar(t *testing.T) {
	pr := corpus.Progress{Counts: corpus.Counts{Queued: 5, Running: 2, Done: 2, Failed: 1}, Finished: 3, Elapsed: time.Minute}
	got := corpusBar(pr, 10)
	want := "[###-------] 2/10 done, 1 failed, 2 running, 3.0/min, ETA 2m20s"
	if got != want {
		t.Fatalf("corpusBar:\n got %q\nwant %q", got, want)
	}
	if got := corpusBar(corpus.Progress{Counts: corpus.Counts{Queued: 4}}, 4); got != "[----] 0/4 done, 0 failed, 0 running, -, ETA -" {
		t.Fatalf("before the first tape: %q", got)
	}
	pool := corpus.Progress{Counts: corpus.Counts{Queued: 3, Running: 2, Done: 3}, Ready: 2, Finished: 3, Elapsed: time.Minute}
	if got, want := corpusBar(pool, 10), "[###-------] 3/10 done, 0 failed, 2 running, 2 ready, 3.0/min, ETA 2m20s"; got != want {
		t.Fatalf("with a pool:\n got %q\nwant %q", got, want)
	}
}

func TestReplayCorpusUsage(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--jobs", "2"}, "go with --corpus"},
		{[]string{"--corpus", "d"}, "needs --journal"},
		{[]string{"--corpus", "d", "--journal", "j", "--tape", "x.json"}, "neither --tape"},
		{[]string{"--corpus", "d", "--journal", "j"}, "needs --sandbox"},
		{[]string{"--corpus", "d", "--journal", "j", "--sandbox", "local", "--jobs", "0"}, "--jobs must be 1"},
	} {
		var stderr bytes.Buffer
		code := RunEnv(t.Context(), append([]string{"replay"}, tt.args...), &Env{Stdout: &bytes.Buffer{}, Stderr: &stderr})
		if code != ExitUsage || !strings.Contains(stderr.String(), tt.want) {
			t.Errorf("replay %v: exit %d, stderr %q; want %d and %q", tt.args, code, stderr.String(), ExitUsage, tt.want)
		}
	}
}

// TestReplayCorpusNamesDifferences: corpus mode names the tape whose replay differs with its
// first difference and the one that failed with its error, and exits 1 (as replay --check),
// with or without --check; --json lists them under "problems".
func TestReplayCorpusNamesDifferences(t *testing.T) {
	dir := t.TempDir()
	corp := filepath.Join(dir, "corpus")
	require.NoError(t, os.MkdirAll(corp, 0o755))
	data, err := os.ReadFile(filepath.Join("..", "testdata", "replay", "codex.json"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(corp, "same.json"), data, 0o644))
	rec, err := tape.Unmarshal(data)
	require.NoError(t, err)
	planted := false
	for _, th := range rec.Threads {
		for _, st := range th.Steps {
			for i := range st.ToolResults {
				if !planted && len(st.ToolResults[i].Content) > 0 && st.ToolResults[i].Content[0].Text != "" {
					st.ToolResults[i].Content[0].Text += "planted difference"
					planted = true
				}
			}
		}
	}
	require.True(t, planted)
	rec.Meta.TapeID = "changed"
	require.NoError(t, tape.Save(filepath.Join(corp, "changed.json"), rec))
	require.NoError(t, os.WriteFile(filepath.Join(corp, "bad.json"), []byte(`{"version": 1, "meta": {}}`), 0o644))

	code, stdout, stderr := runVerbForTest(t, "replay", "--corpus", corp, "--journal", filepath.Join(dir, "j.db"), "--sandbox", "local", "--speed", "0", "--jobs", "2")
	require.Equal(t, ExitFailure, code, "%s%s", stdout, stderr)
	assert.Contains(t, stdout, "1 identical, 1 differ")
	assert.Regexp(t, `(?m)^  differs changed\.json: thread \S+ step \d+ call \S+ \(\S+\): tool_result differs: .*planted difference`, stdout)
	assert.Regexp(t, `(?m)^  failed  bad\.json: .*/meta/harness`, stdout)
	assert.NotContains(t, stdout, "same.json")

	code, stdout, stderr = runVerbForTest(t, "replay", "--corpus", corp, "--journal", filepath.Join(dir, "j2.db"), "--sandbox", "local", "--speed", "0", "--json")
	require.Equal(t, ExitFailure, code, stderr)
	var sum struct {
		Problems []corpus.Problem `json:"problems"`
	}
	require.NoError(t, json.Unmarshal([]byte(stdout), &sum), stdout)
	require.Len(t, sum.Problems, 2)
	assert.Equal(t, "bad.json", sum.Problems[0].Key)
	assert.Equal(t, "changed.json", sum.Problems[1].Key)
	assert.Equal(t, corpus.VerdictDiffers, sum.Problems[1].Verdict)

	require.NoError(t, os.Remove(filepath.Join(corp, "bad.json")))
	require.NoError(t, os.Remove(filepath.Join(corp, "changed.json")))
	code, stdout, stderr = runVerbForTest(t, "replay", "--corpus", corp, "--journal", filepath.Join(dir, "j3.db"), "--sandbox", "local", "--speed", "0", "--json")
	require.Equal(t, ExitOK, code, "%s%s", stdout, stderr)
	assert.Contains(t, stdout, `"problems": []`, "an empty list, not null")
}
