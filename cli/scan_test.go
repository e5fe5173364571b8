package cli

import (
	"encoding/json"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/tape"
)

// fakeToken returns prefix and n random letters and digits, made at run time so that no
// literal in the source has a key's shape.
func fakeToken(seed uint64, prefix string, n int) string {
	const set = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	r := rand.New(rand.NewPCG(seed, 0))
	b := []byte(prefix)
	for range n {
		b = append(b, set[r.IntN(len(set))])
	}
	return string(b)
}

func TestScan(t *testing.T) {
	dir := t.TempDir()
	clean := writeTape(t, dir, "clean.json", inspectTestTape())
	a, b := fakeToken(1, "gh"+"p_", 36), fakeToken(2, "gh"+"p_", 36)
	tp := inspectTestTape()
	main := tp.Threads[0]
	main.Steps[0].ToolResults[0].Content[0].Text = "GITHUB_TOKEN=" + a
	main.Steps[1].Request.Headers = tape.Headers{"x-custom-key": b}
	main.Steps[1].Request.Raw = json.RawMessage(`{"messages":[{"role":"user","content":"use ` + a + `"}]}`)
	dirty := writeTape(t, dir, "dirty.json", tp)
	broken := writeBytes(t, dir, "broken.json", []byte(`{"version":1,`))

	tests := []struct {
		name      string
		args      []string
		code      int
		stdout    []string // the whole output, line by line
		stderrHas string
	}{
		{name: "clean", args: []string{clean}, code: ExitOK, stdout: nil, stderrHas: "tapebox scan: no secrets in 1 tape"},
		{name: "golden tapes", args: []string{"../testdata"}, code: ExitOK, stderrHas: "no secrets in 10 tapes"},
		{
			name: "places of one secret together", args: []string{clean, dirty}, code: ExitFailure,
			stdout: []string{
				dirty + ": /threads/0/steps/0/tool_results/0/content/0/text: github-pat: ghp_…",
				dirty + ": /threads/0/steps/1/request/raw/messages/0/content: github-pat: ghp_…",
				dirty + ": /threads/0/steps/1/request/headers/x-custom-key: github-pat: ghp_…",
			},
			stderrHas: "tapebox scan: 3 findings of 2 secrets in 1 of 2 tapes",
		},
		{
			name: "unreadable", args: []string{broken}, code: ExitFailure,
			stdout:    []string{broken + ": read JSON: unexpected EOF"},
			stderrHas: "tapebox scan: 1 of 1 tapes could not be scanned",
		},
		{
			name: "findings and an unreadable file", args: []string{dirty, broken}, code: ExitFailure,
			stdout: []string{
				dirty + ": /threads/0/steps/0/tool_results/0/content/0/text: github-pat: ghp_…",
				dirty + ": /threads/0/steps/1/request/raw/messages/0/content: github-pat: ghp_…",
				dirty + ": /threads/0/steps/1/request/headers/x-custom-key: github-pat: ghp_…",
				broken + ": read JSON: unexpected EOF",
			},
			stderrHas: "tapebox scan: 3 findings of 2 secrets in 1 of 2 tapes; 1 of 2 tapes could not be scanned",
		},
		{name: "no files", args: nil, code: ExitUsage, stderrHas: "want at least one tape file or directory"},
		{name: "absent", args: []string{filepath.Join(dir, "absent.json")}, code: ExitFailure, stderrHas: "no such file or directory"},
		{name: "bad flag", args: []string{"--nope", clean}, code: ExitUsage},
		{name: "help", args: []string{"--help"}, code: ExitOK, stdout: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := runVerbForTest(t, append([]string{"scan"}, tt.args...)...)
			assert.Equal(t, tt.code, code, "stderr: %s", stderr)
			if tt.name != "help" {
				var lines []string
				if stdout != "" {
					lines = strings.Split(strings.TrimSuffix(stdout, "\n"), "\n")
				}
				assert.Equal(t, tt.stdout, lines)
			} else {
				assert.True(t, strings.HasPrefix(stdout, "Usage: tapebox scan [--json] FILE|DIR..."), stdout)
			}
			assert.Contains(t, stderr, tt.stderrHas)
			assert.NotContains(t, stdout+stderr, a[:8])
			assert.NotContains(t, stdout+stderr, b[:8])
		})
	}
}

func TestScanJSON(t *testing.T) {
	dir := t.TempDir()
	key := fakeToken(3, "np"+"m_", 36)
	tp := inspectTestTape()
	tp.Meta.Labels["note"] = key
	dirty := writeTape(t, dir, "dirty.json", tp)
	clean := writeTape(t, dir, "clean.json", inspectTestTape())

	// Flags may follow the files, as in dataset export.
	code, stdout, _ := runVerbForTest(t, "scan", dirty, clean, "--json")
	assert.Equal(t, ExitFailure, code)
	var got []struct {
		File     string `json:"file"`
		Findings []struct {
			Pointer string `json:"pointer"`
			Offset  int    `json:"offset"`
			Rule    string `json:"rule"`
			Preview string `json:"preview"`
			Secret  int    `json:"secret"`
		} `json:"findings"`
		Error string `json:"error"`
	}
	require.NoError(t, json.Unmarshal([]byte(stdout), &got), stdout)
	require.Len(t, got, 2)
	assert.Equal(t, dirty, got[0].File)
	require.Len(t, got[0].Findings, 1)
	f := got[0].Findings[0]
	assert.Equal(t, "/meta/labels/note", f.Pointer)
	assert.Equal(t, "npm-access-token", f.Rule)
	assert.Equal(t, key[:4]+"…", f.Preview)
	assert.Equal(t, 1, f.Secret)
	assert.Equal(t, clean, got[1].File)
	assert.Empty(t, got[1].Findings)
	assert.NotContains(t, stdout, "null", "findings is [] rather than null")
	assert.NotContains(t, stdout, key[:8])
}
