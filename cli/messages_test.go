package cli

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// A mistyped flag prints one line: the flag, the nearest one, and where the rest is; not the
// verb's whole usage.
func TestMistypedFlag(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"replay", "--tpae", "x.json"}, `tapebox replay: unknown flag --tpae (did you mean --tape?); run "tapebox replay --help" for the flags`},
		{[]string{"inspect", "--jsn", "x.json"}, `tapebox inspect: unknown flag --jsn (did you mean --json?); run "tapebox inspect --help" for the flags`},
		{[]string{"record", "--lisen", "127.0.0.1:1", "--", "true"}, `tapebox record: unknown flag --lisen (did you mean --listen?)`},
		{[]string{"cost", "--zzzzzz", "x"}, `tapebox cost: unknown flag --zzzzzz; run "tapebox cost --help" for the flags`},
	} {
		code, stdout, stderr := runVerbForTest(t, tc.args...)
		assert.Equal(t, ExitUsage, code)
		assert.Empty(t, stdout)
		assert.Contains(t, stderr, tc.want)
		assert.Equal(t, 1, strings.Count(stderr, "\n"), "one line: %q", stderr)
	}
}

// Counts read as English: 1 problem, 1 tape, 1 file, 1 model call.
func TestPlurals(t *testing.T) {
	dir := t.TempDir()
	bad := writeBytes(t, dir, "bad.json", []byte(`{"version": 1}`))
	_, _, stderr := runVerbForTest(t, "compare", bad, bad)
	assert.Regexp(t, `is not a valid tape \(\d+ problems?\)`, stderr)
	assert.NotContains(t, stderr, "(1 problems)")
	code, stdout, stderr := runVerbForTest(t, "export", "--to", "sts", "--out", filepath.Join(dir, "sts"), filepath.Join("..", "testdata", "replay", "codex.json"))
	assert.Equal(t, ExitOK, code, stderr)
	assert.Contains(t, stdout, "exported 1 tape to sts: ")
	assert.Equal(t, "1 problem", plural(1, "problem"))
	assert.Equal(t, "2 problems", plural(2, "problem"))
	assert.Equal(t, "complete", endedText("complete", ""), "no trailing space")
	assert.Equal(t, "cut: simulator stopped", endedText("cut", "simulator stopped"), "as the tape and compare say it")
}

// compare warns when the two tapes look like runs of different things, and not for a
// recording and its replay, nor for a tape beside itself.
func TestCompareUnrelatedWarns(t *testing.T) {
	cc, cx := filepath.Join("..", "testdata", "replay", "claude-code.json"), filepath.Join("..", "testdata", "replay", "codex.json")
	_, _, stderr := runVerbForTest(t, "compare", cc, cx)
	assert.Contains(t, stderr, "tapebox compare: warning: "+cc+" and "+cx+" look like runs of different things (harness claude-code vs codex; another task; another opening prompt)")
	for _, pair := range [][2]string{
		{filepath.Join("..", "viewer", "testdata", "claude-code.json"), filepath.Join("..", "viewer", "testdata", "claude-code.replay.json")},
		{cc, cc},
	} {
		_, _, stderr = runVerbForTest(t, "compare", pair[0], pair[1])
		assert.NotContains(t, stderr, "warning", "%v", pair)
	}
}

// replay --tape DIR points at corpus mode.
func TestReplayTapeDirectory(t *testing.T) {
	dir := filepath.Join("..", "testdata", "replay")
	code, _, stderr := runVerbForTest(t, "replay", "--tape", dir, "--sandbox", "local")
	assert.Equal(t, ExitUsage, code)
	assert.Contains(t, stderr, "--tape "+dir+" is a directory: replay every tape in it with --corpus "+dir)
}

// dataset export --license takes only ids some list has.
func TestLicenseChecked(t *testing.T) {
	code, _, stderr := runVerbForTest(t, "dataset", "export", "--license", "not-a-license", "--out", t.TempDir(), filepath.Join("..", "testdata", "replay"))
	assert.Equal(t, ExitUsage, code)
	assert.Contains(t, stderr, `"not-a-license" is neither`)
}
