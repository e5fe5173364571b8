package gateway_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/gateway"
	"github.com/tapebox/tapebox/tape"
	"github.com/tapebox/tapebox/tape/provider"
	"github.com/tapebox/tapebox/testkit/fakeprovider"
)

const answerText = "Hello there: this answer comes in several pieces."

// oneTurn scripts a main thread whose first answer carries fault (nil for none).
func oneTurn(fault *fakeprovider.Fault) fakeprovider.Script {
	return fakeprovider.Script{Threads: []fakeprovider.Thread{{Name: "main", Turns: []fakeprovider.Turn{
		{Text: answerText, Fault: fault},
		{Text: "Second answer."},
	}}}}
}

func taskRequest(stream bool) []byte {
	return anthropicRequest(stream, userText("do the task"), systemEntry("# Environment\nPrimary working directory: /work"))
}

func gzipped(t *testing.T, b []byte) []byte {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	_, err := zw.Write(b)
	require.NoError(t, err)
	require.NoError(t, zw.Close())
	return buf.Bytes()
}

func zstded(t *testing.T, b []byte) []byte {
	zw, err := zstd.NewWriter(nil)
	require.NoError(t, err)
	defer zw.Close()
	return zw.EncodeAll(b, nil)
}

func withEncoding(enc string) http.Header {
	h := agentHeader()
	h.Set("Content-Encoding", enc)
	return h
}

