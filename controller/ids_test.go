package controller

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestIdentifiersLearnAndApply(t *testing.T) {
	for _, tc := range []struct {
		name, rec, rep string
		want           map[string]string
	}{
		{"same text teaches nothing", "ok", "ok", nil},
		{"claude background task",
			"Command running in background with ID: bsfryt1j0. Output is being written to: /tmp/claude-0/-app/80e1/tasks/bsfryt1j0.output. You will be notified.",
			"Command running in background with ID: k2p9xq4ma. Output is being written to: /tmp/tapebox-exec-state-0-9f3c1e0a7b2d4c68/tasks/k2p9xq4ma/output. You will be notified.",
			map[string]string{"bsfryt1j0": "k2p9xq4ma", "/tmp/claude-0/-app/80e1/tasks/bsfryt1j0.output": "/tmp/tapebox-exec-state-0-9f3c1e0a7b2d4c68/tasks/k2p9xq4ma/output"}},
		{"claude background task whose recorded id drew no digit",
			"Command running in background with ID: bhasuphlv. Output is being written to: /tmp/claude-0/-w/9103/tasks/bhasuphlv.output. You will be notified.",
			"Command running in background with ID: b86y08nu1. Output is being written to: /tmp/claude-0/-w/5a32/tasks/b86y08nu1.output. You will be notified.",
			map[string]string{"bhasuphlv": "b86y08nu1", "9103": "5a32"}},
		{"ids with no digit on either side, in a path", "at /t/abcdefgh/x.out", "at /t/qwertyui/x.out",
			map[string]string{"abcdefgh": "qwertyui"}},
		{"different words of the same length teach nothing", "result: failed", "result: worked", nil},
		{"codex session id", "Process running with session ID 48213", "Process running with session ID 90112",
			map[string]string{"48213": "90112"}},
		{"different words teach nothing", "Exit code 1\nfailed", "Exit code 0\nworked", nil},
		{"times are not ids", "took 0.0012 s", "took 0.0031 s", nil},
		{"different shape teaches nothing", "a b c", "a b", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ids := NewIdentifiers()
			got := ids.Learn(tc.rec, tc.rep)
			for k, v := range tc.want {
				require.Equal(t, v, got[k], "pair for %s", k)
			}
			if tc.want == nil {
				require.Empty(t, got)
			}
		})
	}
	ids := NewIdentifiers()
	ids.Learn("ID: bsfryt1j0 at /tmp/x/bsfryt1j0.output", "ID: zz99zz99z at /app/t/zz99zz99z.output")
	in := json.RawMessage(`{"file_path":"/tmp/x/bsfryt1j0.output","task_id":"bsfryt1j0"}`)
	require.JSONEq(t, `{"file_path":"/app/t/zz99zz99z.output","task_id":"zz99zz99z"}`, string(ids.ApplyJSON(in)))
}

func TestMask(t *testing.T) {
	a := "Chunk ID: 8e7254\nWall time: 0.0000 seconds\nProcess exited with code 0\nOutput:\nhi\n"
	b := "Chunk ID: 1fac80\nWall time: 0.0123 seconds\nProcess exited with code 0\nOutput:\nhi\n"
	require.Equal(t, Mask("codex", a), Mask("codex", b))
	require.NotEqual(t, Mask("codex", a), Mask("codex", "Chunk ID: 1fac80\nWall time: 0.0123 seconds\nProcess exited with code 1\nOutput:\nhi\n"))
}

// TestSpawnAgentOutput: Codex's spawn_agent output (multi_agent_v1) differs between runs by
// its agent id, an identifier to learn, and by a nickname drawn at random, which is masked.
func TestSpawnAgentOutput(t *testing.T) {
	rec := Mask("codex", `{"agent_id":"01a2278d-18fa-71c3-8041-bb571024e134","nickname":"Noether"}`)
	rep := Mask("codex", `{"agent_id":"01a2278d-48cd-7c90-8f3c-25f47eb5e9df","nickname":"Singer"}`)
	ids := NewIdentifiers()
	require.Equal(t, map[string]string{"01a2278d-18fa-71c3-8041-bb571024e134": "01a2278d-48cd-7c90-8f3c-25f47eb5e9df"}, ids.Learn(rec, rep))
	require.Equal(t, rep, ids.Apply(rec))
	require.Equal(t, `{"targets":["01a2278d-48cd-7c90-8f3c-25f47eb5e9df"]}`, ids.Apply(`{"targets":["01a2278d-18fa-71c3-8041-bb571024e134"]}`))
	require.Equal(t, `{"nickname":"Noether"}`, Mask("claude-code", `{"nickname":"Noether"}`), "only Codex's")
}

// TestApplyWholeTokens: a recorded id is replaced only where it stands as a whole token.
func TestApplyWholeTokens(t *testing.T) {
	ids := NewIdentifiers()
	ids.Learn("Process running with session ID 2000", "Process running with session ID 20006")
	require.Equal(t, "20006 and 20001 and x2000", ids.Apply("2000 and 20001 and x2000"))
	require.True(t, ContainsID(`{"session_id":2000}`, "2000"))
	require.False(t, ContainsID(`{"session_id":20006}`, "2000"))
	ids.Learn("at /tmp/a/b1234567.output.", "at /w/t/k7654321.output.")
	require.Equal(t, "read /w/t/k7654321.output now", ids.Apply("read /tmp/a/b1234567.output now"))
}
