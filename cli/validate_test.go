package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/tape"
)

// runVerbForTest runs the command line with buffers and returns the exit code and output.
func runVerbForTest(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = RunEnv(t.Context(), args, &Env{Stdout: &out, Stderr: &errOut, Getenv: func(string) string { return "" }})
	return code, out.String(), errOut.String()
}

// inspectTestTape is a small recording: a main thread with parallel tool calls (one
// failed, one freeform), a subagent spawned by a Task call, and no end recorded.
func inspectTestTape() *tape.Tape {
	start := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	t := tape.New(tape.ProviderAnthropic, start)
	t.Meta.TapeID = "0123456789abcdef0123456789abcdef"
	t.Meta.Harness, t.Meta.HarnessVersion, t.Meta.Model = "claude-code", "2.1.3", "claude-sonnet-4-5"
	t.Meta.Task = map[string]string{"bench": "tb4", "id": "hello"}
	t.Meta.Labels = map[string]string{"run": "7"}
	next := 3000.0
	long := `{"command":"` + strings.Repeat("echo hello; ", 20) + `"}`
	main := &tape.Thread{ID: "main", Steps: []*tape.Step{
		{
			Request:  tape.Request{Path: "/v1/messages", Params: map[string]json.RawMessage{"model": json.RawMessage(`"claude-opus-4-1"`)}},
			Response: tape.Response{Status: 200, StopReason: "tool_use", Usage: tape.Usage{InputTokens: 100, OutputTokens: 20, CacheReadInputTokens: 5, CacheCreationInputTokens: 7}},
			ToolCalls: []tape.ToolCall{
				{ID: "toolu_a", Name: "Bash", Input: json.RawMessage(long)},
				{ID: "toolu_b", Name: "apply_patch", Kind: "custom", Input: json.RawMessage(`{"input":"*** Begin Patch\n*** End Patch"}`)},
				{ID: "toolu_task", Name: "Task", Input: json.RawMessage(`{"prompt":"look around"}`)},
			},
			ToolResults: []tape.ToolResult{
				{ToolCallID: "toolu_a", IsError: true, Content: []tape.Block{{Type: tape.BlockText, Text: "exit 1"}}},
				{ToolCallID: "toolu_b", Content: []tape.Block{{Type: tape.BlockText, Text: "Done!"}}},
			},
			Timing: tape.Timing{RequestAt: 100, FirstByteAt: 912.5, LastByteAt: 2100, NextRequestAt: &next},
		},
		{
			Request:  tape.Request{Path: "/v1/messages"},
			Response: tape.Response{Status: 200, StopReason: "end_turn", Usage: tape.Usage{InputTokens: 200, OutputTokens: 30}},
			Timing:   tape.Timing{RequestAt: 3000, FirstByteAt: 3400, LastByteAt: 15000},
		},
	}}
	sub := &tape.Thread{ID: "sub-1", Parent: &tape.Parent{ThreadID: "main", ToolCallID: "toolu_task"}, Steps: []*tape.Step{{
		Request:  tape.Request{Path: "/v1/messages", Raw: json.RawMessage(`{"model":"claude-haiku-4-5"}`)},
		Response: tape.Response{Status: 200, StopReason: "end_turn", Usage: tape.Usage{InputTokens: 50, OutputTokens: 5}},
		Timing:   tape.Timing{RequestAt: 2200, FirstByteAt: 2300, LastByteAt: 2400},
	}}}
	t.Threads = []*tape.Thread{main, sub}
	return t
}

func writeTape(t *testing.T, dir, name string, tp *tape.Tape) string {
	t.Helper()
	path := filepath.Join(dir, name)
	require.NoError(t, tape.Save(path, tp))
	return path
}

func writeBytes(t *testing.T, dir, name string, data []byte) string {
	t.Helper()
	path := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(path, data, 0o644))
	return path
}

