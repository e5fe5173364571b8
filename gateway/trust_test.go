package gateway_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/gateway"
	"github.com/tapebox/tapebox/tape"
)

// The tests of this file check what the trust model (SECURITY.md) promises of the gateway: it
// spends a held key only on the calls it records, ends a recording only for whom may, never
// forwards connection-level headers, and keeps credentials out of the tape by name.

// TestInjectHeaderOnlyOnModelCalls: an injection for the upstream's host applies to the model
// calls the gateway records and to nothing else: a request to another path of the provider
// (its admin API, its token counter, a model call's path with another method) reaches the
// upstream with the agent's own placeholder, never with the held key.
func TestInjectHeaderOnlyOnModelCalls(t *testing.T) {
	inj, err := gateway.ParseInjection("127.0.0.1:x-api-key=$TAPEBOX_TEST_KEY", func(string) string { return injectedKey })
	require.NoError(t, err)
	rg := newRig(t, oneTurn(nil), func(c *gateway.Config) { c.Inject = []gateway.Injection{inj} })
	h := agentHeader()
	h.Set("X-Api-Key", placeholder)
	h.Set("Authorization", "Bearer "+placeholder)
	others := []call{
		{method: http.MethodPost, path: "/v1/organizations/admin_api_keys", body: []byte(`{"name":"mine now"}`)},
		{method: http.MethodGet, path: "/v1/organizations/admin_api_keys"},
		{method: http.MethodGet, path: "/r/run-1/v1/organizations/api_keys?limit=20"},
		{method: http.MethodPost, path: "/v1/messages/count_tokens", body: taskRequest(false)},
		{method: http.MethodGet, path: "/v1/models"},
		{method: http.MethodGet, path: "/v1/messages"},
		{method: http.MethodPost, path: "/v1/files", body: []byte("file")},
	}
	for _, c := range others {
		c.header = h.Clone()
		rg.do(t, c)
	}
	rep := rg.do(t, call{header: h.Clone(), body: taskRequest(false)})
	require.Equal(t, http.StatusOK, rep.status, "%s", rep.body)

	got := rg.up.requests()
	require.Len(t, got, len(others)+1)
	for i, c := range others {
		r := got[i]
		require.Equal(t, c.method, r.method)
		assert.Equal(t, placeholder, r.header.Get("X-Api-Key"), "%s %s gets the agent's own header", c.method, c.path)
		assert.Equal(t, "Bearer "+placeholder, r.header.Get("Authorization"), "%s %s", c.method, c.path)
		for k, vs := range r.header {
			for _, v := range vs {
				assert.NotContains(t, v, injectedKey, "%s %s: header %s", c.method, c.path, k)
			}
		}
	}
	model := got[len(others)]
	assert.Equal(t, "/v1/messages", model.path)
	assert.Equal(t, injectedKey, model.header.Get("X-Api-Key"), "the recorded model call gets the held key")
	assert.Empty(t, model.header.Get("Authorization"), "and none of the agent's credentials")
	assert.False(t, strings.Contains(model.header.Get("X-Api-Key"), placeholder))
}

const endToken = "TESTENDTOKEN-7pWq2Rz"

