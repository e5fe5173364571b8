package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/internal/testutil/dockertest"
	"github.com/tapebox/tapebox/sandbox"
	"github.com/tapebox/tapebox/tape"
	"github.com/tapebox/tapebox/testkit"
	"github.com/tapebox/tapebox/testkit/miniagent"
)

// recordBenchTape records a small run (parallel calls, a subagent) with a real agent and
// returns the tape's path.
func recordBenchTape(t *testing.T) string {
	t.Helper()
	bash := func(cmd string) tape.ToolCall { return testkit.Call("Bash", map[string]string{"command": cmd}) }
	p := testkit.NewProvider(t, testkit.Script{Threads: []testkit.Thread{
		{Name: "main", Turns: []testkit.Turn{
			{Calls: []tape.ToolCall{bash("mkdir -p app && echo one > app/a.txt"), bash("echo two > b.txt")}},
			{Calls: []tape.ToolCall{testkit.Call("Agent", map[string]string{"prompt": "SUB: count files"})}},
			{Text: "Done."},
		}},
		{Name: "sub", Marker: "SUB:", Turns: []testkit.Turn{
			{Calls: []tape.ToolCall{bash("ls app | wc -l")}},
			{Text: "1 file."},
		}},
	}})
	g := testkit.NewGateway(t, p.URL(), testkit.Harness("claude-code"))
	_, err := miniagent.Run(t.Context(), miniagent.Config{BaseURL: g.URL, Provider: tape.ProviderAnthropic,
		Prompt: "Make files.", Dir: t.TempDir(), APIKey: "placeholder"})
	require.NoError(t, err)
	_, err = g.Finish()
	require.NoError(t, err)
	return g.Path
}

type benchJSON struct {
	Steps int `json:"steps"`
	N     int `json:"n"`
	A, B  struct {
		Spec string      `json:"spec"`
		Runs []*benchRun `json:"runs"`
	}
	Metrics []struct {
		Name   string `json:"name"`
		Better string `json:"better"`
		A, B   struct {
			N      int         `json:"n"`
			Mean   *float64    `json:"mean"`
			StdDev *float64    `json:"sd"`
			CI     [2]*float64 `json:"ci95"`
		}
		CohensD *float64 `json:"cohens_d"`
		Verdict string   `json:"verdict"`
		Notes   []string `json:"notes"`
	} `json:"metrics"`
	Notes []string `json:"notes"`
}

func TestBenchLocal(t *testing.T) {
	path := recordBenchTape(t)
	dir := t.TempDir()
	a, b := "local:"+filepath.Join(dir, "a"), "local:"+filepath.Join(dir, "b")

	t.Run("table", func(t *testing.T) {
		code, out, errOut := runVerbForTest(t, "bench", "--tape", path, "--sandbox", a, "--vs", b, "-n", "3")
		require.Equal(t, ExitOK, code, errOut)
		assert.Contains(t, out, "5 steps; 3 runs on each sandbox, speed 0\nA: "+a+"\nB: "+b+"\n")
		for _, want := range []string{"B regressed", "replay wall ms", "tool ms", "overhead ms/step", "steps/s", "sandbox setup ms", "A 95% CI"} {
			assert.Contains(t, out, want)
		}
		assert.NotContains(t, out, "n/a")
		assert.Contains(t, errOut, "run 3/3 B:")
		left, err := os.ReadDir(filepath.Join(dir, "a"))
		require.NoError(t, err)
		assert.Empty(t, left, "each run's directory is removed after it")
	})

	t.Run("json", func(t *testing.T) {
		code, out, errOut := runVerbForTest(t, "bench", "--tape", path, "--sandbox", a, "--vs", b, "-n", "2", "--json", "--quiet")
		require.Equal(t, ExitOK, code, errOut)
		assert.Empty(t, errOut)
		var rep benchJSON
		require.NoError(t, json.Unmarshal([]byte(out), &rep), out)
		assert.Equal(t, 5, rep.Steps)
		assert.Equal(t, a, rep.A.Spec)
		require.Len(t, rep.A.Runs, 2)
		require.Len(t, rep.B.Runs, 2)
		for _, r := range append(rep.A.Runs, rep.B.Runs...) {
			assert.Positive(t, r.WallMS)
			assert.Positive(t, r.ToolMS)
			assert.Positive(t, r.StepsPerS)
			assert.Equal(t, 5, r.Steps)
			assert.Equal(t, 3, r.ToolCalls)
			assert.True(t, r.Identical, "a local replay of the recording is identical")
			assert.InDelta(t, (r.WallMS-r.ToolPathMS-r.ModelMS)/5, r.OverheadMSPerStep, 1e-9)
			assert.LessOrEqual(t, r.ToolPathMS, r.ToolMS, "parallel calls count once on the critical path")
		}
		names := []string{}
		for _, m := range rep.Metrics {
			names = append(names, m.Name)
			assert.Equal(t, 2, m.A.N)
			require.NotNil(t, m.A.Mean)
			require.NotNil(t, m.A.StdDev)
			require.NotNil(t, m.B.CI[0])
			assert.Contains(t, []string{"regressed", "improved", "no change"}, m.Verdict)
		}
		assert.Equal(t, []string{"wall_ms", "tool_ms", "overhead_ms_per_step", "steps_per_s", "setup_ms"}, names)
		assert.Equal(t, "higher", rep.Metrics[3].Better)
	})

	t.Run("n=1 is undefined, not zero", func(t *testing.T) {
		code, out, errOut := runVerbForTest(t, "bench", "--tape", path, "--sandbox", a, "--vs", b, "-n", "1", "--quiet")
		require.Equal(t, ExitOK, code, errOut)
		assert.Contains(t, out, "n/a")
		assert.Contains(t, out, "note: n=1: standard deviation and confidence interval are undefined")
		code, out, _ = runVerbForTest(t, "bench", "--tape", path, "--sandbox", a, "--vs", b, "-n", "1", "--quiet", "--json")
		require.Equal(t, ExitOK, code)
		var rep benchJSON
		require.NoError(t, json.Unmarshal([]byte(out), &rep))
		for _, m := range rep.Metrics {
			assert.NotNil(t, m.A.Mean)
			assert.Nil(t, m.A.StdDev, "%s: sd of one run is null", m.Name)
			assert.Nil(t, m.A.CI[0])
			assert.Nil(t, m.CohensD)
			assert.Equal(t, "undefined", m.Verdict)
		}
		assert.Contains(t, out, `"sd": null`)
	})

	t.Run("a failed replay fails the verb with no time", func(t *testing.T) {
		rec, err := tape.LoadFile(path)
		require.NoError(t, err)
		rec.Meta.Harness = "no-such-harness"
		bad := filepath.Join(t.TempDir(), "bad.json")
		require.NoError(t, tape.Save(bad, rec))
		code, out, errOut := runVerbForTest(t, "bench", "--tape", bad, "--sandbox", a, "--vs", b, "-n", "2", "--json")
		assert.Equal(t, ExitFailure, code)
		assert.Empty(t, out, "no report, no times")
		assert.Contains(t, errOut, "tapebox bench: run 1 of 2 on A ("+a+"): ")
		assert.Contains(t, errOut, "no-such-harness")
		assert.NotContains(t, errOut, " ms,")
	})
}

