package interop

import (
	"cmp"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/schema"
	"github.com/tapebox/tapebox/tape"
)

// stsLost names what a tape loses in an STS round trip (export --to sts, import --from
// sts); stsView leaves exactly these out.
var stsLost = []string{
	"raw bodies, headers and timing (an STS message has a millisecond timestamp, which the import reads into meta.started_at and ended.at only; usage and stop reasons are kept in the header's extra metadata)",
	"the request beyond the conversation: tools offered, params other than model, reminder blocks the harness adds",
	"the order of blocks in an answer (thinking, then text, then calls) and the split of its text, or of a result's, into blocks (a result's blocks are joined one per line, as a simulator compares them)",
	"blocks a tape keeps whole but STS has no field for, such as Codex's tool_search_call (which loads the multi_agent_v1 namespace: a Codex sub-agent tape through STS replays in executor mode, not in simulator mode)",
	"a tool result's images (its text is kept; a call's kind and namespace and a result's is_error are kept in the header's extra metadata)",
}

// stsView is what an STS round trip keeps of a tape: per thread its parent and prompt,
// per step the model, the answer's reasoning and text, the calls and the results.
func stsView(tp *tape.Tape) []string {
	var out []string
	for _, th := range tp.Threads {
		parent := "-"
		if th.Parent != nil {
			parent = th.Parent.ThreadID + "/" + th.Parent.ToolCallID
		}
		out = append(out, fmt.Sprintf("thread %s parent %s prompt %q", th.ID, parent, prompt(th)))
		for i, s := range th.Steps {
			var think, text strings.Builder
			for _, b := range s.Response.Content {
				switch b.Type {
				case tape.BlockThinking:
					think.WriteString(b.Text)
				case tape.BlockText:
					text.WriteString(b.Text)
				}
			}
			out = append(out, fmt.Sprintf("  step %d model %s follow-up %q thinking %q text %q usage %+v stop %s", i, tape.StepModel(&tp.Meta, s), followUp(th, i), think.String(), text.String(), s.Response.Usage, s.Response.StopReason))
			for _, c := range s.ToolCalls {
				var in any
				_ = json.Unmarshal(c.Input, &in)
				b, _ := json.Marshal(in)
				out = append(out, fmt.Sprintf("    call %s %s %s kind %s namespace %q", c.ID, c.Name, b, cmp.Or(c.Kind, "function"), c.Namespace))
			}
			for _, r := range s.ToolResults {
				out = append(out, fmt.Sprintf("    result %s %q error %v", r.ToolCallID, stsResultText(r), r.IsError))
			}
		}
	}
	return out
}

// TestSTSRoundTrip: a recorded tape exported to STS and imported back has the same
// threads, parent links, prompts, answers, calls and results (stsLost names the rest); the
// imported tape validates and says it is normalized. A planted change is seen.
func TestSTSRoundTrip(t *testing.T) {
	for _, v := range stsLost {
		t.Logf("lost in an STS round trip: %s", v)
	}
	for _, name := range []string{"claude-code.json", "codex.json"} {
		t.Run(name, func(t *testing.T) {
			tp := loadTestTape(t, name)
			files, err := Export(tp, STS, Options{})
			require.NoError(t, err)
			dir := t.TempDir()
			writeFiles(t, dir, files)
			got, err := Import(STS, dir)
			require.NoError(t, err)
			require.Len(t, got, 1, "the files of one tape are one tape again")
			imp := got[0]
			assert.Equal(t, stsView(tp), stsView(imp))
			assert.Equal(t, tp.Meta.Provider, imp.Meta.Provider)
			assert.Equal(t, tp.Meta.Harness, imp.Meta.Harness)
			assert.Equal(t, tp.Meta.Cwd, imp.Meta.Cwd)
			assert.Equal(t, string(STS), imp.Meta.Labels[LabelImportedFrom])
			assert.Equal(t, FormNormalized, imp.Meta.Labels[LabelForm])
			data, err := tape.Marshal(imp)
			require.NoError(t, err)
			require.NoError(t, schema.Validate(data))
			// An imported tape can be synthesized for simulator mode.
			require.NoError(t, Synthesize(imp))

			// The comparison sees a changed result.
			for _, f := range files {
				if strings.Contains(string(f.Data), `"role":"tool"`) {
					f.Data = []byte(strings.Replace(string(f.Data), `"role":"tool","content":"`, `"role":"tool","content":"planted `, 1))
					writeFiles(t, dir, []File{f})
					break
				}
			}
			planted, err := Import(STS, dir)
			require.NoError(t, err)
			assert.NotEqual(t, stsView(tp), stsView(planted[0]))
		})
	}
}

