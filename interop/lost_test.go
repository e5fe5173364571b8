package interop

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestImportNamesLosses: what a session file holds and a tape's normalized form has no
// place for (thinking signatures, encrypted reasoning, the tools a tool_search_output
// loads) is counted in meta.labels; a session without any has no such label.
func TestImportNamesLosses(t *testing.T) {
	claude := `{"type":"user","uuid":"u1","sessionId":"s1","cwd":"/w","message":{"role":"user","content":"hi"}}
{"type":"assistant","uuid":"a1","parentUuid":"u1","sessionId":"s1","message":{"id":"msg_1","role":"assistant","model":"claude-x","content":[{"type":"thinking","thinking":"hmm","signature":"EqQBCkYIBxgCKkD"}]}}
{"type":"assistant","uuid":"a2","parentUuid":"a1","sessionId":"s1","message":{"id":"msg_1","role":"assistant","model":"claude-x","content":[{"type":"text","text":"hello"}],"stop_reason":"end_turn"}}
`
	codex := `{"timestamp":"2026-01-01T00:00:00Z","type":"session_meta","payload":{"id":"01a2-3","cwd":"/w","cli_version":"1"}}
{"timestamp":"2026-01-01T00:00:01Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"hi"}]}}
{"timestamp":"2026-01-01T00:00:02Z","type":"response_item","payload":{"type":"reasoning","summary":[{"type":"summary_text","text":"hmm"}],"encrypted_content":"gAAAAB"}}
{"timestamp":"2026-01-01T00:00:02Z","type":"response_item","payload":{"type":"tool_search_call","call_id":"ts1","status":"completed","execution":"client","arguments":{"query":"x"}}}
{"timestamp":"2026-01-01T00:00:03Z","type":"response_item","payload":{"type":"tool_search_output","call_id":"ts1","status":"completed","execution":"client","tools":[{"type":"namespace","name":"multi_agent_v1","tools":[]}]}}
{"timestamp":"2026-01-01T00:00:04Z","type":"response_item","payload":{"type":"reasoning","summary":[],"encrypted_content":"gAAAAC"}}
{"timestamp":"2026-01-01T00:00:04Z","type":"response_item","payload":{"type":"message","role":"assistant","content":[{"type":"output_text","text":"hello"}]}}
`
	for _, c := range []struct {
		format      Format
		name, data  string
		lost, plain string
	}{
		{ClaudeCode, "s1.jsonl", claude, LostThinkingSignature + " (1)", `"signature":"EqQBCkYIBxgCKkD"`},
		{Codex, "rollout-2026-01-01T00-00-00-01a2-3.jsonl", codex, LostEncryptedReasoning + " (2), " + LostToolSearchTools + " (1)", `"encrypted_content":"gAAAAB"`},
	} {
		t.Run(string(c.format), func(t *testing.T) {
			dir := t.TempDir()
			p := filepath.Join(dir, c.name)
			require.NoError(t, os.WriteFile(p, []byte(c.data), 0o644))
			tapes, err := Import(c.format, p)
			require.NoError(t, err)
			require.Len(t, tapes, 1)
			assert.Equal(t, c.lost, tapes[0].Meta.Labels[LabelLost])
			// The tool_search_call is kept whole, for a synthesized stream to send back.
			if c.format == Codex {
				require.NotEmpty(t, tapes[0].Threads[0].Steps)
				assert.Contains(t, string(tapes[0].Threads[0].Steps[0].Response.Content[1].Raw), `"type":"tool_search_call"`)
			}
			// Without what is lost, nothing is said.
			plain := filepath.Join(t.TempDir(), c.name)
			data := c.data
			for _, cut := range []string{c.plain, `"encrypted_content":"gAAAAC"`, `"tools":[{"type":"namespace","name":"multi_agent_v1","tools":[]}]`} {
				data = strings.Replace(data, ","+cut, "", 1)
			}
			require.NoError(t, os.WriteFile(plain, []byte(data), 0o644))
			tapes, err = Import(c.format, plain)
			require.NoError(t, err)
			_, ok := tapes[0].Meta.Labels[LabelLost]
			assert.False(t, ok, "no %s label: %v", LabelLost, tapes[0].Meta.Labels)
		})
	}
}
