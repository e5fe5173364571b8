package fork_test

import (
	"bytes"
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/compare"
	"github.com/tapebox/tapebox/controller"
	"github.com/tapebox/tapebox/fork"
	"github.com/tapebox/tapebox/gateway"
	"github.com/tapebox/tapebox/schema"
	"github.com/tapebox/tapebox/tape"
	"github.com/tapebox/tapebox/testkit"
	"github.com/tapebox/tapebox/testkit/fakeprovider"
	"github.com/tapebox/tapebox/testkit/miniagent"
)

const marker = "[fork-mini]"

func bash(cmd string) tape.ToolCall { return fakeprovider.Call("Bash", map[string]any{"command": cmd}) }

// original is the recorded run: three edits, then a final answer.
func original() fakeprovider.Script {
	return fakeprovider.Script{Threads: []fakeprovider.Thread{{Name: "main", Marker: marker, Turns: []fakeprovider.Turn{
		{Calls: []tape.ToolCall{bash("echo one > a.txt")}},
		{Calls: []tape.ToolCall{bash("echo two >> a.txt")}},
		{Calls: []tape.ToolCall{bash("echo three >> a.txt")}},
		{Text: "done"},
	}}}}
}

// other is "another model": from step 2 on it does something else. Its turns 0 and 1 must
// never be asked for.
func other() fakeprovider.Script {
	never := fakeprovider.Turn{Text: "this turn is the recording's: the fork must not ask for it"}
	return fakeprovider.Script{Threads: []fakeprovider.Thread{{Name: "main", Marker: marker, Turns: []fakeprovider.Turn{
		never, never,
		{Calls: []tape.ToolCall{bash("echo OTHER >> a.txt")}},
		{Text: "other done"},
	}}}}
}

func runMini(t *testing.T, base, dir string) (string, error) {
	t.Helper()
	return miniagent.Run(t.Context(), miniagent.Config{BaseURL: base, Provider: tape.ProviderAnthropic, Prompt: marker + " write a.txt", Dir: dir})
}

// record runs the mini agent through a gateway in a fresh directory with a start file.
func record(t *testing.T, p *fakeprovider.Server) (string, *tape.Tape) {
	t.Helper()
	dir := startDir(t)
	path, rec := recordIn(t, p, gateway.Config{Workspace: dir, Cwd: dir})
	require.Len(t, rec.Main().Steps, 4)
	return path, rec
}

// startDir is a fresh directory with a start file, README.
func startDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "README"), []byte("start\n"), 0o644))
	return dir
}

// recordIn runs the mini agent in cfg.Workspace through a gateway (cfg, recording to a
// fresh file) to p, and returns the tape's path and the tape.
func recordIn(t *testing.T, p *fakeprovider.Server, cfg gateway.Config) (string, *tape.Tape) {
	t.Helper()
	cfg.Output, cfg.Upstream = filepath.Join(t.TempDir(), "run.json"), p.URL()
	g, err := gateway.New(cfg)
	require.NoError(t, err)
	srv := httptest.NewServer(g)
	_, err = runMini(t, srv.URL, cfg.Workspace)
	require.NoError(t, err)
	srv.Close()
	reason, detail := g.Outcome()
	require.NoError(t, g.Finish(reason, detail))
	rec, err := tape.LoadFile(cfg.Output)
	require.NoError(t, err)
	return cfg.Output, rec
}

// forkAt restores the recording's workspace into a fresh directory and runs the mini agent
// against a fork server there.
func forkAt(t *testing.T, recPath string, rec *tape.Tape, cfg fork.Config) (dir string, runErr error, reason tape.EndReason, detail string) {
	t.Helper()
	dir = filepath.Join(t.TempDir(), "ws")
	snap, err := controller.SnapshotFor(recPath, rec)
	require.NoError(t, err)
	require.NoError(t, controller.RestoreSnapshot(t.Context(), rec, snap, dir))
	cfg.Recording, cfg.Workspace = rec, dir
	if cfg.Output == "" {
		cfg.Output = filepath.Join(t.TempDir(), "fork.json")
	}
	srv, err := fork.New(cfg)
	require.NoError(t, err)
	hs := httptest.NewServer(srv)
	_, runErr = runMini(t, hs.URL, dir)
	hs.Close()
	reason, detail, err = srv.Finish("")
	require.NoError(t, err)
	data, err := os.ReadFile(cfg.Output)
	require.NoError(t, err)
	require.NoError(t, schema.Validate(data), "the fork tape validates")
	return dir, runErr, reason, detail
}

