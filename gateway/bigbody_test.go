package gateway_test

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/gateway"
	"github.com/tapebox/tapebox/internal/testutil/bigbody"
	"github.com/tapebox/tapebox/schema"
	"github.com/tapebox/tapebox/tape"
)

// TestLargeBodies sends bodies over the recording limit, and bodies under it large enough
// to be spilled to disk on the way, through a real gateway to a real upstream with a real
// client that reads every byte. The client and the upstream get every byte (their SHA-256
// match), the tape is valid, and it holds what was within the limit whole and a truncation
// marker for the rest.
func TestLargeBodies(t *testing.T) {
	big, limit, under := 100<<20, int64(gateway.DefaultMaxRecordBody), 6<<20
	if raceDetector {
		big, limit = 12<<20, 8<<20
	}
	type want struct {
		requestCut, answerCut bool
		text                  int // the recorded answer's text length, when not cut
		chunks                bool
	}
	cases := []struct {
		name    string
		answer  string
		length  bool // the upstream sends a Content-Length
		request int  // the request body's size (0: small)
		sized   bool // the client sends a Content-Length
		want    want
	}{
		{name: "JSON answer over the limit", answer: fmt.Sprintf("json %d", big), want: want{answerCut: true}},
		{name: "JSON answer over the limit, with a length", answer: fmt.Sprintf("json %d", big), length: true, want: want{answerCut: true}},
		{name: "stream over the limit", answer: fmt.Sprintf("sse %d", big), want: want{answerCut: true}},
		// The event outgrows the limit and the spill threshold: the stream is no longer
		// split, and is recorded when it ends.
		{name: "stream of one event over the limit", answer: fmt.Sprintf("sse-one-event %d", big), want: want{answerCut: true}},
		{name: "request over the limit", answer: "small", request: big, want: want{requestCut: true, text: 2}},
		{name: "request over the limit, with a length", answer: "small", request: big, sized: true, want: want{requestCut: true, text: 2}},
		{name: "JSON answer spilled, under the limit", answer: fmt.Sprintf("json %d", under), want: want{text: under / len(bigbody.Filler) * len(bigbody.Filler)}},
		{name: "stream spilled, under the limit", answer: fmt.Sprintf("sse %d", under), want: want{text: -1, chunks: true}},
		{name: "request spilled, under the limit", answer: "small", request: under, want: want{text: 2}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			up := &bigbody.Upstream{}
			upSrv := httptest.NewServer(up)
			defer upSrv.Close()
			dir := t.TempDir()
			out := filepath.Join(dir, "run.json")
			g, err := gateway.New(gateway.Config{Output: out, Upstream: upSrv.URL, Logf: t.Logf, MaxRecordBody: limit})
			require.NoError(t, err)
			gw := httptest.NewServer(g)
			defer gw.Close()

			stream := strings.HasPrefix(tc.answer, "sse")
			reqBody := bigbody.NewHashing(bigbody.Request(max(tc.request, 1<<10), stream))
			req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, gw.URL+"/v1/messages", bufio.NewReaderSize(reqBody, 64<<10))
			require.NoError(t, err)
			req.ContentLength = -1
			if tc.sized {
				n, _ := io.Copy(io.Discard, bigbody.Request(max(tc.request, 1<<10), stream))
				req.ContentLength = n
			}
			req.Header = agentHeader()
			req.Header.Set("X-Answer", tc.answer)
			if tc.length {
				req.Header.Set("X-Answer-Length", "1")
			}
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			h := sha256.New()
			n, err := io.Copy(h, resp.Body)
			resp.Body.Close()
			require.NoError(t, err)
			require.Equal(t, http.StatusOK, resp.StatusCode)
			sent, read := up.Hashes()
			require.Equal(t, sent, hex.EncodeToString(h.Sum(nil)), "the client got every byte of the answer (%d)", n)
			require.Equal(t, reqBody.Sum(), read, "the upstream got every byte of the request")

			require.NoError(t, g.Finish(tape.EndComplete, ""))
			entries, err := os.ReadDir(dir)
			require.NoError(t, err)
			require.Len(t, entries, 1, "no spill file is left beside the tape")
			data, err := os.ReadFile(out)
			require.NoError(t, err)
			require.NoError(t, schema.Validate(data))
			tp, err := tape.Unmarshal(data)
			require.NoError(t, err)
			require.Equal(t, tape.EndComplete, tp.Meta.Ended.Reason, "a body over the limit is no upstream failure")
			require.Len(t, tp.Threads, 1)
			require.Len(t, tp.Threads[0].Steps, 1)
			s := tp.Threads[0].Steps[0]

			cut, ok := tape.TruncationOf(s.Request.Raw)
			require.Equal(t, tc.want.requestCut, ok, "request raw: %.200s", s.Request.Raw)
			if ok {
				assert.Equal(t, tape.Truncation{Bytes: reqBody.Count(), Limit: limit}, cut)
				assert.Empty(t, s.Request.Messages)
			} else {
				require.Len(t, s.Request.Messages, 1)
			}
			cut, ok = tape.TruncationOf(s.Response.Raw)
			require.Equal(t, tc.want.answerCut, ok, "response raw: %.200s", s.Response.Raw)
			if ok {
				assert.Equal(t, tape.Truncation{Bytes: n, Limit: limit}, cut)
				assert.Empty(t, s.Response.Chunks)
				assert.Empty(t, s.Response.Content)
				assert.Less(t, len(data), 64<<10, "the tape holds no body")
				return
			}
			assert.Equal(t, "end_turn", s.Response.StopReason)
			require.Len(t, s.Response.Content, 1)
			if tc.want.text >= 0 {
				assert.Len(t, s.Response.Content[0].Text, tc.want.text)
			}
			if tc.want.chunks {
				var all strings.Builder
				for _, c := range s.Response.Chunks {
					all.WriteString(c.Data)
				}
				sum := sha256.Sum256([]byte(all.String()))
				assert.Equal(t, sent, hex.EncodeToString(sum[:]), "the chunks are the stream as sent")
				assert.Greater(t, len(s.Response.Chunks), 1000)
				assert.True(t, strings.HasPrefix(s.Response.Content[0].Text, bigbody.Filler+bigbody.Filler))
			}
		})
	}
}
