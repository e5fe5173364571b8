package interop

import (
	"cmp"
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

const piFixture = "testdata/pi/session.jsonl"

func piText(s string) tape.Block { return tape.Block{Type: tape.BlockText, Text: s} }

// TestImportPi reads a hand-written Pi session (header, user string and list content, an
// assistant message with thinking, text and two parallel tool calls, their results (one an
// error), a model change, a compaction, a branch made from an earlier entry, an image) and
// checks the tape step by step: the import follows the branch ending at the file's last
// entry and names the entries of the other one as lost.
func TestImportPi(t *testing.T) {
	tapes, err := Import(Pi, piFixture)
	require.NoError(t, err)
	require.Len(t, tapes, 1)
	tp := tapes[0]

	assert.Equal(t, "pi", tp.Meta.Harness)
	assert.Equal(t, tape.ProviderAnthropic, tp.Meta.Provider)
	assert.Equal(t, "claude-sonnet-4-5", tp.Meta.Model)
	assert.Equal(t, "/home/u/proj", tp.Meta.Cwd)
	assert.Equal(t, map[string]string{"session_id": "4f1d2c3b-8a9e-4b7c-9d0e-1f2a3b4c5d6e"}, tp.Meta.Task)
	assert.Equal(t, hexFrom(32, "pi", "4f1d2c3b-8a9e-4b7c-9d0e-1f2a3b4c5d6e"), tp.Meta.TapeID)
	assert.Equal(t, time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC), tp.Meta.StartedAt)
	require.NotNil(t, tp.Meta.Ended)
	assert.Equal(t, tape.EndComplete, tp.Meta.Ended.Reason)
	assert.Equal(t, time.Date(2026, 11, 30, 10, 2, 30, 0, time.UTC), tp.Meta.Ended.At)
	assert.Equal(t, map[string]string{
		LabelImportedFrom: "pi",
		LabelForm:         FormNormalized,
		LabelSource:       "session.jsonl",
		LabelLost:         "entries of other branches (2), thinking signatures (1)",
	}, tp.Meta.Labels)

	require.Len(t, tp.Threads, 1)
	th := tp.Threads[0]
	assert.Equal(t, "main", th.ID)
	require.Len(t, th.Steps, 3, "the abandoned branch's assistant message is no step")

	prompt := tape.Message{Role: "user", Content: []tape.Block{piText("List the files and read the README.")}}
	answer0 := []tape.Block{
		{Type: tape.BlockThinking, Text: "Two things to do at once."},
		piText("I'll look."),
		{Type: tape.BlockToolUse, ID: "toolu_01", Name: "bash", Input: json.RawMessage(`{"command":"ls"}`)},
		{Type: tape.BlockToolUse, ID: "toolu_02", Name: "read", Input: json.RawMessage(`{"path":"README.md"}`)},
	}
	res1 := []tape.Block{piText("main.go\ngo.mod")}
	res2 := []tape.Block{piText("ENOENT: no such file or directory, open 'README.md'")}
	noReadme := []tape.Block{piText("There is no README; the files are main.go and go.mod.")}
	image := tape.Block{Type: tape.BlockImage, Raw: json.RawMessage(`{"source":{"data":"iVBORw0KGgo=","media_type":"image/png","type":"base64"},"type":"image"}`)}

	want := []struct {
		model    string
		messages []tape.Message
		content  []tape.Block
		stop     string
		usage    tape.Usage
		calls    []tape.ToolCall
		results  []tape.ToolResult
	}{
		{
			model:    "claude-sonnet-4-5",
			messages: []tape.Message{prompt},
			content:  answer0,
			stop:     "tool_use",
			usage:    tape.Usage{InputTokens: 120, OutputTokens: 48, CacheReadInputTokens: 1000, CacheCreationInputTokens: 64},
			calls: []tape.ToolCall{
				{ID: "toolu_01", Name: "bash", Input: json.RawMessage(`{"command":"ls"}`), Kind: "function"},
				{ID: "toolu_02", Name: "read", Input: json.RawMessage(`{"path":"README.md"}`), Kind: "function"},
			},
			results: []tape.ToolResult{{ToolCallID: "toolu_01", Content: res1}, {ToolCallID: "toolu_02", Content: res2, IsError: true}},
		},
		{
			model: "claude-sonnet-4-5",
			messages: []tape.Message{prompt, {Role: "assistant", Content: answer0}, {Role: "user", Content: []tape.Block{
				{Type: tape.BlockToolResult, ToolCallID: "toolu_01", Content: res1},
				{Type: tape.BlockToolResult, ToolCallID: "toolu_02", Content: res2, IsError: true},
			}}},
			content: noReadme,
			stop:    "end_turn",
			usage:   tape.Usage{InputTokens: 30, OutputTokens: 20, CacheReadInputTokens: 1200},
			calls:   []tape.ToolCall{},
			results: []tape.ToolResult{},
		},
		{
			// After the model change and the compaction: the summary, the entry the
			// compaction kept, then the new prompt with its image.
			model: "claude-opus-4-1",
			messages: []tape.Message{
				{Role: "user", Content: []tape.Block{piText(piCompactionPrefix + "Listed the files; there is no README." + piCompactionSuffix)}},
				{Role: "assistant", Content: noReadme},
				{Role: "user", Content: []tape.Block{piText("What is in this picture?"), image}},
			},
			content: []tape.Block{piText("A cat.")},
			stop:    "max_tokens",
			usage:   tape.Usage{InputTokens: 300, OutputTokens: 4},
			calls:   []tape.ToolCall{},
			results: []tape.ToolResult{},
		},
	}
	for i, w := range want {
		s := th.Steps[i]
		assert.Equal(t, "/v1/messages", s.Request.Path, "step %d", i)
		assert.JSONEq(t, `"`+w.model+`"`, string(s.Request.Params["model"]), "step %d model", i)
		assert.Equal(t, w.messages, s.Request.Messages, "step %d request messages", i)
		assert.Equal(t, w.content, s.Response.Content, "step %d response", i)
		assert.Equal(t, w.stop, s.Response.StopReason, "step %d stop reason", i)
		assert.Equal(t, w.usage, s.Response.Usage, "step %d usage", i)
		assert.Equal(t, w.calls, s.ToolCalls, "step %d calls", i)
		assert.Equal(t, w.results, s.ToolResults, "step %d results", i)
	}
	assert.Contains(t, strings.Join(calls(tp), "\n"), "toolu_02")

	data, err := tape.Marshal(tp)
	require.NoError(t, err)
	require.NoError(t, schema.Validate(data), "the imported tape validates")
	// Its exports read again: TestImportedArtifactsValidate.
	require.NoError(t, Synthesize(tp))
	data, err = tape.Marshal(tp)
	require.NoError(t, err)
	require.NoError(t, schema.Validate(data), "the synthesized tape validates")
}

