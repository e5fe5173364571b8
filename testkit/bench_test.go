package testkit_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/internal/testutil/dockertest"
	"github.com/tapebox/tapebox/tape"
	"github.com/tapebox/tapebox/testkit"
)

func BenchmarkReplay(b *testing.B) {
	path := record(b)
	b.Run("local", func(b *testing.B) { testkit.Bench(b, path, "local") })
	b.Run("docker", func(b *testing.B) {
		testkit.Bench(b, path, "docker-image:"+dockertest.SandboxImage, testkit.Cwd("/work"))
	})
}

// TestBench runs Bench as a benchmark and checks its metrics, and that a replay that fails
// fails the benchmark without reporting a time.
func TestBench(t *testing.T) {
	path := record(t)
	res := testing.Benchmark(func(b *testing.B) { testkit.Bench(b, path, "local") })
	require.Positive(t, res.N, "the benchmark ran")
	for _, unit := range []string{"replay-ms/op", "tool-ms/op", "overhead-ms/step", "steps/s"} {
		assert.Contains(t, res.Extra, unit)
	}
	assert.Positive(t, res.Extra["replay-ms/op"])
	assert.GreaterOrEqual(t, res.Extra["replay-ms/op"], res.Extra["tool-ms/op"]*0.5)
	assert.InDelta(t, 7/(res.Extra["replay-ms/op"]/1000), res.Extra["steps/s"], res.Extra["steps/s"]*0.01,
		"7 steps per replay")

	rec, err := tape.LoadFile(path)
	require.NoError(t, err)
	rec.Meta.Harness = "no-such-harness"
	bad := filepath.Join(t.TempDir(), "bad.json")
	require.NoError(t, tape.Save(bad, rec))
	failed := testing.Benchmark(func(b *testing.B) { testkit.Bench(b, bad, "local") })
	assert.Zero(t, failed.N, "a failed replay fails the benchmark")
	assert.Empty(t, failed.Extra, "and reports no metric")
}

// goBuild builds the package pkg of this module into a temporary directory and returns the
// binary's path.
func goBuild(tb testing.TB, pkg string) string {
	tb.Helper()
	bin := filepath.Join(tb.TempDir(), filepath.Base(pkg))
	cmd := exec.CommandContext(tb.Context(), "go", "build", "-o", bin, "github.com/tapebox/tapebox/"+pkg)
	out, err := cmd.CombinedOutput()
	require.NoError(tb, err, "go build %s:\n%s", pkg, out)
	return bin
}

// TestBenchRecordedWorkspace: Bench replays a tape that `tapebox record` made of a real
// program (tapebox-mini) in a directory with a file, so that the tape carries a start
// snapshot beside it, as Replay does (Bench used to miss the snapshot and fail every such
// tape); the replay reads the README only the snapshot has.
func TestBenchRecordedWorkspace(t *testing.T) {
	tapebox, mini := goBuild(t, "cmd/tapebox"), goBuild(t, "internal/testutil/tapebox-mini")
	p := testkit.NewProvider(t, testkit.Script{Threads: []testkit.Thread{{Name: "main", Turns: []testkit.Turn{
		{Calls: []tape.ToolCall{bash("cat README.md && echo made > made.txt")}},
		{Text: "Made it."},
	}}}})
	work := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(work, "README.md"), []byte("read me\n"), 0o644))
	path := filepath.Join(t.TempDir(), "run.json")
	cmd := exec.CommandContext(t.Context(), tapebox, "record", "--output", path, "--upstream", p.URL(), "--harness", "claude-code",
		"--", mini, "make a file")
	cmd.Dir = work
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "tapebox record:\n%s", out)
	rec, err := tape.LoadFile(path)
	require.NoError(t, err)
	require.NotNil(t, rec.Meta.Workspace, "record carries the workspace")
	require.FileExists(t, filepath.Join(filepath.Dir(path), rec.Meta.Workspace.Snapshot))
	assert.Equal(t, "read me", strings.TrimSpace(rec.Threads[0].Steps[0].ToolResults[0].Text()))

	res := testing.Benchmark(func(b *testing.B) { testkit.Bench(b, path, "local") })
	require.Positive(t, res.N, "Bench replayed the tape with its snapshot")
	assert.Positive(t, res.Extra["replay-ms/op"])

	// The same tape, replayed by Replay, is identical, end state included.
	r := testkit.Replay(t, path, "local")
	require.NoError(t, r.Err)
	assert.NoError(t, testkit.CheckIdentical(r))
	assert.NoError(t, testkit.CheckEndState(r))
}
