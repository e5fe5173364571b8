package interop

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// qwenSample is a session file the real Qwen Code 0.24.4 wrote (recorded against a fake
// provider with a fake key): its entries look like Claude Code's, its messages hold
// Gemini-style parts.
const qwenSample = "testdata/qwen/session.jsonl"

func TestQwenSampleHoldsNoSecret(t *testing.T) {
	b, err := os.ReadFile(qwenSample)
	require.NoError(t, err)
	for _, s := range []string{"sk-", "Bearer", "api_key", "apiKey", "OPENAI_API_KEY", "x-api-key"} {
		assert.NotContains(t, string(b), s)
	}
	assert.Contains(t, string(b), `"parts"`, "the sample is Qwen's Gemini-style messages")
}

func TestAutoRefusesQwenSession(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "chats", "1a2b.jsonl")
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	b, err := os.ReadFile(qwenSample)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(p, b, 0o644))

	_, err = Detect(p)
	require.Error(t, err)
	assert.Contains(t, err.Error(), p+":1: not a session file of a format auto knows")
	assert.Contains(t, err.Error(), "its line 1 is not one: /message/content: missing, and /message/parts holds Gemini-style parts")

	for _, path := range []string{p, dir} {
		tapes, err := Import(Auto, path)
		require.Error(t, err, path)
		assert.Nil(t, tapes)
		assert.Contains(t, err.Error(), p+":1: ", path)
	}

	// Where the first user/assistant entry is further down, the error names its line.
	lines := strings.SplitAfter(string(b), "\n")
	late := filepath.Join(dir, "late.jsonl")
	require.NoError(t, os.WriteFile(late, []byte(lines[1]+lines[2]+lines[0]), 0o644))
	_, err = Detect(late)
	require.Error(t, err)
	assert.Contains(t, err.Error(), late+":3: ")
	assert.Contains(t, err.Error(), "/message/parts")

	// Qwen's other tells, alone: a tool_result entry, a message whose role is model.
	for _, c := range []struct{ line, want string }{
		{`{"type":"tool_result","uuid":"u2","sessionId":"s","message":{"role":"user","content":"x"}}`, `/type: "tool_result"`},
		{`{"type":"assistant","uuid":"u2","sessionId":"s","message":{"role":"model","content":"x"}}`, `/message/role: "model"`},
		// Spaced JSON: maybeLookalike's quick test must not let these by.
		{`{"type": "assistant", "uuid": "u2", "sessionId": "s", "message": {"role": "model", "content": "x"}}`, `/message/role: "model"`},
		{`{"type": "user", "uuid": "u2", "sessionId": "s", "message": {"role": "user", "parts": [{"text": "x"}]}}`, `/message/parts holds Gemini-style parts`},
	} {
		f := filepath.Join(t.TempDir(), "s.jsonl")
		require.NoError(t, os.WriteFile(f, []byte(`{"type":"user","uuid":"u","sessionId":"s","message":{"role":"user","content":"hi"}}`+"\n"+c.line+"\n"), 0o644))
		_, err := Detect(f)
		require.Error(t, err, c.line)
		assert.Contains(t, err.Error(), f+":2: ")
		assert.Contains(t, err.Error(), c.want)
	}
}

func TestClaudeCodeRefusesQwenSession(t *testing.T) {
	tapes, err := Import(ClaudeCode, qwenSample)
	require.Error(t, err)
	assert.Nil(t, tapes)
	assert.Contains(t, err.Error(), "import claude-code: "+qwenSample+":1: /message/content: missing, and /message/parts holds Gemini-style parts")
}

// TestClaudeCodeUnreadableMessages: a Claude Code lookalike whose user/assistant messages
// the importer cannot read is an error naming the file, the line and the field, never an
// empty complete tape.
func TestClaudeCodeUnreadableMessages(t *testing.T) {
	user := `{"type":"user","uuid":"u","sessionId":"s","message":{"role":"user","content":"hi"}}`
	for _, c := range []struct{ lines, line, want string }{
		{user + "\n" + `{"type":"assistant","uuid":"a","sessionId":"s","message":{"role":"assistant","text":"hello"}}`, ":2: ", "/message/content: missing"},
		{`{"type":"user","uuid":"u","sessionId":"s","message":{"role":"user","parts":[{"text":"hi"}]}}`, ":1: ", "/message/content: missing, and /message/parts"},
		{user + "\n" + `{"type":"assistant","uuid":"a","sessionId":"s","message":{"role":"assistant","content":{"text":"x"}}}`, ":2: ", "/message/content: an object, not a string or a list of blocks"},
		{user + "\n" + `{"type":"assistant","uuid":"a","sessionId":"s","message":"hello"}`, ":2: ", "/message: not an object"},
		{user + "\n" + `{"type":"assistant","uuid":"a","sessionId":"s","message":{"role":"assistant","content":[]}}`, ": ", "no assistant message has content (/message/content)"},
		{user, ": ", "no assistant message"},
	} {
		p := filepath.Join(t.TempDir(), "s.jsonl")
		require.NoError(t, os.WriteFile(p, []byte(c.lines+"\n"), 0o644))
		for _, f := range []Format{ClaudeCode, Auto} {
			tapes, err := Import(f, p)
			require.Error(t, err, "%s: %s", f, c.lines)
			assert.Nil(t, tapes)
			assert.Contains(t, err.Error(), p+c.line, c.lines)
			assert.Contains(t, err.Error(), c.want, c.lines)
		}
	}
	// The control: the same file with content imports.
	p := filepath.Join(t.TempDir(), "s.jsonl")
	require.NoError(t, os.WriteFile(p, []byte(user+"\n"+`{"type":"assistant","uuid":"a","sessionId":"s","message":{"id":"m","role":"assistant","model":"claude-x","content":[{"type":"text","text":"hello"}]}}`+"\n"), 0o644))
	tapes, err := Import(ClaudeCode, p)
	require.NoError(t, err)
	require.Len(t, tapes, 1)
	assert.Equal(t, "hello", tapes[0].Threads[0].Steps[0].Response.Content[0].Text)
}