// writePi writes a Pi session file of the given lines under dir.
func writePi(t *testing.T, dir string, lines ...string) string {
	t.Helper()
	p := filepath.Join(dir, "2026-11-30T10-00-00-000Z_4f1d2c3b.jsonl")
	require.NoError(t, os.WriteFile(p, []byte(strings.Join(lines, "\n")+"\n"), 0o644))
	return p
}

const (
	piHeader = `{"type":"session","version":3,"id":"s-1","timestamp":"2026-11-30T10:00:00.000Z","cwd":"/w"}`
	piUser   = `{"type":"message","id":"u1","parentId":null,"timestamp":"2026-11-30T10:00:01.000Z","message":{"role":"user","content":"hi"}}`
)

func piAssistant(id, parent, api, stop, content string) string {
	return `{"type":"message","id":"` + id + `","parentId":"` + parent + `","timestamp":"2026-11-30T10:00:02.000Z","message":{"role":"assistant","content":` + content +
		`,"api":"` + api + `","provider":"p","model":"m-1","usage":{"input":7,"output":3,"cacheRead":2,"cacheWrite":0,"totalTokens":12},"stopReason":"` + stop + `"}}`
}

func piResult(id, parent, call string) string {
	return `{"type":"message","id":"` + id + `","parentId":"` + parent + `","timestamp":"2026-11-30T10:00:03.000Z","message":{"role":"toolResult","toolCallId":"` + call + `","toolName":"bash","content":[{"type":"text","text":"ok"}],"isError":false}}`
}

const piCall = `[{"type":"toolCall","id":"call_1","name":"bash","arguments":{"command":"ls"}}]`

