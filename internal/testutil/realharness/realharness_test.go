package realharness_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/internal/testutil/realharness"
	"github.com/tapebox/tapebox/tape"
	"github.com/tapebox/tapebox/testkit/fakeprovider"
)

func TestVersion(t *testing.T) {
	for _, h := range []string{realharness.Claude, realharness.Codex, realharness.Pi} {
		t.Run(h, func(t *testing.T) {
			realharness.Need(t, h)
			v, err := realharness.Version(t.Context(), h)
			require.NoError(t, err)
			assert.Regexp(t, `^\d+\.\d+\.\d+`, v)
		})
	}
	_, err := realharness.Version(t.Context(), "nope")
	assert.Error(t, err)
}

func TestRunNeedsDirAndURL(t *testing.T) {
	realharness.Need(t, realharness.Claude)
	_, err := realharness.RunClaude(t.Context(), realharness.Options{BaseURL: "http://127.0.0.1:1"})
	assert.ErrorContains(t, err, "Dir")
	_, err = realharness.RunClaude(t.Context(), realharness.Options{Dir: t.TempDir()})
	assert.ErrorContains(t, err, "BaseURL")
}

// Each harness runs one shell command the fake model asks for, against a base URL with a
// path prefix, and sends back the command's output; the command really ran in Dir.
func TestRunShellCommand(t *testing.T) {
	cases := []struct {
		harness string
		call    tape.ToolCall
		run     func(context.Context, realharness.Options) (realharness.Result, error)
		path    string // the request path the harness uses under the prefix
	}{
		{
			harness: realharness.Claude,
			call:    fakeprovider.Call("Bash", map[string]any{"command": "echo made > out.txt && echo printed", "description": "make a file"}),
			run:     realharness.RunClaude,
			path:    "/r/run-1/v1/messages",
		},
		{
			harness: realharness.Codex,
			call:    fakeprovider.Call("exec_command", map[string]any{"cmd": "echo made > out.txt && echo printed"}),
			run:     realharness.RunCodex,
			path:    "/r/run-1/v1/responses",
		},
	}
	for _, tc := range cases {
		t.Run(tc.harness, func(t *testing.T) {
			realharness.Need(t, tc.harness)
			srv := fakeprovider.New(fakeprovider.Script{Threads: []fakeprovider.Thread{{
				Name:   "main",
				Marker: "[shell-task]",
				Turns:  []fakeprovider.Turn{{Calls: []tape.ToolCall{tc.call}}, {Text: "All done."}},
			}}})
			require.NoError(t, srv.Start())
			t.Cleanup(func() { _ = srv.Close() })
			dir := t.TempDir()

			res, err := tc.run(t.Context(), realharness.Options{
				BaseURL: srv.URL() + "/r/run-1",
				Dir:     dir,
				Home:    t.TempDir(),
				Prompt:  "[shell-task] make the file",
			})
			requireMade(t, srv, res, err, dir)
			reqs := srv.ThreadRequests("main")
			require.Len(t, reqs, 2)
			assert.Equal(t, tc.path, reqs[0].Path)
			assert.Equal(t, 1, reqs[1].Step)
			assert.Contains(t, string(reqs[1].Body), "printed")
			assert.Contains(t, string(res.Stdout), "All done.")
		})
	}
}

// requireMade checks that a harness run (res, err) ended well, with nothing amiss at the
// fake provider, and that the scripted command wrote "made" to dir/out.txt; a run that did
// not is dumped.
func requireMade(t *testing.T, srv *fakeprovider.Server, res realharness.Result, err error, dir string) {
	t.Helper()
	require.NoError(t, err)
	if res.ExitCode != 0 || srv.Err() != nil || testing.Verbose() {
		dump(t, srv, res)
	}
	require.Equal(t, 0, res.ExitCode, "exit code")
	require.NoError(t, srv.Err())
	got, err := os.ReadFile(filepath.Join(dir, "out.txt"))
	require.NoError(t, err)
	assert.Equal(t, "made\n", string(got), "the harness ran the scripted command")
}

// dump logs what the harness sent and printed, for a failing or verbose run.
func dump(t *testing.T, srv *fakeprovider.Server, res realharness.Result) {
	t.Helper()
	for _, r := range srv.Requests() {
		var v any
		_ = json.Unmarshal(r.Body, &v)
		b, _ := json.MarshalIndent(v, "", " ")
		t.Logf("%s %s?%s thread=%q step=%d\n%s", r.Method, r.Path, r.Query, r.Thread, r.Step, realharness.Excerpt(string(b), 8000))
	}
	t.Logf("exit %d in %s\nstdout:\n%s\nstderr:\n%s", res.ExitCode, res.Duration, realharness.Excerpt(string(res.Stdout), 8000), realharness.Excerpt(string(res.Stderr), 4000))
}
