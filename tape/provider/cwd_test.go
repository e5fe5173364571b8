package provider_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/tape"
	"github.com/tapebox/tapebox/tape/provider"
)

// Request bodies shaped as the real harnesses send them (Claude Code 2.1.332 and Codex
// 0.171.0 against a fake provider, /work/shared/captures). The captures cut long strings;
// the environment texts here are completed with the lines the same runs showed (the
// directory is the one the capture's own tool calls write to).
const (
	claudeCode2132Request = `{
 "model": "claude-opus-5-5",
 "messages": [
  {"role": "user", "content": [
   {"type": "text", "text": "<system-reminder>\nAttribution for git commits and pull requests you create from here on (this replaces Claude Code's default).\n</system-reminder>"},
   {"type": "text", "text": "say hi"}
  ]},
  {"role": "system", "content": "# Environment\nYou have been invoked in the following environment: \n - Primary working directory: /tmp/realclients\n - Is a git repository: false\n - Platform: linux", "output_config": {"effort": "medium"}}
 ],
 "system": [
  {"type": "text", "text": "x-anthropic-billing-header: cc_version=2.1.332.0b8; cc_entrypoint=sdk-cli;"},
  {"type": "text", "text": "You are a Claude agent, built on Anthropic's Claude Agent SDK.", "cache_control": {"type": "ephemeral"}}
 ],
 "tools": [{"name": "Bash", "description": "Executes a given bash command.", "input_schema": {"type": "object"}}],
 "max_tokens": 128000,
 "stream": true
}`
	// Claude Code before 2.1 put its environment in the system prompt, inside <env>.
	claudeCodeEnvRequest = `{
 "model": "claude-sonnet-4-5",
 "system": [
  {"type": "text", "text": "You are Claude Code, Anthropic's official CLI for Claude."},
  {"type": "text", "text": "You are an interactive CLI tool that helps users with software engineering tasks.\n\nHere is useful information about the environment you are running in:\n<env>\nWorking directory: /home/dev/project\nIs directory a git repo: Yes\nPlatform: linux\nOS Version: Linux 6.1.0-28-amd64\nToday's date: 2025-10-02\n</env>\nYou are powered by the model named Sonnet 4.5."}
 ],
 "messages": [{"role": "user", "content": [{"type": "text", "text": "fix the test"}]}],
 "max_tokens": 32000,
 "stream": true
}`
	codex171Request = `{
 "model": "gpt-5.5",
 "stream": true,
 "instructions": "You are Codex, a coding agent based on GPT-5.",
 "input": [
  {"type": "message", "id": "msg_91f828b1-e483-598e-a47f-4ada048bb223", "role": "developer", "content": [
   {"type": "input_text", "text": "<permissions instructions>\nFilesystem sandboxing defines which files can be read or written.\n</permissions instructions>"}
  ]},
  {"type": "message", "id": "msg_01a226a0-3ca8-79e0-9e77-7247d195be77", "role": "user", "content": [
   {"type": "input_text", "text": "<environment_context>\n  <cwd>/tmp/realclients</cwd>\n  <shell>bash</shell>\n  <current_date>2026-11-29</current_date>\n  <timezone>Etc/UTC</timezone>\n</environment_context>"}
  ]},
  {"type": "message", "id": "msg_01a226a0-3cb8-7a30-b14a-d0b4f685c7f3", "role": "user", "content": [
   {"type": "input_text", "text": "say hi"}
  ]},
  {"type": "function_call", "status": "completed", "id": "fc_fake1", "name": "exec_command", "arguments": "{\"cmd\": \"echo hello > /tmp/realclients/out.txt\"}", "call_id": "call_fake1"},
  {"type": "function_call_output", "id": "fco_1", "call_id": "call_fake1", "output": "<environment_context>\n  <cwd>/elsewhere</cwd>\n</environment_context>"}
 ],
 "tools": [{"type": "function", "name": "exec_command", "parameters": {"type": "object"}}]
}`
)

func TestCwd(t *testing.T) {
	tests := []struct {
		name     string
		provider tape.Provider
		body     string
		want     string
	}{
		{"claude code 2.1 environment entry", anth, claudeCode2132Request, "/tmp/realclients"},
		{"claude code <env> in the system prompt", anth, claudeCodeEnvRequest, "/home/dev/project"},
		{"codex environment context", resp, codex171Request, "/tmp/realclients"},
		{"codex environment context in chat completions", chat, `{"model":"m","messages":[{"role":"user","content":"<environment_context>\n  <cwd>/work</cwd>\n</environment_context>"}]}`, "/work"},
		{"pi's system prompt", anth, `{"model":"fake-model","system":[{"type":"text","text":"You are an expert coding assistant operating inside pi.\nCurrent date: 2026-12-01\nCurrent working directory: /tmp/pi-work"}],"messages":[{"role":"user","content":[{"type":"text","text":"go"}]}],"max_tokens":4096,"stream":true}`, "/tmp/pi-work"},
		{"pi's system prompt in chat completions", chat, `{"model":"fake-model","messages":[{"role":"system","content":"You are an expert coding assistant operating inside pi.\nCurrent working directory: /srv/app"},{"role":"user","content":"go"}]}`, "/srv/app"},
		{"no environment (tapebox-mini)", anth, `{"model":"fake-model","system":"You are tapebox-mini, a tiny coding agent.","messages":[{"role":"user","content":[{"type":"text","text":"Write notes."}]}],"max_tokens":4096,"stream":true}`, ""},
		{"a user prompt quoting the line", anth, `{"model":"m","messages":[{"role":"user","content":"Primary working directory: /not/this"}]}`, ""},
		{"a tool result naming a directory", anth, `{"model":"m","messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":"Working directory: /not/this\n<environment_context><cwd>/nor/this</cwd></environment_context>"}]}]}`, ""},
		{"an empty label", anth, `{"model":"m","system":"<env>\nWorking directory: \n</env>","messages":[]}`, ""},
		{"a cwd element outside the environment context", resp, `{"model":"m","input":[{"type":"message","role":"user","content":[{"type":"input_text","text":"<cwd>/not/this</cwd>"}]}]}`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &tape.Step{Request: tape.Request{Raw: []byte(tt.body)}}
			require.NoError(t, provider.Normalize(tt.provider, s))
			assert.Equal(t, tt.want, provider.Cwd(&s.Request))
		})
	}
}

// TestCwdOfTestdata: the request fixtures made after the real harnesses name their directory.
func TestCwdOfTestdata(t *testing.T) {
	for _, tt := range []struct {
		provider tape.Provider
		file     string
	}{
		{anth, "anthropic/claude_code_request.json"},
		{resp, "responses/codex_request.json"},
	} {
		s := &tape.Step{Request: tape.Request{Raw: readFile(t, tt.file)}}
		require.NoError(t, provider.Normalize(tt.provider, s))
		assert.Equal(t, "/tmp/work", provider.Cwd(&s.Request), tt.file)
	}
}
