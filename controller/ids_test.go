package controller

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/tape"
)

// pairTape builds a recording of harness h whose step 0 runs one Bash call with result
// result0, and whose later steps run one call each with the given inputs (JSON).
func pairTape(h, result0 string, later ...string) *tape.Tape {
	tp := tape.New(tape.ProviderAnthropic, time.Unix(0, 0))
	tp.Meta.Harness = h
	tp.Meta.Ended = &tape.Ended{Reason: tape.EndComplete}
	th := &tape.Thread{ID: "main"}
	step := func(i int, name, input, result string) *tape.Step {
		id := fmt.Sprintf("toolu_%02d", i)
		return &tape.Step{
			Response:    tape.Response{Status: 200, StopReason: "tool_use"},
			ToolCalls:   []tape.ToolCall{{ID: id, Name: name, Input: json.RawMessage(input)}},
			ToolResults: []tape.ToolResult{{ToolCallID: id, Content: []tape.Block{{Type: tape.BlockText, Text: result}}}},
			Timing:      tape.Timing{RequestAt: float64(10 * i), FirstByteAt: float64(10*i + 1), LastByteAt: float64(10*i + 2)},
		}
	}
	th.Steps = append(th.Steps, step(0, "Bash", `{"command":"run"}`, result0))
	for i, in := range later {
		th.Steps = append(th.Steps, step(i+1, "Bash", in, "ok"))
	}
	th.Steps = append(th.Steps, &tape.Step{Response: tape.Response{Status: 200, StopReason: "end_turn"}})
	tp.Threads = []*tape.Thread{th}
	return tp
}

// replayOf copies rec with step 0's result replaced and the later inputs replaced.
func replayOf(t testing.TB, rec *tape.Tape, result0 string, later ...string) *tape.Tape {
	t.Helper()
	b, err := tape.Marshal(rec)
	require.NoError(t, err)
	rep, err := tape.Unmarshal(b)
	require.NoError(t, err)
	rep.Meta.TapeID = "replay"
	rep.Threads[0].Steps[0].ToolResults[0].Content[0].Text = result0
	for i, in := range later {
		rep.Threads[0].Steps[i+1].ToolCalls[0].Input = json.RawMessage(in)
	}
	return rep
}

// TestCompareMustDiffer: pairs of tool results that say different things. None of the
// differing values is used again by the recording or stands in a harness's identifier field,
// so compare must call them different.
func TestCompareMustDiffer(t *testing.T) {
	for _, tc := range []struct{ name, harness, rec, rep string }{
		{"row count and path", "claude-code", "wrote 120 rows to /app/out/report.txt", "wrote 9999 rows to /app/tmp/other.bin"},
		{"small numbers", "claude-code", "12", "13"},
		{"big numbers", "codex", "count: 48213", "count: 90112"},
		{"a changed word", "claude-code", "result: failed", "result: worked"},
		{"a changed word of the same shape as an id", "claude-code", "token abcdef12 ok", "token abcdef13 ok"},
		{"file mode in ls -l", "claude-code",
			"-rw-r--r-- 1 root root 12 Dec  1 10:00 run.sh", "-rwxr-xr-x 1 root root 12 Dec  1 10:00 run.sh"},
		{"a path nothing refers to", "claude-code", "saved to /tmp/a1b2c3/out.txt", "saved to /tmp/z9y8x7/out.txt"},
		{"a uuid nothing refers to", "codex", "id 01a2278d-18fa-71c3-8041-bb571024e134", "id 01a2278d-48cd-7c90-8f3c-25f47eb5e9df"},
		{"a session id phrase of another harness", "claude-code", "Process running with session ID 48213", "Process running with session ID 90112"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := pairTape(tc.harness, tc.rec, `{"command":"echo next"}`)
			r := Compare(rec, replayOf(t, rec, tc.rep))
			require.False(t, r.Identical, "compare called %q and %q identical; learned %+v", tc.rec, tc.rep, r.Identifiers)
			require.Empty(t, r.Identifiers)
			require.Len(t, r.Differences, 1)
			require.Equal(t, "tool_result", r.Differences[0].Field)
		})
	}
}

