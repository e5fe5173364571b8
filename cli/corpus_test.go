package cli

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/tapebox/tapebox/corpus"
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
