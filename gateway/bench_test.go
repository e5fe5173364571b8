package gateway_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tapebox/tapebox/gateway"
	"github.com/tapebox/tapebox/tape"
	"github.com/tapebox/tapebox/tape/provider"
	"github.com/tapebox/tapebox/testkit/fakeprovider"
)

// The benchmarks run each measurement side by side: "direct" calls the upstream itself,
// "gateway" calls it through a recording gateway; the difference is what the gateway adds.
// "passthrough" calls the same upstream endpoint through the same gateway under a path the
// gateway does not record (a trailing slash), to tell the cost of the extra hop from the
// cost of recording. Besides ns/op they report the median of the per-call (or per-event)
// durations, since a p50 is what the targets name:
//
//	go test -run '^$' -bench . -count 6 ./gateway/ | tee new.txt && benchstat new.txt

// benchCallID is the tool call every scripted answer makes and every request answers, so
// that each call through the gateway continues the same thread, as an agent's calls do.
const benchCallID = "toolu_bench_0"

// benchScript answers every call after wait (0: at once).
func benchScript(wait time.Duration) fakeprovider.Script {
	turn := fakeprovider.Turn{Text: "Running it.", Calls: []tape.ToolCall{{ID: benchCallID, Name: "Bash", Input: json.RawMessage(`{"command":"true"}`), Kind: "function"}}}
	if wait > 0 {
		turn.Fault = &fakeprovider.Fault{Times: -1, FirstByte: wait}
	}
	return fakeprovider.Script{Threads: []fakeprovider.Thread{{Name: "main", Turns: []fakeprovider.Turn{turn, turn}}}}
}

// upstreamWaits are the upstream's times to answer the benchmarks try: at once (the fake
// provider's own work, about 0.3 ms here, less than a recording's CPU work, which then shows
// as latency on two cores), and 5 ms (a real provider takes longer still before its first
// byte; the gateway's work on the request happens meanwhile).
var upstreamWaits = []time.Duration{0, 5 * time.Millisecond}

func waitName(d time.Duration) string {
	if d == 0 {
		return "upstream=instant"
	}
	return "upstream=" + d.String()
}

// benchRequest is a call that answers benchCallID, with a user prompt of about promptSize
// bytes.
func benchRequest(stream bool, promptSize int) []byte {
	call := tape.ToolCall{ID: benchCallID, Name: "Bash", Input: json.RawMessage(`{"command":"true"}`)}
	return anthropicRequest(stream,
		userText("Benchmark the gateway. "+strings.Repeat("lorem ipsum ", promptSize/12)),
		systemEntry("# Environment\nPrimary working directory: /work"),
		assistantCalls([]tape.ToolCall{call}),
		toolResults([]tape.ToolCall{call}, func(tape.ToolCall) string { return "(Bash completed with no output)" }))
}

// benchTarget is where a benchmark sends its calls.
type benchTarget struct {
	url    string
	client *http.Client
	g      *gateway.Gateway // nil for direct
	close  func()
	path   string // "" for /v1/messages
}

// benchTargets returns the two sides: the upstream itself, and a gateway recording into a
// fresh tape in front of it.
func benchTargets(b *testing.B, upstream http.Handler) (direct, viaGateway benchTarget) {
	b.Helper()
	up := httptest.NewServer(upstream)
	b.Cleanup(up.Close)
	direct = benchTarget{url: up.URL, client: benchClient(b)}
	viaGateway = newBenchGateway(b, up.URL)
	return direct, viaGateway
}

func newBenchGateway(b *testing.B, upstream string, adjust ...func(*gateway.Config)) benchTarget {
	b.Helper()
	cfg := gateway.Config{Output: filepath.Join(tapeDir(b), "run.json"), Upstream: upstream}
	for _, fn := range adjust {
		fn(&cfg)
	}
	g, err := gateway.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	gw := httptest.NewServer(g)
	bt := benchTarget{url: gw.URL, client: benchClient(b), g: g, close: func() {
		gw.Close()
		g.Close(context.Background())
	}}
	b.Cleanup(bt.close)
	return bt
}

func benchClient(b *testing.B) *http.Client {
	tr := &http.Transport{MaxIdleConnsPerHost: 8, DisableCompression: true}
	b.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}

// call posts body and reads the whole answer.
func (bt benchTarget) call(b *testing.B, body []byte) {
	resp := bt.post(b, body)
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		b.Fatal(err)
	}
	resp.Body.Close()
}

// timeCalls times bt.call of body each iteration and reports the calls' latencies ("call").
func (bt benchTarget) timeCalls(b *testing.B, body []byte) {
	var d durations
	for b.Loop() {
		start := time.Now()
		bt.call(b, body)
		d = append(d, time.Since(start))
	}
	d.report(b, "call")
}

