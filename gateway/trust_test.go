package gateway_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/gateway"
)

// The tests of this file check what DESIGN.md's trust model promises of the gateway: it
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
