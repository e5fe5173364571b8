package gateway_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/gateway"
	"github.com/tapebox/tapebox/tape"
	"github.com/tapebox/tapebox/testkit/fakeprovider"
)

func responsesRequest(prompt string) []byte {
	b, _ := json.Marshal(map[string]any{
		"model":  "gpt-5.5",
		"stream": true,
		"input": []map[string]any{
			{"type": "message", "role": "developer", "content": []map[string]string{{"type": "input_text", "text": "You are Codex, a coding agent."}}},
			{"type": "message", "role": "user", "content": []map[string]string{{"type": "input_text", "text": prompt}}},
		},
		"tools": []any{},
	})
	return b
}

func TestHarnessDetection(t *testing.T) {
	cases := []struct {
		name, path           string
		header               map[string]string
		body                 []byte
		given                string // Config.Harness
		wantName, wantVerson string
	}{
		{
			name: "Claude Code", path: "/v1/messages?beta=true", body: taskRequest(true),
			header:   map[string]string{"User-Agent": "claude-cli/2.1.332 (external, sdk-cli)", "X-Claude-Code-Session-Id": "80e11c7d"},
			wantName: "claude-code", wantVerson: "2.1.332",
		},
		{
			name: "Codex exec", path: "/v1/responses", body: responsesRequest("say hi"),
			header:   map[string]string{"User-Agent": "codex_exec/0.171.0 (Debian 12.0.0; x86_64) unknown (codex_exec; 0.171.0)", "Originator": "codex_exec"},
			wantName: "codex", wantVerson: "0.171.0",
		},
		{
			name: "Codex by originator only", path: "/v1/responses", body: responsesRequest("say hi"),
			header:   map[string]string{"User-Agent": "reqwest", "Originator": "codex_cli_rs"},
			wantName: "codex",
		},
		{
			name: "OpenCode", path: "/v1/messages", body: taskRequest(false),
			header:   map[string]string{"User-Agent": "opencode/1.18.33 ai-sdk/anthropic/3.0.58", "X-Session-Id": "ses_daeda83c7ffe1adaqwaTrGDiDU"},
			wantName: "opencode", wantVerson: "1.18.33",
		},
		{
			name: "a path that names opencode is not OpenCode", path: "/v1/messages", body: taskRequest(false),
			header: map[string]string{"User-Agent": "mytool/2.0 (+https://example.com/opencode/1.0)"},
		},
		{
			name: "unknown agent", path: "/v1/messages", body: taskRequest(false),
			header: map[string]string{"User-Agent": "curl/8.5.0"},
		},
		{
			name: "given harness wins", path: "/v1/messages", body: taskRequest(false), given: "codex",
			header:   map[string]string{"User-Agent": "claude-cli/2.1.332 (external, sdk-cli)"},
			wantName: "codex",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rg := newRig(t, oneTurn(nil), func(c *gateway.Config) { c.Harness = tc.given })
			h := agentHeader()
			h.Del("User-Agent")
			for k, v := range tc.header {
				h.Set(k, v)
			}
			rep := rg.do(t, call{path: tc.path, header: h, body: tc.body})
			require.Equal(t, 200, rep.status, "%s", rep.body)
			tp := rg.load(t)
			assert.Equal(t, tc.wantName, tp.Meta.Harness)
			assert.Equal(t, tc.wantVerson, tp.Meta.HarnessVersion)
		})
	}
}

// hold keeps the upstream from answering the requests match selects until release is
// closed.
type hold struct {
	next    http.Handler
	match   func(body []byte) bool
	release chan struct{}
	held    chan struct{} // gets a value when a request is held
}

func (h *hold) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	if h.match(body) {
		h.held <- struct{}{}
		select {
		case <-h.release:
		case <-r.Context().Done():
			return
		}
	}
	h.next.ServeHTTP(w, r)
}

