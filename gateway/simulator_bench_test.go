package gateway_test

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tapebox/tapebox/gateway"
	"github.com/tapebox/tapebox/internal/testutil/minirec"
	"github.com/tapebox/tapebox/tape"
)

// replayClient plays a harness that sends exactly the recorded requests, in recorded order.
func replayClient(c *http.Client, base string, rec *tape.Tape) error {
	for ref := range rec.Steps() {
		req := ref.Step.Request
		resp, err := c.Post(base+req.Path, "application/json", bytes.NewReader(req.Raw))
		if err != nil {
			return err
		}
		_, err = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if err != nil {
			return err
		}
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("thread %s step %d: status %d", ref.Thread.ID, ref.Index, resp.StatusCode)
		}
	}
	return nil
}

// BenchmarkSimulatorConcurrentRuns serves 200 runs of one tape at once (7 model calls each,
// streamed) at --speed 0.
func BenchmarkSimulatorConcurrentRuns(b *testing.B) {
	rec, _ := minirec.Record(b, tape.ProviderAnthropic, true)
	const runs = 200
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: runs}}
	for b.Loop() {
		sim, err := gateway.NewSimulator(rec, gateway.SimulatorOptions{Speed: 0})
		if err != nil {
			b.Fatal(err)
		}
		srv := httptest.NewServer(sim)
		var wg sync.WaitGroup
		errs := make(chan error, runs)
		for i := range runs {
			wg.Go(func() {
				if err := replayClient(client, fmt.Sprintf("%s/r/run-%d", srv.URL, i), rec); err != nil {
					errs <- err
				}
			})
		}
		wg.Wait()
		srv.Close()
		close(errs)
		for err := range errs {
			b.Fatal(err)
		}
		for _, r := range sim.Runs() {
			if e := sim.RunTape(r).Meta.Ended; e == nil || e.Reason != tape.EndComplete {
				b.Fatalf("run %s did not complete", r)
			}
		}
	}
	b.ReportMetric(runs, "runs/op")
}

// streamTape is a one-step tape whose response is a stream of n events, chunk i at i*gap ms.
func streamTape(n int, gap float64) *tape.Tape {
	tp := tape.New(tape.ProviderAnthropic, time.Unix(0, 0))
	tp.Meta.Harness = "claude-code"
	var chunks []tape.Chunk
	chunks = append(chunks, tape.Chunk{AtMS: 0, Data: "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"model\":\"m\",\"usage\":{\"input_tokens\":1,\"output_tokens\":1}}}\n\n"})
	chunks = append(chunks, tape.Chunk{AtMS: 0, Data: "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n"})
	for i := range n {
		chunks = append(chunks, tape.Chunk{AtMS: float64(i+1) * gap, Data: fmt.Sprintf("event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"w%d \"}}\n\n", i)})
	}
	end := float64(n+1) * gap
	chunks = append(chunks,
		tape.Chunk{AtMS: end, Data: "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n"},
		tape.Chunk{AtMS: end, Data: "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":1}}\n\n"},
		tape.Chunk{AtMS: end, Data: "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"})
	raw := []byte(`{"model":"m","max_tokens":10,"stream":true,"messages":[{"role":"user","content":"go"}]}`)
	tp.Threads = []*tape.Thread{{ID: "main", Steps: []*tape.Step{{
		Request:  tape.Request{Path: "/v1/messages", Raw: raw, Stream: true},
		Response: tape.Response{Status: 200, Headers: tape.Headers{"content-type": "text/event-stream"}, Chunks: chunks},
		Timing:   tape.Timing{RequestAt: 0, FirstByteAt: 0, LastByteAt: end},
	}}}}
	return tp
}

// BenchmarkSimulatorChunks measures chunks served per second at --speed 0 (goal >= 50k/s).
func BenchmarkSimulatorChunks(b *testing.B) {
	const n = 20000
	rec := streamTape(n, 0.01)
	sim, err := gateway.NewSimulator(rec, gateway.SimulatorOptions{Speed: 0})
	if err != nil {
		b.Fatal(err)
	}
	srv := httptest.NewServer(sim)
	defer srv.Close()
	i := 0
	start := time.Now()
	for b.Loop() {
		if err := replayClient(srv.Client(), fmt.Sprintf("%s/r/c%d", srv.URL, i), rec); err != nil {
			b.Fatal(err)
		}
		i++
	}
	b.ReportMetric(float64((n+5)*i)/time.Since(start).Seconds(), "chunks/s")
}

// BenchmarkSimulatorPacing serves a stream at --speed 1 (a chunk every 20 ms) and reports how
// far the arrival of each chunk is from its recorded time: p50 and max, in ms (goal: within 2).
func BenchmarkSimulatorPacing(b *testing.B) {
	rec := streamTape(25, 20)
	sim, err := gateway.NewSimulator(rec, gateway.SimulatorOptions{Speed: 1})
	if err != nil {
		b.Fatal(err)
	}
	srv := httptest.NewServer(sim)
	defer srv.Close()
	var errsMS []float64
	i := 0
	for b.Loop() {
		step := rec.Main().Steps[0]
		sent := time.Now()
		resp, err := srv.Client().Post(fmt.Sprintf("%s/r/p%d/v1/messages", srv.URL, i), "application/json", bytes.NewReader(step.Request.Raw))
		if err != nil {
			b.Fatal(err)
		}
		r := bufio.NewReader(resp.Body)
		k := 0
		var ev strings.Builder
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				break
			}
			ev.WriteString(line)
			if line == "\n" {
				at := float64(time.Since(sent).Microseconds()) / 1000
				errsMS = append(errsMS, math.Abs(at-step.Response.Chunks[k].AtMS))
				k++
				ev.Reset()
			}
		}
		resp.Body.Close()
		if k != len(step.Response.Chunks) {
			b.Fatalf("got %d chunks, want %d", k, len(step.Response.Chunks))
		}
		i++
	}
	slices.Sort(errsMS)
	b.ReportMetric(errsMS[len(errsMS)/2], "p50-err-ms")
	b.ReportMetric(errsMS[len(errsMS)*95/100], "p95-err-ms")
	b.ReportMetric(errsMS[len(errsMS)-1], "max-err-ms")
}