// TestEndPeers: POST /tapebox/end ends the recording for a loopback peer, or for any peer
// with the end token; anyone else gets 403 and the recording goes on. The peer is the TCP
// peer (r.RemoteAddr, set by hand here): a forwarding header does not make one loopback.
func TestEndPeers(t *testing.T) {
	const far = "192.0.2.1:40000"
	cases := []struct {
		name   string
		token  string // the gateway's EndToken
		peer   string
		target string
		header http.Header
		want   int
	}{
		{"far, no token", endToken, far, "/tapebox/end", nil, http.StatusForbidden},
		{"far, wrong bearer", endToken, far, "/tapebox/end", http.Header{"Authorization": {"Bearer nope"}}, http.StatusForbidden},
		{"far, wrong query token", endToken, far, "/tapebox/end?token=nope", nil, http.StatusForbidden},
		{"far, token as basic auth", endToken, far, "/tapebox/end", http.Header{"Authorization": {"Basic " + endToken}}, http.StatusForbidden},
		{"far, forwarded for loopback", endToken, far, "/tapebox/end", http.Header{"X-Forwarded-For": {"127.0.0.1"}, "X-Real-Ip": {"127.0.0.1"}}, http.StatusForbidden},
		{"far, under a label prefix", endToken, far, "/r/run-1/tapebox/end", nil, http.StatusForbidden},
		{"far, gateway without a token, empty bearer", "", far, "/tapebox/end?token=", http.Header{"Authorization": {"Bearer "}}, http.StatusForbidden},
		{"far, GET", endToken, far, "/tapebox/end", nil, http.StatusForbidden},
		{"far, bearer token", endToken, far, "/tapebox/end", http.Header{"Authorization": {"Bearer " + endToken}}, http.StatusOK},
		{"far, query token", endToken, far, "/tapebox/end?token=" + endToken, nil, http.StatusOK},
		{"loopback v4", endToken, "127.0.0.1:40000", "/tapebox/end", nil, http.StatusOK},
		{"loopback v4, another address of 127/8", "", "127.0.0.2:40000", "/r/run-1/tapebox/end", nil, http.StatusOK},
		{"loopback v6", "", "[::1]:40000", "/tapebox/end", nil, http.StatusOK},
		{"loopback v4 in v6", "", "[::ffff:127.0.0.1]:40000", "/tapebox/end", nil, http.StatusOK},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ended := make(chan struct{})
			rg := newRig(t, oneTurn(nil), func(c *gateway.Config) {
				c.EndToken = tc.token
				c.OnEnd = func() { close(ended) }
			})
			method := http.MethodPost
			if strings.HasSuffix(tc.name, "GET") {
				method = http.MethodGet
			}
			req := httptest.NewRequest(method, tc.target, nil)
			req.RemoteAddr = tc.peer
			maps.Copy(req.Header, tc.header)
			w := httptest.NewRecorder()
			rg.g.ServeHTTP(w, req)
			require.Equal(t, tc.want, w.Code, "%s", w.Body)
			if tc.want == http.StatusOK {
				require.NotNil(t, rg.load(t).Meta.Ended, "the recording ended")
				<-ended
				return
			}
			assert.Nil(t, rg.load(t).Meta.Ended, "the recording goes on")
			rep := rg.do(t, call{body: taskRequest(false)})
			assert.Equal(t, http.StatusOK, rep.status)
			assert.Equal(t, 1, rg.g.Steps(), "and records")
		})
	}
}

// TestEndFromTheNetwork: a gateway listening on a non-loopback address of this machine
// refuses POST /tapebox/end from a peer there without the end token, and ends with it.
func TestEndFromTheNetwork(t *testing.T) {
	ip := nonLoopbackIP(t)
	ln, err := net.Listen("tcp", net.JoinHostPort(ip.String(), "0"))
	if err != nil {
		t.Skipf("listen on %s: %v", ip, err)
	}
	rg := newRig(t, oneTurn(nil), func(c *gateway.Config) { c.EndToken = endToken })
	srv := &http.Server{Handler: rg.g}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	client := &http.Client{Transport: &http.Transport{Proxy: nil}, Timeout: time.Minute}
	base := "http://" + ln.Addr().String() + "/tapebox/end"

	resp, err := client.Post(base, "", nil)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusForbidden, resp.StatusCode)
	require.Nil(t, rg.load(t).Meta.Ended)

	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, base, nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+endToken)
	resp, err = client.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.NotNil(t, rg.load(t).Meta.Ended)
}

// nonLoopbackIP returns an address of this machine's that is not loopback, or skips t.
func nonLoopbackIP(t *testing.T) net.IP {
	t.Helper()
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Skipf("interface addresses: %v", err)
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() && !n.IP.IsLinkLocalUnicast() {
			return n.IP
		}
	}
	t.Skip("no non-loopback IPv4 address on this machine")
	return nil
}

// headerUpstream is a real upstream that keeps the headers and the query of every request
// it gets and answers with a Messages answer carrying answer's headers.
type headerUpstream struct {
	answer http.Header
	mu     sync.Mutex
	got    []http.Header
	query  []string
	bodies [][]byte
}