func modelCalls(p *fakeprovider.Server) []fakeprovider.Request {
	var out []fakeprovider.Request
	for _, r := range p.Requests() {
		if r.Endpoint == fakeprovider.EndpointMessages {
			out = append(out, r)
		}
	}
	return out
}

func TestForkAtStep2(t *testing.T) {
	first := testkit.NewProvider(t, original())
	recPath, rec := record(t, first)
	before := len(first.Requests())
	second := testkit.NewProvider(t, other())
	out := filepath.Join(t.TempDir(), "fork.json")
	dir, runErr, reason, detail := forkAt(t, recPath, rec, fork.Config{At: 2, Upstream: second.URL(), Output: out,
		Overrides: fork.Overrides{Model: "cheap-model"}})
	require.NoError(t, runErr)
	assert.Equal(t, tape.EndComplete, reason, detail)
	assert.Equal(t, before, len(first.Requests()), "the recording's provider gets no request during the fork")
	live := modelCalls(second)
	require.Len(t, live, 2, "the other provider gets exactly the live steps")
	assert.Equal(t, []int{2, 3}, []int{live[0].Step, live[1].Step})
	assert.NoError(t, second.Err())

	// The first live request is the recorded request at step 2 byte for byte, but for the
	// model field.
	want := rec.Main().Steps[2].Request.Raw
	got := live[0].Body
	assert.Contains(t, string(got), `"model":"cheap-model"`)
	assert.Equal(t, string(want), strings.Replace(string(got), `"model":"cheap-model"`, `"model":"fake-model"`, 1))
	var wm, gm map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(want, &wm))
	require.NoError(t, json.Unmarshal(got, &gm))
	assert.True(t, bytes.Equal(wm["messages"], gm["messages"]), "messages byte-identical")

	b, err := os.ReadFile(filepath.Join(dir, "a.txt"))
	require.NoError(t, err)
	assert.Equal(t, "one\ntwo\nOTHER\n", string(b), "the fork's end state is the other continuation")

	ft, err := tape.LoadFile(out)
	require.NoError(t, err)
	f := ft.Meta.ForkedFrom
	require.NotNil(t, f)
	assert.Equal(t, rec.Meta.TapeID, f.TapeID)
	assert.Equal(t, "main", f.Thread)
	assert.Equal(t, 2, f.Step)
	assert.Equal(t, map[string]int{"main": 2}, f.Served)
	assert.Equal(t, map[string]string{"model": "cheap-model"}, f.Overrides)
	require.Len(t, ft.Main().Steps, 4)
	assert.True(t, f.FromTape("main", 1))
	assert.False(t, f.FromTape("main", 2))
	for i, st := range ft.Main().Steps {
		assert.Equal(t, i < 2, st.ServedFromTape, "step %d: marked served from the tape iff it was", i)
	}
	onDisk, err := os.ReadFile(out)
	require.NoError(t, err)
	canon, err := tape.Marshal(ft)
	require.NoError(t, err)
	assert.Equal(t, string(canon), string(onDisk), "the fork tape is in the canonical encoding")
	assert.Equal(t, 2, strings.Count(string(onDisk), `"served_from_tape":true`))
	require.Len(t, ft.Main().Steps[1].ToolResults, 1, "the last served step got its results from the first live request")
	assert.Equal(t, "other done", ft.Main().Steps[3].Response.Text())
	require.NotNil(t, ft.Meta.Workspace, "the fork tape carries the start snapshot and the end manifest")
	assert.NotEmpty(t, ft.Meta.Workspace.End)
	report := compare.Compare(rec, ft)
	assert.False(t, report.Identical, "compare sees the other continuation")

	require.True(t, fork.IsForkOf(ft, rec))
	c := fork.Compare(rec, ft, nil)
	assert.Equal(t, 2, c.CommonPrefix)
	require.NotNil(t, c.PartsAt)
	assert.Equal(t, "main", c.PartsAt.Thread)
	assert.Equal(t, 2, c.PartsAt.Step, "the timelines part at the fork point")
	assert.Equal(t, "tool_call.input", c.PartsAt.Field)
	assert.Equal(t, 4, c.Sides[0].Steps)
	assert.Equal(t, 4, c.Sides[1].Steps)
	assert.Equal(t, []string{"fake-model", "cheap-model"}, c.Sides[1].Models)
	assert.Nil(t, c.Sides[1].USD, "fake models have no price")
	assert.True(t, c.EndState.Compared)
	assert.False(t, c.EndState.Identical)
	var b2 strings.Builder
	c.WriteText(&b2)
	assert.Contains(t, b2.String(), "timelines part at thread main step 2: tool_call.input")
	assert.Contains(t, b2.String(), "a.txt")
}

