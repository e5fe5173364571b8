package compare

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/internal/testutil/tapegen"
)

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
			rec := tapegen.Pair(tc.harness, tc.rec, `{"command":"echo next"}`)
			r := Compare(rec, tapegen.ReplayOf(t, rec, tc.rep))
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
			rec := tapegen.Pair(tc.harness, tc.rec, tc.recLater...)
			r := Compare(rec, tapegen.ReplayOf(t, rec, tc.rep, tc.repLater...))
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
	rec := tapegen.Pair("codex", "Process running with session ID 2000", `{"session_id":2000,"yield_time_ms":2000}`)
	rep := tapegen.ReplayOf(t, rec, "Process running with session ID 31337", `{"session_id":31337,"yield_time_ms":31337}`)
	r := Compare(rec, rep)
	require.False(t, r.Identical)
	require.Equal(t, "tool_call.input", r.Differences[0].Field)
}

// TestCompareWithCwd: a replay that ran in another directory names paths under it where the
// recording named its meta.cwd. Told the replay's directory, CompareWith calls them the same
// (and lists the pair); Compare, and CompareWith told another directory, do not.
func TestCompareWithCwd(t *testing.T) {
	rec := tapegen.Pair("opencode", "<path>/tmp/rec/README.md</path>", `{"command":"cat /tmp/rec/notes.txt"}`)
	rec.Meta.Cwd = "/tmp/rec"
	rep := tapegen.ReplayOf(t, rec, "<path>/tmp/fork-1/README.md</path>", `{"command":"cat /tmp/fork-1/notes.txt"}`)
	r := CompareWith(rec, rep, Options{Cwd: "/tmp/fork-1"})
	require.True(t, r.Identical, "%+v", r.Differences)
	require.Len(t, r.Identifiers, 1)
	require.Equal(t, "/tmp/rec", r.Identifiers[0].Recorded)
	require.False(t, Compare(rec, rep).Identical)
	require.False(t, CompareWith(rec, rep, Options{Cwd: "/tmp/fork-2"}).Identical)
	require.True(t, CompareWith(rec, rec, Options{Cwd: "/tmp/rec"}).Identical, "the same directory pins nothing")
}