// TestSubagentsInFlight: a Claude Code-shaped run whose main thread spawns two subagents
// in one answer. The second subagent's first call arrives first and is still in flight
// while the first subagent makes both of its calls; each is linked to its own spawning
// call by its prompt, and role:system entries (an environment block, a task notification)
// do not disturb the attribution.
func TestSubagentsInFlight(t *testing.T) {
	const (
		alphaPrompt = "SUBTASK-ALPHA: list the files"
		betaPrompt  = "SUBTASK-BETA: count the lines"
	)
	script := fakeprovider.Script{Threads: []fakeprovider.Thread{
		{Name: "main", Turns: []fakeprovider.Turn{
			{Text: "Delegating.", Calls: []tape.ToolCall{
				fakeprovider.Call("Agent", map[string]string{"description": "alpha", "prompt": alphaPrompt}),
				fakeprovider.Call("Agent", map[string]string{"description": "beta", "prompt": betaPrompt}),
			}},
			{Text: "Both done."},
		}},
		{Name: "alpha", Marker: "SUBTASK-ALPHA", Turns: []fakeprovider.Turn{
			{Calls: []tape.ToolCall{fakeprovider.Call("Bash", map[string]string{"command": "ls"})}},
			{Text: "alpha: two files"},
		}},
		{Name: "beta", Marker: "SUBTASK-BETA", Turns: []fakeprovider.Turn{
			{Calls: []tape.ToolCall{fakeprovider.Call("Bash", map[string]string{"command": "wc -l *"})}},
			{Text: "beta: 7 lines"},
		}},
	}}
	rg := newRig(t, script, nil)
	gate := &hold{next: rg.fp, release: make(chan struct{}), held: make(chan struct{}, 1), match: func(b []byte) bool {
		return bytes.Contains(b, []byte(betaPrompt)) && !bytes.Contains(b, []byte(`"role":"assistant"`))
	}}
	rg.up.next = gate

	env := systemEntry("# Environment\nYou have been invoked in the following environment:\n - Primary working directory: /work")
	subEnv := systemEntry("# Environment\nYou are a subagent.")
	results := func(text string) func(tape.ToolCall) string { return func(tape.ToolCall) string { return text } }

	main0 := rg.do(t, call{path: "/v1/messages?beta=true", body: anthropicRequest(true, userText("Do two things."), env)})
	spawns := toolCalls(t, main0, true)
	require.Len(t, spawns, 2)

	// Beta's first call, held upstream.
	betaFirst := anthropicRequest(false, userText(betaPrompt), subEnv)
	betaDone := make(chan reply, 1)
	go func() { betaDone <- rg.do(t, call{path: "/v1/messages?beta=true", body: betaFirst}) }()
	<-gate.held

	// Alpha's whole conversation while beta's first call is in flight, streaming.
	alphaFirst := []map[string]any{userText(alphaPrompt), subEnv}
	alpha0 := rg.do(t, call{path: "/v1/messages?beta=true", body: anthropicRequest(true, alphaFirst...)})
	alphaCalls := toolCalls(t, alpha0, true)
	require.Len(t, alphaCalls, 1)
	alpha1 := rg.do(t, call{path: "/v1/messages?beta=true", body: anthropicRequest(true,
		append(alphaFirst, assistantCalls(alphaCalls), toolResults(alphaCalls, results("a.txt\nb.txt")))...)})
	require.Equal(t, 200, alpha1.status)

	close(gate.release)
	beta0 := <-betaDone
	betaCalls := toolCalls(t, beta0, false)
	require.Len(t, betaCalls, 1)
	beta1 := rg.do(t, call{path: "/v1/messages?beta=true", body: anthropicRequest(false,
		userText(betaPrompt), subEnv, assistantCalls(betaCalls), toolResults(betaCalls, results("7 total")))})
	require.Equal(t, 200, beta1.status)

	main1 := rg.do(t, call{path: "/v1/messages?beta=true", body: anthropicRequest(true,
		userText("Do two things."), env, assistantCalls(spawns),
		toolResults(spawns, func(c tape.ToolCall) string {
			if strings.Contains(string(c.Input), "ALPHA") {
				return "alpha: two files"
			}
			return "beta: 7 lines"
		}),
		systemEntry("<task-notification>SUBTASK-BETA finished</task-notification>"))})
	require.Equal(t, 200, main1.status)
	require.NoError(t, rg.fp.Err())

	reason, detail := rg.g.Outcome()
	require.Equal(t, tape.EndComplete, reason, detail)
	require.NoError(t, rg.g.Finish(reason, detail))
	tp := rg.load(t)
	require.Len(t, tp.Threads, 3)
	main := tp.Threads[0]
	require.Equal(t, "main", main.ID)
	require.Nil(t, main.Parent)
	require.Len(t, main.Steps, 2)
	require.Len(t, main.Steps[0].ToolResults, 2)
	assert.Equal(t, "beta: 7 lines", main.Steps[0].ToolResults[1].Text())

	byParent := map[string]*tape.Thread{}
	for _, th := range tp.Threads[1:] {
		require.NotNil(t, th.Parent, "thread %s", th.ID)
		require.Equal(t, "main", th.Parent.ThreadID)
		byParent[th.Parent.ToolCallID] = th
	}
	alpha, beta := byParent[spawns[0].ID], byParent[spawns[1].ID]
	require.NotNil(t, alpha, "alpha is linked to the call that spawned it")
	require.NotNil(t, beta, "beta is linked to the call that spawned it")
	for _, sub := range []struct {
		th     *tape.Thread
		prompt string
		result string
		final  string
	}{{alpha, alphaPrompt, "a.txt\nb.txt", "alpha: two files"}, {beta, betaPrompt, "7 total", "beta: 7 lines"}} {
		require.Len(t, sub.th.Steps, 2, "thread %s", sub.th.ID)
		assert.Contains(t, string(sub.th.Steps[0].Request.Raw), sub.prompt)
		require.Len(t, sub.th.Steps[0].ToolResults, 1)
		assert.Equal(t, sub.result, sub.th.Steps[0].ToolResults[0].Text())
		assert.Equal(t, sub.final, tape.BlocksText(sub.th.Steps[1].Response.Content))
		assert.Equal(t, "system", sub.th.Steps[0].Request.Messages[1].Role, "the role:system entry stays in messages")
	}
	// Beta's first call was in flight through all of alpha.
	assert.Less(t, beta.Steps[0].Timing.RequestAt, alpha.Steps[0].Timing.RequestAt)
	assert.Greater(t, beta.Steps[0].Timing.LastByteAt, alpha.Steps[1].Timing.LastByteAt)
}