func TestBenchDocker(t *testing.T) {
	dockertest.Image(t, dockertest.SandboxImage)
	path := recordBenchTape(t)
	a := "docker-image:" + dockertest.SandboxImage
	b := a + "?memory=256m&pids-limit=200"
	code, out, errOut := runVerbForTest(t, "bench", "--tape", path, "--sandbox", a, "--vs", b, "-n", "2", "--cwd", "/work", "--json", "--quiet")
	require.Equal(t, ExitOK, code, errOut)
	var rep benchJSON
	require.NoError(t, json.Unmarshal([]byte(out), &rep), out)
	assert.Equal(t, b, rep.B.Spec)
	for _, r := range append(rep.A.Runs, rep.B.Runs...) {
		assert.True(t, r.Identical)
		assert.Greater(t, r.SetupMS, 10.0, "creating a container takes time")
	}
}

func TestBenchUsage(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no tape", []string{"--sandbox", "local:a", "--vs", "local:b"}, "--tape is required"},
		{"no vs", []string{"--tape", "t.json", "--sandbox", "local:a"}, "--sandbox (A) and --vs (B) are both required"},
		{"n zero", []string{"--tape", "t.json", "--sandbox", "local:a", "--vs", "local:b", "-n", "0"}, "-n must be 1 or more"},
		{"bad spec", []string{"--tape", "t.json", "--sandbox", "vm:a", "--vs", "local:b"}, `unknown scheme "vm"`},
		{"unknown option", []string{"--tape", "t.json", "--sandbox", "docker-image:x?colour=red", "--vs", "local:b"}, `unknown option "colour"`},
		{"bad option value", []string{"--tape", "t.json", "--sandbox", "docker-image:x?cpus=many", "--vs", "local:b"}, `option cpus="many"`},
		{"limits on local", []string{"--tape", "t.json", "--sandbox", "local:a", "--vs", "local:b?memory=1g"}, "apply only to docker-image: sandboxes"},
		{"flag limits on local", []string{"--tape", "t.json", "--sandbox", "local:a", "--vs", "local:b", "--runtime", "runsc"}, "apply only to docker-image: sandboxes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, errOut := runVerbForTest(t, append([]string{"bench"}, tt.args...)...)
			assert.Equal(t, ExitUsage, code)
			assert.Contains(t, errOut, tt.want)
		})
	}
	code, out, _ := runVerbForTest(t, "bench", "--help")
	assert.Equal(t, ExitOK, code)
	assert.Contains(t, out, "Usage: tapebox bench --tape run.json --sandbox A --vs B")
}

func TestParseBenchSide(t *testing.T) {
	f := &benchFlags{memory: "1g", cpus: 2, env: kvFlag{}}
	side, err := parseBenchSide("docker-image:tapebox/sandbox:bookworm?memory=256m&runtime=runsc&read-only&network=bridge&pids-limit=50", f)
	require.NoError(t, err)
	assert.Equal(t, sandbox.Spec{Scheme: "docker-image", Target: "tapebox/sandbox:bookworm"}, side.base)
	assert.Equal(t, int64(256<<20), side.opts.Memory)
	assert.Equal(t, 2.0, side.opts.CPUs, "flag default kept")
	assert.Equal(t, "runsc", side.opts.Runtime)
	assert.Equal(t, "bridge", side.opts.Network)
	assert.Equal(t, int64(50), side.opts.PidsLimit)
	assert.True(t, side.opts.ReadOnlyRoot)
	assert.False(t, side.opts.InstallExecutor, "left to replay.SandboxOptions, which installs it into every created sandbox")

	side, err = parseBenchSide("docker-image:img", f)
	require.NoError(t, err)
	assert.Equal(t, int64(1<<30), side.opts.Memory, "the flag applies when the spec says nothing")

	side, err = parseBenchSide("local:/tmp/x", &benchFlags{env: kvFlag{}})
	require.NoError(t, err)
	assert.False(t, side.opts.InstallExecutor)
	assert.True(t, strings.HasPrefix(side.base.String(), "local:"))
}
