package interop

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/schema"
	"github.com/tapebox/tapebox/tape"
	"github.com/tapebox/tapebox/tape/provider"
)

func writeFiles(t *testing.T, dir string, files []File) {
	t.Helper()
	for _, f := range files {
		p := filepath.Join(dir, filepath.FromSlash(f.Path))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, f.Data, 0o644))
	}
}

// calls lists a tape's tool calls and results per thread, the part of a tape an export and
// an import must carry through.
func calls(tp *tape.Tape) []string {
	var out []string
	for _, th := range tp.Threads {
		parent := ""
		if th.Parent != nil {
			parent = th.Parent.ToolCallID
		}
		for _, s := range th.Steps {
			for _, c := range s.ToolCalls {
				var in any
				_ = json.Unmarshal(c.Input, &in)
				b, _ := json.Marshal(in)
				out = append(out, parent+" call "+c.ID+" "+c.Name+" "+string(b))
			}
			for _, r := range s.ToolResults {
				out = append(out, parent+" result "+r.ToolCallID+" "+r.Text())
			}
		}
	}
	return out
}

// TestExportImport exports recorded tapes to their harness's session files and imports
// them back: the tool calls, inputs, results and subagent links come through, and the
// imported tape validates and says it is normalized only.
func TestExportImport(t *testing.T) {
	for _, c := range []struct {
		tape   string
		format Format
	}{{"claude-code.json", ClaudeCode}, {"codex.json", Codex}} {
		t.Run(string(c.format), func(t *testing.T) {
			tp := loadTestTape(t, c.tape)
			files, err := Export(tp, c.format, Options{})
			require.NoError(t, err)
			dir := t.TempDir()
			writeFiles(t, dir, files)
			got, err := Import(c.format, dir)
			require.NoError(t, err)
			require.Len(t, got, 1)
			imp := got[0]
			assert.Equal(t, calls(tp), calls(imp))
			assert.Equal(t, len(tp.Threads), len(imp.Threads))
			assert.Equal(t, tp.Meta.Cwd, imp.Meta.Cwd)
			assert.Equal(t, tp.Meta.HarnessVersion, imp.Meta.HarnessVersion)
			assert.Equal(t, FormNormalized, imp.Meta.Labels[LabelForm])
			assert.Equal(t, string(c.format), imp.Meta.Labels[LabelImportedFrom])
			// both harnesses' files carry a timestamp on every entry: the steps are timed by them
			assert.Equal(t, TimingEntries, imp.Meta.Labels[LabelTiming])
			for ti, th := range imp.Threads {
				for si, s := range th.Steps {
					assert.Equal(t, "null", string(s.Request.Raw), "an imported step has no raw bodies")
					assert.Equal(t, "null", string(s.Response.Raw))
					// the export writes each entry's time from the tape's clock; the import reads it back
					// (the import's clock starts at its first entry, the tape's at its start)
					want := tp.Threads[ti].Steps[si].Timing
					shift := float64(imp.Meta.StartedAt.Sub(tp.Meta.StartedAt)) / 1e6
					assert.InDelta(t, want.LastByteAt, s.Timing.LastByteAt+shift, 1, "thread %s step %d: last byte", th.ID, si)
					assert.LessOrEqual(t, s.Timing.RequestAt, s.Timing.FirstByteAt)
					assert.LessOrEqual(t, s.Timing.FirstByteAt, s.Timing.LastByteAt)
					if si > 0 {
						assert.GreaterOrEqual(t, s.Timing.RequestAt, th.Steps[si-1].Timing.LastByteAt, "thread %s step %d: asked after the previous answer", th.ID, si)
					}
				}
			}
			b, err := tape.Marshal(imp)
			require.NoError(t, err)
			require.NoError(t, schema.Validate(b))
		})
	}
}

