package executor

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// threads counts this process's OS threads (Linux: one entry each in /proc/self/task).
func threads(t *testing.T) int {
	t.Helper()
	entries, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Skipf("no /proc/self/task: %v", err)
	}
	return len(entries)
}

// TestReserveThreads: the reserved threads exist once reserveThreads returns, and stay after
// the goroutines that made them are gone and a collection has run.
func TestReserveThreads(t *testing.T) {
	before := threads(t)
	reserveThreads(before + 16)
	after := threads(t)
	require.GreaterOrEqual(t, after, before+16, "threads before %d, after %d", before, after)
	runtime.GC()
	time.Sleep(100 * time.Millisecond)
	require.GreaterOrEqual(t, threads(t), after, "the idle threads stay (the runtime may add one of its own)")
}

func TestThreadsToReserve(t *testing.T) {
	cgroup := func(files ...string) string {
		dir := t.TempDir()
		for i := 0; i < len(files); i += 2 {
			require.NoError(t, os.WriteFile(filepath.Join(dir, files[i]), []byte(files[i+1]), 0o644))
		}
		return dir
	}
	missing := filepath.Join(t.TempDir(), "missing")
	for _, tc := range []struct {
		name string
		dirs []string
		want int
	}{
		{"the default limit", []string{missing, cgroup("pids.max", "512\n", "pids.current", "3\n")}, 24},
		{"a lower limit", []string{cgroup("pids.max", "64\n", "pids.current", "2\n")}, 8},
		{"a low limit", []string{cgroup("pids.max", "16")}, 4},
		{"nearly all taken", []string{cgroup("pids.max", "512", "pids.current", "500")}, 6},
		{"all taken", []string{cgroup("pids.max", "512", "pids.current", "512")}, 0},
		{"v2 says no limit: v1 is not asked", []string{cgroup("pids.max", "max\n"), cgroup("pids.max", "32")}, 24},
		{"no cgroup files", []string{missing}, 24},
	} {
		assert.Equal(t, tc.want, threadsToReserve(tc.dirs), tc.name)
	}
}
