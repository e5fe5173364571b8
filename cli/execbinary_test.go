package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestExecBinary(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"tapebox-exec-amd64", "tapebox-exec-arm64"} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte("\x7fELF"), 0o755))
	}
	t.Setenv("TAPEBOX_EXEC_DIR", dir)
	tests := []struct {
		args   []string
		code   int
		stdout string
		stderr string
	}{
		{args: []string{"--arch", "x86_64"}, code: ExitOK, stdout: filepath.Join(dir, "tapebox-exec-amd64") + "\n",
			stderr: "tapebox exec-binary: tapebox-exec-amd64 in $TAPEBOX_EXEC_DIR\n"},
		{args: []string{"--arch", "aarch64"}, code: ExitOK, stdout: filepath.Join(dir, "tapebox-exec-arm64") + "\n",
			stderr: "tapebox exec-binary: tapebox-exec-arm64 in $TAPEBOX_EXEC_DIR\n"},
		{args: []string{"--arch=arm64"}, code: ExitOK, stdout: filepath.Join(dir, "tapebox-exec-arm64") + "\n"},
		{args: []string{"--arch", "mips"}, code: ExitUsage, stderr: `unknown architecture "mips"`},
		{args: []string{"extra"}, code: ExitUsage, stderr: `unexpected argument "extra"`},
		{args: []string{"--help"}, code: ExitOK, stdout: "docker cp"},
	}
	for _, tt := range tests {
		t.Run(tt.args[0], func(t *testing.T) {
			code, stdout, stderr := runVerbForTest(t, append([]string{"exec-binary"}, tt.args...)...)
			assert.Equal(t, tt.code, code, "stderr: %s", stderr)
			if tt.code == ExitOK && tt.args[0] != "--help" {
				assert.Equal(t, tt.stdout, stdout)
			} else {
				assert.Contains(t, stdout, tt.stdout)
			}
			assert.Contains(t, stderr, tt.stderr)
		})
	}

	t.Run("missing binary", func(t *testing.T) {
		t.Setenv("TAPEBOX_EXEC_DIR", t.TempDir())
		code, _, stderr := runVerbForTest(t, "exec-binary", "--arch", "amd64")
		assert.Equal(t, ExitFailure, code)
		assert.Contains(t, stderr, "tapebox exec-binary: find the executor")
		assert.Contains(t, stderr, "make executor")
	})

	// This test binary was compiled from the checkout around it, which is where the
	// executor comes from, whatever the working directory.
	t.Run("from the sources", func(t *testing.T) {
		t.Setenv("TAPEBOX_EXEC_DIR", "")
		root, err := filepath.Abs("..")
		require.NoError(t, err)
		t.Chdir(t.TempDir())
		code, stdout, stderr := runVerbForTest(t, "exec-binary", "--arch", "amd64")
		require.Equal(t, ExitOK, code, "stderr: %s", stderr)
		assert.Contains(t, stderr, "tapebox exec-binary: tapebox-exec-amd64 ")
		assert.Contains(t, stderr, root+", the sources the running program was built from")
		assert.FileExists(t, strings.TrimSpace(stdout))
	})
}
