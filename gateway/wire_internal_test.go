package gateway

import (
	"encoding/json"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/tape"
	"github.com/tapebox/tapebox/tape/provider"
)

// TestWiresKnownToProvider: every wire format the endpoint serves is one package
// tape/provider parses, emits and routes (a provider added to wires without it would be
// served nowhere), and each gets the endpoint's errors in its own shape.
func TestWiresKnownToProvider(t *testing.T) {
	require.NotEmpty(t, wires)
	for _, w := range wires {
		t.Run(string(w.p), func(t *testing.T) {
			if path := provider.Path(w.p); w.modelPath == nil {
				require.NotEmpty(t, path)
				got, ok := provider.Detect(path)
				require.True(t, ok)
				require.Equal(t, w.p, got)
				require.True(t, w.isModelPath(path))
				require.False(t, w.isModelPath(path+"/"))
			}
			require.NotEmpty(t, DefaultUpstreams[w.p])
			require.NotNil(t, w.terminal)
			require.NotNil(t, w.deltas)

			// A stream the provider's emitter writes ends with the event terminal names, and
			// with no other.
			a := provider.Answer{ID: "x", Model: "m", Items: []provider.Item{{Text: "hi", ID: "msg_1"}}}
			events, err := provider.Stream(w.p, a, provider.StreamOptions{})
			require.NoError(t, err)
			for i, e := range events {
				require.Equal(t, i == len(events)-1, isTerminal(w.p, e.SSE()), "event %d of %d: %s", i, len(events), e.SSE())
			}

			rw := httptest.NewRecorder()
			body := writeError(rw, w.p, apiError{status: 418, typ: "invalid_request_error", code: "tapebox_x", msg: "planted message"})
			require.Equal(t, 418, rw.Code)
			require.Equal(t, "1", rw.Header().Get("X-Tapebox-Error"))
			require.JSONEq(t, string(body), rw.Body.String())
			var v struct {
				Error struct{ Message string } `json:"error"`
			}
			require.NoError(t, json.Unmarshal(body, &v))
			require.Equal(t, "planted message", v.Error.Message)
			resp := tape.Response{Status: 418, Raw: body}
			_, err = provider.NormalizeResponse(w.p, &resp)
			require.NoError(t, err, "the provider's parser reads the endpoint's error body")
		})
	}
}
