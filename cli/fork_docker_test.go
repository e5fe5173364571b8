package cli

import (
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/gateway"
	"github.com/tapebox/tapebox/internal/testutil/dockertest"
	"github.com/tapebox/tapebox/tape"
	"github.com/tapebox/tapebox/testkit/fakeprovider"
	"github.com/tapebox/tapebox/testkit/miniagent"
)

// TestForkModelsInContainers: tapebox fork --sandbox docker-image:IMG --models a,b --jobs 2
// --verify: two forks at once, each in its own fresh container (the mini agent built into
// the image), a verify that passes for one fake model and fails for the other, as the JSON
// table says.
func TestForkModelsInContainers(t *testing.T) {
	image := dockertest.BuildMini(t)
	const marker = "[cli-fork]"
	bash := func(cmd string) tape.ToolCall { return fakeprovider.Call("Bash", map[string]any{"command": cmd}) }
	turns := func(third string) []fakeprovider.Turn {
		return []fakeprovider.Turn{{Calls: []tape.ToolCall{bash("echo 1 > n.txt")}}, {Calls: []tape.ToolCall{bash("echo 2 >> n.txt")}},
			{Calls: []tape.ToolCall{bash("echo " + third + " >> n.txt")}}, {Text: "done"}}
	}
	recP := fakeprovider.New(fakeprovider.Script{Threads: []fakeprovider.Thread{{Name: "main", Turns: turns("3")}}})
	require.NoError(t, recP.Start())
	defer recP.Close()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "README"), []byte("count to 3\n"), 0o644))
	recPath := filepath.Join(t.TempDir(), "run.json")
	g, err := gateway.New(gateway.Config{Output: recPath, Upstream: recP.URL(), Workspace: dir, Cwd: "/work/count"})
	require.NoError(t, err)
	hs := httptest.NewServer(g)
	_, err = miniagent.Run(t.Context(), miniagent.Config{BaseURL: hs.URL, Provider: tape.ProviderAnthropic, Prompt: marker + " count", Dir: dir})
	require.NoError(t, err)
	hs.Close()
	require.NoError(t, g.Finish(tape.EndComplete, ""))

	live := fakeprovider.New(fakeprovider.Script{
		Threads: []fakeprovider.Thread{{Name: "good", Turns: turns("3")}, {Name: "bad", Turns: turns("three")}},
		Match:   fakeprovider.ByModel(map[string]string{"good-model": "good", "bad-model": "bad"}),
	})
	require.NoError(t, live.Start())
	defer live.Close()
	out := filepath.Join(t.TempDir(), "fork.json")
	code, stdout, stderr := runVerbForTest(t, "fork", "--tape", recPath, "--at", "2", "--upstream", live.URL(), "--sandbox", "docker-image:"+image,
		"--models", "good-model,bad-model", "--jobs", "2", "--verify", "grep -qx 3 n.txt && test -f README", "--output", out, "--json", "--quiet", "--", "tapebox-mini", marker+" count")
	require.Equal(t, ExitOK, code, stderr)
	var rows []modelRow
	require.NoError(t, json.Unmarshal([]byte(stdout), &rows), stdout)
	require.Len(t, rows, 2)
	assert.Equal(t, "good-model", rows[0].Model)
	assert.Equal(t, "pass", rows[0].Verify)
	assert.Equal(t, "bad-model", rows[1].Model)
	assert.Equal(t, "fail", rows[1].Verify, "the bad model wrote three")
	for _, r := range rows {
		assert.Equal(t, 4, r.Steps)
		assert.Equal(t, 2, r.Live)
		assert.Equal(t, "complete", r.Ended)
		assert.Empty(t, r.Workspace, "in a container: no workspace left on this machine")
		ft, err := tape.LoadFile(r.Tape)
		require.NoError(t, err)
		assert.Equal(t, r.Model, ft.Meta.ForkedFrom.Overrides["model"])
		_, err = os.Stat(strings.TrimSuffix(r.Tape, ".json") + ".workspace.tar.zst")
		assert.NoError(t, err, "each fork tape has its start snapshot beside it")
	}
	assert.Len(t, recP.Requests(), 4, "the recording's provider: its 4 recorded calls only")
	n := 0
	for _, q := range live.Requests() {
		if q.Endpoint == fakeprovider.EndpointMessages {
			n++
		}
	}
	assert.Equal(t, 4, n, "two live steps per fork")
}

// TestForkEnvFlag: --env goes with --sandbox; NAME takes this machine's value, which must be
// set; NAME=VALUE is taken as given; the empty name is refused. (The value reaching the
// container: test/e2e TestRealHarnessForkSandboxed.)
func TestForkEnvFlag(t *testing.T) {
	recPath := filepath.Join(t.TempDir(), "run.json")
	data, err := tape.Marshal(inspectTestTape())
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(recPath, data, 0o644))
	run := func(getenv func(string) string, args ...string) (int, string) {
		var out, errOut strings.Builder
		code := RunEnv(t.Context(), append([]string{"fork", "--tape", recPath, "--at", "0"}, args...), &Env{Stdout: &out, Stderr: &errOut, Getenv: getenv})
		return code, errOut.String()
	}
	none := func(string) string { return "" }
	code, errOut := run(none, "--env", "KEY=v", "--", "true")
	assert.Equal(t, ExitUsage, code)
	assert.Contains(t, errOut, "--env goes with --sandbox")
	code, errOut = run(none, "--sandbox", "docker-image:x", "--env", "GEMINI_API_KEY", "--", "true")
	assert.Equal(t, ExitUsage, code)
	assert.Contains(t, errOut, "--env GEMINI_API_KEY: not set on this machine (or empty)")
	code, errOut = run(none, "--sandbox", "docker-image:x", "--env", "=v", "--", "true")
	assert.Equal(t, ExitUsage, code)
	assert.Contains(t, errOut, `--env "=v": want NAME or NAME=VALUE`)
}
