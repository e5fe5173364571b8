package gateway_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/tape"
	"github.com/tapebox/tapebox/testkit/fakeprovider"
)

// withModel is body (a JSON object) with its "model" set to model and, when noTools, its
// "tools" removed: a side request's shape.
func withModel(t *testing.T, body []byte, model string, noTools bool) []byte {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal(body, &m))
	m["model"] = model
	if noTools {
		delete(m, "tools")
	}
	b, err := json.Marshal(m)
	require.NoError(t, err)
	return b
}

// modelResponses is an OpenAI Responses request of model with the prompt, tools offered
// or not.
func modelResponses(t *testing.T, model, prompt string, tools bool) []byte {
	t.Helper()
	m := map[string]any{"model": model, "stream": true, "input": []any{
		map[string]any{"type": "message", "role": "user", "content": []any{map[string]any{"type": "input_text", "text": prompt}}},
	}}
	if tools {
		m["tools"] = []any{map[string]any{"type": "function", "name": "shell", "parameters": map[string]any{"type": "object"}}}
	}
	b, err := json.Marshal(m)
	require.NoError(t, err)
	return b
}

// TestMetaModelMainThread: meta.model is the model of the agent's thread, the first request
// offering tools, even when a side request without tools and with another model reaches
// the gateway first (OpenCode's title request to its small model; Gemini CLI's router),
// for every wire format; meta.cwd is then learned from the agent's first request. A run
// whose requests never offer tools keeps the first request's model; a later side request
// or subagent with another model changes nothing.
func TestMetaModelMainThread(t *testing.T) {
	script := fakeprovider.Script{Threads: []fakeprovider.Thread{
		{Name: "main", Turns: []fakeprovider.Turn{{Text: "Agent answer."}}},
		{Name: "title", Marker: "Generate a title", Turns: []fakeprovider.Turn{{Text: "A title"}}},
		{Name: "sub", Marker: "SUBTASK", Turns: []fakeprovider.Turn{{Text: "Sub answer."}}},
	}}
	claudeEnv := systemEntry("# Environment\nYou have been invoked in the following environment: \n - Primary working directory: /tmp/agentcwd\n - Is a git repository: false")
	agent := func(t *testing.T) []byte {
		return anthropicRequest(true, userText("do the task"), claudeEnv)
	}
	title := func(t *testing.T) []byte {
		return withModel(t, anthropicRequest(true, userText("Generate a title for this conversation: do the task")), "claude-haiku-4-5", true)
	}
	geminiHeader := http.Header{"Content-Type": {"application/json"}, "User-Agent": {"GeminiCLI/0.61.0/gemini-2.5-pro (linux; x64)"}}
	var geminiRouter map[string]any
	require.NoError(t, json.Unmarshal(geminiRequest(), &geminiRouter))
	delete(geminiRouter, "tools")
	geminiRouter["contents"] = []any{map[string]any{"role": "user", "parts": []any{map[string]any{"text": "Generate a title: which model fits this request?"}}}}
	routerBody, err := json.Marshal(geminiRouter)
	require.NoError(t, err)
	for _, c := range []struct {
		name    string
		calls   []call
		model   string
		cwd     string
		threads int
	}{
		{name: "anthropic, title first", calls: []call{{body: title(t)}, {body: agent(t)}}, model: "claude-opus-5-5", cwd: "/tmp/agentcwd", threads: 2},
		{name: "anthropic, agent first", calls: []call{{body: agent(t)}, {body: title(t)}}, model: "claude-opus-5-5", cwd: "/tmp/agentcwd", threads: 2},
		{name: "anthropic, title first, then a subagent on another model", calls: []call{
			{body: title(t)}, {body: agent(t)},
			{body: withModel(t, anthropicRequest(true, userText("SUBTASK: count")), "claude-sonnet-4-5", false)},
		}, model: "claude-opus-5-5", cwd: "/tmp/agentcwd", threads: 3},
		{name: "anthropic, no request offers tools", calls: []call{
			{body: title(t)}, {body: withModel(t, anthropicRequest(true, userText("do the task"), claudeEnv), "claude-sonnet-4-5", true)},
		}, model: "claude-haiku-4-5", threads: 2},
		{name: "gemini, router first", calls: []call{
			{path: "/v1beta/models/gemini-2.5-flash-lite:generateContent", header: geminiHeader, body: routerBody},
			{path: "/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse", header: geminiHeader, body: geminiRequest()},
		}, model: "gemini-2.5-pro", cwd: "/work", threads: 2},
		{name: "openai responses, side request first", calls: []call{
			{path: "/v1/responses", body: modelResponses(t, "gpt-5-mini", "Generate a title for: do it", false)},
			{path: "/v1/responses", body: modelResponses(t, "gpt-5.5", "do it", true)},
		}, model: "gpt-5.5", threads: 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			rg := newRig(t, script, nil)
			for _, cl := range c.calls {
				rep := rg.do(t, cl)
				require.Equal(t, http.StatusOK, rep.status, "%s", rep.body)
			}
			require.NoError(t, rg.fp.Err())
			require.NoError(t, rg.g.Finish(tape.EndComplete, ""))
			tp := rg.load(t)
			require.Len(t, tp.Threads, c.threads)
			assert.Equal(t, c.model, tp.Meta.Model, "meta.model")
			assert.Equal(t, c.cwd, tp.Meta.Cwd, "meta.cwd")
			if main := tp.Main(); main != nil && len(main.Steps[0].Request.Tools) > 0 {
				assert.Equal(t, tp.Meta.Model, tape.StepModel(nil, main.Steps[0]), "meta.model is the main thread's (tape.Main)")
			}
		})
	}
}
