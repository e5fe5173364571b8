package fakeprovider_test

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/tape"
	"github.com/tapebox/tapebox/testkit/fakeprovider"
)

// sse is one server-sent event.
type sse struct {
	Event string
	Data  string
}

func (e sse) json(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal([]byte(e.Data), &m), "event %s data %s", e.Event, e.Data)
	return m
}

// readSSE parses an event stream until EOF; err is the read error that ended it, if any.
func readSSE(r io.Reader) (events []sse, err error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	var cur sse
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if cur.Data != "" || cur.Event != "" {
				events = append(events, cur)
			}
			cur = sse{}
		case strings.HasPrefix(line, "event: "):
			cur.Event = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			cur.Data = strings.TrimPrefix(line, "data: ")
		}
	}
	return events, sc.Err()
}

func start(t *testing.T, script fakeprovider.Script) *fakeprovider.Server {
	t.Helper()
	srv := fakeprovider.New(script)
	require.NoError(t, srv.Start())
	t.Cleanup(func() { _ = srv.Close() })
	return srv
}

func post(t *testing.T, url string, body any, header ...string) *http.Response {
	t.Helper()
	b, err := json.Marshal(body)
	require.NoError(t, err)
	return send(t, http.MethodPost, url, bytes.NewReader(b), append([]string{"Content-Type", "application/json"}, header...)...)
}

// send makes a request with the header's name-value pairs set, and closes the answer's body
// when the test ends.
func send(t *testing.T, method, url string, body io.Reader, header ...string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, url, body)
	require.NoError(t, err)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	t.Cleanup(func() { _ = resp.Body.Close() })
	return resp
}

func decode(t *testing.T, resp *http.Response) map[string]any {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&m))
	return m
}

// A turn with text and two calls, one with non-ASCII input longer than a piece.
var richTurn = fakeprovider.Turn{
	Text: "Let me look — ça va prendre un instant.",
	Calls: []tape.ToolCall{
		fakeprovider.Call("Bash", map[string]any{"command": "echo héllo wörld && ls -la /tmp", "description": "greet"}),
		fakeprovider.Custom("apply_patch", "*** Begin Patch\n*** Add File: a.txt\n+über\n*** End Patch"),
	},
}

func oneThread(turns ...fakeprovider.Turn) fakeprovider.Script {
	return fakeprovider.Script{Threads: []fakeprovider.Thread{{Name: "main", Turns: turns}}, PieceSize: 7}
}

func names(events []sse) []string {
	var out []string
	for _, e := range events {
		out = append(out, e.Event)
	}
	return out
}

func TestAnthropicStream(t *testing.T) {
	srv := start(t, oneThread(richTurn))
	resp := post(t, srv.URL()+"/v1/messages?beta=true", map[string]any{
		"model": "claude-test", "stream": true, "max_tokens": 100,
		"messages": []any{map[string]any{"role": "user", "content": "hi"}},
	})
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, "text/event-stream; charset=utf-8", resp.Header.Get("Content-Type"))
	events, err := readSSE(resp.Body)
	require.NoError(t, err)

	// The event sequence of the real API, with the deltas collapsed.
	var seq []string
	for _, n := range names(events) {
		if n == "content_block_delta" && len(seq) > 0 && seq[len(seq)-1] == "content_block_delta*" {
			continue
		}
		if n == "content_block_delta" {
			n += "*"
		}
		seq = append(seq, n)
	}
	assert.Equal(t, []string{
		"message_start", "ping",
		"content_block_start", "content_block_delta*", "content_block_stop",
		"content_block_start", "content_block_delta*", "content_block_stop",
		"content_block_start", "content_block_delta*", "content_block_stop",
		"message_delta", "message_stop",
	}, seq)

	start := events[0].json(t)["message"].(map[string]any)
	assert.Equal(t, "msg_fake_main_0", start["id"])
	assert.Equal(t, "claude-test", start["model"])

	// Reassemble the blocks from their deltas, as a client does.
	text := map[float64]string{}
	inputs := map[float64]string{}
	pieces := map[float64]int{}
	var ids []string
	for _, e := range events {
		m := e.json(t)
		switch e.Event {
		case "content_block_start":
			if cb := m["content_block"].(map[string]any); cb["type"] == "tool_use" {
				ids = append(ids, cb["id"].(string))
				assert.Equal(t, map[string]any{}, cb["input"])
			}
		case "content_block_delta":
			i := m["index"].(float64)
			d := m["delta"].(map[string]any)
			switch d["type"] {
			case "text_delta":
				text[i] += d["text"].(string)
			case "input_json_delta":
				inputs[i] += d["partial_json"].(string)
				pieces[i]++
			}
		case "message_delta":
			assert.Equal(t, "tool_use", m["delta"].(map[string]any)["stop_reason"])
			assert.Positive(t, m["usage"].(map[string]any)["output_tokens"])
		}
	}
	assert.Equal(t, richTurn.Text, text[0])
	assert.JSONEq(t, string(richTurn.Calls[0].Input), inputs[1])
	assert.JSONEq(t, string(richTurn.Calls[1].Input), inputs[2])
	assert.Greater(t, pieces[1], 3, "input_json_delta comes in pieces")
	assert.Equal(t, []string{"toolu_fake_main_0_0", "toolu_fake_main_0_1"}, ids)
}