// TestImportWithoutAgentMeta: a sidechain without its .meta.json is linked to the call whose
// prompt opens it.
func TestImportWithoutAgentMeta(t *testing.T) {
	tp := loadTestTape(t, "claude-code.json")
	files, err := ExportClaudeCode(tp)
	require.NoError(t, err)
	var kept []File
	for _, f := range files {
		if !strings.HasSuffix(f.Path, ".meta.json") {
			kept = append(kept, f)
		}
	}
	require.Len(t, kept, len(files)-1)
	dir := t.TempDir()
	writeFiles(t, dir, kept)
	got, err := ImportClaudeCode(dir)
	require.NoError(t, err)
	require.Len(t, got[0].Threads, 2)
	assert.Equal(t, tp.Threads[1].Parent.ToolCallID, got[0].Threads[1].Parent.ToolCallID)
}

// TestImportBrokenLine: a broken line anywhere fails the whole import, naming the file and
// the line, and returns no tape, not even of the good sessions.
func TestImportBrokenLine(t *testing.T) {
	tp := loadTestTape(t, "claude-code.json")
	files, err := ExportClaudeCode(tp)
	require.NoError(t, err)
	dir := t.TempDir()
	writeFiles(t, dir, files)
	// A second, good session in the same project.
	other := *tp
	other.Meta.TapeID = "0123456789abcdef0123456789abcdef"
	more, err := ExportClaudeCode(&other)
	require.NoError(t, err)
	writeFiles(t, dir, more[:1])
	got, err := ImportClaudeCode(dir)
	require.NoError(t, err)
	require.Len(t, got, 2)

	for _, c := range []struct{ name, line string }{
		{"not json", `{"type":"user","message":`},
		{"not an entry", `["a list"]`},
		{"bad content", `{"type":"user","message":{"role":"user","content":7}}`},
		{"result without a call", `{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_nowhere","content":"x"}]}}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(dir, filepath.FromSlash(files[0].Path))
			lines := strings.Split(strings.TrimSuffix(string(files[0].Data), "\n"), "\n")
			lines[2] = c.line
			require.NoError(t, os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644))
			got, err := ImportClaudeCode(dir)
			require.Error(t, err)
			assert.Nil(t, got, "nothing imported")
			var le *LineError
			require.True(t, errors.As(err, &le), "%v", err)
			assert.Equal(t, path, le.Path)
			assert.Equal(t, 3, le.Line)
			assert.Contains(t, err.Error(), path+":3:")
		})
	}

	t.Run("codex", func(t *testing.T) {
		files, err := ExportCodex(loadTestTape(t, "codex.json"), "")
		require.NoError(t, err)
		dir := t.TempDir()
		writeFiles(t, dir, files)
		path := filepath.Join(dir, filepath.FromSlash(files[0].Path))
		lines := strings.Split(strings.TrimSuffix(string(files[0].Data), "\n"), "\n")
		lines[5] = `{"timestamp":"x","type":"response_item","payload":{"type":` // cut short
		require.NoError(t, os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644))
		got, err := ImportCodex(dir)
		assert.Nil(t, got)
		var le *LineError
		require.True(t, errors.As(err, &le), "%v", err)
		assert.Equal(t, 6, le.Line)
	})
}

// TestSynthesize makes raw streams for an imported tape and reads them back with the
// provider adapters: they give the normalized content the import had.
func TestSynthesize(t *testing.T) {
	for _, c := range []struct {
		tape   string
		format Format
		p      tape.Provider
	}{{"claude-code.json", ClaudeCode, tape.ProviderAnthropic}, {"codex.json", Codex, tape.ProviderOpenAIResponses}} {
		t.Run(string(c.format), func(t *testing.T) {
			files, err := Export(loadTestTape(t, c.tape), c.format, Options{})
			require.NoError(t, err)
			dir := t.TempDir()
			writeFiles(t, dir, files)
			got, err := Import(c.format, dir)
			require.NoError(t, err)
			imp := got[0]
			require.NoError(t, Synthesize(imp))
			assert.Equal(t, FormSynthesized, imp.Meta.Labels[LabelForm])
			for _, th := range imp.Threads {
				for i, s := range th.Steps {
					require.NotEmpty(t, s.Response.Chunks)
					again := &tape.Step{Request: tape.Request{Raw: json.RawMessage(`{"model":"m","messages":[],"input":[]}`)}, Response: s.Response}
					require.NoError(t, provider.Normalize(c.p, again), "thread %s step %d", th.ID, i)
					assert.Equal(t, s.Response.Content, again.Response.Content, "thread %s step %d: content", th.ID, i)
					if len(s.ToolCalls)+len(again.ToolCalls) > 0 {
						assert.Equal(t, s.ToolCalls, again.ToolCalls, "thread %s step %d: tool calls", th.ID, i)
					}
					assert.Equal(t, s.Response.StopReason, again.Response.StopReason)
					assert.Equal(t, s.Response.Usage.OutputTokens, again.Response.Usage.OutputTokens)
				}
			}
			b, err := tape.Marshal(imp)
			require.NoError(t, err)
			require.NoError(t, schema.Validate(b))
			require.Error(t, Synthesize(imp), "a tape is synthesized once")
		})
	}
}

// TestMissing: formats that need what a tape lacks say what.
func TestMissing(t *testing.T) {
	files, err := ExportClaudeCode(loadTestTape(t, "claude-code.json"))
	require.NoError(t, err)
	dir := t.TempDir()
	writeFiles(t, dir, files)
	got, err := ImportClaudeCode(dir)
	require.NoError(t, err)
	// timed by its entries, the imported tape exports as OTLP spans (without response ids)
	_, err = ExportOTLP(got[0])
	require.NoError(t, err)
	delete(got[0].Meta.Labels, LabelTiming) // a session file without timestamps
	_, err = ExportOTLP(got[0])
	var me *MissingError
	require.True(t, errors.As(err, &me), "%v", err)
	assert.Contains(t, err.Error(), "raw bodies or timing")
	assert.Contains(t, err.Error(), "imported from claude-code")

	tp := loadTestTape(t, "claude-code.json")
	tp.Meta.Cwd = ""
	_, err = ExportClaudeCode(tp)
	require.True(t, errors.As(err, &me), "%v", err)
	assert.Equal(t, "meta.cwd", me.Missing)

	_, err = ExportCodex(loadTestTape(t, "claude-code.json"), "")
	assert.ErrorContains(t, err, "Codex rollouts hold OpenAI Responses items")
}

// TestExportPaths: the file names an export makes from a tape's ids stay inside the output
// folder whatever the tape says.
func TestExportPaths(t *testing.T) {
	tp := loadTestTape(t, "claude-code.json")
	tp.Meta.TapeID = "../../etc/passwd"
	for _, th := range tp.Threads {
		th.ID = "../" + th.ID
		if th.Parent != nil {
			th.Parent.ThreadID = "../" + th.Parent.ThreadID
		}
	}
	tp.Meta.Cwd = "/../../x"
	tp.Threads[0].Steps[0].Request.Headers["x-claude-code-session-id"] = "../../../x"
	for _, f := range ExportFormats {
		files, err := Export(tp, f, Options{})
		if err != nil {
			continue // codex: not this provider
		}
		for _, fl := range files {
			assert.True(t, filepath.IsLocal(filepath.FromSlash(fl.Path)), "%s: %q leaves the folder", f, fl.Path)
		}
	}
}

// TestImportSiblingAgents: Claude Code before 2.1.2 kept a subagent's sidechain beside the
// session file, as <project>/agent-<id>.jsonl without a .meta.json. Imported from the folder
// (named format or auto) or from the session file alone, the sidechain is the session's
// subagent thread, linked to its spawning call; one of another session stays a tape of its own.
func TestImportSiblingAgents(t *testing.T) {
	tp := loadTestTape(t, "claude-code.json")
	files, err := ExportClaudeCode(tp)
	require.NoError(t, err)
	dir := t.TempDir()
	var session, agent string
	for _, f := range files {
		switch {
		case strings.HasSuffix(f.Path, ".meta.json"):
			continue
		case strings.Contains(f.Path, "/subagents/"):
			project := strings.SplitN(f.Path, "/", 2)[0]
			f.Path = project + "/" + filepath.Base(f.Path)
			agent = filepath.Join(dir, filepath.FromSlash(f.Path))
		default:
			session = filepath.Join(dir, filepath.FromSlash(f.Path))
		}
		writeFiles(t, dir, []File{f})
	}
	require.NotEmpty(t, agent)
	require.NotEmpty(t, session)
	require.Equal(t, filepath.Dir(session), filepath.Dir(agent), "the sidechain sits beside its session")

	check := func(got []*tape.Tape, err error) {
		t.Helper()
		require.NoError(t, err)
		require.Len(t, got, 1, "the sidechain is not a session of its own")
		require.Len(t, got[0].Threads, 2)
		assert.Equal(t, tp.Threads[1].Parent.ToolCallID, got[0].Threads[1].Parent.ToolCallID)
		assert.Equal(t, "main", got[0].Threads[1].Parent.ThreadID)
		assert.Equal(t, calls(tp), calls(got[0]))
	}
	check(ImportClaudeCode(dir))
	check(Import(Auto, dir))
	check(ImportClaudeCode(session))

	// The sidechain alone is a tape of one thread, as before.
	alone, err := ImportClaudeCode(agent)
	require.NoError(t, err)
	require.Len(t, alone, 1)
	assert.Len(t, alone[0].Threads, 1)

	// A sidechain of another session beside it is not this session's subagent.
	data, err := os.ReadFile(agent)
	require.NoError(t, err)
	sid := ClaudeSessionID(tp)
	require.Contains(t, string(data), sid)
	other := strings.ReplaceAll(string(data), sid, "00000000-0000-4000-8000-000000000000")
	require.NoError(t, os.WriteFile(filepath.Join(filepath.Dir(agent), "agent-other.jsonl"), []byte(other), 0o644))
	got, err := ImportClaudeCode(dir)
	require.NoError(t, err)
	require.Len(t, got, 2)
	assert.Len(t, got[0].Threads, 2)
	assert.Len(t, got[1].Threads, 1)
	assert.Equal(t, "agent-other.jsonl", got[1].Meta.Labels[LabelSource])
}

// TestImportInlineSidechain: a session file that holds a subagent's sidechain entries
// (isSidechain) among its own, as older Claude Code versions wrote them, imports as the
// main thread and the subagent's thread, linked to its spawning call.
func TestImportInlineSidechain(t *testing.T) {
	tp := loadTestTape(t, "claude-code.json")
	files, err := ExportClaudeCode(tp)
	require.NoError(t, err)
	spawn := tp.Threads[1].Parent.ToolCallID
	var session File
	var side []string
	for _, f := range files {
		switch {
		case strings.HasSuffix(f.Path, ".jsonl") && strings.Contains(f.Path, "/subagents/"):
			side = strings.Split(strings.TrimSpace(string(f.Data)), "\n")
		case strings.HasSuffix(f.Path, ".jsonl"):
			session = f
		}
	}
	require.NotEmpty(t, side)
	var lines []string
	inserted := false
	for _, l := range strings.Split(strings.TrimSpace(string(session.Data)), "\n") {
		lines = append(lines, l)
		if !inserted && strings.Contains(l, `"type":"assistant"`) && strings.Contains(l, `"id":"`+spawn+`"`) {
			lines = append(lines, side...)
			inserted = true
		}
	}
	require.True(t, inserted, "the spawning call %s is in the session file", spawn)
	session.Data = []byte(strings.Join(lines, "\n") + "\n")
	dir := t.TempDir()
	writeFiles(t, dir, []File{session})

	got, err := ImportClaudeCode(dir)
	require.NoError(t, err)
	require.Len(t, got, 1)
	require.Len(t, got[0].Threads, 2)
	assert.Equal(t, tape.Parent{ThreadID: "main", ToolCallID: spawn}, *got[0].Threads[1].Parent)
	assert.Equal(t, calls(tp), calls(got[0]))
	assert.Len(t, got[0].Threads[0].Steps, len(tp.Threads[0].Steps), "the main thread holds none of the sidechain's steps")
}