// TestSTSForeign: an STS file of another harness (no TapeBox metadata, content as parts,
// arguments as an object) is a tape of one thread.
func TestSTSForeign(t *testing.T) {
	p := filepath.Join(t.TempDir(), "s.jsonl")
	require.NoError(t, os.WriteFile(p, []byte(`{"type":"session","harness":"llama.app","id":"b1a2c3","name":"Implementing a new API"}
{"type":"message","message":{"role":"system","content":"Be brief."}}
{"type":"message","message":{"role":"user","content":[{"type":"text","text":"list files"}],"timestamp":1767225600000}}
{"type":"message","message":{"role":"assistant","content":"","toolCalls":[{"id":"c1","function":{"name":"ls","arguments":{"path":"."}}}],"model":"llama-3"}}
{"type":"message","message":{"role":"tool","toolCallId":"c1","content":"a.txt"}}
{"type":"message","message":{"role":"assistant","content":"One file.","timestamp":1767225601000}}
`), 0o644))
	got, err := Import(STS, p)
	require.NoError(t, err)
	require.Len(t, got, 1)
	tp := got[0]
	assert.Equal(t, "llama.app", tp.Meta.Harness)
	assert.Equal(t, "llama-3", tp.Meta.Model)
	assert.Equal(t, "2026-01-01T00:00:00Z", tp.Meta.StartedAt.Format("2006-01-02T15:04:05Z07:00"))
	require.Len(t, tp.Threads, 1)
	th := tp.Threads[0]
	assert.Equal(t, "main", th.ID)
	require.Len(t, th.Steps, 2)
	assert.Equal(t, "Be brief.", th.Steps[0].Request.System)
	assert.Equal(t, []string{`thread main parent - prompt "list files"`, `  step 0 model llama-3 follow-up "" thinking "" text "" usage {InputTokens:0 OutputTokens:0 CacheReadInputTokens:0 CacheCreationInputTokens:0 ReasoningTokens:0} stop `,
		`    call c1 ls {"path":"."} kind function namespace ""`, `    result c1 "a.txt" error false`, `  step 1 model llama-3 follow-up "" thinking "" text "One file." usage {InputTokens:0 OutputTokens:0 CacheReadInputTokens:0 CacheCreationInputTokens:0 ReasoningTokens:0} stop `}, stsView(tp))
	data, err := tape.Marshal(tp)
	require.NoError(t, err)
	require.NoError(t, schema.Validate(data))
}

// TestSTSBadInput: a bad line names the file and the line, and nothing is imported.
func TestSTSBadInput(t *testing.T) {
	head := `{"type":"session","harness":"h","id":"s"}`
	user := `{"type":"message","message":{"role":"user","content":"hi"}}`
	for _, c := range []struct {
		name, data string
		line       int
		want       string
	}{
		{"no header", user + "\n", 1, "not an STS session header"},
		{"not JSON", head + "\n" + user + "\n{\"type\":\"message\",\n", 3, "not a JSON object"},
		{"a result of no call", head + "\n" + user + "\n" + `{"type":"message","message":{"role":"tool","toolCallId":"x","content":"?"}}` + "\n", 3, `tool message for "x"`},
		{"a role", head + "\n" + `{"type":"message","message":{"role":"robot","content":"?"}}` + "\n", 2, `role "robot"`},
		{"a call without a name", head + "\n" + `{"type":"message","message":{"role":"assistant","toolCalls":[{"id":"c"}]}}` + "\n", 2, "no id or function.name"},
		{"arguments", head + "\n" + `{"type":"message","message":{"role":"assistant","toolCalls":[{"id":"c","function":{"name":"f","arguments":[1]}}]}}` + "\n", 2, "neither a string nor an object"},
		{"another line type", head + "\n" + `{"type":"event"}` + "\n", 2, `not type "event"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			good := filepath.Join(dir, "a.jsonl")
			require.NoError(t, os.WriteFile(good, []byte(head+"\n"+user+"\n"+`{"type":"message","message":{"role":"assistant","content":"hello"}}`+"\n"), 0o644))
			bad := filepath.Join(dir, "b.jsonl")
			require.NoError(t, os.WriteFile(bad, []byte(c.data), 0o644))
			got, err := Import(STS, dir)
			require.Error(t, err)
			assert.Nil(t, got, "nothing partial")
			assert.Contains(t, err.Error(), fmt.Sprintf("%s:%d: ", bad, c.line))
			assert.Contains(t, err.Error(), c.want)
		})
	}
}
