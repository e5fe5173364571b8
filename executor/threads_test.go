package executor

import (
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

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
