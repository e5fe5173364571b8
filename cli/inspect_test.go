package cli

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/tape"
)

func TestInspectText(t *testing.T) {
	dir := t.TempDir()
	running := writeTape(t, dir, "running.json", inspectTestTape())
	ended := inspectTestTape()
	ended.Meta.Ended = &tape.Ended{Reason: tape.EndCut, At: ended.Meta.StartedAt.Add(20 * time.Second), Detail: "SIGTERM"}
	replay := "fedcba9876543210fedcba9876543210"
	ended.Meta.ReplayOf = &replay
	ended.Meta.Cwd = "/tmp/replay-dir"
	endedPath := writeTape(t, dir, "ended.json", ended)

	tests := []struct {
		name string
		path string
		want []string // substrings, each on its own line
	}{
		{
			name: "running",
			path: running,
			want: []string{
				"tape       0123456789abcdef0123456789abcdef",
				"harness    claude-code 2.1.3",
				"provider   anthropic",
				"model      claude-sonnet-4-5",
				"cwd        unknown: the tape does not say where it ran (a replay in Docker needs --cwd)",
				"started    2026-03-01T12:00:00Z",
				"task       bench=tb4 id=hello",
				"labels     run=7",
				"ended      no end recorded: still running or cut short",
				"totals     2 threads, 3 steps, 3 tool calls",
				"tools      Bash, Task, apply_patch",
				"tokens     input 350, output 55, cache read 5, cache write 7, reasoning 0",
				"duration   15.0 s",
				"thread main: 2 steps",
				"  step 0   claude-opus-4-1  first byte 812 ms, last byte 2000 ms  tokens in 100 out 20 cache-read 5 cache-write 7  stop tool_use",
				`    Bash toolu_a {"command":"echo hello; echo hello; echo hello; echo hello; echo hello; echo he…  [error]`,
				"    apply_patch toolu_b *** Begin Patch *** End Patch",
				`    Task toolu_task {"prompt":"look around"}  [no result]`,
				"  step 1   claude-sonnet-4-5  first byte 400 ms, last byte 12000 ms  tokens in 200 out 30 cache-read 0 cache-write 0  stop end_turn",
				"thread sub-1  spawned by main / toolu_task (Task): 1 step",
				"  step 0   claude-haiku-4-5  first byte 100 ms, last byte 200 ms",
			},
		},
		{
			name: "ended replay",
			path: endedPath,
			want: []string{
				"tape       0123456789abcdef0123456789abcdef (replay of fedcba9876543210fedcba9876543210)",
				"cwd        /tmp/replay-dir",
				"ended      cut at 2026-03-01T12:00:20Z (20s after the start): SIGTERM",
				"duration   20.0 s",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := runVerbForTest(t, "inspect", tt.path)
			require.Equal(t, ExitOK, code, stderr)
			lines := strings.Split(stdout, "\n")
			for _, want := range tt.want {
				found := false
				for _, l := range lines {
					if strings.HasPrefix(l, want) {
						found = true
					}
				}
				assert.True(t, found, "no line starting with %q in:\n%s", want, stdout)
			}
		})
	}
}

func TestInspectJSON(t *testing.T) {
	tp := inspectTestTape()
	tp.Meta.Cwd = "/work/app"
	path := writeTape(t, t.TempDir(), "run.json", tp)
	code, stdout, stderr := runVerbForTest(t, "inspect", "--json", path)
	require.Equal(t, ExitOK, code, stderr)
	var got struct {
		Meta struct {
			TapeID string      `json:"tape_id"`
			Cwd    string      `json:"cwd"`
			Ended  *tape.Ended `json:"ended"`
		} `json:"meta"`
		Ended   string          `json:"ended"`
		Totals  json.RawMessage `json:"totals"`
		Threads []struct {
			ID     string `json:"id"`
			Parent *struct {
				ThreadID   string `json:"thread_id"`
				ToolCallID string `json:"tool_call_id"`
				ToolName   string `json:"tool_name"`
				Step       *int   `json:"step"`
			} `json:"parent"`
			Steps []struct {
				Index       int     `json:"index"`
				Model       string  `json:"model"`
				FirstByteMS float64 `json:"first_byte_ms"`
				LastByteMS  float64 `json:"last_byte_ms"`
				StopReason  string  `json:"stop_reason"`
				ToolCalls   []struct {
					ID     string          `json:"id"`
					Name   string          `json:"name"`
					Input  json.RawMessage `json:"input"`
					Result string          `json:"result"`
				} `json:"tool_calls"`
			} `json:"steps"`
		} `json:"threads"`
	}
	require.NoError(t, json.Unmarshal([]byte(stdout), &got), stdout)
	assert.Equal(t, "0123456789abcdef0123456789abcdef", got.Meta.TapeID)
	assert.Equal(t, "/work/app", got.Meta.Cwd)
	assert.Nil(t, got.Meta.Ended)
	assert.Equal(t, "unknown", got.Ended)
	assert.JSONEq(t, `{"threads": 2, "steps": 3, "tool_calls": 3, "duration_ms": 15000,
		"usage": {"input_tokens": 350, "output_tokens": 55, "cache_read_input_tokens": 5, "cache_creation_input_tokens": 7, "reasoning_tokens": 0},
		"tool_names": ["Bash", "Task", "apply_patch"]}`, string(got.Totals), "the totals, whole")
	require.Len(t, got.Threads, 2)
	assert.Nil(t, got.Threads[0].Parent)
	require.NotNil(t, got.Threads[1].Parent)
	assert.Equal(t, "main", got.Threads[1].Parent.ThreadID)
	assert.Equal(t, "toolu_task", got.Threads[1].Parent.ToolCallID)
	assert.Equal(t, "Task", got.Threads[1].Parent.ToolName)
	require.NotNil(t, got.Threads[1].Parent.Step)
	assert.Equal(t, 0, *got.Threads[1].Parent.Step)
	s0 := got.Threads[0].Steps[0]
	assert.Equal(t, "claude-opus-4-1", s0.Model)
	assert.Equal(t, 812.5, s0.FirstByteMS)
	assert.Equal(t, 2000.0, s0.LastByteMS)
	require.Len(t, s0.ToolCalls, 3)
	var results []string
	for i, c := range s0.ToolCalls {
		results = append(results, c.Result)
		var v any
		require.NoError(t, json.Unmarshal(c.Input, &v), "tool input %d is a JSON value: %s", i, c.Input)
		assert.JSONEq(t, string(tp.Threads[0].Steps[0].ToolCalls[i].Input), string(c.Input), "the whole input, not a display string")
	}
	assert.Equal(t, []string{"error", "ok", "none"}, results)
	assert.Empty(t, got.Threads[0].Steps[1].ToolCalls)
}

