package interop

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/internal/testutil/tapegen"
	"github.com/tapebox/tapebox/tape"
)

// hubInfo is what the Hub's `datasets` library derives from a session file for the
// agent-traces columns (packaged_modules/json/json.py, parse_traces_info and its helpers,
// datasets main of 2026-07-31), ported line for line so that the rows AgentTraces takes
// from the tape are checked against the file the viewer reads, by other code.
type hubInfo struct {
	harness, sessionID, prompt, sentAt *string
	users, calls                       int64
}

var hubTypes = map[string]string{
	"user": "claude_code", "assistant": "claude_code", "system": "claude_code",
	"session": "pi", "message": "pi",
	"session_meta": "codex", "turn_context": "codex", "response_item": "codex", "event_msg": "codex",
	"session_start": "droid",
}

func hubParse(t *testing.T, file []byte) hubInfo {
	t.Helper()
	var h hubInfo
	str := func(v any) *string {
		if s, ok := v.(string); ok {
			return &s
		}
		return nil
	}
	text := func(content any) *string {
		switch c := content.(type) {
		case string:
			return &c
		case []any:
			var parts []string
			for _, p := range c {
				switch p := p.(type) {
				case string:
					parts = append(parts, p)
				case map[string]any:
					if s, ok := p["text"].(string); ok {
						parts = append(parts, s)
					}
				}
			}
			if len(parts) > 0 {
				s := parts[0]
				for _, p := range parts[1:] {
					s += "\n" + p
				}
				return &s
			}
		}
		return nil
	}
	for _, line := range bytes.Split(file, []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		var ev map[string]any
		require.NoError(t, json.Unmarshal(line, &ev), "%s", line)
		typ, _ := ev["type"].(string)
		if h.harness == nil {
			if hv, ok := hubTypes[typ]; ok {
				h.harness = &hv
			}
		}
		if h.sessionID == nil {
			payload, _ := ev["payload"].(map[string]any)
			switch {
			case str(ev["sessionId"]) != nil:
				h.sessionID = str(ev["sessionId"])
			case str(ev["session_id"]) != nil:
				h.sessionID = str(ev["session_id"])
			case payload != nil && str(payload["id"]) != nil:
				h.sessionID = str(payload["id"])
			case (typ == "session" || typ == "session_start") && str(ev["id"]) != nil:
				h.sessionID = str(ev["id"])
			}
		}
		var user *string
		msg, _ := ev["message"].(map[string]any)
		switch {
		case typ == "user" && msg != nil && msg["role"] == "user":
			user = text(msg["content"])
		case typ == "message" && msg != nil && msg["role"] == "user" && msg["visibility"] != "llm_only" && msg["visibility"] != "user_only":
			user = text(msg["content"])
		case typ == "message" && ev["role"] == "user":
			user = text(ev["content"])
		case typ == "event_msg":
			if p, ok := ev["payload"].(map[string]any); ok && p["type"] == "user_message" {
				user = text(p["message"])
			}
		}
		if user != nil {
			h.users++
			if h.prompt == nil {
				h.prompt, h.sentAt = user, str(ev["timestamp"])
			}
		}
		switch {
		case typ == "response_item":
			if p, ok := ev["payload"].(map[string]any); ok && p["type"] == "function_call" {
				h.calls++
			}
		case (typ == "assistant" || typ == "message") && msg != nil && msg["role"] == "assistant":
			if parts, ok := msg["content"].([]any); ok {
				for _, p := range parts {
					if p, ok := p.(map[string]any); ok && (p["type"] == "tool_use" || p["type"] == "toolCall") {
						h.calls++
					}
				}
			}
		}
	}
	return h
}