// TestInjectHeader: with an injection for the upstream's host, the agent holds a
// placeholder; the upstream gets the real key and none of the agent's credentials, and the
// tape holds neither key (the credential scan checks every file).
func TestInjectHeader(t *testing.T) {
	cases := []struct {
		name      string
		inject    string
		wantKey   string // the x-api-key the upstream gets
		wantAuth  string // the Authorization the upstream gets
		wantOther string // X-Org-Route, a header that is not a credential by name
	}{
		{"for the upstream's host", "127.0.0.1:x-api-key=$TAPEBOX_TEST_KEY", injectedKey, "", "agent-route"},
		{"a header that is not a credential by name", "127.0.0.1:X-Org-Route=env:TAPEBOX_TEST_KEY", "", "", injectedKey},
		{"for another host", "api.anthropic.com:x-api-key=$TAPEBOX_TEST_KEY", placeholder, "Bearer " + placeholder, "agent-route"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			inj, err := gateway.ParseInjection(tc.inject, func(name string) string {
				if name == "TAPEBOX_TEST_KEY" {
					return injectedKey
				}
				return ""
			})
			require.NoError(t, err)
			require.Equal(t, injectedKey, inj.Value)
			rg := newRig(t, oneTurn(nil), func(c *gateway.Config) { c.Inject = []gateway.Injection{inj} })
			h := agentHeader()
			h.Set("X-Api-Key", placeholder)
			h.Set("Authorization", "Bearer "+placeholder)
			h.Set("X-Org-Route", "agent-route")
			rep := rg.do(t, call{header: h, body: taskRequest(true)})
			require.Equal(t, 200, rep.status, "%s", rep.body)

			got := rg.up.requests()[0].header
			assert.Equal(t, tc.wantKey, got.Get("X-Api-Key"))
			assert.Equal(t, tc.wantAuth, got.Get("Authorization"))
			assert.Equal(t, tc.wantOther, got.Get("X-Org-Route"))
			if tc.wantKey == injectedKey {
				for k, vs := range got {
					for _, v := range vs {
						assert.NotContains(t, v, placeholder, "header %s", k)
					}
				}
				assert.Empty(t, got.Get("Cookie"), "the agent's credentials for this host are dropped")
			}
			s := rg.load(t).Threads[0].Steps[0]
			assert.Equal(t, gateway.Redacted, s.Request.Headers["x-api-key"])
			if strings.EqualFold(inj.Name, "X-Org-Route") {
				assert.Equal(t, gateway.Redacted, s.Request.Headers["x-org-route"], "an injected header's name is redacted")
			}
		})
	}
}

func TestParseInjectionErrors(t *testing.T) {
	for _, s := range []string{"no-equals", "hostonly=value", ":name=value", "host:=value", "host:name=$UNSET"} {
		_, err := gateway.ParseInjection(s, func(string) string { return "" })
		assert.Error(t, err, s)
	}
}