func TestAnthropicJSON(t *testing.T) {
	srv := start(t, oneThread(richTurn))
	resp := post(t, srv.URL()+"/v1/messages", map[string]any{
		"model": "claude-test", "messages": []any{map[string]any{"role": "user", "content": "hi"}},
	})
	require.Equal(t, http.StatusOK, resp.StatusCode)
	m := decode(t, resp)
	assert.Equal(t, "tool_use", m["stop_reason"])
	content := m["content"].([]any)
	require.Len(t, content, 3)
	assert.Equal(t, map[string]any{"type": "text", "text": richTurn.Text}, content[0])
	call := content[1].(map[string]any)
	assert.Equal(t, "toolu_fake_main_0_0", call["id"])
	assert.Equal(t, "Bash", call["name"])
	assert.Equal(t, "echo héllo wörld && ls -la /tmp", call["input"].(map[string]any)["command"])
}

func TestChatStream(t *testing.T) {
	srv := start(t, oneThread(richTurn))
	resp := post(t, srv.URL()+"/v1/chat/completions", map[string]any{
		"model": "gpt-test", "stream": true, "stream_options": map[string]any{"include_usage": true},
		"messages": []any{map[string]any{"role": "user", "content": "hi"}},
	})
	require.Equal(t, http.StatusOK, resp.StatusCode)
	events, err := readSSE(resp.Body)
	require.NoError(t, err)
	require.NotEmpty(t, events)
	assert.Equal(t, "[DONE]", events[len(events)-1].Data)

	var text string
	args := map[float64]string{}
	ids := map[float64]string{}
	var finish string
	var usage map[string]any
	for _, e := range events[:len(events)-1] {
		m := e.json(t)
		assert.Equal(t, "chat.completion.chunk", m["object"])
		if u, ok := m["usage"].(map[string]any); ok {
			usage = u
		}
		for _, c := range m["choices"].([]any) {
			c := c.(map[string]any)
			if f, ok := c["finish_reason"].(string); ok {
				finish = f
			}
			d := c["delta"].(map[string]any)
			if s, ok := d["content"].(string); ok {
				text += s
			}
			tcs, _ := d["tool_calls"].([]any)
			for _, tc := range tcs {
				tc := tc.(map[string]any)
				i := tc["index"].(float64)
				if id, ok := tc["id"].(string); ok {
					ids[i] = id
				}
				if f, ok := tc["function"].(map[string]any); ok {
					args[i] += f["arguments"].(string)
				}
				if f, ok := tc["custom"].(map[string]any); ok {
					args[i] += f["input"].(string)
				}
			}
		}
	}
	assert.Equal(t, richTurn.Text, text)
	assert.Equal(t, "tool_calls", finish)
	assert.JSONEq(t, string(richTurn.Calls[0].Input), args[0])
	assert.Equal(t, "*** Begin Patch\n*** Add File: a.txt\n+über\n*** End Patch", args[1])
	assert.Equal(t, map[float64]string{0: "call_fake_main_0_0", 1: "call_fake_main_0_1"}, ids)
	require.NotNil(t, usage, "include_usage sends a usage chunk")
	assert.Positive(t, usage["prompt_tokens"])
}

