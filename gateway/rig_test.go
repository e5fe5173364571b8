package gateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/gateway"
	"github.com/tapebox/tapebox/internal/testutil/credscan"
	"github.com/tapebox/tapebox/tape"
	"github.com/tapebox/tapebox/tape/provider"
	"github.com/tapebox/tapebox/testkit/fakeprovider"
)

// The credentials the suite sends (or has the upstream send back). None may appear in any
// file a test's gateway writes: scanCredentials checks every one of them after each test.
const (
	apiKey       = "sk-ant-api03-TESTAPIKEY-x7Qp2mZ9"
	bearer       = "sk-proj-TESTBEARER-4kLq8sVn"
	cookie       = "sid=TESTCOOKIE-9fJ3hD1w"
	setCookie    = "resp=TESTSETCOOKIE-2bM7kR0p"
	sessionToken = "TESTSESSIONTOKEN-3nWq6Ab"
	placeholder  = "sk-placeholder-TESTPLACEHOLDER-5tYu"
	injectedKey  = "sk-ant-api03-TESTINJECTED-8cXe1Lo"
)

var credentials = []string{secret, apiKey, bearer, cookie, setCookie, sessionToken, placeholder, injectedKey}

// tapeDir returns a fresh directory for a test's tapes; when the test ends, after its
// gateways are closed, every file left in it (tapes, stray slot files) is scanned for the
// suite's credentials.
func tapeDir(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	t.Cleanup(func() { scanCredentials(t, dir) })
	return dir
}

// scanCredentials fails t when a file under dir holds one of the suite's credentials, or
// when there is no file to scan.
func scanCredentials(t testing.TB, dir string) {
	t.Helper()
	if credscan.Dir(t, dir, credentials...) == 0 {
		t.Errorf("scan %s for credentials: no file to scan", dir)
	}
}

// agentHeader is what the suite's agent sends: a harness's User-Agent and every kind of
// credential.
func agentHeader() http.Header {
	return http.Header{
		"Content-Type":      {"application/json"},
		"Anthropic-Version": {"2023-06-01"},
		"User-Agent":        {"claude-cli/2.1.332 (external, sdk-cli)"},
		"X-Api-Key":         {apiKey},
		"Authorization":     {"Bearer " + bearer},
		"Cookie":            {cookie},
		"X-Session-Token":   {sessionToken},
	}
}

// rig is a fake provider (behind a capturing front), a gateway recording into a tape, and
// the gateway's HTTP server.
type rig struct {
	fp  *fakeprovider.Server
	up  *capture
	g   *gateway.Gateway
	gw  *httptest.Server
	out string
}

// newRig starts a rig; cfg (may be nil) adjusts the gateway's configuration.
func newRig(t *testing.T, script fakeprovider.Script, cfg func(*gateway.Config)) *rig {
	t.Helper()
	rg := &rig{out: filepath.Join(tapeDir(t), "run.json"), fp: fakeprovider.New(script)}
	rg.up = &capture{next: rg.fp}
	upSrv := httptest.NewServer(rg.up)
	c := gateway.Config{Output: rg.out, Upstream: upSrv.URL, Logf: t.Logf}
	if cfg != nil {
		cfg(&c)
	}
	g, err := gateway.New(c)
	require.NoError(t, err)
	rg.g = g
	rg.gw = httptest.NewServer(g)
	t.Cleanup(func() {
		rg.fp.Close() // ends the fake's waits first, so nothing below blocks
		upSrv.Close()
		rg.gw.Close()
		require.NoError(t, g.Close(context.Background()))
		_, err := tape.LoadFile(rg.out)
		require.NoError(t, err, "the tape must be valid after Close")
	})
	return rg
}

// load reads the tape on disk now; it must be valid at every moment.
func (rg *rig) load(t *testing.T) *tape.Tape {
	t.Helper()
	tp, err := tape.LoadFile(rg.out)
	require.NoError(t, err)
	return tp
}

// call is one HTTP request to the gateway.
type call struct {
	method string // POST when empty
	path   string // /v1/messages when empty
	header http.Header
	body   []byte
}

// reply is what the client got.
type reply struct {
	status int
	header http.Header
	body   []byte
	err    error // reading the body: a broken answer
}

// events splits a streamed reply into its server-sent events.
func (r reply) events() []string {
	var sp provider.EventSplitter
	return sp.Write(r.body)
}

// do sends c through the gateway and reads the whole answer, within a deadline.
func (rg *rig) do(t *testing.T, c call) reply {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	req := rg.request(t, ctx, c)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, ctx.Err(), "the answer must not hang")
	return reply{status: resp.StatusCode, header: resp.Header, body: body, err: err}
}

func (rg *rig) request(t *testing.T, ctx context.Context, c call) *http.Request {
	t.Helper()
	if c.method == "" {
		c.method = http.MethodPost
	}
	if c.path == "" {
		c.path = "/v1/messages"
	}
	var body io.Reader = http.NoBody
	if c.body != nil {
		body = bytes.NewReader(c.body)
	}
	req, err := http.NewRequestWithContext(ctx, c.method, rg.gw.URL+c.path, body)
	require.NoError(t, err)
	if c.header == nil {
		c.header = agentHeader()
	}
	req.Header = c.header
	return req
}

