package executor

import (
	"os"
	"path/filepath"
	"runtime"
	"strconv"
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
	dir := t.TempDir()
	file := func(content string) string {
		p := filepath.Join(dir, strconv.Itoa(len(content))+content)
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
		return p
	}
	missing := filepath.Join(dir, "missing")
	for _, tc := range []struct {
		files []string
		want  int
	}{
		{[]string{missing, file("512\n")}, 24},
		{[]string{file("64\n")}, 8},
		{[]string{file("16")}, 4},
		{[]string{file("max\n"), file("32")}, 24}, // v2 says no limit: v1's file is not asked
		{[]string{missing}, 24},
	} {
		assert.Equal(t, tc.want, threadsToReserve(tc.files), "%v", tc.files)
	}
}
