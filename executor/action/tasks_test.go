package action

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestTasksLifecycle(t *testing.T) {
	tasks := &Tasks{Dir: filepath.Join(t.TempDir(), "tasks")}
	st, err := tasks.Start(t.Context(), TaskRequest{ID: "b1", Command: "echo one; echo two >&2; exit 4", Dir: t.TempDir()})
	require.NoError(t, err)
	assert.True(t, st.Running)
	st, err = tasks.Wait(t.Context(), "b1", time.Minute)
	require.NoError(t, err)
	require.False(t, st.Running)
	require.NotNil(t, st.ExitCode)
	assert.Equal(t, 4, *st.ExitCode)
	assert.Equal(t, "failed", st.State())
	out, err := tasks.Output("b1")
	require.NoError(t, err)
	assert.Equal(t, "one\ntwo\n", string(out))

	// A restarted executor (a new Tasks on the same directory) still answers.
	again := &Tasks{Dir: tasks.Dir}
	st, err = again.Status("b1")
	require.NoError(t, err)
	assert.Equal(t, 4, *st.ExitCode)
	assert.Equal(t, "echo one; echo two >&2; exit 4", st.Command)

	_, err = again.Status("nope")
	require.ErrorIs(t, err, ErrNoTask)
	_, err = again.Status("../escape")
	require.ErrorIs(t, err, ErrNoTask)
}

func TestTasksKillAndPoll(t *testing.T) {
	tasks := &Tasks{Dir: t.TempDir()}
	_, err := tasks.Start(t.Context(), TaskRequest{ID: "k", Command: "echo ready; sleep 60", Dir: t.TempDir()})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		out, _ := tasks.Output("k")
		return string(out) == "ready\n"
	}, 10*time.Second, 10*time.Millisecond)
	got, err := tasks.Poll("k")
	require.NoError(t, err)
	assert.Equal(t, "ready\n", string(got))
	got, err = tasks.Poll("k")
	require.NoError(t, err)
	assert.Empty(t, got, "a second poll returns only new output")

	st, err := tasks.Kill("k")
	require.NoError(t, err)
	assert.Equal(t, "killed", st.State())
	st, err = (&Tasks{Dir: tasks.Dir}).Status("k")
	require.NoError(t, err)
	assert.False(t, st.Running)
	assert.True(t, st.Killed)
}

func TestTasksStdin(t *testing.T) {
	tasks := &Tasks{Dir: t.TempDir()}
	defer tasks.Close()
	_, err := tasks.Start(t.Context(), TaskRequest{ID: "s", Command: "read x; echo got $x", Stdin: true})
	require.NoError(t, err)
	require.NoError(t, tasks.Write("s", []byte("abc\n")))
	st, err := tasks.Wait(t.Context(), "s", time.Minute)
	require.NoError(t, err)
	assert.Equal(t, 0, *st.ExitCode)
	out, _ := tasks.Output("s")
	assert.Equal(t, "got abc\n", string(out))
	require.NoError(t, tasks.Remove("s"))
	_, err = tasks.Status("s")
	require.ErrorIs(t, err, ErrNoTask)
	require.Error(t, (&Tasks{Dir: tasks.Dir}).Write("s", []byte("x")))
}