func TestChatJSON(t *testing.T) {
	srv := start(t, oneThread(fakeprovider.Turn{Text: "plain answer"}))
	resp := post(t, srv.URL()+"/v1/chat/completions", map[string]any{
		"model": "gpt-test", "messages": []any{map[string]any{"role": "user", "content": "hi"}},
	})
	m := decode(t, resp)
	choice := m["choices"].([]any)[0].(map[string]any)
	assert.Equal(t, "stop", choice["finish_reason"])
	assert.Equal(t, "plain answer", choice["message"].(map[string]any)["content"])
	assert.Equal(t, "chat.completion", m["object"])
}

func TestResponsesStream(t *testing.T) {
	srv := start(t, oneThread(richTurn))
	resp := post(t, srv.URL()+"/v1/responses", map[string]any{"model": "gpt-test", "stream": true, "input": "hi"})
	require.Equal(t, http.StatusOK, resp.StatusCode)
	events, err := readSSE(resp.Body)
	require.NoError(t, err)
	ev := names(events)
	assert.Equal(t, "response.created", ev[0])
	assert.Equal(t, "response.completed", ev[len(ev)-1])
	assert.Contains(t, ev, "response.function_call_arguments.delta")
	assert.Contains(t, ev, "response.custom_tool_call_input.delta")
	assert.Contains(t, ev, "response.output_text.delta")

	var text, args, input string
	var doneItems []any
	for i, e := range events {
		m := e.json(t)
		assert.Equal(t, e.Event, m["type"])
		assert.Equal(t, float64(i), m["sequence_number"])
		switch e.Event {
		case "response.output_text.delta":
			text += m["delta"].(string)
		case "response.function_call_arguments.delta":
			args += m["delta"].(string)
		case "response.custom_tool_call_input.delta":
			input += m["delta"].(string)
		case "response.output_item.done":
			doneItems = append(doneItems, m["item"])
		}
	}
	assert.Equal(t, richTurn.Text, text)
	assert.JSONEq(t, string(richTurn.Calls[0].Input), args)
	assert.Equal(t, "*** Begin Patch\n*** Add File: a.txt\n+über\n*** End Patch", input)

	completed := events[len(events)-1].json(t)["response"].(map[string]any)
	assert.Equal(t, "resp_fake_main_0", completed["id"])
	assert.Equal(t, "completed", completed["status"])
	assert.Equal(t, doneItems, completed["output"], "response.completed carries every item")
	output := completed["output"].([]any)
	require.Len(t, output, 3)
	fc, ctc := output[1].(map[string]any), output[2].(map[string]any)
	assert.Equal(t, "function_call", fc["type"])
	assert.Equal(t, "call_fake_main_0_0", fc["call_id"])
	assert.Equal(t, "custom_tool_call", ctc["type"])
	assert.Equal(t, "apply_patch", ctc["name"])
	assert.Positive(t, completed["usage"].(map[string]any)["total_tokens"])
}

func TestResponsesJSON(t *testing.T) {
	srv := start(t, oneThread(richTurn))
	m := decode(t, post(t, srv.URL()+"/v1/responses", map[string]any{"model": "gpt-test", "input": "hi"}))
	assert.Equal(t, "response", m["object"])
	assert.Equal(t, "completed", m["status"])
	output := m["output"].([]any)
	require.Len(t, output, 3)
	msg := output[0].(map[string]any)
	assert.Equal(t, richTurn.Text, msg["content"].([]any)[0].(map[string]any)["text"])
}

