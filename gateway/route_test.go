package gateway_test

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/gateway"
	"github.com/tapebox/tapebox/internal/testutil/minirec"
	"github.com/tapebox/tapebox/tape"
)

// rawUpstream answers every request with a small Anthropic answer and remembers, per
// request, the path as it arrived on the wire (still escaped) and the key header.
type rawUpstream struct {
	mu  sync.Mutex
	got []rawRequest
}

type rawRequest struct{ method, path, key, auth string }

func (u *rawUpstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	io.Copy(io.Discard, r.Body)
	path, _, _ := strings.Cut(r.RequestURI, "?")
	u.mu.Lock()
	u.got = append(u.got, rawRequest{r.Method, path, r.Header.Get("X-Api-Key"), r.Header.Get("Authorization")})
	u.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	io.WriteString(w, `{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"ok"}],"stop_reason":"end_turn","usage":{"input_tokens":1,"output_tokens":1}}`)
}

func (u *rawUpstream) take() []rawRequest {
	u.mu.Lock()
	defer u.mu.Unlock()
	got := u.got
	u.got = nil
	return got
}

// TestInjectedKeyOnlyOnExactModelPaths: the gateway matches the path as sent, byte for byte,
// and forwards that same path. The held key reaches a real upstream only on the exact model
// paths (with a /r/LABEL prefix, under an upstream base path); a path that merely ends in
// one once decoded (the review's three, and their cousins) is refused before it reaches the
// upstream, and any other path is forwarded with the agent's own placeholder.
func TestInjectedKeyOnlyOnExactModelPaths(t *testing.T) {
	up := &rawUpstream{}
	upSrv := httptest.NewServer(up)
	defer upSrv.Close()
	inj, err := gateway.ParseInjection("127.0.0.1:x-api-key=$KEY", func(string) string { return injectedKey })
	require.NoError(t, err)
	for _, base := range []string{"", "/base/path"} {
		g, err := gateway.New(gateway.Config{Output: filepath.Join(tapeDir(t), "run.json"), Upstream: upSrv.URL + base,
			Inject: []gateway.Injection{inj}, Logf: t.Logf})
		require.NoError(t, err)
		gw := httptest.NewServer(g)
		const (
			key     = "key"     // forwarded to the model path with the held key
			refused = "refused" // 400, nothing reaches the upstream
			own     = "own"     // forwarded as sent, with the agent's own placeholder
		)
		cases := []struct {
			method, path string
			want         string
			upPath       string // the path the upstream gets, when forwarded (default: path)
		}{
			{"POST", "/v1/messages", key, ""},
			{"POST", "/v1/messages?beta=true", key, "/v1/messages"},
			{"POST", "/v1/chat/completions", key, ""},
			{"POST", "/v1/responses", key, ""},
			{"POST", "/r/run-1/v1/messages", key, "/v1/messages"},
			{"POST", "/r/run-1/v1/responses", key, "/v1/responses"},
			// The review's three.
			{"POST", "/v1/organizations/me/v1/messages", refused, ""},
			{"POST", "/v1/files%2F..%2F..%2Fv1%2Fmessages", refused, ""},
			{"POST", "/v1/files/abc;/v1/messages", refused, ""},
			// Their cousins.
			{"POST", "/v1/files/../../v1/messages", refused, ""},
			{"POST", "/v1/mess%61ges", refused, ""},
			{"POST", "/v1/messages/", refused, ""},
			{"POST", "//v1/messages", refused, ""},
			{"POST", "/V1/Messages", refused, ""},
			{"POST", "/v1/messages;x=1", refused, ""},
			{"POST", "/v1/messages/.", refused, ""},
			{"POST", "/r/run-1/v1/files/%2e%2e/%2e%2e/v1/chat/completions", refused, ""},
			{"POST", "/proxy/v1/responses", refused, ""},
			// Other paths of the provider: forwarded as sent, the agent's own credentials.
			{"POST", "/v1/messages/count_tokens", own, ""},
			{"POST", "/v1/files%2Fabc", own, ""},
			{"POST", "/v1/messages2", own, ""},
			{"GET", "/v1/messages", own, ""},
			{"GET", "/v1/organizations/me/v1/messages", own, ""},
			{"GET", "/r/run-1/v1/models", own, "/v1/models"},
		}
		for _, c := range cases {
			req, err := http.NewRequestWithContext(t.Context(), c.method, gw.URL+c.path, bytes.NewReader(taskRequest(false)))
			require.NoError(t, err)
			req.Header = agentHeader()
			req.Header.Set("X-Api-Key", placeholder)
			req.Header.Set("Authorization", "Bearer "+placeholder)
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			got := up.take()
			name := c.method + " " + base + " " + c.path
			if c.want == refused {
				assert.Equal(t, http.StatusBadRequest, resp.StatusCode, "%s: %s", name, body)
				assert.Empty(t, got, "%s reaches no upstream", name)
				continue
			}
			require.Equal(t, http.StatusOK, resp.StatusCode, "%s: %s", name, body)
			require.Len(t, got, 1, name)
			want := c.upPath
			if want == "" {
				want = c.path
			}
			want, _, _ = strings.Cut(want, "?")
			assert.Equal(t, base+want, got[0].path, "%s: the upstream gets the path matched", name)
			if c.want == key {
				assert.Equal(t, injectedKey, got[0].key, "%s gets the held key", name)
				assert.Empty(t, got[0].auth, "%s: and none of the agent's credentials", name)
			} else {
				assert.Equal(t, placeholder, got[0].key, "%s gets the agent's own header", name)
				assert.Equal(t, "Bearer "+placeholder, got[0].auth, name)
			}
		}
		gw.Close()
		require.NoError(t, g.Close(t.Context()))
	}
}

