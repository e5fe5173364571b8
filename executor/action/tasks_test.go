package action

import (
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// newTasks returns a Tasks whose state directory is a new temporary one.
func newTasks(t *testing.T) *Tasks {
	return &Tasks{State: &StateDir{Path: t.TempDir()}}
}

// restarted returns the Tasks of a restarted executor: a new one on the same directory.
func restarted(tasks *Tasks) *Tasks {
	return &Tasks{State: &StateDir{Path: tasks.State.Path, Shared: tasks.State.Shared}}
}

func TestTasksLifecycle(t *testing.T) {
	tasks := newTasks(t)
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
	again := restarted(tasks)
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
	tasks := newTasks(t)
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
	st, err = restarted(tasks).Status("k")
	require.NoError(t, err)
	assert.False(t, st.Running)
	assert.True(t, st.Killed)
}

func TestTasksStdin(t *testing.T) {
	tasks := newTasks(t)
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
	require.Error(t, restarted(tasks).Write("s", []byte("x")))
}

// ExitLine: Claude Code ends a background task's file with its exit code; Output and Poll
// give the command's output alone.
func TestTasksExitLine(t *testing.T) {
	tests := []struct{ command, file, output string }{
		{"echo hi", "hi\n\n[exited with code 0]\n", "hi\n"},
		{"printf 'no newline'; exit 3", "no newline\n[exited with code 3]\n", "no newline"},
		{"true", "\n[exited with code 0]\n", ""},
	}
	for _, tt := range tests {
		t.Run(tt.command, func(t *testing.T) {
			tasks := newTasks(t)
			_, err := tasks.Start(t.Context(), TaskRequest{ID: "e", Command: tt.command, ExitLine: true})
			require.NoError(t, err)
			st, err := tasks.Wait(t.Context(), "e", time.Minute)
			require.NoError(t, err)
			require.False(t, st.Running)
			file, err := os.ReadFile(tasks.OutputPath("e"))
			require.NoError(t, err)
			assert.Equal(t, tt.file, string(file))
			for _, tasks := range []*Tasks{tasks, restarted(tasks)} {
				out, err := tasks.Output("e")
				require.NoError(t, err)
				assert.Equal(t, tt.output, string(out))
			}
		})
	}

	// Still running: the file holds the output so far and no exit line.
	tasks := newTasks(t)
	_, err := tasks.Start(t.Context(), TaskRequest{ID: "r", Command: "echo a; sleep 60", ExitLine: true})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		b, _ := os.ReadFile(tasks.OutputPath("r"))
		return string(b) == "a\n"
	}, 10*time.Second, 10*time.Millisecond)
	_, err = tasks.Kill("r")
	require.NoError(t, err)
}

func TestTasksTTY(t *testing.T) {
	if _, err := os.Stat("/dev/ptmx"); err != nil {
		t.Skip("no /dev/ptmx")
	}
	tasks := newTasks(t)
	defer tasks.Close()
	_, err := tasks.Start(t.Context(), TaskRequest{ID: "t", Command: `tty >/dev/null && echo tty; stty size; read x; printf 'got %s\n' "$x"`, TTY: true})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		out, _ := tasks.Output("t")
		return string(out) == "tty\r\n24 80\r\n"
	}, 10*time.Second, 10*time.Millisecond)
	require.NoError(t, tasks.Write("t", []byte("hello\n")))
	st, err := tasks.Wait(t.Context(), "t", time.Minute)
	require.NoError(t, err)
	require.False(t, st.Running)
	assert.Equal(t, 0, *st.ExitCode)
	out, _ := tasks.Output("t")
	// The terminal echoes what is typed, and writes "\n" as "\r\n".
	assert.Equal(t, "tty\r\n24 80\r\nhello\r\ngot hello\r\n", string(out))

	// ^D at the start of a line is the end of input.
	_, err = tasks.Start(t.Context(), TaskRequest{ID: "cat", Command: "cat; echo rc=$?", TTY: true})
	require.NoError(t, err)
	require.NoError(t, tasks.Write("cat", []byte("a\x01\n\x04")))
	_, err = tasks.Wait(t.Context(), "cat", time.Minute)
	require.NoError(t, err)
	out, _ = tasks.Output("cat")
	assert.Equal(t, "a^A\r\na\x01\r\nrc=0\r\n", string(out))
}

func TestTasksNoStdin(t *testing.T) {
	tasks := newTasks(t)
	_, err := tasks.Start(t.Context(), TaskRequest{ID: "n", Command: "cat; echo rc=$?"})
	require.NoError(t, err)
	require.ErrorIs(t, tasks.Write("n", []byte("x")), ErrNoStdin)
	_, err = tasks.Wait(t.Context(), "n", time.Minute)
	require.NoError(t, err)
	out, _ := tasks.Output("n")
	assert.Equal(t, "rc=0\n", string(out), "stdin is /dev/null")
}