// Requests are routed by marker to threads, and to steps by the assistant turns they hold,
// in each wire format; a retried step gets the same answer.
func TestThreadsAndSteps(t *testing.T) {
	script := fakeprovider.Script{Threads: []fakeprovider.Thread{
		{Name: "main", Marker: "[main-task]", Turns: []fakeprovider.Turn{{Text: "main 0"}, {Text: "main 1"}, {Text: "main 2"}}},
		{Name: "sub", Marker: "[sub-task]", Turns: []fakeprovider.Turn{{Text: "sub 0"}, {Text: "sub 1"}}},
	}}
	srv := start(t, script)
	user := func(s string) map[string]any { return map[string]any{"role": "user", "content": s} }
	asst := func(s string) map[string]any { return map[string]any{"role": "assistant", "content": s} }
	cases := []struct {
		name   string
		path   string
		body   map[string]any
		answer string
	}{
		{"anthropic first", "/v1/messages", map[string]any{"messages": []any{user("[main-task] go")}}, "main 0"},
		{"anthropic system marker", "/v1/messages", map[string]any{"system": []any{map[string]any{"type": "text", "text": "[sub-task]"}}, "messages": []any{user("go")}}, "sub 0"},
		{"anthropic step 2, later text ignored", "/v1/messages", map[string]any{"messages": []any{
			user("[main-task] go"), asst("a"), user("[sub-task] in a tool result"), asst("b"), user("c")}}, "main 2"},
		{"anthropic split assistant turn", "/v1/messages", map[string]any{"messages": []any{
			user("[sub-task] go"), asst("a"), asst("a2"), user("r")}}, "sub 1"},
		{"chat", "/v1/chat/completions", map[string]any{"messages": []any{
			map[string]any{"role": "system", "content": "[sub-task]"}, user("go"),
			map[string]any{"role": "assistant", "tool_calls": []any{}}, map[string]any{"role": "tool", "content": "x"}}}, "sub 1"},
		{"chat tool messages between answers", "/v1/chat/completions", map[string]any{"messages": []any{
			user("[main-task]"), asst("a"), map[string]any{"role": "tool", "content": "x"}, asst("b"), map[string]any{"role": "tool", "content": "y"}}}, "main 2"},
		{"responses parallel calls are one turn", "/v1/responses", map[string]any{"input": []any{
			map[string]any{"type": "message", "role": "developer", "content": []any{map[string]any{"type": "input_text", "text": "rules"}}},
			map[string]any{"type": "message", "role": "user", "content": []any{map[string]any{"type": "input_text", "text": "[main-task]"}}},
			map[string]any{"type": "function_call", "call_id": "1"}, map[string]any{"type": "function_call", "call_id": "2"},
			map[string]any{"type": "function_call_output", "call_id": "1"}, map[string]any{"type": "function_call_output", "call_id": "2"},
			map[string]any{"type": "custom_tool_call", "call_id": "3"}, map[string]any{"type": "custom_tool_call_output", "call_id": "3"},
		}}, "main 2"},
		{"responses instructions", "/v1/responses", map[string]any{"instructions": "[sub-task]", "input": "go"}, "sub 0"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.body["model"] = "m"
			m := decode(t, post(t, srv.URL()+tc.path, tc.body))
			b, _ := json.Marshal(m)
			assert.Contains(t, string(b), `"`+tc.answer+`"`)
		})
	}
	require.NoError(t, srv.Err())

	// The same step again is a retry: same answer, Attempt counts it.
	body := map[string]any{"model": "m", "messages": []any{user("[main-task] go")}}
	first := decode(t, post(t, srv.URL()+"/v1/messages", body))
	assert.Equal(t, "msg_fake_main_0", first["id"])
	reqs := srv.ThreadRequests("main")
	assert.Equal(t, 1, reqs[len(reqs)-1].Attempt)
	assert.Equal(t, 0, reqs[len(reqs)-1].Step)
}

// Two threads streaming at once both get their own answers.
func TestConcurrentThreads(t *testing.T) {
	var threads []fakeprovider.Thread
	for _, n := range []string{"a", "b", "c", "d"} {
		threads = append(threads, fakeprovider.Thread{Name: n, Marker: "[" + n + "]", Turns: []fakeprovider.Turn{{Text: strings.Repeat(n, 200)}}})
	}
	srv := start(t, fakeprovider.Script{Threads: threads, PieceSize: 3})
	var wg sync.WaitGroup
	got := make([]string, len(threads))
	for i, th := range threads {
		wg.Go(func() {
			b, _ := json.Marshal(map[string]any{"model": "m", "stream": true, "messages": []any{map[string]any{"role": "user", "content": th.Marker}}})
			resp, err := http.Post(srv.URL()+"/v1/messages", "application/json", bytes.NewReader(b))
			if err != nil {
				return
			}
			defer resp.Body.Close()
			events, _ := readSSE(resp.Body)
			for _, e := range events {
				var m struct {
					Delta struct {
						Text string `json:"text"`
					} `json:"delta"`
				}
				_ = json.Unmarshal([]byte(e.Data), &m)
				got[i] += m.Delta.Text
			}
		})
	}
	wg.Wait()
	for i, th := range threads {
		assert.Equal(t, th.Turns[0].Text, got[i])
	}
	require.NoError(t, srv.Err())
}