// TestInspectJSONWithoutCwd: a tape that does not say where it ran has no meta.cwd, as in
// the tape itself.
func TestInspectJSONWithoutCwd(t *testing.T) {
	path := writeTape(t, t.TempDir(), "run.json", inspectTestTape())
	code, stdout, stderr := runVerbForTest(t, "inspect", "--json", path)
	require.Equal(t, ExitOK, code, stderr)
	var got struct {
		Meta map[string]json.RawMessage `json:"meta"`
	}
	require.NoError(t, json.Unmarshal([]byte(stdout), &got), stdout)
	assert.Contains(t, got.Meta, "tape_id")
	assert.NotContains(t, got.Meta, "cwd")
}

func TestInspectErrors(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name   string
		args   []string
		code   int
		stderr string
	}{
		{"no file", nil, ExitUsage, "want one tape file"},
		{"two files", []string{"a.json", "b.json"}, ExitUsage, "want one tape file"},
		{"missing", []string{filepath.Join(dir, "absent.json")}, ExitFailure, "no such file or directory"},
		{"not a tape", []string{writeBytes(t, dir, "text.json", []byte("hello"))}, ExitFailure, "not valid JSON at line 1, column 1"},
		{"future version", []string{writeBytes(t, dir, "v2.json", []byte(`{"version":2}`))}, ExitFailure, "unsupported tape version"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := runVerbForTest(t, append([]string{"inspect"}, tt.args...)...)
			assert.Equal(t, tt.code, code)
			assert.Empty(t, stdout)
			assert.Contains(t, stderr, tt.stderr)
		})
	}
}

func TestOneLine(t *testing.T) {
	tests := []struct {
		name, raw, want string
	}{
		{"compact", "{\n  \"a\": [1, 2]\n}", `{"a":[1,2]}`},
		{"html escapes", `{"cmd":"a \u0026\u0026 b \u003e c"}`, `{"cmd":"a && b > c"}`},
		{"escaped backslash kept", `{"p":"C:\\u0026"}`, `{"p":"C:\\u0026"}`},
		{"freeform", `{"input":"line one\n  line two"}`, "line one line two"},
		{"terminal escapes", `{"input":"\u001b]0;owned\u0007 ls"}`, `\x1b]0;owned\x07 ls`},
		{"long", `{"s":"` + strings.Repeat("é", 100) + `"}`, `{"s":"` + strings.Repeat("é", 73) + "…"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, oneLine(json.RawMessage(tt.raw), 80))
		})
	}
}

// TestInspectTruncated: a step whose bodies were over the recording limit says so.
func TestInspectTruncated(t *testing.T) {
	tp := inspectTestTape()
	cut := tape.Truncation{Bytes: 100 << 20, Limit: 32 << 20}
	s := tp.Threads[0].Steps[1]
	s.Request.Raw, s.Response.Raw = cut.Raw(), cut.Raw()
	path := writeTape(t, t.TempDir(), "run.json", tp)

	code, stdout, stderr := runVerbForTest(t, "inspect", path)
	require.Equal(t, ExitOK, code, stderr)
	assert.Contains(t, stdout, "\n    [request body not recorded: 100.0 MiB, over the 32.0 MiB recording limit]\n    [response body not recorded: 100.0 MiB")

	code, stdout, stderr = runVerbForTest(t, "inspect", "--json", path)
	require.Equal(t, ExitOK, code, stderr)
	var sum inspectSummary
	require.NoError(t, json.Unmarshal([]byte(stdout), &sum))
	assert.Equal(t, &cut, sum.Threads[0].Steps[1].RequestTruncated)
	assert.Equal(t, &cut, sum.Threads[0].Steps[1].ResponseTruncated)
	assert.Nil(t, sum.Threads[0].Steps[0].ResponseTruncated)
	assert.NotContains(t, stdout, "request_truncated\": null")
}