// TestForkSameContinuation: a fork whose live model does what the recording did never
// parts from it.
func TestForkSameContinuation(t *testing.T) {
	first := testkit.NewProvider(t, original())
	recPath, rec := record(t, first)
	same := testkit.NewProvider(t, original())
	out := filepath.Join(t.TempDir(), "fork.json")
	_, runErr, reason, _ := forkAt(t, recPath, rec, fork.Config{At: 1, Upstream: same.URL(), Output: out})
	require.NoError(t, runErr)
	assert.Equal(t, tape.EndComplete, reason)
	ft, err := tape.LoadFile(out)
	require.NoError(t, err)
	c := fork.Compare(rec, ft, nil)
	assert.Nil(t, c.PartsAt)
	assert.Equal(t, 4, c.CommonPrefix)
	assert.True(t, c.EndState.Identical)
	assert.Len(t, modelCalls(same), 3, "steps 1 to 3 live")
}

func TestForkSystemAppend(t *testing.T) {
	first := testkit.NewProvider(t, original())
	recPath, rec := record(t, first)
	second := testkit.NewProvider(t, other())
	_, runErr, reason, _ := forkAt(t, recPath, rec, fork.Config{At: 2, Upstream: second.URL(), Overrides: fork.Overrides{SystemAppend: "Be brief."}})
	require.NoError(t, runErr)
	assert.Equal(t, tape.EndComplete, reason)
	live := modelCalls(second)
	require.NotEmpty(t, live)
	var body struct{ System string }
	require.NoError(t, json.Unmarshal(live[0].Body, &body))
	assert.Equal(t, miniagent.System+"\n\nBe brief.", body.System)
}

func TestForkBadPoint(t *testing.T) {
	first := testkit.NewProvider(t, original())
	_, rec := record(t, first)
	for _, tc := range []struct {
		thread string
		at     int
		want   string
	}{
		{"", 4, "step 4: thread main has 4 steps (0 to 3"},
		{"", -1, "step -1: thread main has 4 steps"},
		{"t9", 1, `thread "t9": no such thread`},
	} {
		_, err := fork.New(fork.Config{Recording: rec, Thread: tc.thread, At: tc.at, Output: filepath.Join(t.TempDir(), "f.json")})
		require.Error(t, err)
		assert.Contains(t, err.Error(), tc.want)
	}
}