func TestOtherEndpoints(t *testing.T) {
	srv := start(t, fakeprovider.Script{Models: []string{"m1", "m2"}})
	get := func(path string, header ...string) *http.Response {
		return send(t, http.MethodGet, srv.URL()+path, nil, header...)
	}

	resp := post(t, srv.URL()+"/r/run-1/v1/messages/count_tokens?beta=true", map[string]any{"model": "m", "messages": []any{}})
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Positive(t, decode(t, resp)["input_tokens"])

	openai := decode(t, get("/v1/models"))
	assert.Equal(t, "list", openai["object"])
	assert.Len(t, openai["data"], 2)
	anthropic := decode(t, get("/r/x/v1/models", "anthropic-version", "2023-06-01"))
	assert.Equal(t, "m1", anthropic["first_id"])
	assert.Equal(t, false, anthropic["has_more"])
	assert.Equal(t, "m2", decode(t, get("/v1/models/m2"))["id"])
	assert.Equal(t, http.StatusNotFound, get("/v1/models/nope").StatusCode)

	ws := get("/v1/responses", "Connection", "Upgrade", "Upgrade", "websocket", "Sec-WebSocket-Version", "13", "Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ==")
	assert.Equal(t, http.StatusUpgradeRequired, ws.StatusCode)

	unknown := post(t, srv.URL()+"/v1/completions", map[string]any{})
	assert.Equal(t, http.StatusNotFound, unknown.StatusCode)
	notJSON, err := http.Post(srv.URL()+"/v1/messages", "application/json", strings.NewReader("{oops"))
	require.NoError(t, err)
	defer notJSON.Body.Close()
	assert.Equal(t, http.StatusBadRequest, notJSON.StatusCode)

	err = srv.Err()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "/v1/completions: unknown path")
	assert.Contains(t, err.Error(), "not JSON")

	reqs := srv.Requests()
	require.Len(t, reqs, 8)
	assert.Equal(t, fakeprovider.EndpointCountTokens, reqs[0].Endpoint)
	assert.Equal(t, "/r/run-1/v1/messages/count_tokens", reqs[0].Path)
	assert.Equal(t, "beta=true", reqs[0].Query)
	assert.Equal(t, fakeprovider.EndpointWebSocket, reqs[5].Endpoint)
	assert.Equal(t, "websocket", reqs[5].Header.Get("Upgrade"))
}

// Steps past the end of a thread and requests no thread matches get a text answer and are
// reported by Err.
func TestUnscripted(t *testing.T) {
	srv := start(t, fakeprovider.Script{Threads: []fakeprovider.Thread{{Name: "main", Marker: "[m]", Turns: []fakeprovider.Turn{{Text: "only"}}}}})
	user := map[string]any{"role": "user", "content": "[m]"}
	over := decode(t, post(t, srv.URL()+"/v1/messages", map[string]any{"messages": []any{user, map[string]any{"role": "assistant", "content": "only"}, user}}))
	assert.Equal(t, "end_turn", over["stop_reason"])
	none := decode(t, post(t, srv.URL()+"/v1/messages", map[string]any{"messages": []any{map[string]any{"role": "user", "content": "who?"}}}))
	assert.Contains(t, none["content"].([]any)[0].(map[string]any)["text"], "no scripted thread")
	err := srv.Err()
	require.Error(t, err)
	assert.Contains(t, err.Error(), `thread "main": step 1 requested, the script has 1 turn(s)`)
	assert.Contains(t, err.Error(), "no thread matches")
}