func (u *headerUpstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	u.mu.Lock()
	u.got = append(u.got, r.Header.Clone())
	u.query = append(u.query, r.URL.RawQuery)
	body, _ := io.ReadAll(r.Body)
	u.bodies = append(u.bodies, body)
	u.mu.Unlock()
	maps.Copy(w.Header(), u.answer)
	w.Header().Set("Content-Type", "application/json")
	io.WriteString(w, `{"id":"msg_hop","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"ok"}],"stop_reason":"end_turn","usage":{"input_tokens":1,"output_tokens":1}}`)
}

// newHeaderGateway starts a gateway recording into a tape of tapeDir in front of up.
func newHeaderGateway(t *testing.T, up *headerUpstream) (gw *httptest.Server, g *gateway.Gateway, out string) {
	t.Helper()
	upSrv := httptest.NewServer(up)
	t.Cleanup(upSrv.Close)
	out = filepath.Join(tapeDir(t), "run.json")
	g, err := gateway.New(gateway.Config{Output: out, Upstream: upSrv.URL, Logf: t.Logf})
	require.NoError(t, err)
	gw = httptest.NewServer(g)
	t.Cleanup(func() {
		gw.Close()
		require.NoError(t, g.Close(context.Background()))
	})
	return gw, g, out
}

// TestHopHeadersNotForwarded: Proxy-Authorization, the other hop-by-hop headers and those
// the Connection header names stop at the gateway, both ways, on recorded model calls and on
// anything else; end-to-end headers go through.
func TestHopHeadersNotForwarded(t *testing.T) {
	up := &headerUpstream{answer: http.Header{
		"Proxy-Authenticate": {`Basic realm="upstream"`},
		"Connection":         {"X-Hop-Answer"},
		"X-Hop-Answer":       {"hop"},
		"Keep-Alive":         {"timeout=5"},
		"Upgrade":            {"websocket"},
		"X-End-To-End":       {"kept"},
	}}
	gw, _, _ := newHeaderGateway(t, up)
	hop := []string{"Proxy-Authorization", "Proxy-Authenticate", "Proxy-Connection", "Keep-Alive", "Te", "Trailer", "Upgrade", "X-Hop-Named", "X-Hop-Named-Too"}
	for _, path := range []string{"/v1/messages", "/v1/organizations/usage"} {
		t.Run(path, func(t *testing.T) {
			req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, gw.URL+path, strings.NewReader(string(taskRequest(false))))
			require.NoError(t, err)
			req.Header = http.Header{
				"Content-Type":        {"application/json"},
				"Proxy-Authorization": {"Basic " + bearer},
				"Proxy-Authenticate":  {`Basic realm="agent"`},
				"Proxy-Connection":    {"keep-alive"},
				"Keep-Alive":          {"timeout=5"},
				"Te":                  {"trailers"},
				"Trailer":             {"X-Checksum"},
				"Upgrade":             {"h2c"},
				"Connection":          {"X-Hop-Named, x-hop-named-too"},
				"X-Hop-Named":         {"hop"},
				"X-Hop-Named-Too":     {"hop"},
				"X-End-To-End":        {"kept"},
			}
			up.mu.Lock()
			before := len(up.got)
			up.mu.Unlock()
			resp := doOK(t, req)

			up.mu.Lock()
			require.Len(t, up.got, before+1)
			got := up.got[before]
			up.mu.Unlock()
			for _, name := range hop {
				assert.Empty(t, got.Values(name), "the upstream got %s", name)
			}
			assert.NotContains(t, got.Get("Connection"), "X-Hop-Named")
			assert.Equal(t, "kept", got.Get("X-End-To-End"))
			for _, name := range []string{"Proxy-Authenticate", "X-Hop-Answer", "Keep-Alive", "Upgrade"} {
				assert.Empty(t, resp.Header.Values(name), "the client got the upstream's %s", name)
			}
			assert.Equal(t, "kept", resp.Header.Get("X-End-To-End"))
		})
	}
}

