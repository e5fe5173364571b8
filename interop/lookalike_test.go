package interop

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestImportLookalikes plants, per importer, files that look like its format (the lines
// or fields detection and the reader key on) but hold the conversation where it does not
// read it: each must be refused with the file and line (and the field's JSON pointer) or
// with "nothing recognized", under --from FORMAT and auto, never imported as an empty tape.
// Each comes with a control: the same file made readable imports with a model call.
func TestImportLookalikes(t *testing.T) {
	const ts = `"timestamp":"2026-01-01T00:00:00Z"`
	cxMeta := `{` + ts + `,"type":"session_meta","payload":{"id":"x","cwd":"/w"}}`
	piHead := `{"type":"session","version":3,"id":"4f1d","timestamp":"2026-01-01T00:00:00Z","cwd":"/w"}`
	gmHead := `{"sessionId":"e1","projectHash":"9e","startTime":"2026-01-01T00:00:00Z","lastUpdated":"2026-01-01T00:00:00Z","kind":"main"}`
	ocExport := func(userParts, asstParts string) string {
		return `{"info":{"id":"ses_01JABCDEFGHJKMNPQRSTVWXYZ0","directory":"/w","time":{"created":1,"updated":2}},"messages":[` +
			`{"info":{"id":"msg_01JABCDEFGHJKMNPQRSTVWXYZ1","sessionID":"ses_01JABCDEFGHJKMNPQRSTVWXYZ0","role":"user","time":{"created":1}},"parts":` + userParts + `},` +
			`{"info":{"id":"msg_01JABCDEFGHJKMNPQRSTVWXYZ2","sessionID":"ses_01JABCDEFGHJKMNPQRSTVWXYZ0","role":"assistant","modelID":"m","providerID":"anthropic","time":{"created":2}},"parts":` + asstParts + `}]}`
	}
	for _, c := range []struct {
		name, format, file string
		lines              []string
		want               string // after the file's path
		control            []string
	}{
		{"codex message with parts", "codex", "rollout-x.jsonl",
			[]string{cxMeta, `{` + ts + `,"type":"response_item","payload":{"type":"message","role":"user","parts":[{"text":"hi"}]}}`},
			":2: /payload/content: missing",
			[]string{cxMeta, `{` + ts + `,"type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"hi"}]}}`,
				`{` + ts + `,"type":"response_item","payload":{"type":"message","role":"assistant","content":[{"type":"output_text","text":"hello"}]}}`}},
		{"codex message with string content", "codex", "rollout-x.jsonl",
			[]string{cxMeta, `{` + ts + `,"type":"response_item","payload":{"type":"message","role":"assistant","content":"hello"}}`},
			":2: /payload/content: a string, not a list of content parts", nil},
		{"codex unknown items", "codex", "rollout-x.jsonl",
			[]string{cxMeta, `{` + ts + `,"type":"response_item","payload":{"type":"chat","role":"user","text":"hi"}}`, `{` + ts + `,"type":"response_item","payload":{"type":"chat","role":"assistant","text":"hello"}}`},
			": no message item (a response_item of type message) and no model output: nothing recognized", nil},
		{"pi message with parts", "pi", "s.jsonl",
			[]string{piHead, `{"type":"message","id":"a1","parentId":null,` + ts + `,"message":{"role":"user","content":"hi"}}`, `{"type":"message","id":"a2","parentId":"a1",` + ts + `,"message":{"role":"assistant","parts":[{"text":"hello"}],"model":"m"}}`},
			":3: /message/content: missing",
			[]string{piHead, `{"type":"message","id":"a1","parentId":null,` + ts + `,"message":{"role":"user","content":"hi"}}`, `{"type":"message","id":"a2","parentId":"a1",` + ts + `,"message":{"role":"assistant","content":[{"type":"text","text":"hello"}],"api":"anthropic-messages","provider":"anthropic","model":"m"}}`}},
		{"pi empty answers", "pi", "s.jsonl",
			[]string{piHead, `{"type":"message","id":"a1","parentId":null,` + ts + `,"message":{"role":"user","content":"hi"}}`, `{"type":"message","id":"a2","parentId":"a1",` + ts + `,"message":{"role":"assistant","content":[],"model":"m"}}`},
			": no assistant message has content (/message/content) or an error (/message/errorMessage): nothing recognized", nil},
		{"pi unknown entries", "pi", "s.jsonl",
			[]string{piHead, `{"type":"entry","id":"a1","parentId":null,` + ts + `,"data":{"role":"assistant","text":"hello"}}`},
			": no assistant message", nil},
		{"gemini-cli message field", "gemini-cli", "session-x.jsonl",
			[]string{gmHead, `{"id":"b1",` + ts + `,"type":"user","message":{"role":"user","content":"hi"}}`, `{"id":"b2",` + ts + `,"type":"gemini","message":{"role":"assistant","content":"hello"},"model":"g"}`},
			":2: message b1: /content: missing",
			[]string{gmHead, `{"id":"b1",` + ts + `,"type":"user","content":[{"text":"hi"}]}`, `{"id":"b2",` + ts + `,"type":"gemini","content":"hello","model":"g"}`}},
		{"gemini-cli set message without content", "gemini-cli", "session-x.jsonl",
			[]string{gmHead, `{"$set":{"messages":[{"id":"b1",` + ts + `,"type":"user","content":"hi"},{"id":"b2",` + ts + `,"type":"gemini","text":"hello"}]}}`},
			":2: message b2: /$set/messages/1/content: missing", nil},
		{"gemini-cli empty answers", "gemini-cli", "session-x.jsonl",
			[]string{gmHead, `{"id":"b1",` + ts + `,"type":"user","content":"hi"}`, `{"id":"b2",` + ts + `,"type":"gemini","content":"","model":"g"}`},
			": no model message has content, thoughts or tool calls", nil},
		{"opencode unknown parts", "opencode", "s.json",
			[]string{ocExport(`[{"type":"chat","body":"hi"}]`, `[{"type":"chat","body":"hello"}]`)},
			": no assistant message has a text, reasoning or tool part (/messages/N/parts/M/type), nor an error (/messages/N/info/error): nothing recognized",
			[]string{ocExport(`[{"type":"text","text":"hi"}]`, `[{"type":"text","text":"hello"}]`)}},
		{"opencode no parts", "opencode", "s.json",
			[]string{ocExport(`[]`, `[{"type":"step-start"},{"type":"step-finish"}]`)},
			": no assistant message has a text, reasoning or tool part", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), c.file)
			require.NoError(t, os.WriteFile(p, []byte(strings.Join(c.lines, "\n")+"\n"), 0o644))
			for _, f := range []Format{Format(c.format), Auto} {
				tapes, err := Import(f, p)
				require.Error(t, err, "--from %s", f)
				assert.Nil(t, tapes)
				assert.Contains(t, err.Error(), p+c.want, "--from %s", f)
			}
			if c.control == nil {
				return
			}
			require.NoError(t, os.WriteFile(p, []byte(strings.Join(c.control, "\n")+"\n"), 0o644))
			for _, f := range []Format{Format(c.format), Auto} {
				tapes, err := Import(f, p)
				require.NoError(t, err, "control, --from %s", f)
				require.Len(t, tapes, 1)
				assert.True(t, anyAnswer(tapes[0].Threads[0].Steps), "control, --from %s", f)
			}
		})
	}
}