// TestRepeat: a thread with Repeat answers every step past its last turn with that turn;
// one without it leaves them unscripted.
func TestRepeat(t *testing.T) {
	srv := start(t, fakeprovider.Script{Threads: []fakeprovider.Thread{
		{Name: "main", Marker: "[m]", Turns: []fakeprovider.Turn{{Text: "first"}, {Text: "again"}}},
		{Name: "side", Repeat: true, Turns: []fakeprovider.Turn{{Text: "zero"}, {Text: "always"}}},
	}})
	history := func(marker string, turns int) []any {
		msgs := []any{map[string]any{"role": "user", "content": marker}}
		for range turns {
			msgs = append(msgs, map[string]any{"role": "assistant", "content": "x"}, map[string]any{"role": "user", "content": "go on"})
		}
		return msgs
	}
	text := func(m map[string]any) string { return m["content"].([]any)[0].(map[string]any)["text"].(string) }
	for turns, want := range []string{"zero", "always", "always", "always"} {
		m := decode(t, post(t, srv.URL()+"/v1/messages", map[string]any{"messages": history("side", turns*7)}))
		assert.Equal(t, want, text(m), "side step %d", turns*7)
	}
	require.NoError(t, srv.Err())
	decode(t, post(t, srv.URL()+"/v1/messages", map[string]any{"messages": history("[m]", 2)}))
	require.Error(t, srv.Err())
	assert.Contains(t, srv.Err().Error(), `thread "main": step 2 requested, the script has 2 turn(s)`)
}

func TestGzipRequestBody(t *testing.T) {
	srv := start(t, oneThread(fakeprovider.Turn{Text: "ok"}))
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	_, _ = zw.Write([]byte(`{"model":"m","messages":[{"role":"user","content":"hi"}]}`))
	require.NoError(t, zw.Close())
	resp := send(t, http.MethodPost, srv.URL()+"/v1/messages", &buf, "Content-Encoding", "gzip")
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.JSONEq(t, `{"model":"m","messages":[{"role":"user","content":"hi"}]}`, string(srv.Requests()[0].Body))
}

func TestFaults(t *testing.T) {
	anthropicStream := map[string]any{"model": "m", "stream": true, "messages": []any{map[string]any{"role": "user", "content": "hi"}}}

	t.Run("status once then the turn", func(t *testing.T) {
		srv := start(t, oneThread(fakeprovider.Turn{Text: "ok", Fault: &fakeprovider.Fault{Status: 429, RetryAfter: "2"}}))
		first := post(t, srv.URL()+"/v1/messages", anthropicStream)
		assert.Equal(t, 429, first.StatusCode)
		assert.Equal(t, "2", first.Header.Get("Retry-After"))
		body := decode(t, first)
		assert.Equal(t, "rate_limit_error", body["error"].(map[string]any)["type"])
		second := post(t, srv.URL()+"/v1/messages", anthropicStream)
		assert.Equal(t, 200, second.StatusCode)
		reqs := srv.Requests()
		assert.True(t, reqs[0].Faulted)
		assert.False(t, reqs[1].Faulted)
	})

	t.Run("status every time with a body", func(t *testing.T) {
		srv := start(t, oneThread(fakeprovider.Turn{Text: "ok", Fault: &fakeprovider.Fault{Status: 503, Times: -1, Body: "upstream down"}}))
		for range 3 {
			resp := post(t, srv.URL()+"/v1/chat/completions", map[string]any{"model": "m", "messages": []any{}})
			assert.Equal(t, 503, resp.StatusCode)
			b, _ := io.ReadAll(resp.Body)
			assert.Equal(t, "upstream down", string(b))
			assert.Equal(t, "text/plain; charset=utf-8", resp.Header.Get("Content-Type"))
		}
	})

	t.Run("OpenAI error shape", func(t *testing.T) {
		srv := start(t, oneThread(fakeprovider.Turn{Fault: &fakeprovider.Fault{Status: 500}}))
		m := decode(t, post(t, srv.URL()+"/v1/responses", map[string]any{"model": "m", "input": "x"}))
		assert.Contains(t, m["error"].(map[string]any)["message"], "injected fault 500")
	})

	t.Run("cut midway", func(t *testing.T) {
		srv := start(t, oneThread(fakeprovider.Turn{Text: strings.Repeat("x", 100), Fault: &fakeprovider.Fault{Cut: 4}}))
		resp := post(t, srv.URL()+"/v1/messages", anthropicStream)
		assert.Equal(t, http.StatusOK, resp.StatusCode)
		events, err := readSSE(resp.Body)
		assert.Len(t, events, 4)
		assert.True(t, errors.Is(err, io.ErrUnexpectedEOF), "a reset stream, not a clean end: %v", err)
	})

	t.Run("cut non-streamed body", func(t *testing.T) {
		srv := start(t, oneThread(fakeprovider.Turn{Text: "ok", Fault: &fakeprovider.Fault{Cut: 1}}))
		resp := post(t, srv.URL()+"/v1/messages", map[string]any{"model": "m", "messages": []any{}})
		_, err := io.ReadAll(resp.Body)
		assert.ErrorIs(t, err, io.ErrUnexpectedEOF)
	})

	t.Run("delays", func(t *testing.T) {
		const first, between = 50 * time.Millisecond, 10 * time.Millisecond
		srv := start(t, oneThread(fakeprovider.Turn{Text: "abcdef", Fault: &fakeprovider.Fault{FirstByte: first, BetweenChunks: between}}))
		began := time.Now()
		resp := post(t, srv.URL()+"/v1/messages", anthropicStream)
		header := time.Since(began)
		events, err := readSSE(resp.Body)
		require.NoError(t, err)
		// Lower bounds only: the waits happened.
		assert.GreaterOrEqual(t, header, first)
		assert.GreaterOrEqual(t, time.Since(began), first+time.Duration(len(events)-1)*between)
	})

	t.Run("close ends a delayed answer", func(t *testing.T) {
		srv := fakeprovider.New(oneThread(fakeprovider.Turn{Text: "late", Fault: &fakeprovider.Fault{FirstByte: time.Hour}}))
		require.NoError(t, srv.Start())
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		done := make(chan struct{})
		go func() {
			defer close(done)
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL()+"/v1/messages", strings.NewReader(`{"messages":[]}`))
			if resp, err := http.DefaultClient.Do(req); err == nil {
				_ = resp.Body.Close()
			}
		}()
		require.Eventually(t, func() bool { return len(srv.Requests()) == 1 }, 10*time.Second, 5*time.Millisecond)
		require.NoError(t, srv.Close())
		<-done
	})
}

