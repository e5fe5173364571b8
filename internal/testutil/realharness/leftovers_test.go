package realharness

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// detachedJob is a "harness" that starts a background job in a session of its own, as Pi
// runs its commands (detached), and exits once the job is in it: the job writes bg.txt
// 0.3 s later.
const detachedJob = `setsid sh -c 'echo $$ > job.pid; sleep 0.3; echo done > bg.txt' </dev/null >/dev/null 2>&1 &
while [ ! -s job.pid ]; do sleep 0.01; done
echo started`

func needSetsid(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Skip("no setsid")
	}
}

// With Linger, a job the harness left in a session of its own goes on until it is done:
// its file is there when run returns, and nothing of the run still runs.
func TestLingerWaitsForDetachedJob(t *testing.T) {
	needSetsid(t)
	dir := t.TempDir()
	res, err := run(t.Context(), "/bin/sh", []string{"-c", detachedJob}, Options{Dir: dir, BaseURL: "http://127.0.0.1:1", Linger: 5 * time.Second}, nil)
	require.NoError(t, err)
	assert.Equal(t, "started\n", string(res.Stdout))
	b, err := os.ReadFile(filepath.Join(dir, "bg.txt"))
	require.NoError(t, err, "the detached job's file is there when run returns")
	assert.Equal(t, "done\n", string(b))
	assert.Greater(t, res.Lingered, 100*time.Millisecond, "run waited for the job")
	assert.Less(t, res.Lingered, 5*time.Second, "run stopped waiting when the job was done")
}

// Without Linger, what the harness left running is killed when it exits, detached or not:
// it never writes into the directory after run returns (a replay of the recording works
// there next).
func TestNoLingerKillsDetachedJob(t *testing.T) {
	needSetsid(t)
	dir := t.TempDir()
	res, err := run(t.Context(), "/bin/sh", []string{"-c", detachedJob}, Options{Dir: dir, BaseURL: "http://127.0.0.1:1"}, nil)
	require.NoError(t, err)
	assert.Zero(t, res.Lingered)
	time.Sleep(time.Second)
	_, err = os.Stat(filepath.Join(dir, "bg.txt"))
	assert.ErrorIs(t, err, os.ErrNotExist, "the job was killed before it wrote")
}

// Leftovers finds a process by its mark, and only while it runs.
func TestLeftovers(t *testing.T) {
	mark, err := newRunMark()
	require.NoError(t, err)
	other, err := newRunMark()
	require.NoError(t, err)
	cmd := exec.Command("sleep", "30")
	cmd.Env = append(os.Environ(), mark)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	assert.Eventually(t, func() bool {
		l := Leftovers(mark)
		return len(l) == 1 && l[0] == cmd.Process.Pid
	}, 5*time.Second, 20*time.Millisecond)
	assert.Empty(t, Leftovers(other))
	require.NoError(t, cmd.Process.Kill())
	_ = cmd.Wait()
	assert.Empty(t, Leftovers(mark))
}