// TestImportPiProviders: the provider comes from the assistant messages' api, and with it
// the path, the stop reasons' words and the role of tool results; an api TapeBox has no
// adapter for leaves it unknown and says which in LabelHarnessAPI; an errored turn is a step
// but Pi does not send it again.
func TestImportPiProviders(t *testing.T) {
	for _, c := range []struct {
		api      string
		provider tape.Provider
		path     string
		stops    [2]string
		resRole  string
		label    string
		callID   string // the id Pi keeps of call_1
	}{
		{"openai-completions", tape.ProviderOpenAIChat, "/v1/chat/completions", [2]string{"tool_calls", "stop"}, "tool", "", "call_1"},
		// On Responses Pi keeps "<call_id>|<item id>"; the wire names the call by call_id.
		{"openai-responses", tape.ProviderOpenAIResponses, "/v1/responses", [2]string{"completed", "completed"}, "tool", "", "call_1|fc_1"},
		{"google-generative-ai", tape.ProviderUnknown, "", [2]string{"", ""}, "tool", "google-generative-ai (3)", "call_1"},
	} {
		t.Run(c.api, func(t *testing.T) {
			p := writePi(t, t.TempDir(), piHeader, piUser,
				piAssistant("a1", "u1", c.api, "toolUse", strings.Replace(piCall, `"call_1"`, `"`+c.callID+`"`, 1)),
				piResult("r1", "a1", c.callID),
				strings.Replace(piAssistant("a2", "r1", c.api, "error", `[]`), `"stopReason"`, `"errorMessage":"429 too many requests","stopReason"`, 1),
				piAssistant("a3", "a2", c.api, "stop", `[{"type":"text","text":"done"}]`))
			tapes, err := Import(Auto, p)
			require.NoError(t, err)
			require.Len(t, tapes, 1)
			tp := tapes[0]
			assert.Equal(t, c.provider, tp.Meta.Provider)
			assert.Equal(t, c.label, tp.Meta.Labels[LabelHarnessAPI])
			assert.Equal(t, "model call error messages (1)", tp.Meta.Labels[LabelLost])
			steps := tp.Threads[0].Steps
			require.Len(t, steps, 3)
			assert.Equal(t, c.path, steps[0].Request.Path)
			assert.Equal(t, c.stops[0], steps[0].Response.StopReason)
			assert.Equal(t, "", steps[1].Response.StopReason, "an error has no stop reason")
			assert.Equal(t, c.stops[1], steps[2].Response.StopReason)
			assert.Equal(t, tape.Usage{InputTokens: 7, OutputTokens: 3, CacheReadInputTokens: 2}, steps[2].Response.Usage)
			assert.Equal(t, []tape.ToolCall{{ID: "call_1", Name: "bash", Input: json.RawMessage(`{"command":"ls"}`), Kind: "function"}}, steps[0].ToolCalls)
			assert.Equal(t, []tape.ToolResult{{ToolCallID: "call_1", Content: []tape.Block{piText("ok")}}}, steps[0].ToolResults)
			msgs := steps[2].Request.Messages
			require.Len(t, msgs, 3, "the errored turn is not sent again")
			assert.Equal(t, []string{"user", "assistant", c.resRole}, []string{msgs[0].Role, msgs[1].Role, msgs[2].Role})
			assert.Equal(t, tape.BlockToolResult, msgs[2].Content[0].Type)
			assert.Equal(t, "call_1", msgs[2].Content[0].ToolCallID)
			data, err := tape.Marshal(tp)
			require.NoError(t, err)
			require.NoError(t, schema.Validate(data))
			if err := Synthesize(tp); c.provider != tape.ProviderOpenAIResponses {
				// Synthesize writes Anthropic and Responses streams only; it says why not.
				require.Error(t, err)
				assert.Contains(t, err.Error(), cmp.Or(c.label, string(c.provider)))
			} else {
				require.NoError(t, err)
			}
		})
	}
}

