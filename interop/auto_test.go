package interop

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestImportAuto: a folder laid out as a Hub Traces dataset, with Claude Code sessions
// (and a subagent's sidechain), Codex rollouts and STS files side by side, imports whole,
// each file read in its own format; a file of none of them stops the import, naming it.
func TestImportAuto(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		tape   string
		format Format
		under  string
	}{{"claude-code.json", ClaudeCode, "claude_code"}, {"codex.json", Codex, "codex"}, {"codex.json", STS, "sts"}} {
		files, err := Export(loadTestTape(t, c.tape), c.format, Options{})
		require.NoError(t, err)
		writeFiles(t, filepath.Join(dir, "sessions", c.under), files)
	}
	tapes, err := Import(Auto, dir)
	require.NoError(t, err)
	var from []string
	for _, tp := range tapes {
		from = append(from, tp.Meta.Labels[LabelImportedFrom])
		if tp.Meta.Labels[LabelImportedFrom] == string(ClaudeCode) {
			assert.Len(t, tp.Threads, 2, "the subagent's sidechain is read with its session")
		}
	}
	sort.Strings(from)
	assert.Equal(t, []string{"claude-code", "codex", "sts"}, from)

	// A Pi session beside them (as ~/.pi/agent/sessions lays it out) imports with them.
	pi, err := os.ReadFile(piFixture)
	require.NoError(t, err)
	piDir := filepath.Join(dir, "sessions", "pi", "--home-u-proj--")
	require.NoError(t, os.MkdirAll(piDir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(piDir, "2026-11-30T10-00-00-000Z_4f1d2c3b.jsonl"), pi, 0o644))
	tapes, err = Import(Auto, dir)
	require.NoError(t, err)
	from = nil
	for _, tp := range tapes {
		from = append(from, tp.Meta.Labels[LabelImportedFrom])
		if tp.Meta.Labels[LabelImportedFrom] == string(Pi) {
			assert.Len(t, tp.Threads[0].Steps, 3)
			assert.Equal(t, "pi", tp.Meta.Harness)
		}
	}
	sort.Strings(from)
	assert.Equal(t, []string{"claude-code", "codex", "pi", "sts"}, from)

	odd := filepath.Join(dir, "sessions", "notes.jsonl")
	require.NoError(t, os.WriteFile(odd, []byte(`{"note":"not a session"}`+"\n"), 0o644))
	tapes, err = Import(Auto, dir)
	require.Error(t, err)
	assert.Nil(t, tapes)
	assert.Contains(t, err.Error(), odd+":1: not a session file of a format auto knows (tried Claude Code, Codex, Gemini CLI, Pi and STS by the first line, OpenCode by the whole file): its first line: none of Claude Code's, Codex's, Gemini CLI's, Pi's or STS's; as an OpenCode export: /info: missing")
	require.NoError(t, os.Remove(odd))

	// A bad line in a file of a known format: the error names the format once, then FILE:LINE.
	bad := filepath.Join(dir, "sessions", "claude_code", "broken.jsonl")
	require.NoError(t, os.WriteFile(bad, []byte(`{"type":"user","uuid":"u","sessionId":"s","message":{"role":"user","content":"hi"}}`+"\nnot json\n"), 0o644))
	tapes, err = Import(Auto, dir)
	require.Error(t, err)
	assert.Nil(t, tapes)
	assert.True(t, strings.HasPrefix(err.Error(), "import claude-code: "+bad+":2: "), err.Error())
}

func TestDetect(t *testing.T) {
	for _, c := range []struct {
		line string
		want Format
	}{
		{`{"type":"session","harness":"x","id":"1"}`, STS},
		{`{"timestamp":"2026-01-01T00:00:00Z","type":"session_meta","payload":{"id":"x"}}`, Codex},
		{`{"timestamp":"2026-01-01T00:00:00Z","type":"response_item","payload":{}}`, Codex},
		{`{"type":"user","uuid":"u","sessionId":"s","message":{}}`, ClaudeCode},
		{`{"type":"summary","summary":"x","leafUuid":"u"}`, ClaudeCode},
		{`{"type":"file-history-snapshot","messageId":"m","snapshot":{}}`, ClaudeCode},
		{`{"type":"session","version":3,"id":"4f1d","timestamp":"2026-01-01T00:00:00Z","cwd":"/w"}`, Pi},
		{`{"type":"session","id":"x","cwd":"/w","harness":"h"}`, STS},
		{`{"type":"session","id":"no harness"}`, ""},
		{`[1,2]`, ""},
	} {
		p := filepath.Join(t.TempDir(), "s.jsonl")
		require.NoError(t, os.WriteFile(p, []byte("\n"+c.line+"\n"), 0o644))
		got, err := Detect(p)
		if c.want == "" {
			require.Error(t, err, c.line)
			assert.Contains(t, err.Error(), p+":2: ")
			continue
		}
		require.NoError(t, err, c.line)
		assert.Equal(t, c.want, got, c.line)
	}
}