func TestValidate(t *testing.T) {
	dir := t.TempDir()
	good := writeTape(t, dir, "good.json", inspectTestTape())
	data, err := os.ReadFile(good)
	require.NoError(t, err)
	missing := writeBytes(t, dir, "missing.json", bytes.Replace(data, []byte(`"stop_reason":"end_turn",`), nil, 1))
	badEnum := writeBytes(t, dir, "enum.json", bytes.Replace(data, []byte(`"provider":"anthropic"`), []byte(`"provider":"bedrock"`), 1))
	notJSON := writeBytes(t, dir, "text.json", []byte("{\n  nope\n}"))
	truncated := writeBytes(t, dir, "cut.json", data[:len(data)/2])
	absent := filepath.Join(dir, "absent.json")

	tests := []struct {
		name       string
		args       []string
		code       int
		stdout     []string // lines, in order
		stderrHas  string
		stdoutNone bool
	}{
		{name: "valid", args: []string{good}, code: ExitOK, stdout: []string{good + ": ok"}},
		{name: "quiet", args: []string{"-q", good}, code: ExitOK, stdoutNone: true},
		{
			name: "missing field", args: []string{good, missing}, code: ExitFailure,
			stdout:    []string{good + ": ok", missing + ": /threads/0/steps/1/response/stop_reason: required field is missing"},
			stderrHas: "tapebox validate: 1 of 2 tapes invalid or unreadable",
		},
		{
			name: "wrong enum", args: []string{"-q", badEnum}, code: ExitFailure,
			stdout: []string{badEnum + `: /meta/provider: got "bedrock", want one of "", "anthropic", "openai-chat", "openai-responses", "gemini"`},
		},
		{name: "not JSON", args: []string{"-q", notJSON}, code: ExitFailure, stdout: []string{notJSON + ": not valid JSON at line 2, column 3: invalid character 'n' looking for the beginning of an object key"}},
		{name: "truncated", args: []string{"-q", truncated}, code: ExitFailure, stdout: []string{truncated + ": truncated JSON: the input ends after"}},
		{name: "unreadable", args: []string{"-q", absent}, code: ExitFailure, stdout: []string{absent + ": read tape: open " + absent + ": no such file or directory"}},
		{name: "no files", args: nil, code: ExitUsage, stderrHas: "want at least one tape file", stdoutNone: true},
		{name: "bad flag", args: []string{"--nope", good}, code: ExitUsage, stdoutNone: true},
		{name: "help", args: []string{"--help"}, code: ExitOK, stdout: []string{"Usage: tapebox validate [--json] [-q] FILE|DIR..."}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := runVerbForTest(t, append([]string{"validate"}, tt.args...)...)
			assert.Equal(t, tt.code, code, "stderr: %s", stderr)
			if tt.stdoutNone {
				assert.Empty(t, stdout)
			}
			lines := strings.Split(strings.TrimSuffix(stdout, "\n"), "\n")
			for i, want := range tt.stdout {
				if assert.Greater(t, len(lines), i, "stdout: %s", stdout) {
					assert.True(t, strings.HasPrefix(lines[i], want), "line %d:\n got %q\nwant %q...", i, lines[i], want)
				}
			}
			assert.Contains(t, stderr, tt.stderrHas)
		})
	}
}

func TestValidateJSON(t *testing.T) {
	dir := t.TempDir()
	good := writeTape(t, dir, "good.json", inspectTestTape())
	data, err := os.ReadFile(good)
	require.NoError(t, err)
	bad := writeBytes(t, dir, "bad.json", bytes.Replace(data, []byte(`"status":200`), []byte(`"status":"200"`), 2))
	notJSON := writeBytes(t, dir, "text.json", []byte("hello"))

	code, stdout, _ := runVerbForTest(t, "validate", "--json", good, bad, notJSON)
	assert.Equal(t, ExitFailure, code)
	var got []struct {
		File     string `json:"file"`
		OK       bool   `json:"ok"`
		Problems []struct {
			Pointer string `json:"pointer"`
			Message string `json:"message"`
		} `json:"problems"`
		Error string `json:"error"`
	}
	require.NoError(t, json.Unmarshal([]byte(stdout), &got), stdout)
	require.Len(t, got, 3)
	assert.Equal(t, good, got[0].File)
	assert.True(t, got[0].OK)
	assert.Empty(t, got[0].Problems)
	assert.NotContains(t, stdout, "null", "problems is [] rather than null")

	assert.Equal(t, bad, got[1].File)
	assert.False(t, got[1].OK)
	require.Len(t, got[1].Problems, 2)
	assert.Equal(t, "/threads/0/steps/0/response/status", got[1].Problems[0].Pointer)
	assert.Equal(t, "/threads/0/steps/1/response/status", got[1].Problems[1].Pointer)
	assert.Equal(t, "wrong type: got string, want integer", got[1].Problems[0].Message)

	assert.False(t, got[2].OK)
	assert.Contains(t, got[2].Error, "not valid JSON at line 1, column 1")
}