// Ids depend on the script only: two servers give the same bytes for the same request.
func TestDeterministic(t *testing.T) {
	body := map[string]any{"model": "m", "stream": true, "input": "hi"}
	var outs []string
	for range 2 {
		srv := start(t, oneThread(richTurn))
		resp := post(t, srv.URL()+"/v1/responses", body)
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		outs = append(outs, string(b))
	}
	assert.Equal(t, outs[0], outs[1])
}

func TestCallPanicsOnBadInput(t *testing.T) {
	assert.Panics(t, func() { fakeprovider.Call("x", func() {}) })
	assert.Panics(t, func() { fakeprovider.Call("x", json.RawMessage("{nope")) })
	c := fakeprovider.Call("x", json.RawMessage(`{"a":1}`))
	assert.JSONEq(t, `{"a":1}`, string(c.Input))
	assert.Equal(t, "custom", fakeprovider.Custom("p", "text").Kind)
}

// A dynamic turn sees the request: here it echoes an id the client made up.
func TestDynamicTurn(t *testing.T) {
	srv := start(t, oneThread(
		fakeprovider.Turn{Calls: []tape.ToolCall{fakeprovider.Call("start", map[string]any{})}},
		fakeprovider.Turn{Dynamic: func(r *fakeprovider.Request) fakeprovider.Turn {
			var body struct {
				Messages []struct {
					Content string `json:"content"`
				} `json:"messages"`
			}
			_ = json.Unmarshal(r.Body, &body)
			id := body.Messages[len(body.Messages)-1].Content
			return fakeprovider.Turn{Calls: []tape.ToolCall{fakeprovider.Call("poll", map[string]any{"session": id})}}
		}},
	))
	m := decode(t, post(t, srv.URL()+"/v1/messages", map[string]any{"messages": []any{
		map[string]any{"role": "user", "content": "go"},
		map[string]any{"role": "assistant", "content": "started"},
		map[string]any{"role": "user", "content": "session-42"},
	}}))
	call := m["content"].([]any)[0].(map[string]any)
	assert.Equal(t, "toolu_fake_main_1_0", call["id"])
	assert.Equal(t, map[string]any{"session": "session-42"}, call["input"])
}

