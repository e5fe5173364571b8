package bigbody

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestAnswerAndRequestAreValid(t *testing.T) {
	var msg struct {
		Content []struct{ Text string } `json:"content"`
	}
	data, err := io.ReadAll(Answer("json", 1<<20))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, &msg))
	require.Len(t, msg.Content, 1)
	assert.Len(t, msg.Content[0].Text, (1<<20)/len(Filler)*len(Filler))

	data, err = io.ReadAll(Answer("sse", 1<<20))
	require.NoError(t, err)
	events := strings.Split(strings.TrimSuffix(string(data), "\n\n"), "\n\n")
	assert.Greater(t, len(events), 1000)
	for _, e := range events {
		_, payload, ok := strings.Cut(e, "\ndata: ")
		require.True(t, ok, e)
		assert.True(t, json.Valid([]byte(payload)), payload)
	}

	data, err = io.ReadAll(Request(1<<20, true))
	require.NoError(t, err)
	assert.True(t, json.Valid(data))
	assert.InDelta(t, 1<<20, len(data), 200)
}

// TestUpstream: the client gets the answer the upstream hashed, and the upstream hashed the
// request the client sent; X-Answer-Length adds the length.
func TestUpstream(t *testing.T) {
	up := &Upstream{}
	srv := httptest.NewServer(up)
	defer srv.Close()
	for _, length := range []bool{false, true} {
		body := NewHashing(Request(64<<10, true))
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, srv.URL, body)
		require.NoError(t, err)
		req.Header.Set("X-Answer", "sse 300000")
		if length {
			req.Header.Set("X-Answer-Length", "1")
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		assert.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
		got := NewHashing(resp.Body)
		_, err = io.Copy(io.Discard, got)
		resp.Body.Close()
		require.NoError(t, err)
		want := int64(-1)
		if length {
			want = got.Count()
		}
		assert.Equal(t, want, resp.ContentLength)
		sent, read := up.Hashes()
		assert.Equal(t, sent, got.Sum())
		assert.Equal(t, body.Sum(), read)
		assert.Greater(t, body.Count(), int64(64<<10-100))
	}
}
