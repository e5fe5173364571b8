package executor

import (
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// threads reads how many OS threads this process has (Linux).
func threads(t *testing.T) int {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Skipf("no /proc/self/status: %v", err)
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "Threads:"); ok {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			require.NoError(t, err)
			return n
		}
	}
	t.Fatal("no Threads: line in /proc/self/status")
	return 0
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
