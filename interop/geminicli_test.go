package interop

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/schema"
	"github.com/tapebox/tapebox/tape"
)

// geminiFixture is the session file real Gemini CLI 0.61.0 wrote for test/e2e's gemini-cli
// case (tapebox record against the fake provider): eight model calls, parallel calls, an
// edit, a failing command, a file that is not there, a refused command.
const geminiFixture = "testdata/gemini-cli/session.jsonl"

// TestImportGeminiCLI reads the real session file: one tape of eight steps whose requests
// are the conversation as the CLI sent it (its session context and the prompt one user
// turn), whose calls keep the file's ids and whose results are the file's, an error where
// the CLI reported one.
func TestImportGeminiCLI(t *testing.T) {
	f, err := Detect(geminiFixture)
	require.NoError(t, err)
	assert.Equal(t, GeminiCLI, f)
	tapes, err := Import(Auto, geminiFixture)
	require.NoError(t, err)
	require.Len(t, tapes, 1)
	tp := tapes[0]
	assert.Equal(t, "gemini-cli", tp.Meta.Harness)
	assert.Equal(t, tape.ProviderGemini, tp.Meta.Provider)
	assert.Equal(t, "gemini-2.5-pro", tp.Meta.Model)
	assert.Equal(t, "/tmp/tapebox-rh-gemini", tp.Meta.Cwd, "the directory the CLI's session context names")
	assert.Equal(t, map[string]string{"session_id": "e131915c-c5f6-49cb-8d02-cf06be1e1b6b"}, tp.Meta.Task)
	assert.Equal(t, hexFrom(32, "gemini-cli", "e131915c-c5f6-49cb-8d02-cf06be1e1b6b"), tp.Meta.TapeID)
	assert.Equal(t, time.Date(2026, 12, 7, 19, 2, 46, 359e6, time.UTC), tp.Meta.StartedAt)
	assert.Equal(t, map[string]string{LabelImportedFrom: "gemini-cli", LabelForm: FormNormalized, LabelSource: "session.jsonl", LabelTiming: TimingEntries}, tp.Meta.Labels)
	require.Len(t, tp.Threads, 1)
	steps := tp.Main().Steps
	require.Len(t, steps, 8)
	var names []string
	for _, s := range steps {
		var n []string
		for _, c := range s.ToolCalls {
			n = append(n, c.Name)
		}
		names = append(names, strings.Join(n, "+"))
	}
	assert.Equal(t, []string{"write_file+run_shell_command", "replace", "run_shell_command", "list_directory+read_file+read_file", "write_file", "run_shell_command", "run_shell_command", ""}, names)
	assert.Equal(t, "write_file__write_file_1796670167015_0", steps[0].ToolCalls[0].ID, "the file's call id")
	assert.JSONEq(t, `{"content":"alpha\nbeta\ngamma\n","file_path":"/tmp/tapebox-rh-gemini/notes.txt"}`, string(steps[0].ToolCalls[0].Input))
	first := steps[0].Request.Messages
	require.Len(t, first, 1, "the session context and the prompt are one user turn")
	require.Len(t, first[0].Content, 2)
	assert.True(t, strings.HasPrefix(first[0].Content[0].Text, "<session_context>"))
	assert.Equal(t, "[rh-gemini] Keep notes, fail once, and count the lines.", first[0].Content[1].Text)
	assert.Equal(t, "Writing the notes and preparing logs.", steps[0].Response.Text())
	assert.Equal(t, "[rh-gemini] Keep notes, fail once, and count the lines.", prompt(tp.Main()), "the prompt, without the CLI's session context")
	_, _, traces, err := AgentTraces(tp, Options{})
	require.NoError(t, err)
	require.Len(t, traces, 1)
	require.NotNil(t, traces[0].Prompt)
	assert.Equal(t, "[rh-gemini] Keep notes, fail once, and count the lines.", *traces[0].Prompt, "the Hub's traces row names the prompt")
	assert.Equal(t, tape.Usage{InputTokens: 11989, OutputTokens: 47}, steps[0].Response.Usage)
	assert.Equal(t, "STOP", steps[0].Response.StopReason)
	require.Len(t, steps[3].ToolResults, 3)
	assert.Equal(t, "alpha\nBETA\ngamma\n", steps[3].ToolResults[1].Text())
	assert.Equal(t, "File not found: /tmp/tapebox-rh-gemini/missing.txt", steps[3].ToolResults[2].Text())
	assert.True(t, steps[3].ToolResults[2].IsError)
	assert.False(t, steps[2].ToolResults[0].IsError, "a failing command is an output")
	for i, s := range steps {
		assert.Len(t, s.Request.Messages, 2*i+1, "step %d's request: the prompt, then a call and its results per step before", i)
		assert.LessOrEqual(t, s.Timing.RequestAt, s.Timing.FirstByteAt, "step %d", i)
		if i > 0 {
			assert.GreaterOrEqual(t, s.Timing.RequestAt, steps[i-1].Timing.LastByteAt, "step %d", i)
		}
	}
	data, err := tape.Marshal(tp)
	require.NoError(t, err)
	require.NoError(t, schema.Validate(data), "the imported tape validates")
	require.NoError(t, Synthesize(tp))
	data, err = tape.Marshal(tp)
	require.NoError(t, err)
	require.NoError(t, schema.Validate(data), "the synthesized tape validates")
	chunks := tp.Main().Steps[0].Response.Chunks
	require.NotEmpty(t, chunks, "a synthesized stream")
	var all strings.Builder
	for _, c := range chunks {
		all.WriteString(c.Data)
	}
	assert.Contains(t, all.String(), `"functionCall"`)
	assert.Contains(t, all.String(), "Writing the notes and preparing logs.")
}