// TestForkDivergesBeforeN: the workspace is not the recording's, so the harness's tool
// result at step 0 differs: the fork names the step and what differed, and makes no
// upstream call.
func TestForkDivergesBeforeN(t *testing.T) {
	first := testkit.NewProvider(t, original())
	recPath, rec := record(t, first)
	// A recording whose step-0 result says something the sandbox will not.
	rec.Main().Steps[0].ToolResults[0].Content[0].Text = "something else"
	second := testkit.NewProvider(t, other())
	_, runErr, reason, detail := forkAt(t, recPath, rec, fork.Config{At: 2, Upstream: second.URL()})
	require.Error(t, runErr, "the harness gets an error")
	assert.Equal(t, tape.EndDiverged, reason)
	assert.Contains(t, detail, "thread main step 1")
	assert.Contains(t, detail, "differs")
	assert.Empty(t, second.Requests(), "no upstream call")
}

// TestForkUpstreamDown: the upstream does not answer at step N: the fork tape ends
// upstream_error and stays valid (forkAt validates it).
func TestForkUpstreamDown(t *testing.T) {
	first := testkit.NewProvider(t, original())
	recPath, rec := record(t, first)
	dead := testkit.NewProvider(t, other())
	url := dead.URL()
	dead.Close()
	out := filepath.Join(t.TempDir(), "fork.json")
	_, runErr, reason, detail := forkAt(t, recPath, rec, fork.Config{At: 2, Upstream: url, Output: out})
	require.Error(t, runErr)
	assert.Equal(t, tape.EndUpstreamError, reason, detail)
	ft, err := tape.LoadFile(out)
	require.NoError(t, err)
	require.Len(t, ft.Main().Steps, 3, "two served steps and the failed live one")
	assert.Equal(t, 502, ft.Main().Steps[2].Response.Status)
}

