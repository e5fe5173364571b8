package sandboxtest

import (
	"bufio"
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/sandbox"
)

// CheckEcho runs cat in sb, round-trips lines through it, then ends it with end-of-file:
// Stdout reaches io.EOF, the session ends without an error and closes twice.
func CheckEcho(t *testing.T, sb *sandbox.Sandbox, lines ...string) {
	t.Helper()
	s, err := sb.StartCommand(t.Context(), []string{"cat"})
	require.NoError(t, err)
	r := bufio.NewReader(s.Stdout)
	for _, line := range lines {
		assert.Equal(t, line, RoundTrip(t, s, r, line))
	}
	require.NoError(t, s.Stdin.Close())
	_, err = r.ReadByte()
	assert.ErrorIs(t, err, io.EOF)
	assert.NoError(t, WaitDone(t, s))
	assert.NoError(t, s.Close())
	assert.NoError(t, s.Close(), "second Close")
}

// CheckExitError runs a command in a session of sb that writes "out" to stdout, "oops" to
// stderr and exits 3: stdout carries only "out", Wait an *ExitError with the status and
// the stderr, and Close does not fail for the status.
func CheckExitError(t *testing.T, sb *sandbox.Sandbox) {
	t.Helper()
	s, err := sb.StartCommand(t.Context(), []string{"sh", "-c", "echo out; echo oops >&2; exit 3"})
	require.NoError(t, err)
	out, err := io.ReadAll(s.Stdout)
	require.NoError(t, err)
	assert.Equal(t, "out\n", string(out), "stderr is kept apart from stdout")
	var ee *sandbox.ExitError
	require.ErrorAs(t, WaitDone(t, s), &ee)
	assert.Equal(t, 3, ee.Code)
	assert.Equal(t, "oops\n", ee.Stderr)
	assert.Equal(t, "oops\n", s.Stderr())
	assert.NoError(t, s.Close(), "Close after a non-zero exit")
}

// ExecCase is one Exec and what it gives: the output and exit status, or an error that
// holds every one of WantErr.
type ExecCase struct {
	Name     string
	Argv     []string
	Stdout   string
	Stderr   string
	ExitCode int
	WantErr  []string
}

// CheckExec runs each case's Exec in sb as a subtest.
func CheckExec(t *testing.T, sb *sandbox.Sandbox, cases []ExecCase) {
	t.Helper()
	for _, tt := range cases {
		t.Run(tt.Name, func(t *testing.T) {
			res, err := sb.Exec(t.Context(), tt.Argv)
			if len(tt.WantErr) > 0 {
				require.Error(t, err)
				for _, want := range tt.WantErr {
					assert.Contains(t, err.Error(), want)
				}
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.Stdout, string(res.Stdout))
			assert.Equal(t, tt.Stderr, string(res.Stderr))
			assert.Equal(t, tt.ExitCode, res.ExitCode)
		})
	}
}

// CheckStderrEscaped: a process a session's command started writes a terminal's escape
// sequences into the command's stderr through /proc/PPID/fd/2, as a tape's command can
// into its executor's; the session's Stderr and its ExitError carry them escaped, never
// as the bytes that would retitle or clear the terminal the error is printed on.
func CheckStderrEscaped(t *testing.T, sb *sandbox.Sandbox) {
	t.Helper()
	s, err := sb.StartCommand(t.Context(), []string{"sh", "-c", `sh -c 'printf "\033]0;pwned\007\033[2Jgone\233\n" > /proc/$PPID/fd/2'; exit 3`})
	require.NoError(t, err)
	_, err = io.ReadAll(s.Stdout)
	require.NoError(t, err)
	var ee *sandbox.ExitError
	require.ErrorAs(t, WaitDone(t, s), &ee)
	for _, got := range []string{s.Stderr(), ee.Stderr, ee.Error()} {
		assert.NotContains(t, got, "\x1b")
		assert.NotContains(t, got, "\a")
		assert.Contains(t, got, `\x1b]0;pwned\x07\x1b[2Jgone\x9b`)
	}
	assert.NoError(t, s.Close())
}