// TestRecordRedactsHeadersByName: the tape keeps no value of a request or answer header
// whose name says it is a credential, whatever the rest of the name (the audit found
// x-custom-key, x-portkey-virtual-key and x-session kept in clear), while the upstream and
// the client still get every one; the harmless names harnesses send are kept as sent.
func TestRecordRedactsHeadersByName(t *testing.T) {
	secretHeaders := map[string]string{
		"X-Custom-Key":          "TESTCUSTOMKEY-c1Vb8",
		"X-Portkey-Virtual-Key": "TESTPORTKEY-p0Rt5",
		"X-Session":             "TESTXSESSION-s3Ss1",
		"X-Amz-Security-Token":  "TESTAMZTOKEN-a9Mz2",
		"X-Request-Signature":   "TESTSIGNATURE-g7Nt4",
		"X-Db-Password":         "TESTPASSWORD-w0Rd6",
		"X-Client-Secret":       "TESTCLIENTSECRET-e8Ct3",
		"X-Oauth-Credential":    "TESTCREDENTIAL-d2Lq9",
	}
	answerSecrets := map[string]string{
		"X-Upstream-Session-Token": "TESTANSWERTOKEN-u5Pq1",
		"Set-Cookie":               "TESTANSWERCOOKIE-k4Ie7",
		"X-Refresh-Key":            "TESTANSWERKEY-r6Fs0",
	}
	harmless := map[string]string{
		"X-Claude-Code-Session-Id": "80e11c7d-1b7e-4c43-9a51-0e1b9a0f6f1a",
		"Session-Id":               "01a22788-edaa-7bd0-9e1b-978b63b056f7",
		"Idempotency-Key":          "stainless-node-retry-5e2f",
		"Anthropic-Beta":           "oauth-2025-04-20,claude-code-20250219",
		"X-Stainless-Retry-Count":  "0",
	}
	answerHarmless := map[string]string{
		"Anthropic-Ratelimit-Input-Tokens-Remaining": "1999000",
		"X-Ratelimit-Remaining-Tokens":               "149000",
		"Request-Id":                                 "req_011CUtest",
	}
	up := &headerUpstream{answer: http.Header{}}
	for k, v := range answerSecrets {
		up.answer.Set(k, v)
	}
	for k, v := range answerHarmless {
		up.answer.Set(k, v)
	}
	gw, g, out := newHeaderGateway(t, up)
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, gw.URL+"/v1/messages", strings.NewReader(string(taskRequest(false))))
	require.NoError(t, err)
	req.Header = agentHeader()
	for k, v := range secretHeaders {
		req.Header.Set(k, v)
	}
	for k, v := range harmless {
		req.Header.Set(k, v)
	}
	resp := doOK(t, req)
	require.NoError(t, g.Finish(tape.EndComplete, ""))

	got := up.got[0]
	for k, v := range secretHeaders {
		assert.Equal(t, v, got.Get(k), "the upstream gets %s", k)
	}
	for k, v := range answerSecrets {
		assert.Equal(t, v, resp.Header.Get(k), "the client gets %s", k)
	}
	data, err := os.ReadFile(out)
	require.NoError(t, err)
	for _, m := range []map[string]string{secretHeaders, answerSecrets} {
		for k, v := range m {
			assert.False(t, strings.Contains(string(data), v), "the tape holds %s's value", k)
		}
	}
	tp, err := tape.Unmarshal(data)
	require.NoError(t, err)
	s := tp.Threads[0].Steps[0]
	for k := range secretHeaders {
		assert.Equal(t, gateway.Redacted, s.Request.Headers[strings.ToLower(k)], k)
	}
	for k := range answerSecrets {
		assert.Equal(t, gateway.Redacted, s.Response.Headers[strings.ToLower(k)], k)
	}
	for k, v := range harmless {
		assert.Equal(t, v, s.Request.Headers[strings.ToLower(k)], k)
	}
	for k, v := range answerHarmless {
		assert.Equal(t, v, s.Response.Headers[strings.ToLower(k)], k)
	}
}

