package testkit_test

import (
	"path/filepath"
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
