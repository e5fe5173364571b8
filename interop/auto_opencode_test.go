package interop

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// copyFixture copies testdata file name into dir (made if missing) as to.
func copyFixture(t *testing.T, name, dir, to string) string {
	t.Helper()
	b, err := os.ReadFile(name)
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll(dir, 0o755))
	p := filepath.Join(dir, to)
	require.NoError(t, os.WriteFile(p, b, 0o644))
	return p
}

// TestImportAutoOpenCode: the real opencode exports (testdata/opencode, printed by
// opencode export) in a folder beside a Gemini CLI session file, its logs.json, and a chat
// export of another tool shaped like OpenCode's ({"info":…,"messages":[…]}) import with
// --from auto: the exports as --from opencode reads them (the subagent's session a
// thread of its parent's), the Gemini CLI session as --from gemini-cli; the other JSON is
// left alone. Named by path, the near miss is an error naming the file and the formats
// tried; a broken export in a folder is an error naming the file and the field.
func TestImportAutoOpenCode(t *testing.T) {
	dir := t.TempDir()
	copyFixture(t, filepath.Join(openCodeFixtures, "session.json"), filepath.Join(dir, "opencode"), "ses_main.json")
	copyFixture(t, filepath.Join(openCodeFixtures, "subagent.json"), filepath.Join(dir, "opencode"), "ses_sub.json")
	project := filepath.Join(dir, "gemini", "9ec4f3a1")
	copyFixture(t, geminiFixture, filepath.Join(project, "chats"), "session-2026-12-07T19-02-e131915c.jsonl")
	require.NoError(t, os.WriteFile(filepath.Join(project, "logs.json"), []byte(`[{"sessionId":"e131915c","messageId":0,"type":"user","message":"hi","timestamp":"2026-12-07T19:02:46.359Z"}]`), 0o644))
	nearMiss := filepath.Join(dir, "other", "chat.json")
	require.NoError(t, os.MkdirAll(filepath.Dir(nearMiss), 0o755))
	require.NoError(t, os.WriteFile(nearMiss, []byte(`{"info":{"id":"chat_01","title":"x"},"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"hello"}]}`), 0o644))

	tapes, err := Import(Auto, dir)
	require.NoError(t, err)
	var from []string
	for _, tp := range tapes {
		from = append(from, tp.Meta.Labels[LabelImportedFrom])
	}
	sort.Strings(from)
	assert.Equal(t, []string{"gemini-cli", "opencode"}, from, "the near miss and logs.json are not read")
	want, err := Import(OpenCode, filepath.Join(openCodeFixtures))
	require.NoError(t, err)
	for _, tp := range tapes {
		if tp.Meta.Labels[LabelImportedFrom] != string(OpenCode) {
			continue
		}
		want[0].Meta.Labels[LabelSource] = "ses_main.json"
		assert.Equal(t, want[0], tp, "auto reads the exports as --from opencode does")
		require.Len(t, tp.Threads, 2, "the subagent's session is a thread of its parent's tape")
	}
	gem, err := Import(GeminiCLI, geminiFixture)
	require.NoError(t, err)
	for _, tp := range tapes {
		if tp.Meta.Labels[LabelImportedFrom] == string(GeminiCLI) {
			assert.Equal(t, gem[0].Threads, tp.Threads, "auto reads the Gemini CLI session as --from gemini-cli does")
		}
	}

	// Each export named by path, whatever its name, is told too.
	for _, name := range []string{"session.json", "subagent.json"} {
		p := copyFixture(t, filepath.Join(openCodeFixtures, name), t.TempDir(), "export.txt")
		f, err := Detect(p)
		require.NoError(t, err, name)
		assert.Equal(t, OpenCode, f, name)
	}
	// A compact export (jq -c) on one line is told too.
	var v any
	b, err := os.ReadFile(filepath.Join(openCodeFixtures, "session.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &v))
	compact, err := json.Marshal(v)
	require.NoError(t, err)
	p := filepath.Join(t.TempDir(), "compact.jsonl")
	require.NoError(t, os.WriteFile(p, append(compact, '\n'), 0o644))
	f, err := Detect(p)
	require.NoError(t, err)
	assert.Equal(t, OpenCode, f)

	// The near miss named by path: an error naming the file, what was tried, and why.
	_, err = Import(Auto, nearMiss)
	require.Error(t, err)
	assert.Equal(t, "import: "+nearMiss+":1: not a session file of a format auto knows (tried Claude Code, Codex, Gemini CLI, Pi and STS by the first line, OpenCode by the whole file): its first line: none of Claude Code's, Codex's, Gemini CLI's, Pi's or STS's; as an OpenCode export: /info/id: \"chat_01\" is not an OpenCode session id (ses_…)", err.Error())

	// A folder of other JSON only: the error says none was an export.
	_, err = Import(Auto, filepath.Dir(nearMiss))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "no session files (*.jsonl, or OpenCode exports *.json) under "+filepath.Dir(nearMiss)+": 1 .json file(s) there are not OpenCode exports ("+nearMiss+")")

	// A cut-off export in the folder claims to be one: the import stops, naming it.
	cut := filepath.Join(dir, "opencode", "ses_cut.json")
	require.NoError(t, os.WriteFile(cut, b[:len(b)/2], 0o644))
	tapes, err = Import(Auto, dir)
	require.Error(t, err)
	assert.Nil(t, tapes)
	assert.Contains(t, err.Error(), cut+":1: not a session file of a format auto knows")
	assert.Contains(t, err.Error(), "as an OpenCode export: not a JSON object: unexpected end of JSON input")
}

// TestDetectOpenCodeNearMisses: every required field of the real export, removed or
// changed in turn (at every message, for fields of messages), makes the file not an
// OpenCode export, and the error names the field by its JSON pointer; so does every
// other tool's shape tried. The unchanged export is one.
func TestDetectOpenCodeNearMisses(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(openCodeFixtures, "session.json"))
	require.NoError(t, err)
	require.NoError(t, checkOpenCodeExport(b))
	fresh := func() map[string]any {
		var v map[string]any
		require.NoError(t, json.Unmarshal(b, &v))
		return v
	}
	msgs := len(fresh()["messages"].([]any))
	require.Equal(t, 8, msgs)
	type edit struct {
		pointer string
		change  func(v map[string]any)
	}
	info := func(v map[string]any) map[string]any { return v["info"].(map[string]any) }
	msg := func(v map[string]any, i int) map[string]any { return v["messages"].([]any)[i].(map[string]any) }
	msgInfo := func(v map[string]any, i int) map[string]any { return msg(v, i)["info"].(map[string]any) }
	edits := []edit{
		{"/info: missing", func(v map[string]any) { delete(v, "info") }},
		{"/info: not an object", func(v map[string]any) { v["info"] = []any{} }},
		{"/info/id: missing", func(v map[string]any) { delete(info(v), "id") }},
		{"/info/id: not a string", func(v map[string]any) { info(v)["id"] = 7 }},
		{`/info/id: "ses_" is not an OpenCode session id (ses_…)`, func(v map[string]any) { info(v)["id"] = "ses_" }},
		{"/messages: missing", func(v map[string]any) { delete(v, "messages") }},
		{"/messages: not an array", func(v map[string]any) { v["messages"] = map[string]any{} }},
		{"/messages: not an array", func(v map[string]any) { v["messages"] = nil }},
	}
	for i := range msgs {
		at := fmt.Sprintf("/messages/%d", i)
		edits = append(edits,
			edit{at + ": not an object", func(v map[string]any) { v["messages"].([]any)[i] = "x" }},
			edit{at + "/info: missing", func(v map[string]any) { delete(msg(v, i), "info") }},
			edit{at + "/info/id: missing", func(v map[string]any) { delete(msgInfo(v, i), "id") }},
			edit{at + `/info/id: "prt_0123456789" is not an OpenCode message id (msg_…)`, func(v map[string]any) { msgInfo(v, i)["id"] = "prt_0123456789" }},
			edit{at + "/info/sessionID: missing", func(v map[string]any) { delete(msgInfo(v, i), "sessionID") }},
			edit{at + `/info/sessionID: "ses_other12345", not the session's id "ses_dae1c6218ffelqdmEFteYlUJTV"`, func(v map[string]any) { msgInfo(v, i)["sessionID"] = "ses_other12345" }},
			edit{at + "/info/role: missing", func(v map[string]any) { delete(msgInfo(v, i), "role") }},
			edit{at + `/info/role: "system": neither user nor assistant`, func(v map[string]any) { msgInfo(v, i)["role"] = "system" }},
			edit{at + "/parts: missing", func(v map[string]any) { delete(msg(v, i), "parts") }},
			edit{at + "/parts: not an array", func(v map[string]any) { msg(v, i)["parts"] = "text" }},
			edit{at + "/parts/0: not an object", func(v map[string]any) { msg(v, i)["parts"].([]any)[0] = 1 }},
			edit{at + "/parts/0/type: missing", func(v map[string]any) { delete(msg(v, i)["parts"].([]any)[0].(map[string]any), "type") }},
		)
	}
	dir := t.TempDir()
	for k, e := range edits {
		v := fresh()
		e.change(v)
		data, err := json.MarshalIndent(v, "", "  ")
		require.NoError(t, err)
		p := filepath.Join(dir, fmt.Sprintf("e%d.json", k))
		require.NoError(t, os.WriteFile(p, data, 0o644))
		_, err = Detect(p)
		require.Error(t, err, e.pointer)
		assert.True(t, strings.HasSuffix(err.Error(), "as an OpenCode export: "+e.pointer), "%s\n%v", e.pointer, err)
		assert.True(t, strings.HasPrefix(err.Error(), p+":1: "), err.Error())
	}
	t.Logf("%d near misses of the real export, each refused naming its field", len(edits))

	// Other tools' exports and JSON files a session folder holds: none is OpenCode's.
	for _, other := range []string{
		`{"info":{"id":"chat_01"},"messages":[{"role":"user","content":"hi"}]}`,
		`{"info":{"id":"ses_abcdefgh1234"},"messages":[{"role":"user","content":"hi"}]}`,
		`{"id":"ses_abcdefgh1234","messages":[]}`,
		`{"info":{"id":"ses_abcdefgh1234"}}`,
		`[{"sessionId":"x","messageId":0,"type":"user","message":"hi"}]`,
		`null`, `"ses_abcdefgh1234"`, ``,
	} {
		p := filepath.Join(t.TempDir(), "x.json")
		require.NoError(t, os.WriteFile(p, []byte(other), 0o644))
		f, err := Detect(p)
		assert.Error(t, err, "%s detected as %s", other, f)
	}
}