// TestFaults drives one call through the gateway for each kind of bad input and upstream
// fault, and checks that the client gets what the upstream sent, that the step is on disk
// by the time the client has the whole answer, and how the run ends.
func TestFaults(t *testing.T) {
	size := 50 << 20
	if raceDetector {
		size = 4 << 20
	}
	bigPrompt := strings.Repeat("0123456789abcdef", size/16)
	big := anthropicRequest(false, userText(bigPrompt))
	require.Greater(t, len(big), size)
	plain := taskRequest(false)

	type faultCase struct {
		name         string
		fault        *fakeprovider.Fault
		stream       bool
		upstreamDown bool
		upstream     http.Handler // replaces the fake provider behind the capture
		cfg          func(*gateway.Config)
		call         call
		wantStatus   int
		broken       bool // the client's read of the answer fails, as the upstream's did
		wantEnd      tape.EndReason
		check        func(t *testing.T, rg *rig, rep reply, s *tape.Step)
	}
	// encoded is the plain request sent compressed with enc: forwarded as sent, recorded
	// decoded.
	encoded := func(enc string, body []byte) faultCase {
		return faultCase{
			name: enc + " request body", call: call{header: withEncoding(enc), body: body}, wantStatus: 200, wantEnd: tape.EndComplete,
			check: func(t *testing.T, rg *rig, rep reply, s *tape.Step) {
				got := rg.up.requests()[0]
				assert.Equal(t, body, got.body, "forwarded as sent")
				assert.Equal(t, enc, got.header.Get("Content-Encoding"))
				assert.JSONEq(t, string(plain), string(s.Request.Raw), "recorded decoded")
				assert.Equal(t, "do the task", tape.BlocksText(s.Request.Messages[0].Content[1:]))
			},
		}
	}
	cases := []faultCase{
		{
			name: "upstream down", upstreamDown: true, wantStatus: http.StatusBadGateway, wantEnd: tape.EndUpstreamError,
			check: func(t *testing.T, rg *rig, rep reply, s *tape.Step) {
				assert.Contains(t, string(rep.body), `"type":"error"`)
				assert.Contains(t, string(s.Response.Raw), "connection refused")
			},
		},
		{
			name:       "400 with a JSON body",
			fault:      &fakeprovider.Fault{Status: 400, Body: `{"type":"error","error":{"type":"invalid_request_error","message":"max_tokens: too large"}}`},
			wantStatus: 400, wantEnd: tape.EndCut,
			check: func(t *testing.T, rg *rig, rep reply, s *tape.Step) {
				assert.JSONEq(t, `{"type":"error","error":{"type":"invalid_request_error","message":"max_tokens: too large"}}`, string(rep.body))
				assert.JSONEq(t, string(rep.body), string(s.Response.Raw))
			},
		},
		{
			name:  "404 with a text body",
			fault: &fakeprovider.Fault{Status: 404, Body: "no such model\n"}, wantStatus: 404, wantEnd: tape.EndCut,
			check: func(t *testing.T, rg *rig, rep reply, s *tape.Step) {
				assert.Equal(t, "no such model\n", string(rep.body))
				assert.Equal(t, `"no such model\n"`, string(s.Response.Raw), "a body that is not JSON is kept as a JSON string")
			},
		},
		{
			name:  "500 with a text body",
			fault: &fakeprovider.Fault{Status: 500, Body: "upstream exploded"}, wantStatus: 500, wantEnd: tape.EndUpstreamError,
			check: func(t *testing.T, rg *rig, rep reply, s *tape.Step) {
				assert.Equal(t, "upstream exploded", string(rep.body))
				assert.Equal(t, `"upstream exploded"`, string(s.Response.Raw))
			},
		},
		{
			name:  "529 overloaded to a streaming call",
			fault: &fakeprovider.Fault{Status: 529}, stream: true, wantStatus: 529, wantEnd: tape.EndUpstreamError,
			check: func(t *testing.T, rg *rig, rep reply, s *tape.Step) {
				assert.Contains(t, string(rep.body), "overloaded_error")
				assert.JSONEq(t, string(rep.body), string(s.Response.Raw))
				assert.Empty(t, s.Response.Chunks)
			},
		},
		{
			name: "429 with Retry-After",
			fault: &fakeprovider.Fault{Status: 429, RetryAfter: "17", Header: http.Header{
				"Anthropic-Ratelimit-Requests-Reset": {"2026-01-01T00:00:17Z"},
				"Set-Cookie":                         {setCookie},
			}},
			wantStatus: 429, wantEnd: tape.EndUpstreamError,
			check: func(t *testing.T, rg *rig, rep reply, s *tape.Step) {
				assert.Equal(t, []string{"17"}, rep.header.Values("Retry-After"), "passed through verbatim")
				assert.Equal(t, "2026-01-01T00:00:17Z", rep.header.Get("Anthropic-Ratelimit-Requests-Reset"))
				assert.Equal(t, setCookie, rep.header.Get("Set-Cookie"), "the client gets its cookie; the tape does not")
				assert.Equal(t, "17", s.Response.Headers["retry-after"])
				assert.Equal(t, gateway.Redacted, s.Response.Headers["set-cookie"])
				assert.Contains(t, string(rep.body), "rate_limit_error")
			},
		},
		{
			name:  "stream reset midway",
			fault: &fakeprovider.Fault{Cut: 4}, stream: true, wantStatus: 200, broken: true, wantEnd: tape.EndUpstreamError,
			check: func(t *testing.T, rg *rig, rep reply, s *tape.Step) {
				require.Len(t, rep.events(), 4)
				require.Len(t, s.Response.Chunks, 4, "the events that arrived are recorded")
				for i, ev := range rep.events() {
					assert.Equal(t, ev, s.Response.Chunks[i].Data)
				}
			},
		},
		{
			name:  "body cut midway",
			fault: &fakeprovider.Fault{Cut: 1}, wantStatus: 200, broken: true, wantEnd: tape.EndUpstreamError,
			check: func(t *testing.T, rg *rig, rep reply, s *tape.Step) {
				var half string
				require.NoError(t, json.Unmarshal(s.Response.Raw, &half))
				assert.Equal(t, string(rep.body), half, "the half that arrived is recorded as text")
			},
		},
		{
			name:  "stream drips",
			fault: &fakeprovider.Fault{BetweenChunks: 30 * time.Millisecond}, stream: true, wantStatus: 200, wantEnd: tape.EndComplete,
			check: func(t *testing.T, rg *rig, rep reply, s *tape.Step) {
				evs := rep.events()
				require.Greater(t, len(evs), 5)
				require.Len(t, s.Response.Chunks, len(evs))
				for i := 1; i < len(evs); i++ {
					assert.GreaterOrEqual(t, s.Response.Chunks[i].AtMS, s.Response.Chunks[i-1].AtMS)
				}
				span := s.Response.Chunks[len(evs)-1].AtMS - s.Response.Chunks[0].AtMS
				assert.GreaterOrEqual(t, span, float64(15*(len(evs)-1)), "each event is recorded when it arrives")
				assert.Equal(t, answerText, tape.BlocksText(s.Response.Content))
			},
		},
		{
			name: "body is not JSON", call: call{body: []byte("this is not JSON {")}, wantStatus: 400, wantEnd: tape.EndCut,
			check: func(t *testing.T, rg *rig, rep reply, s *tape.Step) {
				assert.Equal(t, `"this is not JSON {"`, string(s.Request.Raw))
				assert.Equal(t, []byte("this is not JSON {"), rg.up.requests()[0].body)
			},
		},
		encoded("gzip", gzipped(t, plain)),
		encoded("zstd", zstded(t, plain)),
		{
			name: "path prefix", call: call{path: "/r/run-7/v1/messages?beta=true"}, stream: true, wantStatus: 200, wantEnd: tape.EndComplete,
			check: func(t *testing.T, rg *rig, rep reply, s *tape.Step) {
				got := rg.up.requests()[0]
				assert.Equal(t, "/v1/messages", got.path)
				assert.Equal(t, "beta=true", got.query)
				assert.Equal(t, "/r/run-7/v1/messages?beta=true", s.Request.Path)
			},
		},
		{
			// The fake provider parses a request several times over; a canned answer keeps
			// this case to the gateway's own work.
			name: "50 MB request, no recording limit", call: call{body: big}, upstream: cannedAnswer(), wantStatus: 200, wantEnd: tape.EndComplete,
			cfg: func(c *gateway.Config) { c.MaxRecordBody = -1 },
			check: func(t *testing.T, rg *rig, rep reply, s *tape.Step) {
				require.True(t, bytes.Equal(big, rg.up.requests()[0].body), "forwarded intact")
				require.Len(t, s.Request.Messages, 1)
				assert.Equal(t, bigPrompt, s.Request.Messages[0].Content[1].Text, "recorded whole")
			},
		},
		{
			name: "50 MB request over the recording limit", call: call{body: big}, upstream: cannedAnswer(), wantStatus: 200, wantEnd: tape.EndComplete,
			cfg: func(c *gateway.Config) { c.MaxRecordBody = 1 << 20 },
			check: func(t *testing.T, rg *rig, rep reply, s *tape.Step) {
				require.True(t, bytes.Equal(big, rg.up.requests()[0].body), "forwarded intact")
				cut, ok := tape.TruncationOf(s.Request.Raw)
				require.True(t, ok, "recorded as a marker: %.200s", s.Request.Raw)
				assert.Equal(t, tape.Truncation{Bytes: int64(len(big)), Limit: 1 << 20}, cut)
				assert.Empty(t, s.Request.Messages)
				assert.Equal(t, "end_turn", s.Response.StopReason, "the answer is recorded as ever")
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg
			if tc.upstreamDown {
				cfg = func(c *gateway.Config) { c.Upstream = "http://" + closedAddr(t) }
			}
			rg := newRig(t, oneTurn(tc.fault), cfg)
			if tc.upstream != nil {
				rg.up.next = tc.upstream
			}
			c := tc.call
			if c.body == nil {
				c.body = taskRequest(tc.stream)
			}
			rep := rg.do(t, c)
			require.Equal(t, tc.wantStatus, rep.status, "%s", rep.body)
			if tc.broken {
				require.Error(t, rep.err, "the client must see the answer break, not a clean end")
			} else {
				require.NoError(t, rep.err)
			}

			// The step was on disk before the client had the whole answer.
			require.Equal(t, 1, rg.g.Steps())
			tp := rg.load(t)
			require.Nil(t, tp.Meta.Ended)
			require.Len(t, tp.Threads, 1)
			require.Len(t, tp.Threads[0].Steps, 1)
			s := tp.Threads[0].Steps[0]
			require.Equal(t, tc.wantStatus, s.Response.Status)
			require.Equal(t, "claude-code", tp.Meta.Harness)
			require.Equal(t, "2.1.332", tp.Meta.HarnessVersion)
			require.LessOrEqual(t, s.Timing.RequestAt, s.Timing.FirstByteAt)
			require.LessOrEqual(t, s.Timing.FirstByteAt, s.Timing.LastByteAt)

			reason, detail := rg.g.Outcome()
			require.Equal(t, tc.wantEnd, reason, detail)
			require.NoError(t, rg.g.Finish(reason, detail))
			tp = rg.load(t)
			require.NotNil(t, tp.Meta.Ended)
			require.Equal(t, tc.wantEnd, tp.Meta.Ended.Reason)
			tc.check(t, rg, rep, tp.Threads[0].Steps[0])
		})
	}
}