// TestEveryModeRoutesAlike: the tape mode and a fork before its point route as the live
// gateway does (TestInjectedKeyOnlyOnExactModelPaths): a model call's path as sent, after a
// /r/RUN prefix and with a query, is served from the tape; a POST whose path reads as one
// only once decoded or normalized is refused (400, tapebox_ambiguous_path), and nothing of
// it reaches the run's tape.
func TestEveryModeRoutesAlike(t *testing.T) {
	rec, _ := minirec.Record(t, tape.ProviderAnthropic, false)
	first := rec.Main().Steps[0].Request.Raw
	ambiguous := []string{
		"/v1/organizations/me/v1/messages", "/v1/files%2F..%2F..%2Fv1%2Fmessages", "/v1/files/abc;/v1/messages",
		"/v1/files/../../v1/messages", "/v1/mess%61ges", "/v1/messages/", "//v1/messages", "/V1/Messages",
		"/v1/messages;x=1", "/v1/messages/.", "/proxy/v1/messages", "/r/run-1/v1/files/%2e%2e/%2e%2e/v1/messages",
	}
	post := func(t *testing.T, url string) (int, string) {
		t.Helper()
		resp, err := http.Post(url, "application/json", bytes.NewReader(first))
		require.NoError(t, err)
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp.StatusCode, string(body)
	}
	t.Run("tape", func(t *testing.T) {
		sim, srv, _ := serveSimulator(t, rec, gateway.SimulatorOptions{Logf: t.Logf})
		for _, p := range ambiguous {
			status, body := post(t, srv.URL+p)
			assert.Equal(t, http.StatusBadRequest, status, "%s: %s", p, body)
			assert.Contains(t, body, "is not a model call's path as sent", p)
		}
		for _, run := range sim.Runs() {
			for _, th := range sim.RunCopy(run).Threads {
				assert.Empty(t, th.Steps, "run %s: a refused call is in no tape", run)
			}
		}
		for _, p := range []string{"/v1/messages", "/v1/messages?beta=true", "/r/run-1/v1/messages"} {
			status, body := post(t, srv.URL+p)
			assert.Equal(t, http.StatusOK, status, "%s: %s", p, body)
		}
	})
	t.Run("fork", func(t *testing.T) {
		up := &rawUpstream{}
		upSrv := httptest.NewServer(up)
		defer upSrv.Close()
		f, err := gateway.NewFork(gateway.ForkConfig{Recording: rec, At: 1, Upstream: upSrv.URL, Output: filepath.Join(t.TempDir(), "fork.json"), Logf: t.Logf})
		require.NoError(t, err)
		srv := httptest.NewServer(f)
		defer srv.Close()
		for _, p := range ambiguous {
			status, body := post(t, srv.URL+p)
			assert.Equal(t, http.StatusBadRequest, status, "%s: %s", p, body)
			assert.Contains(t, body, "is not a model call's path as sent", p)
		}
		status, body := post(t, srv.URL+"/v1/messages?beta=true")
		assert.Equal(t, http.StatusOK, status, body)
		assert.Empty(t, up.take(), "step 0 is served from the tape")
		_, _, err = f.Finish("")
		require.NoError(t, err)
	})
}