// TestRecordRedactsQuery: credentials in a query string (the audit found ?key=… kept in
// request.path) are redacted wherever the tape keeps a URL: the request's path, URL-valued
// headers both ways, a form body, and the error a failed call records; the upstream gets the
// query as sent.
func TestRecordRedactsQuery(t *testing.T) {
	secrets := []string{"TESTQKEY-q1", "TESTQAPIKEY-q2", "TESTQACCESS-q3", "TESTQSIG-q4", "TESTQESCAPED-q5",
		"TESTREFERER-q6", "TESTLOCATION-q7", "TESTFORM-q8", "TESTFAILED-q9"}
	const query = "beta=true&key=TESTQKEY-q1&api_key=TESTQAPIKEY-q2&Access_Token=TESTQACCESS-q3&sig=TESTQSIG-q4&%6Bey=TESTQESCAPED-q5"
	up := &headerUpstream{answer: http.Header{
		"Location":         {"https://files.example/o?X-Amz-Signature=TESTLOCATION-q7&X-Amz-Date=20260101"},
		"Content-Location": {"/v1/messages/msg_hop?token=TESTLOCATION-q7"},
	}}
	gw, g, out := newHeaderGateway(t, up)
	post := func(path, contentType, body string, header http.Header) {
		t.Helper()
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, gw.URL+path, strings.NewReader(body))
		require.NoError(t, err)
		maps.Copy(req.Header, header)
		req.Header.Set("Content-Type", contentType)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	post("/r/run-1/v1/messages?"+query, "application/json", string(taskRequest(false)),
		http.Header{"Referer": {"https://app.example/chat?token=TESTREFERER-q6&tab=2"}})
	post("/v1/chat/completions", "application/x-www-form-urlencoded", "model=m&api_key=TESTFORM-q8", nil)
	require.NoError(t, g.Finish(tape.EndComplete, ""))

	require.Len(t, up.query, 2)
	assert.Equal(t, query, up.query[0], "the upstream gets the query as sent")
	assert.Equal(t, "https://app.example/chat?token=TESTREFERER-q6&tab=2", up.got[0].Get("Referer"))
	data, err := os.ReadFile(out)
	require.NoError(t, err)
	for _, s := range secrets {
		assert.False(t, strings.Contains(string(data), s), "the tape holds %s", s)
	}
	tp, err := tape.Unmarshal(data)
	require.NoError(t, err)
	var steps []*tape.Step
	for _, th := range tp.Threads {
		steps = append(steps, th.Steps...)
	}
	require.Len(t, steps, 2)
	s := steps[0]
	assert.Equal(t, "/r/run-1/v1/messages?beta=true&key=[redacted]&api_key=[redacted]&Access_Token=[redacted]&sig=[redacted]&%6Bey=[redacted]", s.Request.Path)
	assert.Equal(t, "https://app.example/chat?token=[redacted]&tab=2", s.Request.Headers["referer"])
	assert.Equal(t, "https://files.example/o?X-Amz-Signature=[redacted]&X-Amz-Date=20260101", s.Response.Headers["location"])
	assert.Equal(t, "/v1/messages/msg_hop?token=[redacted]", s.Response.Headers["content-location"])
	assert.JSONEq(t, `"model=m&api_key=[redacted]"`, string(steps[1].Request.Raw))
	assert.Equal(t, "model=m&api_key=TESTFORM-q8", string(up.bodies[1]), "the upstream gets the body as sent")

	t.Run("a call that fails upstream", func(t *testing.T) {
		out := filepath.Join(tapeDir(t), "run.json")
		g, err := gateway.New(gateway.Config{Output: out, Upstream: "http://127.0.0.1:1", Logf: t.Logf,
			Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
				// as a transport built on an http.Client fails: the error names the URL
				return nil, &url.Error{Op: "Post", URL: r.URL.String(), Err: errors.New("connection refused")}
			})})
		require.NoError(t, err)
		gw := httptest.NewServer(g)
		defer gw.Close()
		resp, err := http.Post(gw.URL+"/v1/messages?key=TESTFAILED-q9", "application/json", strings.NewReader(string(taskRequest(false))))
		require.NoError(t, err)
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.Equal(t, http.StatusBadGateway, resp.StatusCode)
		assert.False(t, strings.Contains(string(body), "TESTFAILED-q9"), "the error the client gets holds the key: %s", body)
		require.NoError(t, g.Finish(tape.EndComplete, ""))
		data, err := os.ReadFile(out)
		require.NoError(t, err)
		assert.False(t, strings.Contains(string(data), "TESTFAILED-q9"), "the tape holds the key")
		assert.True(t, strings.Contains(string(data), "key=[redacted]"), "the tape names the redacted key")
	})
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestRecordKeepsBodiesAsSent: the gateway does not redact bodies by field name (see the
// package doc): a JSON body is recorded as sent, so protocol fields whose names hold a
// credential word (a thinking block's signature, prompt_cache_key, max_tokens, a Codex
// session_id) and the tool-use ids replay needs stay intact: raw is the body as sent, and
// the normalized form is derived from it.
func TestRecordKeepsBodiesAsSent(t *testing.T) {
	const signature = "EqQBCkgIBxABGAIqQKmSignatureOfThinking0123456789abcdef"
	body, err := json.Marshal(map[string]any{
		"model": "claude-opus-5-5", "max_tokens": 1024, "prompt_cache_key": "01a22788-edaa", "stream": false,
		"messages": []map[string]any{
			{"role": "user", "content": "run it"},
			{"role": "assistant", "content": []map[string]any{
				{"type": "thinking", "thinking": "Let me run it.", "signature": signature},
				{"type": "tool_use", "id": "toolu_01KeepMe", "name": "Bash", "input": map[string]any{"command": "true", "session_id": 7}},
			}},
			{"role": "user", "content": []map[string]any{{"type": "tool_result", "tool_use_id": "toolu_01KeepMe", "content": "ok"}}},
		},
	})
	require.NoError(t, err)
	up := &headerUpstream{answer: http.Header{}}
	gw, g, _ := newHeaderGateway(t, up)
	resp, err := http.Post(gw.URL+"/v1/messages", "application/json", strings.NewReader(string(body)))
	require.NoError(t, err)
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	require.NoError(t, g.Finish(tape.EndComplete, ""))
	tp, err := tape.LoadFile(g.Path())
	require.NoError(t, err)
	s := tp.Threads[0].Steps[0]
	assert.JSONEq(t, string(body), string(s.Request.Raw))
	assert.Equal(t, body, up.bodies[0])
	require.Len(t, s.Request.Messages, 3)
	assistant := s.Request.Messages[1].Content
	require.Len(t, assistant, 2)
	assert.Equal(t, tape.Block{Type: tape.BlockThinking, Text: "Let me run it."}, assistant[0]) // its signature is in raw
	assert.Equal(t, "toolu_01KeepMe", assistant[1].ID)
	assert.JSONEq(t, `{"command":"true","session_id":7}`, string(assistant[1].Input))
}

// doOK sends req, reads the answer's body to its end and requires a 200.
func doOK(t *testing.T, req *http.Request) *http.Response {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	_, err = io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	return resp
}

// TestSetMeta: SetForkedFrom and SetWorkspace reach the tape; after the recording finishes
// they are refused, and SetWorkspace is refused by a gateway that takes the workspace itself.
func TestSetMeta(t *testing.T) {
	out := filepath.Join(t.TempDir(), "run.json")
	g, err := gateway.New(gateway.Config{Output: out, Upstream: "http://127.0.0.1:1", Logf: t.Logf})
	require.NoError(t, err)
	from := &tape.ForkedFrom{TapeID: "rec-1", Thread: "main", Step: 2, Served: map[string]int{"main": 2}}
	require.NoError(t, g.SetForkedFrom(from))
	ws := &tape.Workspace{Snapshot: "run.workspace.tar.zst", Files: 3}
	require.NoError(t, g.SetWorkspace(ws))
	require.NoError(t, g.Finish(tape.EndComplete, ""))
	tp, err := tape.LoadFile(out)
	require.NoError(t, err)
	assert.Equal(t, from, tp.Meta.ForkedFrom)
	assert.Equal(t, ws, tp.Meta.Workspace)
	assert.EqualError(t, g.SetForkedFrom(from), "gateway: set forked_from: the recording is finished")
	assert.EqualError(t, g.SetWorkspace(ws), "gateway: set workspace: the recording is finished")

	own, err := gateway.New(gateway.Config{Output: filepath.Join(t.TempDir(), "own.json"), Upstream: "http://127.0.0.1:1", Workspace: t.TempDir(), Logf: t.Logf})
	require.NoError(t, err)
	defer own.Finish(tape.EndComplete, "")
	assert.EqualError(t, own.SetWorkspace(ws), "gateway: set workspace: the gateway takes the workspace itself (Config.Workspace)")
}
