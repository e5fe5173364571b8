package match

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/internal/testutil/tapegen"
	"github.com/tapebox/tapebox/tape"
)

func TestLearnNeedsEvidence(t *testing.T) {
	rec := tapegen.Pair("claude-code", "x", `{"command":"cat /t/abcdefgh/x.out"}`)
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
	rec := tapegen.Pair("codex", "x")
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
	rec = tapegen.Pair("claude-code", "x", `{"task_id":"bsfryt1j0"}`)
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
	ids := NewIdentifiers(tapegen.Pair("codex", rec))
	require.Equal(t, map[string]string{"01a2278d-18fa-71c3-8041-bb571024e134": "01a2278d-48cd-7c90-8f3c-25f47eb5e9df"}, ids.Learn(Site{Thread: "main", Step: 0}, rec, rep))
	require.Equal(t, rep, ids.Apply(rec))
	require.Equal(t, `{"targets":["01a2278d-48cd-7c90-8f3c-25f47eb5e9df"]}`, ids.Apply(`{"targets":["01a2278d-18fa-71c3-8041-bb571024e134"]}`))
	require.Equal(t, `{"nickname":"Noether"}`, Mask("claude-code", `{"nickname":"Noether"}`), "only Codex's")
}

// TestApplyWholeTokens: a recorded id is replaced only where it stands as a whole token.
func TestApplyWholeTokens(t *testing.T) {
	ids := NewIdentifiers(tapegen.Pair("codex", "x", `{"command":"cat /tmp/a/b1234567.output"}`))
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
	rec := tapegen.Pair("claude-code", "x")
	rec.Threads = append(rec.Threads, &tape.Thread{ID: "sub", Parent: &tape.Parent{ThreadID: "main", ToolCallID: "toolu_00"},
		Steps: []*tape.Step{{Request: tape.Request{Messages: []tape.Message{{Role: "user", Content: []tape.Block{{Type: tape.BlockText, Text: "look at build 7f3a9c1e"}}}}},
			Timing: tape.Timing{RequestAt: 5, FirstByteAt: 6, LastByteAt: 7}}}})
	ids := NewIdentifiers(rec)
	got := ids.Learn(Site{Thread: "main", Step: 0}, "build 7f3a9c1e started", "build 0b1c2d3e started")
	require.Equal(t, map[string]string{"7f3a9c1e": "0b1c2d3e"}, got)
	require.Equal(t, "used again: the opening request of thread sub", ids.Learned()[0].Evidence)
}

// TestPin: a pinned pair (a replay's working directory for the recording's) is applied to
// paths under it, never inside a longer name, and Learned names its evidence; a pair of a
// value with itself, or of nothing, is not recorded.
func TestPin(t *testing.T) {
	ids := NewIdentifiers(&tape.Tape{})
	ids.Pin("/tmp/rec", "/tmp/fork-1", "meta.cwd")
	ids.Pin("/same", "/same", "no-op")
	ids.Pin("", "/x", "no-op")
	require.Equal(t, "/tmp/fork-1/a.txt and /tmp/fork-1 but /tmp/recent and /tmp/rec2", ids.Apply("/tmp/rec/a.txt and /tmp/rec but /tmp/recent and /tmp/rec2"))
	require.Equal(t, []Learned{{Recorded: "/tmp/rec", Replayed: "/tmp/fork-1", Evidence: "meta.cwd"}}, ids.Learned())
}