// TestGeminiCLIRoundTrip: the import of the real file, exported and imported again, makes
// the same conversation, calls, results and usage, under the same session id.
func TestGeminiCLIRoundTrip(t *testing.T) {
	tapes, err := Import(GeminiCLI, geminiFixture)
	require.NoError(t, err)
	tp := tapes[0]
	files, err := Export(tp, GeminiCLI, Options{})
	require.NoError(t, err)
	require.Len(t, files, 2)
	assert.Equal(t, "tapebox-rh-gemini/chats/session-2026-12-07T19-02-e131915c.jsonl", files[0].Path)
	assert.Equal(t, "main", files[0].Thread)
	assert.Equal(t, "tapebox-rh-gemini/.project_root", files[1].Path)
	assert.Equal(t, "/tmp/tapebox-rh-gemini", string(files[1].Data))
	dir := t.TempDir()
	for _, f := range files {
		p := filepath.Join(dir, filepath.FromSlash(f.Path))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, f.Data, 0o644))
	}
	back, err := Import(Auto, dir)
	require.NoError(t, err)
	require.Len(t, back, 1)
	assert.Equal(t, tp.Meta.Task, back[0].Meta.Task)
	assert.Equal(t, tp.Meta.TapeID, back[0].Meta.TapeID)
	assert.Equal(t, tp.Meta.Cwd, back[0].Meta.Cwd)
	require.Len(t, back[0].Main().Steps, len(tp.Main().Steps))
	for i, s := range tp.Main().Steps {
		b := back[0].Main().Steps[i]
		assert.Equal(t, s.Request.Messages, b.Request.Messages, "step %d request", i)
		assert.Equal(t, s.Response.Content, b.Response.Content, "step %d answer", i)
		assert.Equal(t, s.Response.Usage, b.Response.Usage, "step %d usage", i)
		assert.Equal(t, s.ToolCalls, b.ToolCalls, "step %d calls", i)
		assert.Equal(t, s.ToolResults, b.ToolResults, "step %d results", i)
	}
	// A recording's tape (no session id) gets one derived from its tape id.
	tp.Meta.Task = nil
	files, err = Export(tp, GeminiCLI, Options{})
	require.NoError(t, err)
	assert.Contains(t, files[0].Path, "-"+GeminiSessionID(tp)[:8]+".jsonl")
	assert.Contains(t, string(files[0].Data), `"sessionId":"`+GeminiSessionID(tp)+`"`)
}

// TestExportGeminiCLIRefuses: a tape of another wire format, and one without meta.cwd.
func TestExportGeminiCLIRefuses(t *testing.T) {
	tapes, err := Import(GeminiCLI, geminiFixture)
	require.NoError(t, err)
	tp := tapes[0]
	tp.Meta.Cwd = ""
	_, err = Export(tp, GeminiCLI, Options{})
	var me *MissingError
	require.ErrorAs(t, err, &me)
	assert.Equal(t, "meta.cwd", me.Missing)
	tp.Meta.Provider = tape.ProviderAnthropic
	_, err = Export(tp, GeminiCLI, Options{})
	assert.ErrorContains(t, err, "Gemini CLI sessions hold the Gemini API's contents")
}

// TestGeminiProject is Gemini CLI's project folder name (its registry's slugify).
func TestGeminiProject(t *testing.T) {
	for cwd, want := range map[string]string{"/tmp/tapebox-rh-gemini": "tapebox-rh-gemini", "/home/u/My Project!": "my-project", "/srv/__x__": "x", "/": "project", "": "project", "/a/..": "project"} {
		assert.Equal(t, want, GeminiProject(cwd), cwd)
	}
}