// TestCompareMustMatch: the identifiers real harnesses make up on every run compare equal,
// each with its evidence.
func TestCompareMustMatch(t *testing.T) {
	for _, tc := range []struct {
		name, harness, rec, rep string
		recLater, repLater      []string
		evidence                string
	}{
		{"claude background shell, named by the harness", "claude-code",
			"Command running in background with ID: bsfryt1j0. Output is being written to: /tmp/claude-0/-app/80e1/tasks/bsfryt1j0.output. You will be notified.",
			"Command running in background with ID: k2p9xq4ma. Output is being written to: /tmp/tapebox-exec-state-1f/tasks/k2p9xq4ma.output. You will be notified.",
			[]string{`{"task_id":"bsfryt1j0","block":true}`, `{"command":"cat /tmp/claude-0/-app/80e1/tasks/bsfryt1j0.output"}`},
			[]string{`{"task_id":"k2p9xq4ma","block":true}`, `{"command":"cat /tmp/tapebox-exec-state-1f/tasks/k2p9xq4ma.output"}`},
			"named by the harness: claude-code background shell id"},
		{"claude background shell whose recorded id drew no digit", "claude-code",
			"Command running in background with ID: bhasuphlv. Output is being written to: /tmp/claude-0/-w/9103/tasks/bhasuphlv.output. You will be notified.",
			"Command running in background with ID: b86y08nu1. Output is being written to: /tmp/claude-0/-w/5a32/tasks/b86y08nu1.output. You will be notified.",
			[]string{`{"command":"ls /tmp/claude-0/-w/9103"}`}, []string{`{"command":"ls /tmp/claude-0/-w/5a32"}`},
			"named by the harness: claude-code background shell id"},
		{"claude background shell whose ids both drew no digit", "claude-code",
			"Command running in background with ID: bjqhaaosb. Output is being written to: /tmp/claude-0/-w/bc58c657-9f2b/tasks/bjqhaaosb.output. You will be notified.",
			"Command running in background with ID: bbdmlqjpx. Output is being written to: /tmp/claude-0/-w/416d4e8d-8000/tasks/bbdmlqjpx.output. You will be notified.",
			[]string{`{"task_id":"bjqhaaosb","block":true}`}, []string{`{"task_id":"bbdmlqjpx","block":true}`},
			"named by the harness: claude-code background shell id"},
		{"claude command moved to the background at its timeout, named by the harness", "claude-code",
			"Command did not complete within its 1s timeout and was moved to the background (ID: bhasuphlv). Output is being written to: /tmp/claude-0/-w/9103/tasks/bhasuphlv.output. You will be notified.",
			"Command did not complete within its 1s timeout and was moved to the background (ID: bbdmlqjpx). Output is being written to: /tmp/claude-0/-w/5a32/tasks/bbdmlqjpx.output. You will be notified.",
			[]string{`{"task_id":"bhasuphlv","block":true}`}, []string{`{"task_id":"bbdmlqjpx","block":true}`},
			"named by the harness: claude-code background shell id"},
		{"codex session id, used as a number later", "codex",
			"Chunk ID: 8e7254\nWall time: 1.0 seconds\nProcess running with session ID 2000\nOutput:\n",
			"Chunk ID: 1fac80\nWall time: 1.2 seconds\nProcess running with session ID 31337\nOutput:\n",
			[]string{`{"session_id":2000,"chars":"","yield_time_ms":2000}`}, []string{`{"session_id":31337,"chars":"","yield_time_ms":2000}`},
			"named by the harness: codex exec session id"},
		{"codex agent id", "codex",
			`{"agent_id":"01a2278d-18fa-71c3-8041-bb571024e134","nickname":"Noether"}`,
			`{"agent_id":"01a2278d-48cd-7c90-8f3c-25f47eb5e9df","nickname":"Singer"}`,
			[]string{`{"targets":["01a2278d-18fa-71c3-8041-bb571024e134"]}`}, []string{`{"targets":["01a2278d-48cd-7c90-8f3c-25f47eb5e9df"]}`},
			"named by the harness: codex agent id"},
		{"pi bash full output file, never read again", "pi",
			"2999\n3000\n\n\n[Showing lines 1002-3001 of 3001. Full output: /tmp/pi-bash-7d23f20bda1f0241.log]",
			"2999\n3000\n\n\n[Showing lines 1002-3001 of 3001. Full output: /tmp/tapebox-exec-state-0-1f/tool-results/pi-bash-k2p9xq4ma0b1c3d5.log]",
			nil, nil, "named by the harness: pi bash full output file"},
		{"a path the recording reads again", "claude-code",
			"log at /tmp/run-7f3a9c/out.log", "log at /tmp/run-0d12e4/out.log",
			[]string{`{"command":"cat /tmp/run-7f3a9c/out.log"}`}, []string{`{"command":"cat /tmp/run-0d12e4/out.log"}`},
			"used again: thread main step 1 call toolu_01 (Bash) input"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := pairTape(tc.harness, tc.rec, tc.recLater...)
			r := Compare(rec, replayOf(t, rec, tc.rep, tc.repLater...))
			require.True(t, r.Identical, "%+v", r.Differences)
			require.NotEmpty(t, r.Identifiers)
			require.Equal(t, tc.evidence, r.Identifiers[0].Evidence)
			var b strings.Builder
			r.WriteText(&b)
			require.Contains(t, b.String(), tc.evidence)
		})
	}
}