// capture records the raw requests the upstream gets, then hands them to the fake
// provider, undoing a zstd Content-Encoding the fake does not read itself.
type capture struct {
	next http.Handler
	mu   sync.Mutex
	got  []captured
}

type captured struct {
	method, path, query string
	header              http.Header
	body                []byte
}

func (c *capture) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	c.mu.Lock()
	c.got = append(c.got, captured{r.Method, r.URL.Path, r.URL.RawQuery, r.Header.Clone(), body})
	c.mu.Unlock()
	if strings.EqualFold(r.Header.Get("Content-Encoding"), "zstd") {
		zr, err := zstd.NewReader(bytes.NewReader(body))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		body, err = io.ReadAll(zr)
		zr.Close()
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.Header.Del("Content-Encoding")
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	c.next.ServeHTTP(w, r)
}

func (c *capture) requests() []captured {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]captured(nil), c.got...)
}

// anthropicRequest is a Claude Code-shaped Messages request: system as cached text blocks,
// a role:system entry inside messages, Claude Code's params, tools Bash and Agent.
func anthropicRequest(stream bool, messages ...map[string]any) []byte {
	body := map[string]any{
		"model":      "claude-opus-5-5",
		"max_tokens": 32000,
		"stream":     stream,
		"system": []map[string]any{
			{"type": "text", "text": "x-anthropic-billing-header: cc_version=2.1.332.0b8; cc_entrypoint=sdk-cli;"},
			{"type": "text", "text": "You are a Claude agent, built on Anthropic's Claude Agent SDK.", "cache_control": map[string]string{"type": "ephemeral"}},
		},
		"messages": messages,
		"tools": []map[string]any{
			{"name": "Bash", "description": "Run a command.", "input_schema": map[string]any{"type": "object", "properties": map[string]any{"command": map[string]string{"type": "string"}}}},
			{"name": "Agent", "description": "Delegate.", "input_schema": map[string]any{"type": "object", "properties": map[string]any{"prompt": map[string]string{"type": "string"}}}},
		},
		"metadata":           map[string]string{"user_id": "{\"device_id\":\"27fe\"}"},
		"thinking":           map[string]string{"type": "adaptive", "display": "omitted"},
		"context_management": map[string]any{"edits": []map[string]string{{"type": "clear_thinking_20251015", "keep": "all"}}},
		"output_config":      map[string]string{"effort": "medium"},
	}
	b, err := json.Marshal(body)
	if err != nil {
		panic(err)
	}
	return b
}

// userText is a user message with a system reminder before the prompt, as Claude Code
// sends them.
func userText(prompt string) map[string]any {
	return map[string]any{"role": "user", "content": []map[string]any{
		{"type": "text", "text": "<system-reminder>\nAttribution for git commits...\n</system-reminder>"},
		{"type": "text", "text": prompt},
	}}
}

// systemEntry is one of Claude Code's role:system entries inside messages.
func systemEntry(text string) map[string]any {
	return map[string]any{"role": "system", "content": text, "output_config": map[string]string{"effort": "medium"}}
}

// assistantCalls is an assistant message holding tool calls.
func assistantCalls(calls []tape.ToolCall) map[string]any {
	var content []map[string]any
	for _, c := range calls {
		content = append(content, map[string]any{"type": "tool_use", "id": c.ID, "name": c.Name, "input": c.Input})
	}
	return map[string]any{"role": "assistant", "content": content}
}

// toolResults answers calls, each with text, the last one with cache_control as Claude
// Code marks it.
func toolResults(calls []tape.ToolCall, text func(tape.ToolCall) string) map[string]any {
	var content []map[string]any
	for i, c := range calls {
		b := map[string]any{"type": "tool_result", "tool_use_id": c.ID, "content": text(c), "is_error": false}
		if i == len(calls)-1 {
			b["cache_control"] = map[string]string{"type": "ephemeral"}
		}
		content = append(content, b)
	}
	return map[string]any{"role": "user", "content": content}
}

// toolCalls parses the tool calls of an Anthropic answer, streamed or not.
func toolCalls(t *testing.T, rep reply, stream bool) []tape.ToolCall {
	t.Helper()
	require.NoError(t, rep.err)
	require.Equal(t, http.StatusOK, rep.status, "%s", rep.body)
	s := &tape.Step{Request: tape.Request{Raw: json.RawMessage(`{}`)}}
	if stream {
		for _, ev := range rep.events() {
			s.Response.Chunks = append(s.Response.Chunks, tape.Chunk{Data: ev})
		}
	} else {
		s.Response.Raw = rep.body
	}
	require.NoError(t, provider.Normalize(tape.ProviderAnthropic, s))
	return s.ToolCalls
}