const geminiMeta = `{"sessionId":"s-1","projectHash":"h","startTime":"2026-12-01T10:00:00.000Z","lastUpdated":"2026-12-01T10:00:00.000Z","kind":"main"}`

func geminiLines(lines ...string) string {
	return strings.Join(append([]string{geminiMeta}, lines...), "\n") + "\n"
}

// TestImportGeminiCLINotices: info and error messages are counted lost, a rewind drops the
// messages from the one it names on, a message written again replaces the first in place.
func TestImportGeminiCLINotices(t *testing.T) {
	p := filepath.Join(t.TempDir(), "session-x.jsonl")
	require.NoError(t, os.WriteFile(p, []byte(geminiLines(
		`{"id":"u1","timestamp":"2026-12-01T10:00:01.000Z","type":"user","content":[{"text":"first"}]}`,
		`{"id":"g1","timestamp":"2026-12-01T10:00:02.000Z","type":"gemini","content":"draft","model":"m"}`,
		`{"id":"i1","timestamp":"2026-12-01T10:00:02.500Z","type":"info","content":"shown, never sent"}`,
		`{"id":"u2","timestamp":"2026-12-01T10:00:03.000Z","type":"user","content":"abandoned"}`,
		`{"id":"g2","timestamp":"2026-12-01T10:00:04.000Z","type":"gemini","content":"abandoned too","model":"m"}`,
		`{"$rewindTo":"u2"}`,
		`{"id":"g1","timestamp":"2026-12-01T10:00:02.000Z","type":"gemini","content":"final","model":"m","thoughts":[{"subject":"Plan","description":"think"}],"tokens":{"input":5,"output":2,"thoughts":3,"total":10}}`,
		`{"$set":{"lastUpdated":"2026-12-01T10:00:09.000Z"}}`,
	)), 0o644))
	tapes, err := Import(GeminiCLI, p)
	require.NoError(t, err)
	tp := tapes[0]
	assert.Equal(t, "info, warning and error messages (1), rewound messages (2)", tp.Meta.Labels[LabelLost])
	require.Len(t, tp.Main().Steps, 1)
	s := tp.Main().Steps[0]
	assert.Equal(t, []tape.Block{{Type: tape.BlockThinking, Text: "**Plan** think"}, {Type: tape.BlockText, Text: "final"}}, s.Response.Content)
	assert.Equal(t, tape.Usage{InputTokens: 5, OutputTokens: 5, ReasoningTokens: 3}, s.Response.Usage)
	assert.Equal(t, []tape.Message{{Role: "user", Content: []tape.Block{{Type: tape.BlockText, Text: "first"}}}}, s.Request.Messages)
	assert.Equal(t, time.Date(2026, 12, 1, 10, 0, 9, 0, time.UTC), tp.Meta.Ended.At)
	assert.Equal(t, json.RawMessage(`"m"`), s.Request.Params["model"])
}

// TestImportGeminiCLIErrors: a file that is not a Gemini CLI session file is an error naming
// the file, the line and what is wrong.
func TestImportGeminiCLIErrors(t *testing.T) {
	for _, tc := range []struct{ name, data, want string }{
		{"not JSON", geminiMeta + "\n{oops\n", ":2: not a JSON object"},
		{"message first", `{"id":"u","type":"user","content":"x"}` + "\n", ":1: a message before the session's metadata"},
		{"no metadata", "", "not a Gemini CLI session file"},
		{"an unknown record", geminiLines(`{"what":1}`), ":2: not a Gemini CLI session record"},
		{"an empty id", geminiLines(`{"id":"","type":"user"}`), ":2: a message with an empty id"},
		{"a $set message without id", geminiLines(`{"$set":{"messages":[{"type":"user"}]}}`), ":2: $set.messages[0]: a message without an id"},
		{"no model message", geminiLines(`{"id":"u","type":"user","content":"x"}`), "no model message"},
		{"a call without a name", geminiLines(`{"id":"g","type":"gemini","content":"","toolCalls":[{"id":"c"}]}`), ":2: message g: toolCalls[0]: a call without id or name"},
		{"content of another type", geminiLines(`{"id":"u","type":"user","content":7}`), ":2: message u: content: want a string or a list of parts"},
		{"a result of another type", geminiLines(`{"id":"g","type":"gemini","toolCalls":[{"id":"c","name":"n","result":7}]}`), "toolCalls[0].result: want a list of parts"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "session-x.jsonl")
			require.NoError(t, os.WriteFile(p, []byte(tc.data), 0o644))
			_, err := Import(GeminiCLI, p)
			require.Error(t, err)
			assert.Contains(t, err.Error(), p)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}