// TestCompareSubstitutedCallMustMatch: a learned id does not excuse a later call that uses
// another value.
func TestCompareSubstitutedCallMustMatch(t *testing.T) {
	rec := pairTape("codex", "Process running with session ID 2000", `{"session_id":2000,"yield_time_ms":2000}`)
	rep := replayOf(t, rec, "Process running with session ID 31337", `{"session_id":31337,"yield_time_ms":31337}`)
	r := Compare(rec, rep)
	require.False(t, r.Identical)
	require.Equal(t, "tool_call.input", r.Differences[0].Field)
}

func TestLearnNeedsEvidence(t *testing.T) {
	rec := pairTape("claude-code", "x", `{"command":"cat /t/abcdefgh/x.out"}`)
	ids := NewIdentifiers(rec)
	require.Equal(t, map[string]string{"/t/abcdefgh/x.out": "/t/qwertyui/x.out", "abcdefgh": "qwertyui"},
		ids.Learn(Site{Thread: "main", Step: 0}, "at /t/abcdefgh/x.out", "at /t/qwertyui/x.out"))
	// The same text seen at the last step: nothing uses the value after it.
	ids = NewIdentifiers(rec)
	require.Empty(t, ids.Learn(Site{Thread: "main", Step: 1}, "at /t/abcdefgh/x.out", "at /t/qwertyui/x.out"))
	for _, tc := range []struct{ name, rec, rep string }{
		{"same text", "ok", "ok"},
		{"different words of the same length", "result: failed", "result: worked"},
		{"different words", "Exit code 1\nfailed", "Exit code 0\nworked"},
		{"times", "took 0.0012 s", "took 0.0031 s"},
		{"different shape", "a b c", "a b"},
		// The field names the id, not the word beside it.
		{"a word beside a named id", "Command running in background with ID: bjqhaaosb. failed", "Command running in background with ID: bbdmlqjpx. worked"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Empty(t, NewIdentifiers(rec).Learn(Site{Thread: "main", Step: 0}, tc.rec, tc.rep))
		})
	}
}

