package cli

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/tape"
)

func TestVersionFlag(t *testing.T) {
	code, stdout, _ := runVerbForTest(t, "--version")
	assert.Equal(t, ExitOK, code)
	assert.True(t, strings.HasPrefix(stdout, "tapebox "+Version), stdout)
}

// TestCompletion: the scripts name every verb and each verb's flags, and bash parses its.
func TestCompletion(t *testing.T) {
	for _, sh := range []string{"bash", "zsh", "fish"} {
		code, stdout, stderr := runVerbForTest(t, "completion", sh)
		require.Equal(t, ExitOK, code, stderr)
		for v := range commands {
			assert.Contains(t, stdout, v, sh)
		}
		assert.Contains(t, stdout, "check", "%s: replay's --check", sh)
		if sh == "bash" {
			p := filepath.Join(t.TempDir(), "c.bash")
			require.NoError(t, os.WriteFile(p, []byte(stdout), 0o644))
			out, err := exec.Command("bash", "-n", p).CombinedOutput()
			assert.NoError(t, err, "%s", out)
		}
	}
	code, _, _ := runVerbForTest(t, "completion", "tcsh")
	assert.Equal(t, ExitUsage, code)
}

func TestBadSandboxSpecIsAUsageError(t *testing.T) {
	rec := filepath.Join("..", "testdata", "replay", "codex.json")
	code, _, stderr := runVerbForTest(t, "replay", "--tape", rec, "--sandbox", "vm:nope")
	assert.Equal(t, ExitUsage, code, stderr)
	assert.Contains(t, stderr, "tapebox replay --help")
}

func TestValidateDirectory(t *testing.T) {
	code, stdout, stderr := runVerbForTest(t, "validate", filepath.Join("..", "testdata", "replay"))
	require.Equal(t, ExitOK, code, stderr)
	assert.Contains(t, stdout, "claude-code.json: ok")
	assert.Contains(t, stdout, "codex.json: ok")
}

func TestReplayAndRecordJSON(t *testing.T) {
	rec := filepath.Join("..", "testdata", "replay", "codex.json")
	code, stdout, stderr := runVerbForTest(t, "replay", "--tape", rec, "--sandbox", "local:"+t.TempDir(), "--speed", "0", "--json", "--check")
	require.Equal(t, ExitOK, code, stderr)
	var sum struct {
		Steps   int    `json:"steps"`
		Ended   string `json:"ended"`
		Compare struct {
			Identical bool `json:"identical"`
		} `json:"compare"`
	}
	require.NoError(t, json.Unmarshal([]byte(stdout), &sum), stdout)
	assert.Equal(t, 7, sum.Steps)
	assert.Equal(t, "complete", sum.Ended)
	assert.True(t, sum.Compare.Identical)

	_, out, code, stderr, stdout := recordInRepoOut(t, "--json")
	require.Equal(t, ExitOK, code, stderr)
	var rs struct {
		Tape       string `json:"tape"`
		ModelCalls int    `json:"model_calls"`
		Ended      string `json:"ended"`
		Snapshot   string `json:"workspace_snapshot"`
	}
	require.NoError(t, json.Unmarshal([]byte(stdout), &rs), "stdout holds only the summary: %q", stdout)
	assert.Equal(t, out, rs.Tape)
	assert.Equal(t, 2, rs.ModelCalls)
	assert.Equal(t, "complete", rs.Ended)
	assert.Equal(t, "run.workspace.tar.zst", rs.Snapshot)
	assert.Contains(t, stderr, "Made it.", "the agent's stdout went to stderr")
}

// TestReplayOutputStdout: --output - prints the replay tape on stdout, and writes no file
// named "-".
func TestReplayOutputStdout(t *testing.T) {
	rec, err := filepath.Abs(filepath.Join("..", "testdata", "replay", "codex.json"))
	require.NoError(t, err)
	t.Chdir(t.TempDir())
	code, stdout, stderr := runVerbForTest(t, "replay", "--tape", rec, "--sandbox", "local:"+t.TempDir(), "--speed", "0", "--output", "-")
	require.Equal(t, ExitOK, code, stderr)
	tp, err := tape.Unmarshal([]byte(stdout))
	require.NoError(t, err)
	assert.Len(t, tp.Main().Steps, 7)
	assert.NoFileExists(t, "-")
	code, _, _ = runVerbForTest(t, "replay", "--tape", rec, "--sandbox", "local:"+t.TempDir(), "--output", "-", "--check")
	assert.Equal(t, ExitUsage, code)
}

// TestReplayBareLocal: "local" alone is a fresh temporary directory, as in testkit.
func TestReplayBareLocal(t *testing.T) {
	rec := filepath.Join("..", "testdata", "replay", "codex.json")
	code, stdout, stderr := runVerbForTest(t, "replay", "--tape", rec, "--sandbox", "local", "--speed", "0", "--check")
	require.Equal(t, ExitOK, code, stderr)
	assert.Contains(t, stdout, ": IDENTICAL")
}