// TestClaimsOpenCode: a JSON file claims to be an OpenCode export when it begins as one (an
// object whose info, after messages at most, names a ses_ id), however much of it is cut
// off after the id; other JSON does not (a key of another name first), nor does a random
// cut of anything.
func TestClaimsOpenCode(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(openCodeFixtures, "session.json"))
	require.NoError(t, err)
	dir := t.TempDir()
	write := func(data []byte) string {
		p := filepath.Join(dir, "c.json")
		require.NoError(t, os.WriteFile(p, data, 0o644))
		return p
	}
	assert.True(t, claimsOpenCode(write(b)))
	idEnd := bytes.Index(b, []byte(`"ses_dae1c6218ffelqdmEFteYlUJTV"`)) + len(`"ses_dae1c6218ffelqdmEFteYlUJTV"`)
	for n := idEnd; n <= len(b); n += 97 {
		assert.True(t, claimsOpenCode(write(b[:n])), "cut at %d of %d", n, len(b))
	}
	for n := 0; n < idEnd-1; n += 7 {
		assert.False(t, claimsOpenCode(write(b[:n])), "cut at %d, before the id ends", n)
	}
	assert.True(t, claimsOpenCode(write([]byte(`{"messages":[{"info":{"id":"msg_1"}}],"info":{"title":"t","model":{"id":"m"},"id":"ses_abc"}}`))), "keys sorted")
	for _, other := range []string{
		`{"messages":[],"x":{"info":1},"info":{"id":"ses_abc"}}`, `{"version":1,"meta":{},"info":{"id":"ses_abc"}}`,
		`{"info":{"id":"chat_01"},"messages":[]}`, `{"info":{"model":{"id":"ses_x"}}}`, `{"x":{"info":{"id":"ses_x"}}}`,
		`[{"info":{"id":"ses_x"}}]`, `{"info":["id","ses_x"]}`, `{"info":{"id":1}}`, `{}`, ``, `ses_`,
	} {
		assert.False(t, claimsOpenCode(write([]byte(other))), other)
	}
	rng := rand.New(rand.NewPCG(33, 4))
	for range 200 {
		junk := make([]byte, rng.IntN(64))
		for i := range junk {
			junk[i] = `{}[]":,ses_info id`[rng.IntN(18)]
		}
		claimsOpenCode(write(junk)) // never panics, never hangs
	}
}

// BenchmarkClaimsOpenCode: what telling a folder's JSON files costs ImportAuto, for a 1 MB
// tape (not an export: its first key tells) and the real export.
func BenchmarkClaimsOpenCode(b *testing.B) {
	for _, c := range []struct {
		name, path string
		want       bool
	}{{"tape", "../viewer/testdata/claude-code.json", false}, {"export", filepath.Join(openCodeFixtures, "session.json"), true}} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				if claimsOpenCode(c.path) != c.want {
					b.Fatal(c.path)
				}
			}
		})
	}
}
