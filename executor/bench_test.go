package executor_test

import (
	"fmt"
	"io"
	"slices"
	"testing"
	"time"

	"github.com/tapebox/tapebox/executor"
	"github.com/tapebox/tapebox/executor/protocol"
	"github.com/tapebox/tapebox/tape"
)

// benchSession runs Serve over pipes for a benchmark.
func benchSession(b *testing.B, harnessName string) (*protocol.Encoder, *protocol.Decoder) {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan struct{})
	go func() {
		executor.Serve(b.Context(), inR, outW, io.Discard)
		outW.Close()
		close(done)
	}()
	b.Cleanup(func() {
		inW.Close()
		go io.Copy(io.Discard, outR)
		<-done
	})
	enc, dec := protocol.NewEncoder(inW), protocol.NewReplyDecoder(outR)
	if err := enc.Encode(protocol.Hello{Op: protocol.OpHello, Harness: harnessName, Cwd: b.TempDir()}); err != nil {
		b.Fatal(err)
	}
	if env, err := dec.Decode(); err != nil || env.HelloReply == nil {
		b.Fatalf("hello: %v", err)
	}
	return enc, dec
}

// roundTrips sends one call at a time and reports the p50 and p99 round trip.
func roundTrips(b *testing.B, c protocol.Call) {
	enc, dec := benchSession(b, "claude-code")
	var lat []time.Duration
	for b.Loop() {
		start := time.Now()
		if err := enc.Encode(c); err != nil {
			b.Fatal(err)
		}
		env, err := dec.Decode()
		if err != nil || env.Result == nil {
			b.Fatalf("result: %v", err)
		}
		lat = append(lat, time.Since(start))
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds())/1e6, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Nanoseconds())/1e6, "p99-ms")
}

// BenchmarkServeNoop is the round trip of a Noop call through Serve over pipes
// (target: p50 <= 0.05 ms).
func BenchmarkServeNoop(b *testing.B) {
	rec := &tape.ToolResult{ToolCallID: "x", Content: []tape.Block{{Type: tape.BlockText, Text: "Todos have been modified successfully."}}}
	roundTrips(b, protocol.Call{Op: protocol.OpCall, ID: "1", Call: tape.ToolCall{ID: "t", Name: "TodoWrite", Input: []byte(`{"todos":[]}`)}, Recorded: rec})
}

// BenchmarkServeShellTrue is the round trip of a trivial Shell call (Bash "true").
func BenchmarkServeShellTrue(b *testing.B) {
	roundTrips(b, protocol.Call{Op: protocol.OpCall, ID: "1", Call: tape.ToolCall{ID: "t", Name: "Bash", Input: []byte(`{"command":"true"}`)}})
}

// BenchmarkServe100InFlight sends 100 Noop calls at once and waits for all 100 results.
func BenchmarkServe100InFlight(b *testing.B) {
	enc, dec := benchSession(b, "claude-code")
	rec := &tape.ToolResult{ToolCallID: "x", Content: []tape.Block{{Type: tape.BlockText, Text: "ok"}}}
	calls := make([]protocol.Call, 100)
	for i := range calls {
		calls[i] = protocol.Call{Op: protocol.OpCall, ID: fmt.Sprint(i), Call: tape.ToolCall{ID: "t", Name: "TodoWrite", Input: []byte(`{}`)}, Recorded: rec}
	}
	for b.Loop() {
		go func() {
			for _, c := range calls {
				if err := enc.Encode(c); err != nil {
					return
				}
			}
		}()
		for range calls {
			if env, err := dec.Decode(); err != nil || env.Result == nil {
				b.Fatalf("result: %v", err)
			}
		}
	}
}