// TestImportPiBadInput: a broken line, a result of a call no earlier message made, a parent
// that is no entry, a file with no header: each fails the whole import, naming FILE:LINE,
// and gives no tape.
func TestImportPiBadInput(t *testing.T) {
	ok := []string{piHeader, piUser, piAssistant("a1", "u1", "anthropic-messages", "toolUse", piCall), piResult("r1", "a1", "call_1")}
	for _, c := range []struct {
		name  string
		lines []string
		want  string
	}{
		{"broken line", []string{piHeader, piUser, `{"type":"message","id":"x"`, ok[2]}, ":3: not a JSON object"},
		{"not an object", []string{piHeader, piUser, `"a string"`}, ":3: not a Pi session entry"},
		{"orphan result", append(ok[:3:3], piResult("r1", "a1", "call_9")), `:4: toolResult for "call_9", which no earlier assistant message of the branch called`},
		{"result on another branch", []string{piHeader, piUser, ok[2], piResult("r1", "u1", "call_1")}, `:4: toolResult for "call_1"`},
		{"unknown parent", append(ok[:3:3], piResult("r1", "zz", "call_1")), `:4: parentId "zz" names no entry of the file`},
		{"no header", ok[1:], ":1: not a Pi session header"},
		{"bad content", []string{piHeader, piUser, piAssistant("a1", "u1", "anthropic-messages", "stop", `"text"`)}, ":3: /message/content: want a list of blocks"},
		{"repeated id", []string{piHeader, piUser, strings.Replace(ok[2], `"a1"`, `"u1"`, 1)}, `:3: entry id "u1" repeats the id of line 2`},
		{"no model call", []string{piHeader, piUser}, "no assistant message"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			// A good session beside the bad one: nothing partial comes back.
			require.NoError(t, os.WriteFile(filepath.Join(dir, "a-good.jsonl"), []byte(strings.Join(ok, "\n")+"\n"), 0o644))
			p := writePi(t, dir, c.lines...)
			for _, f := range []Format{Pi, Auto} {
				if f == Auto && c.name == "no header" {
					continue // auto takes it for another format
				}
				tapes, err := Import(f, dir)
				require.Error(t, err, "--from %s", f)
				assert.Nil(t, tapes)
				assert.Contains(t, err.Error(), "import pi: ")
				if strings.HasPrefix(c.want, ":") {
					assert.Contains(t, err.Error(), p+c.want, "--from %s", f)
				} else {
					assert.Contains(t, err.Error(), c.want)
				}
			}
		})
	}
	// The good file alone imports.
	dir := t.TempDir()
	tapes, err := Import(Pi, writePi(t, dir, ok...))
	require.NoError(t, err)
	require.Len(t, tapes, 1)
}

// TestImportPiContext: what else Pi sends the model (as its convertToLlm writes it) is in
// the next step's request: a user's ! command with its exit code, an extension's message,
// a branch summary, a custom message; not a !! command, nor an aborted turn, which is still
// a step of its own. An entry of a type Pi 0.73 does not write is counted lost.
func TestImportPiContext(t *testing.T) {
	msg := func(id, parent, m string) string {
		return `{"type":"message","id":"` + id + `","parentId":"` + parent + `","timestamp":"2026-11-30T10:00:02.000Z","message":` + m + `}`
	}
	p := writePi(t, t.TempDir(), piHeader, piUser,
		piAssistant("a1", "u1", "anthropic-messages", "stop", `[{"type":"text","text":"hello"}]`),
		msg("b1", "a1", `{"role":"bashExecution","command":"make","output":"boom","exitCode":2,"cancelled":false,"truncated":false}`),
		msg("b2", "b1", `{"role":"bashExecution","command":"ls","output":"secret-ish","exitCode":0,"cancelled":false,"truncated":false,"excludeFromContext":true}`),
		`{"type":"custom_message","id":"c1","parentId":"b2","timestamp":"2026-11-30T10:00:03.000Z","customType":"ext","content":"injected","display":true}`,
		`{"type":"branch_summary","id":"s1","parentId":"c1","timestamp":"2026-11-30T10:00:04.000Z","fromId":"a1","summary":"tried X"}`,
		`{"type":"future_thing","id":"f1","parentId":"s1","timestamp":"2026-11-30T10:00:05.000Z"}`,
		msg("m1", "f1", `{"role":"custom","customType":"ext","content":[{"type":"text","text":"more"}],"display":false}`),
		piAssistant("a2", "m1", "anthropic-messages", "aborted", `[{"type":"text","text":"half"}]`),
		msg("u2", "a2", `{"role":"user","content":"again"}`),
		piAssistant("a3", "u2", "anthropic-messages", "stop", `[{"type":"text","text":"done"}]`))
	tapes, err := Import(Pi, p)
	require.NoError(t, err)
	require.Len(t, tapes, 1)
	steps := tapes[0].Threads[0].Steps
	require.Len(t, steps, 3, "the aborted turn is a step")
	assert.Equal(t, []tape.Block{piText("half")}, steps[1].Response.Content)
	assert.Equal(t, "", steps[1].Response.StopReason)
	assert.Equal(t, []tape.Message{
		{Role: "user", Content: []tape.Block{piText("hi")}},
		{Role: "assistant", Content: []tape.Block{piText("hello")}},
		{Role: "user", Content: []tape.Block{
			piText("Ran `make`\n```\nboom\n```\n\nCommand exited with code 2"),
			piText("injected"),
			piText(piBranchPrefix + "tried X" + piBranchSuffix),
			piText("more"),
			piText("again"),
		}},
	}, steps[2].Request.Messages, "the last step's request: no !! command, no aborted turn")
	assert.Equal(t, "entries of unknown types (1)", tapes[0].Meta.Labels[LabelLost])
}
