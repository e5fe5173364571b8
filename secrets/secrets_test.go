package secrets

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/tape"
)

// goldenTapes are the recorded tapes of the repository's testdata.
func goldenTapes(t testing.TB) []string {
	t.Helper()
	var paths []string
	for _, pattern := range []string{"../testdata/*.json", "../testdata/replay/*.json"} {
		m, err := filepath.Glob(pattern)
		require.NoError(t, err)
		paths = append(paths, m...)
	}
	require.GreaterOrEqual(t, len(paths), 8, "golden tapes")
	return paths
}

func TestGoldenTapesHaveNoFindings(t *testing.T) {
	for _, r := range ScanFiles(t.Context(), goldenTapes(t)) {
		require.NoError(t, r.Err)
		assert.Empty(t, r.Findings, "%s", r.Path)
	}
}

func kindNamed(t *testing.T, name string) secretKind {
	t.Helper()
	for _, k := range secretKinds {
		if k.name == name {
			return k
		}
	}
	t.Fatalf("no secret kind %q", name)
	return secretKind{}
}

// fake returns the first secret of kind name from a generator seeded with seed.
func fake(t *testing.T, name string, seed uint64) string {
	return kindNamed(t, name).gen(rand.New(rand.NewPCG(seed, 1)))[0]
}

// smallTape is a recording with one step of each kind of content.
func smallTape() *tape.Tape {
	tp := tape.New(tape.ProviderAnthropic, time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	tp.Meta.TapeID = "0123456789abcdef0123456789abcdef"
	tp.Threads = []*tape.Thread{{ID: "main", Steps: []*tape.Step{{
		Request: tape.Request{
			Path:    "/v1/messages",
			Headers: tape.Headers{"anthropic-version": "2023-06-01", "x-api-key": tape.Redacted},
			Raw:     json.RawMessage(`{"model":"claude-sonnet-4-5","messages":[{"role":"user","content":[{"type":"text","text":"hello"}]}]}`),
		},
		Response: tape.Response{
			Status:  200,
			Headers: tape.Headers{"request-id": "req_011CVbB5nmzH3y6bS4uXdqPq"},
			Chunks:  []tape.Chunk{{AtMS: 1, Data: "event: ping\ndata: {\"type\":\"ping\"}\n\n"}},
		},
		ToolCalls:   []tape.ToolCall{{ID: "toolu_01ABCDEFGHJKLMNPQRSTUVWX", Name: "Bash", Input: json.RawMessage(`{"command":"ls"}`)}},
		ToolResults: []tape.ToolResult{{ToolCallID: "toolu_01ABCDEFGHJKLMNPQRSTUVWX", Content: []tape.Block{{Type: tape.BlockText, Text: "a.txt"}}}},
	}}}}
	return tp
}

func TestScanFindsEachPlace(t *testing.T) {
	anthropic := fake(t, "anthropic", 1)
	google := fake(t, "google-api-key", 2)
	password := fake(t, "password", 3)
	pem := fake(t, "rsa-private-key", 4)
	tests := []struct {
		name    string
		plant   func(s *tape.Step, tp *tape.Tape)
		pointer string
		offset  int
		rule    string
		preview string
		length  int // 0: the preview's secret, whole
	}{
		{
			name:    "inside the raw request body",
			plant:   func(s *tape.Step, _ *tape.Tape) { s.Request.Raw = rawWithText("my key is " + anthropic) },
			pointer: "/threads/0/steps/0/request/raw/messages/0/content/0/text", offset: 10,
			rule: "anthropic-api-key", preview: "sk-a…",
		},
		{
			name:    "query string",
			plant:   func(s *tape.Step, _ *tape.Tape) { s.Request.Path = "/v1/models?key=" + google + "&alt=sse" },
			pointer: "/threads/0/steps/0/request/path", offset: 15, rule: "gcp-api-key", preview: "AIza…",
		},
		{
			name:    "header named like a key",
			plant:   func(s *tape.Step, _ *tape.Tape) { s.Request.Headers["x-db-password"] = password },
			pointer: "/threads/0/steps/0/request/headers/x-db-password", rule: "generic-api-key", preview: password[:4] + "…",
		},
		{
			name: "tool input",
			plant: func(s *tape.Step, _ *tape.Tape) {
				s.ToolCalls[0].Input = json.RawMessage(`{"command":"export ANTHROPIC_API_KEY=` + anthropic + `"}`)
			},
			pointer: "/threads/0/steps/0/tool_calls/0/input/command", offset: 25, rule: "anthropic-api-key", preview: "sk-a…",
		},
		{
			name:    "tool result",
			plant:   func(s *tape.Step, _ *tape.Tape) { s.ToolResults[0].Content[0].Text = "$ cat id_rsa\n" + pem },
			pointer: "/threads/0/steps/0/tool_results/0/content/0/text", offset: 13, rule: "private-key", preview: "----…",
		},
		{
			name: "stream chunk",
			plant: func(s *tape.Step, _ *tape.Tape) {
				s.Response.Chunks[0].Data = `data: {"delta":{"text":"` + anthropic + `"}}` + "\n\n"
			},
			pointer: "/threads/0/steps/0/response/chunks/0/data", offset: 24, rule: "anthropic-api-key", preview: "sk-a…",
		},
		{
			name:    "meta",
			plant:   func(_ *tape.Step, tp *tape.Tape) { tp.Meta.Labels["note"] = anthropic },
			pointer: "/meta/labels/note", rule: "anthropic-api-key", preview: "sk-a…",
		},
		{
			name: "base64 in a tool result",
			plant: func(s *tape.Step, _ *tape.Tape) {
				s.ToolResults[0].Content[0].Text = "data:\n  value: " + base64.StdEncoding.EncodeToString([]byte(anthropic)) + "\nkind: Secret"
			},
			pointer: "/threads/0/steps/0/tool_results/0/content/0/text", offset: 15, rule: "anthropic-api-key", preview: "sk-a…",
			length: base64.StdEncoding.EncodedLen(len(anthropic)),
		},
		{
			name:    "a vendor key in a protocol id field is still found",
			plant:   func(s *tape.Step, _ *tape.Tape) { s.ToolCalls[0].ID = anthropic },
			pointer: "/threads/0/steps/0/tool_calls/0/id", rule: "anthropic-api-key", preview: "sk-a…",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tp := smallTape()
			tt.plant(tp.Threads[0].Steps[0], tp)
			got, err := Scan(t.Context(), tp)
			require.NoError(t, err)
			n := tt.length
			if n == 0 {
				for _, secret := range []string{anthropic, google, password, pem} {
					if preview(secret) == tt.preview {
						n = len(secret)
					}
				}
			}
			want := []Finding{{Pointer: tt.pointer, Offset: tt.offset, Rule: tt.rule, Preview: tt.preview, Secret: 1, Length: n}}
			assert.Equal(t, want, got)
		})
	}
}