// post sends body and returns the response, failing b on a transport error or a bad status.
func (bt benchTarget) post(b *testing.B, body []byte) *http.Response {
	path := bt.path
	if path == "" {
		path = "/v1/messages"
	}
	req, err := http.NewRequest(http.MethodPost, bt.url+path+"?beta=true", bytes.NewReader(body))
	if err != nil {
		b.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Anthropic-Version", "2023-06-01")
	req.Header.Set("User-Agent", "claude-cli/2.1.332 (external, sdk-cli)")
	resp, err := bt.client.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(resp.Body)
		b.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	return resp
}

// durations collects per-call durations and reports their median.
type durations []time.Duration

func (d durations) report(b *testing.B, name string) {
	if len(d) == 0 {
		return
	}
	s := slices.Clone(d)
	slices.Sort(s)
	b.ReportMetric(float64(s[len(s)/2].Nanoseconds())/1e3, name+"-p50-us")
}

func sides(b *testing.B, direct, viaGateway benchTarget, run func(b *testing.B, bt benchTarget)) {
	b.Run("direct", func(b *testing.B) { run(b, direct) })
	passthrough := viaGateway
	passthrough.path = "/v1/messages/"
	b.Run("passthrough", func(b *testing.B) { run(b, passthrough) })
	b.Run("gateway", func(b *testing.B) {
		steps := viaGateway.g.Steps()
		run(b, viaGateway)
		if viaGateway.g.Steps() == steps {
			b.Fatal("the gateway recorded nothing")
		}
	})
}

// sidesPerWait runs run on each side (sides) against the fake provider for every upstream
// wait.
func sidesPerWait(b *testing.B, run func(b *testing.B, bt benchTarget)) {
	for _, wait := range upstreamWaits {
		b.Run(waitName(wait), func(b *testing.B) {
			direct, viaGateway := benchTargets(b, fakeprovider.New(benchScript(wait)))
			sides(b, direct, viaGateway, run)
		})
	}
}

// BenchmarkNonStreamCall: one non-streamed call with a 4 KiB prompt, answered by the fake
// provider; the gateway records it (and publishes the tape) before answering.
func BenchmarkNonStreamCall(b *testing.B) {
	body := benchRequest(false, 4<<10)
	sidesPerWait(b, func(b *testing.B, bt benchTarget) { bt.timeCalls(b, body) })
}

// BenchmarkStreamFirstByte: the time from sending a streamed call until its first event
// arrives (ttfb), and the whole call (ns/op).
func BenchmarkStreamFirstByte(b *testing.B) {
	body := benchRequest(true, 4<<10)
	sidesPerWait(b, func(b *testing.B, bt benchTarget) {
		var ttfb durations
		buf := make([]byte, 32<<10)
		for b.Loop() {
			start := time.Now()
			resp := bt.post(b, body)
			if n, err := resp.Body.Read(buf); n == 0 {
				b.Fatal(err)
			}
			ttfb = append(ttfb, time.Since(start))
			if _, err := io.Copy(io.Discard, resp.Body); err != nil {
				b.Fatal(err)
			}
			resp.Body.Close()
		}
		ttfb.report(b, "ttfb")
	})
}

// lockstepUpstream streams events one at a time: each carries the time it was written, and
// the next is written only when the client has read the one before (ack), so every event
// crosses an idle pipeline.
type lockstepUpstream struct {
	events int
	ack    chan struct{}
}

func (u *lockstepUpstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	io.Copy(io.Discard, r.Body)
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	fl := w.(http.Flusher)
	fl.Flush()
	for i := range u.events {
		if i > 0 {
			select {
			case <-u.ack:
			case <-r.Context().Done():
				return
			}
		}
		name, data := "content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"x"}}`
		switch i {
		case 0:
			name, data = "message_start", `{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[],"usage":{"input_tokens":1,"output_tokens":0}}}`
		case 1:
			name, data = "content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`
		case u.events - 1:
			name, data = "message_stop", `{"type":"message_stop"}`
		}
		fmt.Fprintf(w, "event: %s\n: sent %d\ndata: %s\n\n", name, time.Now().UnixNano(), data)
		fl.Flush()
	}
}

// BenchmarkChunkDelay: the time between the upstream writing a stream event and the client
// reading it (per event), over streams of 16 events; "last" is the final event alone, which
// the gateway holds until the step is recorded.
func BenchmarkChunkDelay(b *testing.B) {
	up := &lockstepUpstream{events: 16, ack: make(chan struct{})}
	direct, viaGateway := benchTargets(b, up)
	body := benchRequest(true, 1<<10)
	sides(b, direct, viaGateway, func(b *testing.B, bt benchTarget) {
		var all, last durations
		for b.Loop() {
			resp := bt.post(b, body)
			var sp provider.EventSplitter
			buf := make([]byte, 32<<10)
			seen := 0
			for seen < up.events {
				n, err := resp.Body.Read(buf)
				now := time.Now()
				for _, ev := range sp.Write(buf[:n]) {
					_, rest, _ := strings.Cut(ev, ": sent ")
					rest, _, _ = strings.Cut(rest, "\n")
					sent, perr := strconv.ParseInt(rest, 10, 64)
					if perr != nil {
						b.Fatalf("event without a time: %q", ev)
					}
					d := now.Sub(time.Unix(0, sent))
					all = append(all, d)
					seen++
					if seen == up.events {
						last = append(last, d)
					} else {
						select {
						case up.ack <- struct{}{}:
						case <-time.After(10 * time.Second):
							b.Fatalf("event %d: the upstream does not wait for an acknowledgement", seen)
						}
					}
				}
				if err != nil {
					break
				}
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if seen != up.events {
				b.Fatalf("got %d events, want %d", seen, up.events)
			}
		}
		all.report(b, "event")
		last.report(b, "last")
	})
}

// BenchmarkRecordedCallAtStep: one non-streamed call with a 64 KiB prompt (the size of a
// real agent's requests) through the gateway when the tape holds 1 step and when it holds
// 500; the cost should not grow with the tape. step=1 starts a fresh tape every 8 calls
// (off the clock); step=500 records 499 calls before the clock starts; direct is the same
// call without the gateway.
func BenchmarkRecordedCallAtStep(b *testing.B) {
	up := httptest.NewServer(fakeprovider.New(benchScript(0)))
	b.Cleanup(up.Close)
	body := benchRequest(false, 64<<10)
	b.Run("direct", func(b *testing.B) {
		benchTarget{url: up.URL, client: benchClient(b)}.timeCalls(b, body)
	})
	b.Run("step=1", func(b *testing.B) {
		var d durations
		bt := newBenchGateway(b, up.URL)
		for b.Loop() {
			if bt.g.Steps() >= 8 {
				b.StopTimer()
				bt.close()
				bt = newBenchGateway(b, up.URL)
				b.StartTimer()
			}
			start := time.Now()
			bt.call(b, body)
			d = append(d, time.Since(start))
		}
		d.report(b, "call")
	})
	b.Run("step=500", func(b *testing.B) {
		bt := newBenchGateway(b, up.URL)
		for bt.g.Steps() < 499 {
			bt.call(b, body)
		}
		bt.timeCalls(b, body)
	})
}

// BenchmarkGuardOverhead: the cost of the guard rails per recorded call, side by side: the
// gateway without digests, with them (the default), with the breaker on as well (every
// limit set, none reached: the repeat check normalizes each call's tool input and the cost
// is looked up), and signing the root with every persisted step. Non-streamed calls with a
// 4 KiB and a 64 KiB prompt (the request is hashed while it is upstream).
func BenchmarkGuardOverhead(b *testing.B) {
	unlimited := tape.Limits{MaxCostUSD: 1e9, MaxSteps: 1 << 30, MaxThreadSteps: 1 << 30, MaxTokens: 1 << 60, MaxRepeat: 1 << 30}
	cost := func(string, tape.Usage) (float64, bool) { return 0.001, true }
	_, key, err := ed25519.GenerateKey(nil)
	if err != nil {
		b.Fatal(err)
	}
	variants := []struct {
		name   string
		adjust func(*gateway.Config)
	}{
		{"no-digests", func(c *gateway.Config) { c.NoDigests = true }},
		{"digests", func(*gateway.Config) {}},
		{"digests+breaker", func(c *gateway.Config) { c.Limits, c.Cost = unlimited, cost }},
		{"breaker", func(c *gateway.Config) { c.NoDigests, c.Limits, c.Cost = true, unlimited, cost }},
		{"digests+breaker+sign", func(c *gateway.Config) { c.Limits, c.Cost, c.Signer = unlimited, cost, key }},
	}
	for _, size := range []int{4 << 10, 64 << 10} {
		body := benchRequest(false, size)
		b.Run(fmt.Sprintf("prompt=%dKiB", size>>10), func(b *testing.B) {
			up := httptest.NewServer(fakeprovider.New(benchScript(0)))
			b.Cleanup(up.Close)
			for _, v := range variants {
				b.Run(v.name, func(b *testing.B) {
					bt := newBenchGateway(b, up.URL, v.adjust)
					bt.timeCalls(b, body)
					if bt.g.Tripped() != nil {
						b.Fatal("the breaker tripped")
					}
				})
			}
		})
	}
}