// Whatever a client sends, the server answers without panicking and records the request.
func FuzzServe(f *testing.F) {
	f.Add("/v1/messages", `{"stream":true,"messages":[{"role":"user","content":"[m]"},{"role":"assistant","content":[]}]}`)
	f.Add("/v1/responses", `{"input":[{"type":"function_call"},{"type":"message","role":"user","content":"x"}],"instructions":"[m]"}`)
	f.Add("/r/x/v1/chat/completions", `{"messages":[{"role":"system","content":[{"type":"text","text":"[m]"}]}],"stream":true,"stream_options":{"include_usage":true}}`)
	f.Add("/v1/messages", `{"messages":"not a list","system":7}`)
	f.Add("/nope", `[]`)
	f.Fuzz(func(t *testing.T, path, body string) {
		if u, err := url.ParseRequestURI(path); err != nil || u.RawQuery != "" || strings.ContainsAny(path, "# \t\r\n") {
			return
		}
		srv := fakeprovider.New(fakeprovider.Script{Threads: []fakeprovider.Thread{
			{Name: "main", Marker: "[m]", Turns: []fakeprovider.Turn{richTurn, {Text: "done"}}},
			{Name: "other", Turns: []fakeprovider.Turn{{Text: "fallback"}}},
		}})
		rec := httptest.NewRecorder()
		srv.ServeHTTP(rec, httptest.NewRequestWithContext(t.Context(), http.MethodPost, path, strings.NewReader(body)))
		if rec.Code == 0 {
			t.Fatal("no status")
		}
		if n := len(srv.Requests()); n != 1 {
			t.Fatalf("%d requests recorded, want 1", n)
		}
	})
}

// TestByModel: ByModel picks the thread by the request's model; another model, or a body
// that is not JSON, gets no thread.
func TestByModel(t *testing.T) {
	match := fakeprovider.ByModel(map[string]string{"m1": "one", "m2": "two"})
	assert.Equal(t, "one", match(&fakeprovider.Request{Body: []byte(`{"model":"m1"}`)}))
	assert.Equal(t, "two", match(&fakeprovider.Request{Body: []byte(`{"model":"m2","messages":[]}`)}))
	assert.Empty(t, match(&fakeprovider.Request{Body: []byte(`{"model":"m3"}`)}))
	assert.Empty(t, match(&fakeprovider.Request{Body: []byte(`{oops`)}))

	srv := start(t, fakeprovider.Script{Threads: []fakeprovider.Thread{
		{Name: "one", Turns: []fakeprovider.Turn{{Text: "from one"}}},
		{Name: "two", Turns: []fakeprovider.Turn{{Text: "from two"}}},
	}, Match: match})
	resp := post(t, srv.URL()+"/v1/messages", map[string]any{"model": "m2", "max_tokens": 10, "messages": []any{map[string]any{"role": "user", "content": "hi"}}})
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Contains(t, fmt.Sprint(decode(t, resp)["content"]), "from two")
}

// TestCloseWhileRequestsArrive: Close waits for a handler that began before it (here one
// still reading its request's body), and a request that reaches the handler after Close is
// refused with a 503 and not recorded. (Before, such a request was served as if nothing had
// closed, and its handler's WaitGroup.Add could race with Close's Wait: -race reported it
// from the gateway's TestClientDisconnects under load.)
func TestCloseWhileRequestsArrive(t *testing.T) {
	srv := fakeprovider.New(oneThread(fakeprovider.Turn{Text: "late"}))
	require.NoError(t, srv.Start())
	conn, err := net.Dial("tcp", strings.TrimPrefix(srv.URL(), "http://"))
	require.NoError(t, err)
	defer conn.Close()
	body := `{"messages":[]}`
	_, err = fmt.Fprintf(conn, "POST /v1/messages HTTP/1.1\r\nHost: fake\r\nContent-Type: application/json\r\nContent-Length: %d\r\nExpect: 100-continue\r\n\r\n", len(body))
	require.NoError(t, err)
	// The server answers 100 Continue when the handler first reads the body.
	line, err := bufio.NewReader(conn).ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "HTTP/1.1 100 Continue\r\n", line)

	require.NoError(t, srv.Close())
	require.Len(t, srv.Requests(), 1, "Close returned after the running handler, which recorded its broken request")
	rec := httptest.NewRecorder()
	srv.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/v1/messages", strings.NewReader(body)))
	assert.Equal(t, http.StatusServiceUnavailable, rec.Code)
	assert.Contains(t, rec.Body.String(), "fakeprovider: the server is closed")
	assert.Len(t, srv.Requests(), 1, "a request after Close is not recorded")
}