// agentTraceTapes are tapes of every shape: recorded Claude Code (with a subagent) and
// Codex tapes, generated ones, a harness published as STS, a tape whose thread made no
// tool call, one whose main thread has no step and no prompt, and a Codex subagent.
func agentTraceTapes(t *testing.T) map[string]*tape.Tape {
	t.Helper()
	out := map[string]*tape.Tape{
		"claude-code": loadTestTape(t, "claude-code.json"),
		"codex":       loadTestTape(t, "codex.json"),
	}
	for i := range 6 {
		tp := tapegen.Tape(tapegen.Options{Seed: 32, MeanSteps: 6, Lean: true}, i)
		out["generated-"+tp.Meta.Harness+"-"+string(rune('a'+i))] = tp
	}
	sts := loadTestTape(t, "claude-code.json")
	sts.Meta.Harness = "gemini-cli"
	out["sts"] = sts

	noCalls := loadTestTape(t, "claude-code.json")
	main := noCalls.Main()
	last := main.Steps[len(main.Steps)-1]
	require.Empty(t, last.ToolCalls, "the recording's last answer asks for no tool")
	main.Steps = []*tape.Step{main.Steps[0]}
	main.Steps[0].Response = last.Response
	main.Steps[0].ToolCalls, main.Steps[0].ToolResults = nil, nil
	noCalls.Threads = []*tape.Thread{main}
	out["no-tool-calls"] = noCalls

	empty := tape.New(tape.ProviderAnthropic, time.Unix(1_780_000_000, 0).UTC())
	empty.Meta.Harness, empty.Meta.Cwd, empty.Meta.TapeID = "claude-code", "/work", "empty-tape"
	empty.Threads = []*tape.Thread{{ID: "main"}}
	out["empty"] = empty

	sub := loadTestTape(t, "codex.json")
	m := sub.Main()
	c := m.Steps[0].ToolCalls[0]
	sub.Threads = append(sub.Threads, &tape.Thread{ID: "t1", Parent: &tape.Parent{ThreadID: m.ID, ToolCallID: c.ID}, Steps: []*tape.Step{m.Steps[len(m.Steps)-1]}})
	out["codex-subagent"] = sub
	return out
}