// TestApplyJSON: substitution replaces whole string and number values and id tokens inside
// strings, never part of another value.
func TestApplyJSON(t *testing.T) {
	rec := pairTape("codex", "x")
	ids := NewIdentifiers(rec)
	ids.Learn(Site{Thread: "main", Step: 0}, "Process running with session ID 2000", "Process running with session ID 31337")
	for _, tc := range []struct{ in, want string }{
		{`{"session_id":2000,"chars":"","yield_time_ms":2000}`, `{"session_id":31337,"chars":"","yield_time_ms":2000}`},
		{`{"cmd":"sleep 2000","session_id":20006}`, `{"cmd":"sleep 2000","session_id":20006}`},
		{`{"arguments":"{\"session_id\":2000,\"yield_time_ms\":2000}"}`, `{"arguments":"{\"session_id\":31337,\"yield_time_ms\":2000}"}`},
		{`{"x":"2000"}`, `{"x":"31337"}`},
		{`{"path":"/proc/2000/status"}`, `{"path":"/proc/31337/status"}`},
	} {
		require.Equal(t, tc.want, string(ids.ApplyJSON(json.RawMessage(tc.in))), tc.in)
	}
	rec = pairTape("claude-code", "x", `{"task_id":"bsfryt1j0"}`)
	ids = NewIdentifiers(rec)
	ids.Learn(Site{Thread: "main", Step: 0}, "Command running in background with ID: bsfryt1j0. Output is being written to: /tmp/x/bsfryt1j0.output.",
		"Command running in background with ID: zz99zz99z. Output is being written to: /app/t/zz99zz99z.output.")
	in := json.RawMessage(`{"file_path":"/tmp/x/bsfryt1j0.output","task_id":"bsfryt1j0","note":"a\nbsfryt1j0"}`)
	require.Equal(t, `{"file_path":"/app/t/zz99zz99z.output","task_id":"zz99zz99z","note":"a\nzz99zz99z"}`, string(ids.ApplyJSON(in)))
	unchanged := json.RawMessage(`{ "b": 1,  "a": "keep spacing" }`)
	require.Equal(t, string(unchanged), string(ids.ApplyJSON(unchanged)))
}

func TestMask(t *testing.T) {
	a := "Chunk ID: 8e7254\nWall time: 0.0000 seconds\nProcess exited with code 0\nOutput:\nhi\n"
	b := "Chunk ID: 1fac80\nWall time: 0.0123 seconds\nProcess exited with code 0\nOutput:\nhi\n"
	require.Equal(t, Mask("codex", a), Mask("codex", b))
	require.NotEqual(t, Mask("codex", a), Mask("codex", "Chunk ID: 1fac80\nWall time: 0.0123 seconds\nProcess exited with code 1\nOutput:\nhi\n"))
}

// TestMaskIdentifiers: two runs' results that differ only by the identifiers their harness
// made up mask alike; a difference beside an identifier, or another harness's field, is kept.
func TestMaskIdentifiers(t *testing.T) {
	claude := func(id, path, tail string) string {
		return "Command did not complete within its 1s timeout and was moved to the background (ID: " + id +
			"). Output is being written to: " + path + ". " + tail
	}
	a := claude("b770dudwh", "/tmp/claude-0/-w/s/tasks/b770dudwh.output", "You will be notified.")
	b := claude("7", "/tmp/tapebox-exec-state-0-9f3c/tasks/7/output", "You will be notified.")
	require.Equal(t, "Command did not complete within its 1s timeout and was moved to the background (ID: <background shell id>). "+
		"Output is being written to: <background output file>. You will be notified.", MaskIdentifiers("claude-code", a))
	require.Equal(t, MaskIdentifiers("claude-code", a), MaskIdentifiers("claude-code", b))
	require.NotEqual(t, MaskIdentifiers("claude-code", a),
		MaskIdentifiers("claude-code", claude("7", "/tmp/x/7/output", "You will be told.")))
	require.Equal(t, "Process running with session ID 4217", MaskIdentifiers("claude-code", "Process running with session ID 4217"), "a Codex field")
	require.Equal(t, "Process running with session ID <exec session id>", MaskIdentifiers("codex", "Process running with session ID 4217"))

	var field IdentifierField
	for _, f := range IdentifierFields {
		if f.Harness == "codex" && f.Name == "exec session id" {
			field = f
		}
	}
	v, ok := field.Value("Chunk ID: 1\nProcess running with session ID 77\nOutput:")
	require.True(t, ok)
	require.Equal(t, "77", v)
	_, ok = field.Value("Process exited with code 0")
	require.False(t, ok)
}

