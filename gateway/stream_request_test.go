package gateway_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/gateway"
	"github.com/tapebox/tapebox/tape"
)

// progressUpstream reads a request body as it comes, counting its bytes for the client to
// watch, and answers once it has it all.
type progressUpstream struct {
	read atomic.Int64
	sum  atomic.Value // hex SHA-256 of the last body read whole
}

func (u *progressUpstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := sha256.New()
	buf := make([]byte, 32<<10)
	for {
		n, err := r.Body.Read(buf)
		h.Write(buf[:n])
		u.read.Add(int64(n))
		if err != nil {
			if err != io.EOF {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			break
		}
	}
	u.sum.Store(hex.EncodeToString(h.Sum(nil)))
	w.Header().Set("Content-Type", "application/json")
	io.WriteString(w, `{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"ok"}],"stop_reason":"end_turn","usage":{"input_tokens":1,"output_tokens":1}}`)
}

// TestRequestBodyStreamsThrough: a model call's body reaches the upstream as it arrives,
// chunked or not, over the recording limit or within it: the client sends a first part and
// sends the rest only once the upstream has read that part. A gateway that reads a body
// of unknown length up to the limit before forwarding any of it never lets the client go
// on. The upstream gets every byte, and the tape records the body whole, or a truncation
// marker with its length.
func TestRequestBodyStreamsThrough(t *testing.T) {
	const limit = 1 << 20
	first := 256 << 10
	cases := []struct {
		name  string
		size  int
		sized bool
		cut   bool
	}{
		{"chunked, over the limit", 3 << 20, false, true},
		{"chunked, within the limit", 700 << 10, false, false},
		{"chunked, spilled, within the limit", 6 << 20, false, false},
		{"with a length, within the limit", 700 << 10, true, false},
		{"with a length, over the limit", 3 << 20, true, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			lim := int64(limit)
			if !c.cut && c.size > limit {
				lim = 8 << 20
			}
			up := &progressUpstream{}
			upSrv := httptest.NewServer(up)
			defer upSrv.Close()
			out := filepath.Join(tapeDir(t), "run.json")
			g, err := gateway.New(gateway.Config{Output: out, Upstream: upSrv.URL, MaxRecordBody: lim, Logf: t.Logf})
			require.NoError(t, err)
			gw := httptest.NewServer(g)
			defer gw.Close()

			head := `{"model":"claude-sonnet-4-5","max_tokens":64,"messages":[{"role":"user","content":"`
			tail := `"}]}`
			body := []byte(head + strings.Repeat("a", c.size-len(head)-len(tail)) + tail)
			pr, pw := io.Pipe()
			req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, gw.URL+"/v1/messages", pr)
			require.NoError(t, err)
			req.Header = agentHeader()
			req.ContentLength = -1
			if c.sized {
				req.ContentLength = int64(len(body))
			}
			type result struct {
				status int
				err    error
			}
			done := make(chan result, 1)
			go func() {
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					done <- result{err: err}
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				done <- result{status: resp.StatusCode}
			}()
			_, err = pw.Write(body[:first])
			require.NoError(t, err)
			deadline := time.Now().Add(20 * time.Second)
			for up.read.Load() < int64(first) && time.Now().Before(deadline) {
				time.Sleep(5 * time.Millisecond)
			}
			reached := up.read.Load()
			if reached < int64(first) {
				pw.CloseWithError(io.ErrUnexpectedEOF)
				<-done
				t.Fatalf("the upstream got %d of the first %d bytes in 20 s: the gateway holds the body back", reached, first)
			}
			_, err = io.Copy(pw, bytes.NewReader(body[first:]))
			require.NoError(t, err)
			pw.Close()
			res := <-done
			require.NoError(t, res.err)
			require.Equal(t, http.StatusOK, res.status)
			sum := sha256.Sum256(body)
			assert.Equal(t, hex.EncodeToString(sum[:]), up.sum.Load(), "the upstream got every byte")

			require.NoError(t, g.Finish(tape.EndComplete, ""))
			tp, err := tape.LoadFile(out)
			require.NoError(t, err)
			require.Len(t, tp.Threads, 1)
			require.Len(t, tp.Threads[0].Steps, 1)
			s := tp.Threads[0].Steps[0]
			cut, ok := tape.TruncationOf(s.Request.Raw)
			require.Equal(t, c.cut, ok, "%.200s", s.Request.Raw)
			if ok {
				assert.Equal(t, tape.Truncation{Bytes: int64(len(body)), Limit: lim}, cut)
				return
			}
			assert.JSONEq(t, string(body), string(s.Request.Raw))
			require.Len(t, s.Request.Messages, 1)
			assert.Len(t, s.Request.Messages[0].Content[0].Text, c.size-len(head)-len(tail))
		})
	}
}