// cannedAnswer answers every call with the same short Anthropic message.
func cannedAnswer() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"ok"}],"stop_reason":"end_turn","usage":{"input_tokens":1,"output_tokens":1}}`)
	})
}

// closedAddr returns a loopback address nothing listens on.
func closedAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}

// TestEndCompleteAfterUpstreamFailure: finishing "complete" after a failure nothing
// answered since records upstream_error.
func TestEndCompleteAfterUpstreamFailure(t *testing.T) {
	rg := newRig(t, oneTurn(&fakeprovider.Fault{Status: 503}), nil)
	require.Equal(t, 503, rg.do(t, call{body: taskRequest(false)}).status)
	require.NoError(t, rg.g.Finish(tape.EndComplete, ""))
	tp := rg.load(t)
	require.Equal(t, tape.EndUpstreamError, tp.Meta.Ended.Reason)
	require.Contains(t, tp.Meta.Ended.Detail, "503")
}

// TestRetryContinuesThread: a call that failed and its retry are two steps of one thread,
// and a good answer clears the upstream failure.
func TestRetryContinuesThread(t *testing.T) {
	for _, status := range []int{429, 529} {
		t.Run(http.StatusText(status), func(t *testing.T) {
			rg := newRig(t, oneTurn(&fakeprovider.Fault{Status: status, RetryAfter: "0"}), nil)
			require.Equal(t, status, rg.do(t, call{body: taskRequest(true)}).status)
			reason, _ := rg.g.Outcome()
			require.Equal(t, tape.EndUpstreamError, reason)
			rep := rg.do(t, call{body: taskRequest(true)})
			require.Equal(t, 200, rep.status)
			reason, detail := rg.g.Outcome()
			require.Equal(t, tape.EndComplete, reason, detail)
			require.NoError(t, rg.g.Finish(reason, detail))
			tp := rg.load(t)
			require.Len(t, tp.Threads, 1, "the retry continues the thread")
			steps := tp.Threads[0].Steps
			require.Len(t, steps, 2)
			require.Equal(t, status, steps[0].Response.Status)
			require.Equal(t, 200, steps[1].Response.Status)
			require.NotNil(t, steps[0].Timing.NextRequestAt)
			require.Equal(t, answerText, tape.BlocksText(steps[1].Response.Content))
		})
	}
}

// TestUnknownPaths: what is not a model call is proxied and answered as the upstream
// answers it, and never becomes a step.
func TestUnknownPaths(t *testing.T) {
	rg := newRig(t, oneTurn(nil), nil)
	cases := []struct {
		method, path, wantPath string
		body                   []byte
		wantStatus             int
		wantBody               string
	}{
		{"GET", "/v1/models", "/v1/models", nil, 200, `"fake-model"`},
		{"GET", "/r/lbl/v1/models/fake-model", "/v1/models/fake-model", nil, 200, `"fake-model"`},
		{"POST", "/v1/messages/count_tokens?beta=true", "/v1/messages/count_tokens", taskRequest(false), 200, `"input_tokens"`},
		{"GET", "/v1/messages", "/v1/messages", nil, 404, "no such endpoint"},
		{"POST", "/v1/no/such/thing", "/v1/no/such/thing", []byte(`{}`), 404, "no such endpoint"},
		{"DELETE", "/v2/whatever", "/v2/whatever", nil, 404, "no such endpoint"},
	}
	for i, tc := range cases {
		rep := rg.do(t, call{method: tc.method, path: tc.path, body: tc.body})
		require.NoError(t, rep.err)
		assert.Equal(t, tc.wantStatus, rep.status, "%s %s", tc.method, tc.path)
		assert.Contains(t, string(rep.body), tc.wantBody, "%s %s", tc.method, tc.path)
		got := rg.up.requests()
		require.Len(t, got, i+1)
		assert.Equal(t, tc.method, got[i].method)
		assert.Equal(t, tc.wantPath, got[i].path)
		assert.Equal(t, string(tc.body), string(got[i].body))
	}
	require.Zero(t, rg.g.Steps())
	tp := rg.load(t)
	require.Empty(t, tp.Threads)
}

// TestPassthroughFullDuplex: an upstream may start its answer before it has read the whole
// request (here: one event, then it reads the body, then the rest). On a path the gateway
// does not record, the client's body streams through while the answer streams back; an
// HTTP/1 server that drained the body itself when the answer's header went out would steal
// it from the transport, which would then drop the upstream connection mid-answer.
func TestPassthroughFullDuplex(t *testing.T) {
	body := bytes.Repeat([]byte("0123456789"), 20<<10) // under the server's 256 KiB drain limit
	upstream := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		require.NoError(t, http.NewResponseController(w).EnableFullDuplex())
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(200)
		io.WriteString(w, "data: first\n\n")
		w.(http.Flusher).Flush()
		got, err := io.ReadAll(r.Body)
		if err != nil || !bytes.Equal(got, body) {
			t.Errorf("the upstream got %d bytes of %d (%v)", len(got), len(body), err)
			return
		}
		io.WriteString(w, "data: second\n\ndata: [DONE]\n\n")
	})
	up := httptest.NewServer(upstream) // not behind capture, which reads bodies first
	defer up.Close()
	rg := newRig(t, fakeprovider.Script{}, func(c *gateway.Config) { c.Upstream = up.URL })
	for i := range 20 {
		rep := rg.do(t, call{path: "/v1/some/stream", body: body})
		require.NoError(t, rep.err, "call %d", i)
		require.Equal(t, "data: first\n\ndata: second\n\ndata: [DONE]\n\n", string(rep.body), "call %d", i)
	}
	require.Zero(t, rg.g.Steps())
}

// TestStreamNotBuffered proves that every event reaches the client before the upstream
// sends the next: the upstream waits for the client to acknowledge each event, so a
// gateway that held anything back would stall (and fail on the deadline).
func TestStreamNotBuffered(t *testing.T) {
	events := []string{
		"event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"m\",\"content\":[],\"stop_reason\":null,\"usage\":{\"input_tokens\":3,\"output_tokens\":0}}}\n\n",
		"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"one \"}}\n\n",
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"two\"}}\n\n",
		"event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n",
		"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":2}}\n\n",
		"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
	}
	ack := make(chan int)
	stopped := make(chan struct{}) // the upstream no longer takes acknowledgements
	upstream := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer close(stopped)
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(200)
		for i, ev := range events {
			io.WriteString(w, ev)
			w.(http.Flusher).Flush()
			select {
			case got := <-ack:
				if got != i {
					t.Errorf("client acknowledged event %d, want %d", got, i)
					return
				}
			case <-time.After(time.Minute): // a stall is forever: the bound only ends it
				t.Errorf("event %d: the client did not get it while the upstream waited", i)
				return
			case <-r.Context().Done():
				return
			}
		}
	})
	rg := newRig(t, fakeprovider.Script{}, nil)
	rg.up.next = upstream

	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	resp, err := http.DefaultClient.Do(rg.request(t, ctx, call{body: taskRequest(true)}))
	require.NoError(t, err)
	defer resp.Body.Close()
	var sp provider.EventSplitter
	buf := make([]byte, 4096)
	got := 0
	for got < len(events) {
		n, err := resp.Body.Read(buf)
		for _, ev := range sp.Write(buf[:n]) {
			require.Equal(t, events[got], ev)
			if got == len(events)-1 {
				require.Equal(t, 1, rg.g.Steps(), "the step is recorded before its last event is forwarded")
			}
			select {
			case ack <- got:
			case <-stopped:
				t.Fatalf("event %d reached the client after the upstream stopped waiting for it", got)
			}
			got++
		}
		if err != nil {
			break
		}
	}
	require.Equal(t, len(events), got)
	rest, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Empty(t, rest)
	tp := rg.load(t)
	s := tp.Threads[0].Steps[0]
	require.Len(t, s.Response.Chunks, len(events))
	require.Equal(t, "one two", tape.BlocksText(s.Response.Content))
	require.Equal(t, "end_turn", s.Response.StopReason)
}

// TestClientDisconnects: a client that leaves mid-stream or before the answer stops the
// upstream call; the gateway records what arrived, does not call it an upstream failure,
// and keeps serving.
func TestClientDisconnects(t *testing.T) {
	t.Run("mid-stream", func(t *testing.T) {
		// The upstream waits an hour after the first event: the client reads that event while
		// the upstream still waits (the gateway does not buffer), then leaves.
		rg := newRig(t, oneTurn(&fakeprovider.Fault{BetweenChunks: time.Hour}), nil)
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
		defer cancel()
		resp, err := http.DefaultClient.Do(rg.request(t, ctx, call{body: taskRequest(true)}))
		require.NoError(t, err)
		var sp provider.EventSplitter
		buf := make([]byte, 4096)
		var evs []string
		for len(evs) == 0 {
			n, err := resp.Body.Read(buf)
			evs = append(evs, sp.Write(buf[:n])...)
			require.NoError(t, err)
		}
		require.Contains(t, evs[0], "message_start")
		cancel()
		resp.Body.Close()
		waitSteps(t, rg, 1)
		tp := rg.load(t)
		s := tp.Threads[0].Steps[0]
		require.Equal(t, 200, s.Response.Status)
		require.Len(t, s.Response.Chunks, 1)
		reason, detail := rg.g.Outcome()
		require.Equal(t, tape.EndCut, reason, detail)
		require.Contains(t, detail, "no complete answer")

		// The gateway still serves, and the retry continues the thread.
		rep := rg.do(t, call{body: taskRequest(false)})
		require.Equal(t, 200, rep.status)
		require.Len(t, rg.load(t).Threads, 1)
	})
	t.Run("before the answer", func(t *testing.T) {
		rg := newRig(t, oneTurn(&fakeprovider.Fault{FirstByte: time.Hour}), nil)
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() {
			resp, err := http.DefaultClient.Do(rg.request(t, ctx, call{body: taskRequest(true)}))
			if err == nil {
				resp.Body.Close()
			}
			done <- err
		}()
		require.Eventually(t, func() bool { return len(rg.up.requests()) == 1 }, time.Minute, time.Millisecond)
		cancel()
		require.Error(t, <-done)
		waitSteps(t, rg, 1)
		s := rg.load(t).Threads[0].Steps[0]
		require.Zero(t, s.Response.Status, "no answer: status 0")
		require.JSONEq(t, "null", string(s.Response.Raw))
		reason, detail := rg.g.Outcome()
		require.Equal(t, tape.EndCut, reason, "a client that leaves is no upstream failure: %s", detail)
	})
}

// waitSteps waits until the gateway has recorded n steps and the tape on disk holds them:
// commit counts a step before it publishes the tape, so a test that reads the tape as soon
// as Steps says n can find it a step behind. The tape must be valid at every moment.
func waitSteps(t *testing.T, rg *rig, n int) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		steps := rg.g.Steps()
		onDisk := 0
		for _, th := range rg.load(t).Threads {
			onDisk += len(th.Steps)
		}
		if steps == n && onDisk == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("want %d steps: the gateway has recorded %d, the tape on disk holds %d", n, steps, onDisk)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestCompressedAnswerRecordedReadable: the gateway asks for recorded answers uncompressed,
// and decodes one that comes compressed anyway.
func TestCompressedAnswerRecordedReadable(t *testing.T) {
	body := `{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"zipped"}],"stop_reason":"end_turn","usage":{"input_tokens":1,"output_tokens":1}}`
	for _, force := range []bool{false, true} {
		rg := newRig(t, fakeprovider.Script{}, nil)
		rg.up.next = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			if force || strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") {
				w.Header().Set("Content-Encoding", "gzip")
				w.Write(gzipped(t, []byte(body)))
				return
			}
			io.WriteString(w, body)
		})
		h := agentHeader()
		h.Set("Accept-Encoding", "gzip, deflate, br, zstd")
		req := rg.request(t, t.Context(), call{header: h, body: taskRequest(false)})
		tr := &http.Transport{DisableCompression: true}
		resp, err := tr.RoundTrip(req)
		require.NoError(t, err)
		got, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.NoError(t, err)
		if force {
			require.Equal(t, "gzip", resp.Header.Get("Content-Encoding"), "passed through as sent")
			require.Equal(t, gzipped(t, []byte(body)), got)
		} else {
			require.Empty(t, rg.up.requests()[0].header.Get("Accept-Encoding"))
			require.Equal(t, body, string(got))
		}
		s := rg.load(t).Threads[0].Steps[0]
		require.Equal(t, "zipped", tape.BlocksText(s.Response.Content))
		tr.CloseIdleConnections()
	}
}
