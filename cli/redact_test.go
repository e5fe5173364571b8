package cli

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/tape"
	"github.com/tapebox/tapebox/tape/seal"
)

// randomToken is n characters of [A-Za-z0-9] from a seeded generator: a planted secret
// nobody picked.
func randomToken(r *rand.Rand, n int) string {
	const alnum = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	b := make([]byte, n)
	for i := range b {
		b[i] = alnum[r.IntN(len(alnum))]
	}
	return string(b)
}

// TestRedact (issue 30, finding 9): secrets planted in a sealed recording's prompt (raw and
// normalized, in every request), in a header and in a stream chunk, and a --pattern, are
// removed; protocol ids matching a pattern are left; meta.redactions names rule and pointer
// and never the value; the digests verify again; scan finds nothing; and the redacted tape
// still replays IDENTICAL on the local sandbox.
func TestRedact(t *testing.T) {
	r := rand.New(rand.NewPCG(30, 9))
	github := "ghp_" + randomToken(r, 36)
	aws := "AKIA" + strings.ToUpper(randomToken(r, 16))
	marker := "ACME-" + strings.Repeat("7", 6)
	const prompt = "Make docs, patch them, wait for a slow command."
	data, err := os.ReadFile(filepath.Join("..", "testdata", "replay", "codex.json"))
	require.NoError(t, err)
	require.Contains(t, string(data), prompt)
	data = bytes.ReplaceAll(data, []byte(prompt), []byte(prompt+" My token is "+github+" and the key "+aws+", ticket "+marker+"."))
	tp, err := tape.Unmarshal(data)
	require.NoError(t, err)
	s0 := tp.Threads[0].Steps[0]
	s0.Request.Headers["x-debug-token"] = github
	require.NotEmpty(t, s0.Response.Chunks)
	s0.Response.Chunks[0].Data = strings.Replace(s0.Response.Chunks[0].Data, "data: {", `data: {"note":"ticket `+marker+`",`, 1)
	require.Contains(t, s0.Response.Chunks[0].Data, marker)
	require.NoError(t, seal.Tape(tp, nil))
	dir := t.TempDir()
	planted := filepath.Join(dir, "planted.json")
	require.NoError(t, tape.Save(planted, tp))
	before, err := os.ReadFile(planted)
	require.NoError(t, err)
	ids := strings.Count(string(before), "call_fake_main_0_0")
	require.Positive(t, ids)

	code, stdout, _ := runVerbForTest(t, "scan", planted)
	require.Equal(t, ExitFailure, code, "the planted secrets are found: %s", stdout)
	require.Contains(t, stdout, "github-pat")
	scanFound := strings.Contains(stdout, "aws-access-token")

	red := filepath.Join(dir, "redacted.json")
	code, stdout, stderr := runVerbForTest(t, "redact", "-o", red, "--pattern", `ACME-[0-9]{6}`, "--pattern", "call_fake_main_0_0", planted)
	require.Equal(t, ExitOK, code, stderr)
	require.Contains(t, stdout, "digests sealed again")
	after, err := os.ReadFile(red)
	require.NoError(t, err)
	for _, secret := range []string{github, marker, github[4:20]} {
		require.False(t, strings.Contains(string(after), secret), "%s is still in the tape", secret[:8])
	}
	require.Equal(t, ids, strings.Count(string(after), "call_fake_main_0_0"), "protocol ids are left alone")
	require.Contains(t, string(after), "REDACTED")
	if scanFound {
		require.False(t, strings.Contains(string(after), aws), "the AWS key the scan found is still in the tape")
	}

	got, err := tape.LoadFile(red)
	require.NoError(t, err)
	require.NotEmpty(t, got.Meta.Redactions)
	rules := map[string]bool{}
	for _, x := range got.Meta.Redactions {
		rules[x.Rule] = true
		require.True(t, strings.HasPrefix(x.Pointer, "/threads/0/steps/"), x.Pointer)
	}
	require.True(t, rules["pattern:ACME-[0-9]{6}"], "%v", rules)
	require.False(t, rules["pattern:call_fake_main_0_0"], "no id was removed: %v", rules)
	require.Greater(t, len(rules), 1, "the scan's rules are recorded too: %v", rules)
	require.Contains(t, got.Meta.Redactions, tape.Redaction{Rule: "pattern:ACME-[0-9]{6}", Pointer: "/threads/0/steps/0/response/chunks/0/data"})

	code, _, stderr = runVerbForTest(t, "scan", red)
	require.Equal(t, ExitOK, code, stderr)
	code, stdout, stderr = runVerbForTest(t, "verify", "--require-digests", red)
	require.Equal(t, ExitOK, code, stdout+stderr)
	code, _, stderr = runVerbForTest(t, "validate", red)
	require.Equal(t, ExitOK, code, stderr)

	// It replays as the recording did.
	code, stdout, stderr = runVerbForTest(t, "replay", "--tape", red, "--sandbox", "local:"+t.TempDir(), "--speed", "0", "--check")
	require.Equal(t, ExitOK, code, stdout+stderr)
	require.Contains(t, stdout, ": IDENTICAL")

	// A tampered input is refused (redacting would seal the change).
	tampered := bytes.Replace(before, []byte(`"output_tokens":`), []byte(`"output_tokens":1`), 1)
	require.NotEqual(t, before, tampered)
	tpath := filepath.Join(dir, "tampered.json")
	require.NoError(t, os.WriteFile(tpath, tampered, 0o644))
	code, _, stderr = runVerbForTest(t, "redact", "-o", filepath.Join(dir, "x.json"), tpath)
	require.Equal(t, ExitFailure, code)
	require.Contains(t, stderr, "--allow-tampered")
}