func rawWithText(text string) json.RawMessage {
	b, _ := json.Marshal(map[string]any{"model": "m", "messages": []any{
		map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": text}}},
	}})
	return b
}

func TestProtocolFieldsAreNotFindings(t *testing.T) {
	uuid := "019a2b3c-4d5e-7f60-8a9b-0c1d2e3f4a5b"
	sig := "Eu8BCkYIBxgCKkB" + strings.Repeat("kV3JvbmdTaWduYXR1cmVGb3JUZXN0cw", 8)
	tests := []struct {
		name, doc string
	}{
		{"prompt cache key", `{"prompt_cache_key":"` + uuid + `"}`},
		{"tool_use_id", `{"tool_use_id":"toolu_01XFDUDYJgAACzvnptvVoYEL"}`},
		{"call id", `{"call_id":"call_a8f3K2mQx9LpR4vT7wYz1Bc"}`},
		{"parent pair", `{"parent":["main","toolu_01XFDUDYJgAACzvnptvVoYEL"]}`},
		{"thinking signature", `{"type":"thinking","thinking":"hm","signature":"` + sig + `"}`},
		{"encrypted reasoning", `{"type":"reasoning","encrypted_content":"gAAAAABo` + strings.Repeat("x7Kq_9-Zb", 40) + `"}`},
		{"digest", `{"workspace":{"sha256":"` + strings.Repeat("3f9a1c", 10) + `d2e4"}}`},
		{"vendor key in an opaque field", `{"signature":"` + fake(t, "anthropic", 9) + `"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Default()
			require.NoError(t, err)
			got, err := s.ScanJSON(t.Context(), strings.NewReader(tt.doc))
			require.NoError(t, err)
			assert.Empty(t, got)
		})
	}
	// The same uuid under a key-like name of no protocol is a finding: the allowlist is by
	// field, not by value.
	s, err := Default()
	require.NoError(t, err)
	got, err := s.ScanJSON(t.Context(), strings.NewReader(`{"x-upstream-key":"`+uuid+`"}`))
	require.NoError(t, err)
	assert.Len(t, got, 1)
}

func TestSameSecretIsReportedAtEachPlace(t *testing.T) {
	key, other := fake(t, "github-pat", 1), fake(t, "github-pat", 2)
	tp := smallTape()
	s := tp.Threads[0].Steps[0]
	s.Request.Raw = rawWithText("token " + key)
	s.ToolResults[0].Content[0].Text = "GITHUB_TOKEN=" + other + "\nGH_TOKEN=" + key
	got, err := Scan(t.Context(), tp)
	require.NoError(t, err)
	want := []Finding{
		{Pointer: "/threads/0/steps/0/request/raw/messages/0/content/0/text", Offset: 6, Rule: "github-pat", Preview: "ghp_…", Secret: 1, Length: len(key)},
		{Pointer: "/threads/0/steps/0/tool_results/0/content/0/text", Offset: 13, Rule: "github-pat", Preview: "ghp_…", Secret: 2, Length: len(other)},
		{Pointer: "/threads/0/steps/0/tool_results/0/content/0/text", Offset: 13 + len(other) + 10, Rule: "github-pat", Preview: "ghp_…", Secret: 1, Length: len(key)},
	}
	assert.Equal(t, want, got)
}

func TestPointerEscaping(t *testing.T) {
	s, err := Default()
	require.NoError(t, err)
	doc := `{"a/b":{"m~n":["x","` + fake(t, "npm", 1) + `"]}}`
	got, err := s.ScanJSON(t.Context(), strings.NewReader(doc))
	require.NoError(t, err)
	require.Len(t, got, 1)
	assert.Equal(t, "/a~1b/m~0n/1", got[0].Pointer)
}

func TestFindingsNeverHoldTheSecret(t *testing.T) {
	key := fake(t, "openai", 1)
	tp := smallTape()
	tp.Threads[0].Steps[0].ToolResults[0].Content[0].Text = "OPENAI_API_KEY=" + key
	got, err := Scan(t.Context(), tp)
	require.NoError(t, err)
	require.Len(t, got, 1)
	b, err := json.Marshal(got)
	require.NoError(t, err)
	assert.NotContains(t, string(b), key[:12])
	assert.NotContains(t, got[0].String(), key[:12])
	assert.Equal(t, "sk-p…", got[0].Preview)
}

func TestPreview(t *testing.T) {
	for in, want := range map[string]string{
		"abcdefghij": "abcd…",
		"abcdef":     "abc…",
		"ab":         "a…",
		"":           "…",
		"ééééééé":    "ééé…",
	} {
		assert.Equal(t, want, preview(in), "%q", in)
	}
}

func TestScanJSONErrors(t *testing.T) {
	s, err := Default()
	require.NoError(t, err)
	key := fake(t, "gitlab-pat", 1)
	tests := []struct {
		name, doc, err string
		found          int
	}{
		{"empty", "", "empty input", 0},
		{"not JSON", "{\n nope", "invalid character", 0},
		{"truncated after a secret", `{"a":"` + key + `","b":[1,`, "unexpected EOF", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := s.ScanJSON(t.Context(), strings.NewReader(tt.doc))
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.err)
			assert.Len(t, got, tt.found)
		})
	}
}

func TestScanStopsWhenContextIsDone(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err := ScanFile(ctx, goldenTapes(t)[0])
	assert.ErrorIs(t, err, context.Canceled)
}

func TestCheck(t *testing.T) {
	dir := t.TempDir()
	clean := filepath.Join(dir, "clean.json")
	require.NoError(t, tape.Save(clean, smallTape()))
	dirty := filepath.Join(dir, "dirty.json")
	tp := smallTape()
	hf := fake(t, "huggingface", 1)
	tp.Threads[0].Steps[0].Request.Headers["x-custom-key"] = hf
	require.NoError(t, tape.Save(dirty, tp))
	broken := filepath.Join(dir, "broken.json")
	require.NoError(t, os.WriteFile(broken, []byte("{"), 0o644))

	assert.NoError(t, Check(t.Context(), clean))
	assert.NoError(t, Check(t.Context()))

	err := Check(t.Context(), clean, dirty)
	var found *FoundError
	require.ErrorAs(t, err, &found)
	require.Len(t, found.Findings, 1)
	assert.Equal(t, dirty, found.Findings[0].File)
	assert.Equal(t, "1 secret finding in 1 tape\n  "+dirty+": /threads/0/steps/0/request/headers/x-custom-key: huggingface-access-token: "+hf[:4]+"…", err.Error())

	err = Check(t.Context(), broken, clean)
	require.Error(t, err)
	assert.False(t, errors.As(err, &found))
	assert.Contains(t, err.Error(), "scan "+broken)

	err = Check(t.Context(), filepath.Join(dir, "absent.json"))
	assert.ErrorIs(t, err, os.ErrNotExist)
}

func TestFoundErrorListsAtMostTen(t *testing.T) {
	var fs []Finding
	for i := range 12 {
		fs = append(fs, Finding{File: "t" + string(rune('a'+i%3)) + ".json", Pointer: "/meta/labels/x", Rule: "jwt", Preview: "eyJh…", Secret: 1})
	}
	msg := (&FoundError{Findings: fs}).Error()
	lines := strings.Split(msg, "\n")
	assert.Equal(t, "12 secret findings in 3 tapes", lines[0])
	assert.Len(t, lines, 12)
	assert.Equal(t, "  … and 2 more (tapebox scan lists them all)", lines[11])
}
