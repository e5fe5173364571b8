package action

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestShell(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name     string
		req      ShellRequest
		out      string
		code     int
		timedOut bool
	}{
		{"echo", ShellRequest{Command: "echo hello"}, "hello\n", 0, false},
		{"stderr interleaved", ShellRequest{Command: "echo a; echo b >&2; echo c"}, "a\nb\nc\n", 0, false},
		{"exit code", ShellRequest{Command: "echo no; exit 3"}, "no\n", 3, false},
		{"argv", ShellRequest{Argv: []string{"printf", "%s-%s", "x", "y"}}, "x-y", 0, false},
		{"cwd", ShellRequest{Command: "pwd", Dir: dir}, dir + "\n", 0, false},
		{"env", ShellRequest{Command: `echo "$TBX"`, Env: []string{"TBX=v"}}, "v\n", 0, false},
		{"timeout kills the group", ShellRequest{Command: "echo start; sleep 30; echo never", Timeout: 200 * time.Millisecond}, "start\n", 137, true},
		// A child left in the background keeps no pipe open: the call returns when the shell
		// exits (a hang would show as a timeout).
		{"background child", ShellRequest{Command: "(sleep 30 &); echo done", Timeout: 20 * time.Second}, "done\n", 0, false},
		{"not found", ShellRequest{Command: "no-such-command-tbx"}, "", 127, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := Shell(t.Context(), tt.req)
			require.NoError(t, err)
			if tt.name != "not found" {
				assert.Equal(t, tt.out, string(res.Output))
			}
			assert.Equal(t, tt.code, res.ExitCode)
			assert.Equal(t, tt.timedOut, res.TimedOut)
		})
	}
}

func TestShellCannotStart(t *testing.T) {
	_, err := Shell(t.Context(), ShellRequest{Argv: []string{"/no/such/binary"}})
	require.ErrorContains(t, err, "/no/such/binary")
}