// TestAgentTraces: every session file of every tape shape gets one row per thread, and
// the row's harness, session_id, prompt, sent_at and counts are what the Hub derives from
// the file; messages, tools and metadata are JSON of the schema's shape.
func TestAgentTraces(t *testing.T) {
	for name, tp := range agentTraceTapes(t) {
		t.Run(name, func(t *testing.T) {
			f, files, rows, err := AgentTraces(tp, Options{})
			require.NoError(t, err)
			assert.Equal(t, HubFormat(tp), f)
			want := 0
			for _, th := range tp.Threads {
				if len(th.Steps) > 0 || (f == ClaudeCode && th == tp.Main()) {
					want++
				}
			}
			require.Len(t, rows, want, "one row per thread the files hold")
			byPath := map[string][]byte{}
			for _, fl := range files {
				byPath[fl.Path] = fl.Data
			}
			threads := map[string]bool{}
			for _, r := range rows {
				require.Equal(t, byPath[r.Path], r.Trace, "%s: trace is the file", r.Path)
				var meta map[string]any
				require.NoError(t, json.Unmarshal(r.Metadata, &meta))
				threads[meta["thread_id"].(string)] = true
				assert.Equal(t, tp.Meta.TapeID, meta["tape_id"])

				if len(r.Trace) == 0 {
					// A thread without a step: an empty file, of which the Hub derives nothing;
					// the row still names the harness and the session, and has no message.
					assert.Equal(t, "claude_code", r.Harness)
					assert.NotEmpty(t, r.SessionID)
					assert.Nil(t, r.Prompt)
					assert.Nil(t, r.SentAt)
					assert.Empty(t, r.Messages)
					assert.NotNil(t, r.Messages, "an empty list, not null")
					assert.Zero(t, r.NumUserMessages+r.NumToolCalls)
					continue
				}
				hub := hubParse(t, r.Trace)
				deref := func(s *string) any {
					if s == nil {
						return nil
					}
					return *s
				}
				assert.Equal(t, deref(hub.sessionID), r.SessionID, "%s: session_id", r.Path)
				assert.Equal(t, deref(hub.prompt), deref(r.Prompt), "%s: prompt", r.Path)
				assert.Equal(t, hub.users, r.NumUserMessages, "%s: num_user_messages", r.Path)
				var calls, functionCalls int64
				for _, m := range r.Messages {
					var msg struct {
						Role      string `json:"role"`
						Content   *string
						ToolCalls []struct {
							ID       string `json:"id"`
							Type     string `json:"type"`
							Function struct {
								Name      string          `json:"name"`
								Arguments json.RawMessage `json:"arguments"`
							} `json:"function"`
						} `json:"tool_calls"`
					}
					require.NoError(t, json.Unmarshal(m, &msg))
					require.NotNil(t, msg.Content, "every message has a string content: %s", m)
					assert.Contains(t, []string{"system", "user", "assistant", "tool"}, msg.Role)
					calls += int64(len(msg.ToolCalls))
					for _, c := range msg.ToolCalls {
						assert.NotEmpty(t, c.Function.Name)
						assert.True(t, json.Valid(c.Function.Arguments))
						if c.Function.Arguments[0] == '{' {
							functionCalls++
						}
					}
				}
				assert.Equal(t, r.NumToolCalls, calls, "%s: num_tool_calls counts the messages' calls", r.Path)
				for _, tl := range r.Tools {
					var tool struct {
						Type     string `json:"type"`
						Function struct {
							Name string `json:"name"`
						} `json:"function"`
					}
					require.NoError(t, json.Unmarshal(tl, &tool))
					assert.Equal(t, "function", tool.Type)
					assert.NotEmpty(t, tool.Function.Name)
				}
				switch f {
				case ClaudeCode, Codex:
					assert.Equal(t, deref(hub.harness), r.Harness, "%s: harness", r.Path)
					assert.Equal(t, deref(hub.sentAt), deref(r.SentAt), "%s: sent_at", r.Path)
					if f == ClaudeCode {
						assert.Equal(t, hub.calls, r.NumToolCalls, "%s: num_tool_calls", r.Path)
					} else {
						// The Hub counts Codex's function_call items only, not its freeform
						// (custom_tool_call) ones such as apply_patch: the column counts both.
						assert.Equal(t, hub.calls, functionCalls, "%s: function calls", r.Path)
					}
				default:
					// The Hub's library takes an STS header (type session) for Pi's, and STS
					// messages carry numeric timestamps and calls apart from the content,
					// which it does not read: the file still gives the session and prompts.
					assert.Equal(t, tp.Meta.Harness, r.Harness)
					if r.Prompt != nil {
						require.NotNil(t, r.SentAt)
						_, err := time.Parse(time.RFC3339, *r.SentAt)
						assert.NoError(t, err)
					}
				}
			}
			for _, th := range tp.Threads {
				if len(th.Steps) > 0 {
					assert.True(t, threads[th.ID], "thread %s has a row", th.ID)
				}
			}
		})
	}
}

// TestAgentTracesHubParseCatches: the port of the Hub's derivation tells a wrong prompt
// and a wrong count from the right ones.
func TestAgentTracesHubParseCatches(t *testing.T) {
	tp := loadTestTape(t, "codex.json")
	_, _, rows, err := AgentTraces(tp, Options{})
	require.NoError(t, err)
	r := rows[0]
	hub := hubParse(t, r.Trace)
	require.NotNil(t, hub.prompt)
	assert.Equal(t, *r.Prompt, *hub.prompt)
	msg := []byte(`"images":[],"message":"`)
	require.True(t, bytes.Contains(r.Trace, msg), "the rollout has a user_message event")
	planted := bytes.Replace(r.Trace, msg, []byte(`"images":[],"message":"PLANTED `), 1)
	assert.Equal(t, "PLANTED "+*r.Prompt, *hubParse(t, planted).prompt)
	dropped := bytes.Replace(r.Trace, []byte(`"type":"function_call"`), []byte(`"type":"not_a_call"`), 1)
	assert.Equal(t, hub.calls-1, hubParse(t, dropped).calls)
}
