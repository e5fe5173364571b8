package gateway_test

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/gateway"
	"github.com/tapebox/tapebox/schema"
	"github.com/tapebox/tapebox/tape"
)

// bigUpstream answers with the body the request asks for in X-Answer ("json SIZE", "sse
// SIZE", anything else a short message), generated as it is written in 32 KiB pieces and
// flushed (so without a length unless X-Answer-Length says so), and remembers the SHA-256
// of the last answer it wrote and of the last request body it read.
type bigUpstream struct {
	mu         sync.Mutex
	sent, read string
}

const bigFiller = "All work and no play makes a long answer. "

func (u *bigUpstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := sha256.New()
	if _, err := io.Copy(h, r.Body); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	read := hex.EncodeToString(h.Sum(nil))
	kind, sizeText, _ := strings.Cut(r.Header.Get("X-Answer"), " ")
	size, _ := strconv.Atoi(sizeText)
	body := bigAnswer(kind, size)
	if r.Header.Get("X-Answer-Length") != "" {
		n, _ := io.Copy(io.Discard, bigAnswer(kind, size))
		w.Header().Set("Content-Length", strconv.FormatInt(n, 10))
	}
	w.Header().Set("Content-Type", "application/json")
	if strings.HasPrefix(kind, "sse") {
		w.Header().Set("Content-Type", "text/event-stream")
	}
	h = sha256.New()
	buf := make([]byte, 32<<10)
	rc := http.NewResponseController(w)
	for {
		n, err := body.Read(buf)
		if n > 0 {
			h.Write(buf[:n])
			if _, werr := w.Write(buf[:n]); werr != nil {
				return
			}
			rc.Flush()
		}
		if err != nil {
			break
		}
	}
	u.mu.Lock()
	u.sent, u.read = hex.EncodeToString(h.Sum(nil)), read
	u.mu.Unlock()
}

func (u *bigUpstream) hashes() (sent, read string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.sent, u.read
}

// bigAnswer generates an Anthropic answer of about size bytes: a JSON message whose text is
// the filler, or a stream of text deltas of it.
func bigAnswer(kind string, size int) io.Reader {
	switch kind {
	case "json":
		head := `{"id":"msg_big","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"text","text":"`
		tail := `"}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":12,"output_tokens":34}}`
		return io.MultiReader(strings.NewReader(head), repeated(bigFiller, size/len(bigFiller)), strings.NewReader(tail))
	case "sse":
		head := "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_big\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"claude-sonnet-4-5\",\"content\":[],\"stop_reason\":null,\"usage\":{\"input_tokens\":12,\"output_tokens\":1}}}\n\n" +
			"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n"
		delta := "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"" + bigFiller + "\"}}\n\n"
		tail := "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n" +
			"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":34}}\n\n" +
			"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"
		return io.MultiReader(strings.NewReader(head), repeated(delta, size/len(delta)), strings.NewReader(tail))
	case "sse-one-event": // one text delta of about size bytes
		head := "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_big\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"claude-sonnet-4-5\",\"content\":[],\"stop_reason\":null,\"usage\":{\"input_tokens\":12,\"output_tokens\":1}}}\n\n" +
			"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\""
		tail := "\"}}\n\nevent: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"
		return io.MultiReader(strings.NewReader(head), repeated(bigFiller, size/len(bigFiller)), strings.NewReader(tail))
	}
	return strings.NewReader(`{"id":"msg_small","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"text","text":"ok"}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":12,"output_tokens":1}}`)
}

// repeated yields s n times.
func repeated(s string, n int) io.Reader {
	return io.LimitReader(&cycle{s: s}, int64(len(s)*n))
}

type cycle struct {
	s   string
	off int
}

func (c *cycle) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		k := copy(p[n:], c.s[c.off:])
		n += k
		c.off = (c.off + k) % len(c.s)
	}
	return n, nil
}

// hashing hashes and counts what is read through it.
type hashing struct {
	r     io.Reader
	h     hash.Hash
	count int64
}

func (h *hashing) Read(p []byte) (int, error) {
	n, err := h.r.Read(p)
	h.h.Write(p[:n])
	h.count += int64(n)
	return n, err
}

// bigRequestBody is an Anthropic request whose one user message holds about size bytes.
func bigRequestBody(size int, stream bool) io.Reader {
	head := fmt.Sprintf(`{"model":"claude-sonnet-4-5","max_tokens":64,"stream":%v,"messages":[{"role":"user","content":"`, stream)
	return io.MultiReader(strings.NewReader(head), repeated("Please read all of this carefully. ", size/35), strings.NewReader(`"}]}`))
}

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
		{name: "JSON answer spilled, under the limit", answer: fmt.Sprintf("json %d", under), want: want{text: under / len(bigFiller) * len(bigFiller)}},
		{name: "stream spilled, under the limit", answer: fmt.Sprintf("sse %d", under), want: want{text: -1, chunks: true}},
		{name: "request spilled, under the limit", answer: "small", request: under, want: want{text: 2}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			up := &bigUpstream{}
			upSrv := httptest.NewServer(up)
			defer upSrv.Close()
			dir := t.TempDir()
			out := filepath.Join(dir, "run.json")
			g, err := gateway.New(gateway.Config{Output: out, Upstream: upSrv.URL, Logf: t.Logf, MaxRecordBody: limit})
			require.NoError(t, err)
			gw := httptest.NewServer(g)
			defer gw.Close()

			stream := strings.HasPrefix(tc.answer, "sse")
			reqBody := &hashing{r: bigRequestBody(max(tc.request, 1<<10), stream), h: sha256.New()}
			req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, gw.URL+"/v1/messages", bufio.NewReaderSize(reqBody, 64<<10))
			require.NoError(t, err)
			req.ContentLength = -1
			if tc.sized {
				n, _ := io.Copy(io.Discard, bigRequestBody(max(tc.request, 1<<10), stream))
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
			sent, read := up.hashes()
			require.Equal(t, sent, hex.EncodeToString(h.Sum(nil)), "the client got every byte of the answer (%d)", n)
			require.Equal(t, hex.EncodeToString(reqBody.h.Sum(nil)), read, "the upstream got every byte of the request")

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
				assert.Equal(t, tape.Truncation{Bytes: reqBody.count, Limit: limit}, cut)
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
				assert.True(t, strings.HasPrefix(s.Response.Content[0].Text, bigFiller+bigFiller))
			}
		})
	}
}
