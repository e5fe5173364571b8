package testkit

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/tapebox/tapebox/replay"
)

// Bench replays the tape at tapePath in executor mode once per iteration of b.Loop, each time
// in a fresh sandbox (see Replay for sandboxSpec), and reports per-op metrics:
//
//	replay-ms/op      the replay's wall time (controller.Result.Wall)
//	tool-ms/op        tool execution as the executor measured it, summed over calls
//	overhead-ms/step  (wall - tool - model) / steps: what the controller, the executor
//	                  session and the sandbox add per step; here tool is the tool time on
//	                  the critical path (controller.ToolPath), so that calls run in parallel count once
//	steps/s           steps played per second of replay
//
// Opening and closing the sandbox is not timed, so ns/op is the replay alone. Model latency
// is removed unless the Speed option says otherwise. A replay that fails, or stops before the
// end, fails the benchmark with the reason and reports no time.
func Bench(b *testing.B, tapePath, sandboxSpec string, opts ...Option) {
	b.Helper()
	c := newConfig(opts)
	rec, err := LoadTape(tapePath)
	if err != nil {
		b.Fatalf("%v", err)
	}
	var wall, tool, path, model time.Duration
	steps, ops := 0, 0
	for b.Loop() {
		b.StopTimer()
		tmp, err := os.MkdirTemp("", "testkit-bench-")
		if err != nil {
			b.Fatalf("testkit.Bench: %v", err)
		}
		rp, err := replay.Open(b.Context(), rec, sandboxSpecOf(sandboxSpec, tmp), c.replayOptions(tapePath))
		if err != nil {
			os.RemoveAll(tmp)
			skipOrFatal(b, fmt.Errorf("open sandbox: %w", err))
		}
		b.StartTimer()
		res, err := rp.Play(b.Context())
		b.StopTimer()
		cctx, cancel := context.WithTimeout(context.WithoutCancel(b.Context()), time.Minute)
		cerr := rp.Close(cctx)
		cancel()
		os.RemoveAll(tmp)
		if err != nil {
			b.Fatalf("testkit.Bench: replay %s in %s: %v", tapePath, res.Spec, err)
		}
		if cerr != nil {
			b.Fatalf("testkit.Bench: %v", cerr)
		}
		if res.Steps == 0 {
			b.Fatalf("testkit.Bench: replay %s in %s played no step", tapePath, res.Spec)
		}
		wall += res.Wall
		tool += res.ToolTime
		path += res.ToolPath
		model += res.ModelTime
		steps += res.Steps
		ops++
		b.StartTimer()
	}
	if ops == 0 || steps == 0 {
		return
	}
	ms := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e6 }
	b.ReportMetric(ms(wall)/float64(ops), "replay-ms/op")
	b.ReportMetric(ms(tool)/float64(ops), "tool-ms/op")
	b.ReportMetric(ms(wall-path-model)/float64(steps), "overhead-ms/step")
	b.ReportMetric(float64(steps)/wall.Seconds(), "steps/s")
}