func TestOverridesApply(t *testing.T) {
	for _, tc := range []struct {
		name string
		p    tape.Provider
		o    fork.Overrides
		in   string
		want string
	}{
		{"model kept in place", tape.ProviderAnthropic, fork.Overrides{Model: "b"}, `{"x":1, "model" : "a","y":[1]}`, `{"x":1, "model" : "b","y":[1]}`},
		{"model added", tape.ProviderAnthropic, fork.Overrides{Model: "b"}, `{"x":1}`, `{"model":"b","x":1}`},
		{"system string", tape.ProviderAnthropic, fork.Overrides{SystemAppend: "S"}, `{"system":"A","m":1}`, `{"system":"A\n\nS","m":1}`},
		{"system blocks", tape.ProviderAnthropic, fork.Overrides{SystemAppend: "S<"}, `{"system":[{"type":"text","text":"A"}],"m":1}`, `{"system":[{"type":"text","text":"A"},{"type":"text","text":"S<"}],"m":1}`},
		{"system absent", tape.ProviderAnthropic, fork.Overrides{SystemAppend: "S"}, `{"m":1}`, `{"system":"S","m":1}`},
		{"instructions", tape.ProviderOpenAIResponses, fork.Overrides{SystemAppend: "S"}, `{"instructions":"A","input":[]}`, `{"instructions":"A\n\nS","input":[]}`},
		{"chat system message", tape.ProviderOpenAIChat, fork.Overrides{SystemAppend: "S"}, `{"messages":[{"role":"system","content":"A"},{"role":"user","content":"u"}]}`, `{"messages":[{"role":"system","content":"A\n\nS"},{"role":"user","content":"u"}]}`},
		{"chat without one", tape.ProviderOpenAIChat, fork.Overrides{SystemAppend: "S"}, `{"messages":[{"role":"user","content":"u"}]}`, `{"messages":[{"role":"system","content":"S"},{"role":"user","content":"u"}]}`},
		{"gemini model not in the body", tape.ProviderGemini, fork.Overrides{Model: "b"}, `{"contents":[]}`, `{"contents":[]}`},
		{"gemini systemInstruction", tape.ProviderGemini, fork.Overrides{SystemAppend: "S"}, `{"systemInstruction":{"role":"user","parts":[{"text":"A"}]},"contents":[]}`, `{"systemInstruction":{"role":"user","parts":[{"text":"A"},{"text":"S"}]},"contents":[]}`},
		{"gemini system_instruction", tape.ProviderGemini, fork.Overrides{SystemAppend: "S"}, `{"system_instruction":{"parts":[]}}`, `{"system_instruction":{"parts":[{"text":"S"}]}}`},
		{"gemini no parts", tape.ProviderGemini, fork.Overrides{SystemAppend: "S"}, `{"systemInstruction":{"role":"user"}}`, `{"systemInstruction":{"parts":[{"text":"S"}],"role":"user"}}`},
		{"gemini none", tape.ProviderGemini, fork.Overrides{SystemAppend: "S"}, `{"contents":[]}`, `{"systemInstruction":{"parts":[{"text":"S"}]},"contents":[]}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.o.Apply(tc.p, []byte(tc.in))
			require.NoError(t, err)
			assert.Equal(t, tc.want, string(got))
		})
	}
	_, err := fork.Overrides{Model: "m"}.Apply(tape.ProviderAnthropic, []byte(`[1]`))
	assert.ErrorContains(t, err, "not a JSON object")
}

// TestOverridesPath: a Gemini API call names its model in its path, which the model
// override changes; other providers' paths, and a fork without a model override, keep
// theirs; a model that cannot stand in a path is refused.
func TestOverridesPath(t *testing.T) {
	for _, tc := range []struct {
		name, model string
		p           tape.Provider
		in, want    string
	}{
		{"stream", "other-1.5", tape.ProviderGemini, "/v1beta/models/gemini-2.5-pro:streamGenerateContent", "/v1beta/models/other-1.5:streamGenerateContent"},
		{"tuned", "m", tape.ProviderGemini, "/v1/tunedModels/mine:generateContent", "/v1/tunedModels/m:generateContent"},
		{"no override", "", tape.ProviderGemini, "/v1beta/models/gemini-2.5-pro:generateContent", "/v1beta/models/gemini-2.5-pro:generateContent"},
		{"anthropic", "m", tape.ProviderAnthropic, "/v1/messages", "/v1/messages"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := fork.Overrides{Model: tc.model}.Path(tc.p, tc.in)
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
	for _, bad := range []string{"a/b", "a:b", "..", "x?y"} {
		_, err := fork.Overrides{Model: bad}.Path(tape.ProviderGemini, "/v1beta/models/g:generateContent")
		assert.ErrorContains(t, err, "cannot name a Gemini API model", bad)
	}
	_, err := fork.Overrides{Model: "m"}.Path(tape.ProviderGemini, "/v1beta/files")
	assert.ErrorContains(t, err, "not a Gemini API model call's path")
}

// TestForkAfterASubagent: the subagent a served step spawned is served whole from the
// recording (it ended before the fork point), linked to its parent in the fork tape, and
// the live steps continue the main thread.
func TestForkAfterASubagent(t *testing.T) {
	agent := fakeprovider.Call("Agent", map[string]any{"prompt": "[fork-sub] count the files", "description": "count"})
	sub := fakeprovider.Thread{Name: "sub", Marker: "[fork-sub]", Turns: []fakeprovider.Turn{
		{Calls: []tape.ToolCall{bash("ls | wc -l > count.txt")}},
		{Text: "counted"},
	}}
	script := func(rest ...fakeprovider.Turn) fakeprovider.Script {
		turns := append([]fakeprovider.Turn{{Calls: []tape.ToolCall{agent}}, {Calls: []tape.ToolCall{bash("echo one > a.txt")}}}, rest...)
		return fakeprovider.Script{Threads: []fakeprovider.Thread{{Name: "main", Marker: marker, Turns: turns}, sub}}
	}
	first := testkit.NewProvider(t, script(fakeprovider.Turn{Calls: []tape.ToolCall{bash("echo two >> a.txt")}}, fakeprovider.Turn{Text: "done"}))
	recPath, rec := recordIn(t, first, gateway.Config{Workspace: t.TempDir()})
	require.Len(t, rec.Threads, 2, "main and the subagent")

	second := testkit.NewProvider(t, script(fakeprovider.Turn{Calls: []tape.ToolCall{bash("echo OTHER >> a.txt")}}, fakeprovider.Turn{Text: "other done"}))
	out := filepath.Join(t.TempDir(), "fork.json")
	w, runErr, reason, detail := forkAt(t, recPath, rec, fork.Config{At: 2, Upstream: second.URL(), Output: out})
	require.NoError(t, runErr)
	assert.Equal(t, tape.EndComplete, reason, detail)
	live := modelCalls(second)
	require.Len(t, live, 2, "only main's steps 2 and 3 go upstream")
	assert.Equal(t, "main", live[0].Thread)
	ft, err := tape.LoadFile(out)
	require.NoError(t, err)
	assert.Equal(t, map[string]int{"main": 2, rec.Threads[1].ID: 2}, ft.Meta.ForkedFrom.Served)
	require.Len(t, ft.Threads, 2)
	require.NotNil(t, ft.Threads[1].Parent)
	assert.Equal(t, *rec.Threads[1].Parent, *ft.Threads[1].Parent)
	assert.Len(t, ft.Main().Steps, 4)
	b, err := os.ReadFile(filepath.Join(w, "a.txt"))
	require.NoError(t, err)
	assert.Equal(t, "one\nOTHER\n", string(b))
	_, err = os.Stat(filepath.Join(w, "count.txt"))
	assert.NoError(t, err, "the served subagent's tool call ran for real")
}

// TestForkOnASubagentThread: --thread names a subagent: its parent's spawning step is served
// (it ended before the fork point), the subagent's first step too, and from the subagent's
// step 1 on everything is live, the main thread's next step included.
func TestForkOnASubagentThread(t *testing.T) {
	agent := fakeprovider.Call("Agent", map[string]any{"prompt": "[fork-sub] count the files", "description": "count"})
	script := func(subCmd, mainText string) fakeprovider.Script {
		return fakeprovider.Script{Threads: []fakeprovider.Thread{
			{Name: "main", Marker: marker, Turns: []fakeprovider.Turn{{Calls: []tape.ToolCall{agent}}, {Text: mainText}}},
			{Name: "sub", Marker: "[fork-sub]", Turns: []fakeprovider.Turn{
				{Calls: []tape.ToolCall{bash("echo sub > s.txt")}},
				{Calls: []tape.ToolCall{bash(subCmd)}},
				{Text: "sub done"},
			}},
		}}
	}
	first := testkit.NewProvider(t, script("echo recorded >> s.txt", "main done"))
	recPath, rec := recordIn(t, first, gateway.Config{Workspace: t.TempDir()})
	require.Len(t, rec.Threads, 2)
	sub := rec.Threads[1].ID

	second := testkit.NewProvider(t, script("echo forked >> s.txt", "main done, forked"))
	out := filepath.Join(t.TempDir(), "fork.json")
	w, runErr, reason, detail := forkAt(t, recPath, rec, fork.Config{Thread: sub, At: 1, Upstream: second.URL(), Output: out})
	require.NoError(t, runErr)
	assert.Equal(t, tape.EndComplete, reason, detail)
	ft, err := tape.LoadFile(out)
	require.NoError(t, err)
	assert.Equal(t, map[string]int{"main": 1, sub: 1}, ft.Meta.ForkedFrom.Served)
	assert.Equal(t, sub, ft.Meta.ForkedFrom.Thread)
	var threads []string
	for _, q := range modelCalls(second) {
		threads = append(threads, q.Thread)
	}
	assert.Equal(t, []string{"sub", "sub", "main"}, threads, "the subagent's steps 1 and 2, then main's step 1")
	b, err := os.ReadFile(filepath.Join(w, "s.txt"))
	require.NoError(t, err)
	assert.Equal(t, "sub\nforked\n", string(b))
	assert.Equal(t, "main done, forked", ft.Main().Steps[1].Response.Text())
}
