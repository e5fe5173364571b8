package gateway_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/gateway"
	"github.com/tapebox/tapebox/tape"
	"github.com/tapebox/tapebox/testkit/fakeprovider"
)

// codexEnvRequest is a Codex 0.171.0-shaped first request: developer instructions, the
// environment context as a user message, then the prompt (/work/shared/captures).
func codexEnvRequest(cwd, prompt string) []byte {
	b, _ := json.Marshal(map[string]any{
		"model":  "gpt-5.5",
		"stream": true,
		"input": []map[string]any{
			{"type": "message", "role": "developer", "content": []map[string]string{{"type": "input_text", "text": "<permissions instructions>\nFilesystem sandboxing defines which files can be read or written.\n</permissions instructions>"}}},
			{"type": "message", "role": "user", "content": []map[string]string{{"type": "input_text", "text": "<environment_context>\n  <cwd>" + cwd + "</cwd>\n  <shell>bash</shell>\n  <current_date>2026-11-29</current_date>\n</environment_context>"}}},
			{"type": "message", "role": "user", "content": []map[string]string{{"type": "input_text", "text": prompt}}},
		},
		"tools": []any{},
	})
	return b
}

// TestLearnCwd: meta.cwd is what the main thread's first request names, unless the
// configuration gives it.
func TestLearnCwd(t *testing.T) {
	script := fakeprovider.Script{Threads: []fakeprovider.Thread{
		{Name: "main", Turns: []fakeprovider.Turn{{Text: "First answer."}}},
		{Name: "other", Marker: "SECOND", Turns: []fakeprovider.Turn{{Text: "Other answer."}}},
	}}
	claudeEnv := systemEntry("# Environment\nYou have been invoked in the following environment: \n - Primary working directory: /tmp/realclients\n - Is a git repository: false")
	tests := []struct {
		name  string
		given string // Config.Cwd
		calls []call
		want  string
	}{
		{
			name:  "claude code environment block",
			calls: []call{{body: anthropicRequest(true, userText("do the task"), claudeEnv)}},
			want:  "/tmp/realclients",
		},
		{
			name:  "codex environment context",
			calls: []call{{path: "/v1/responses", body: codexEnvRequest("/tmp/sa/A1/work", "say hi")}},
			want:  "/tmp/sa/A1/work",
		},
		{
			name:  "given wins over the request",
			given: "/given",
			calls: []call{{body: anthropicRequest(true, userText("do the task"), claudeEnv)}},
			want:  "/given",
		},
		{
			name:  "given with no environment in the request",
			given: "/given",
			calls: []call{{body: anthropicRequest(true, userText("do the task"))}},
			want:  "/given",
		},
		{
			name:  "absent",
			calls: []call{{body: anthropicRequest(true, userText("do the task"))}},
			want:  "",
		},
		{
			name: "only the main thread's first request counts",
			calls: []call{
				{body: anthropicRequest(true, userText("do the task"))},
				{body: anthropicRequest(true, userText("SECOND conversation"), claudeEnv)},
			},
			want: "",
		},
		{
			name: "a later thread does not change it",
			calls: []call{
				{path: "/v1/responses", body: codexEnvRequest("/tmp/sa/A1/work", "say hi")},
				{path: "/v1/responses", body: codexEnvRequest("/tmp/sa/A1/work/sub", "SECOND task")},
			},
			want: "/tmp/sa/A1/work",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rg := newRig(t, script, func(c *gateway.Config) { c.Cwd = tt.given })
			for _, c := range tt.calls {
				rep := rg.do(t, c)
				require.Equal(t, http.StatusOK, rep.status, "%s", rep.body)
			}
			require.NoError(t, rg.g.Finish(tape.EndComplete, ""))
			tp := rg.load(t)
			assert.Equal(t, tt.want, tp.Meta.Cwd)
			require.Len(t, tp.Threads, len(tt.calls), "each call opens a thread")
		})
	}
}
