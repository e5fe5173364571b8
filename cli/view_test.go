package cli

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/tape"
)

func copyTo(t *testing.T, src, dir string) string {
	t.Helper()
	b, err := os.ReadFile(src)
	require.NoError(t, err)
	p := filepath.Join(dir, filepath.Base(src))
	require.NoError(t, os.WriteFile(p, b, 0o644))
	return p
}

// Without -o the page goes beside the tape as <stem>.html and its path is printed; it is one
// file that names nothing outside itself.
func TestViewWritesBesideTheTape(t *testing.T) {
	dir := t.TempDir()
	rec := copyTo(t, filepath.Join("..", "viewer", "testdata", "claude-code.json"), dir)
	code, stdout, stderr := runVerbForTest(t, "view", rec)
	require.Equal(t, ExitOK, code, stderr)
	want := filepath.Join(dir, "claude-code.html")
	assert.Equal(t, want+"\n", stdout)
	page, err := os.ReadFile(want)
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(string(page), "<!doctype html>"))
	assert.Contains(t, string(page), "Content-Security-Policy")
	assert.NotRegexp(t, regexp.MustCompile(`(?i)(src|href)\s*=\s*["']?(https?:)?//`), string(page), "nothing is loaded from the network")
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Len(t, entries, 2, "the tape and the page, no temporary file left")

	// with a replay and -o
	rep := copyTo(t, filepath.Join("..", "viewer", "testdata", "claude-code.replay.json"), dir)
	out := filepath.Join(dir, "pair.html")
	code, stdout, stderr = runVerbForTest(t, "view", rec, rep, "-o", out)
	require.Equal(t, ExitOK, code, stderr)
	assert.Equal(t, out+"\n", stdout)
	fi, err := os.Stat(out)
	require.NoError(t, err)
	assert.Greater(t, fi.Size(), int64(len(page)), "the replay's data is in the page too")
}

// An invalid tape is reported line for line as validate reports it, and no page is written.
func TestViewInvalidTape(t *testing.T) {
	dir := t.TempDir()
	rec := copyTo(t, filepath.Join("..", "viewer", "testdata", "claude-code.json"), dir)
	tp, err := tape.LoadFile(rec)
	require.NoError(t, err)
	bad := filepath.Join(dir, "bad.json")
	b, err := tape.Marshal(tp)
	require.NoError(t, err)
	b = []byte(strings.Replace(string(b), `"stop_reason":"tool_use"`, `"stop_reason":7`, 1))
	require.NoError(t, os.WriteFile(bad, b, 0o644))

	_, vout, _ := runVerbForTest(t, "validate", bad)
	problems := strings.TrimSpace(vout)
	require.Contains(t, problems, "bad.json: /threads/0/steps/0/response/stop_reason: ")

	for _, args := range [][]string{{"view", bad}, {"view", rec, bad}} {
		code, stdout, stderr := runVerbForTest(t, args...)
		assert.Equal(t, ExitFailure, code)
		assert.Empty(t, stdout)
		assert.Contains(t, stderr, problems+"\n", "the same problems as validate prints")
		assert.Contains(t, stderr, `tapebox view: `+bad+` is not a valid tape (1 problem); run "tapebox validate `+bad+`"`)
	}
	for _, p := range []string{"bad.html", "claude-code.html"} {
		_, err := os.Stat(filepath.Join(dir, p))
		assert.ErrorIs(t, err, os.ErrNotExist, "no page for an invalid tape")
	}

	code, _, stderr := runVerbForTest(t, "view", filepath.Join(dir, "missing.json"))
	assert.Equal(t, ExitFailure, code)
	assert.Contains(t, stderr, "missing.json: no such file or directory")
	code, _, stderr = runVerbForTest(t, "view", rec, "--telemetry", filepath.Join(dir, "none.csv"))
	assert.Equal(t, ExitFailure, code)
	assert.Contains(t, stderr, "none.csv")
	code, _, _ = runVerbForTest(t, "view")
	assert.Equal(t, ExitUsage, code)
}

// A telemetry CSV beside the tape is found and drawn; a bad one is an error naming it.
func TestViewTelemetry(t *testing.T) {
	dir := t.TempDir()
	rec := copyTo(t, filepath.Join("..", "viewer", "testdata", "claude-code.json"), dir)
	csv := "t_ms,time,cpu_percent,cpu_ms,memory_bytes,memory_limit_bytes,pids,source\n" +
		"0,2026-12-01T13:02:42.44Z,,10,1048576,2147483648,3,cgroup\n" +
		"250,2026-12-01T13:02:42.69Z,50.5,135,2097152,2147483648,4,cgroup\n"
	require.NoError(t, os.WriteFile(filepath.Join(dir, "claude-code.telemetry.csv"), []byte(csv), 0o644))
	code, _, stderr := runVerbForTest(t, "view", rec)
	require.Equal(t, ExitOK, code, stderr)

	require.NoError(t, os.WriteFile(filepath.Join(dir, "claude-code.telemetry.csv"), []byte("a,b\n1,2\n"), 0o644))
	code, _, stderr = runVerbForTest(t, "view", rec)
	assert.Equal(t, ExitFailure, code)
	assert.Contains(t, stderr, "claude-code.telemetry.csv: read telemetry: header")
}

// --serve serves the same page on loopback until the context ends.
func TestViewServe(t *testing.T) {
	dir := t.TempDir()
	rec := copyTo(t, filepath.Join("..", "viewer", "testdata", "claude-code.json"), dir)
	ctx, cancel := context.WithCancel(t.Context())
	stdout, stderr := &syncBuffer{}, &syncBuffer{}
	done := make(chan int, 1)
	go func() {
		done <- RunEnv(ctx, []string{"view", rec, "--serve", "127.0.0.1:0"}, &Env{Stdout: stdout, Stderr: stderr, Getenv: func(string) string { return "" }})
	}()
	urlRE := regexp.MustCompile(`at (http://127\.0\.0\.1:\d+/)`)
	var url string
	require.Eventually(t, func() bool {
		m := urlRE.FindStringSubmatch(stdout.String())
		if m != nil {
			url = m[1]
		}
		return m != nil
	}, 20*time.Second, 20*time.Millisecond, "serve prints its URL; stderr: %s", stderr)
	resp, err := http.Get(url)
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, "text/html; charset=utf-8", resp.Header.Get("Content-Type"))
	assert.True(t, strings.HasPrefix(string(body), "<!doctype html>"))
	assert.Contains(t, string(body), `id="tb-blobs"`)
	resp, err = http.Get(url + "other")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)
	cancel()
	select {
	case code := <-done:
		assert.Equal(t, ExitOK, code, stderr.String())
	case <-time.After(10 * time.Second):
		t.Fatal("serve did not stop when its context ended")
	}
	_, err = os.Stat(filepath.Join(dir, "claude-code.html"))
	assert.ErrorIs(t, err, os.ErrNotExist, "--serve without -o writes no file")
}