// TestSpawnAgentOutput: Codex's spawn_agent output (multi_agent_v1) differs between runs by
// its agent id, an identifier the harness names, and by a nickname drawn at random, which is
// masked.
func TestSpawnAgentOutput(t *testing.T) {
	rec := Mask("codex", `{"agent_id":"01a2278d-18fa-71c3-8041-bb571024e134","nickname":"Noether"}`)
	rep := Mask("codex", `{"agent_id":"01a2278d-48cd-7c90-8f3c-25f47eb5e9df","nickname":"Singer"}`)
	ids := NewIdentifiers(pairTape("codex", rec))
	require.Equal(t, map[string]string{"01a2278d-18fa-71c3-8041-bb571024e134": "01a2278d-48cd-7c90-8f3c-25f47eb5e9df"}, ids.Learn(Site{Thread: "main", Step: 0}, rec, rep))
	require.Equal(t, rep, ids.Apply(rec))
	require.Equal(t, `{"targets":["01a2278d-48cd-7c90-8f3c-25f47eb5e9df"]}`, ids.Apply(`{"targets":["01a2278d-18fa-71c3-8041-bb571024e134"]}`))
	require.Equal(t, `{"nickname":"Noether"}`, Mask("claude-code", `{"nickname":"Noether"}`), "only Codex's")
}

// TestApplyWholeTokens: a recorded id is replaced only where it stands as a whole token.
func TestApplyWholeTokens(t *testing.T) {
	ids := NewIdentifiers(pairTape("codex", "x", `{"command":"cat /tmp/a/b1234567.output"}`))
	ids.Learn(Site{Thread: "main", Step: 0}, "Process running with session ID 2000", "Process running with session ID 20006")
	require.Equal(t, "20006 and 20001 and x2000", ids.Apply("2000 and 20001 and x2000"))
	require.True(t, ContainsID(`{"session_id":2000}`, "2000"))
	require.False(t, ContainsID(`{"session_id":20006}`, "2000"))
	ids.Learn(Site{Thread: "main", Step: 0}, "at /tmp/a/b1234567.output.", "at /w/t/k7654321.output.")
	require.Equal(t, "read /w/t/k7654321.output now", ids.Apply("read /tmp/a/b1234567.output now"))
}

// TestEvidenceFromChildThread: an id handed to a subagent in its opening request counts as
// used again.
func TestEvidenceFromChildThread(t *testing.T) {
	rec := pairTape("claude-code", "x")
	rec.Threads = append(rec.Threads, &tape.Thread{ID: "sub", Parent: &tape.Parent{ThreadID: "main", ToolCallID: "toolu_00"},
		Steps: []*tape.Step{{Request: tape.Request{Messages: []tape.Message{{Role: "user", Content: []tape.Block{{Type: tape.BlockText, Text: "look at build 7f3a9c1e"}}}}},
			Timing: tape.Timing{RequestAt: 5, FirstByteAt: 6, LastByteAt: 7}}}})
	ids := NewIdentifiers(rec)
	got := ids.Learn(Site{Thread: "main", Step: 0}, "build 7f3a9c1e started", "build 0b1c2d3e started")
	require.Equal(t, map[string]string{"7f3a9c1e": "0b1c2d3e"}, got)
	require.Equal(t, "used again: the opening request of thread sub", ids.Learned()[0].Evidence)
}
