package benchmarks

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/tapebox/tapebox/internal/testutil/dockertest"
	"github.com/tapebox/tapebox/internal/testutil/sandboxtest"
	"github.com/tapebox/tapebox/replay"
	"github.com/tapebox/tapebox/tape"
)

// firstCallTape is a claude-code tape whose first step makes one Bash call ("echo ready",
// run in the sandbox) and whose second step ends the run: a replay of it is what a user
// waits for before the first tool call's result, and little more.
func firstCallTape() *tape.Tape {
	tp := tape.New(tape.ProviderAnthropic, time.Unix(0, 0))
	tp.Meta.Harness = "claude-code"
	tp.Meta.Cwd = "/work"
	call := tape.ToolCall{ID: "toolu_first", Name: "Bash", Input: json.RawMessage(`{"command":"echo ready"}`)}
	tp.Threads = []*tape.Thread{{ID: "main", Steps: []*tape.Step{
		{Response: tape.Response{Status: 200, StopReason: "tool_use"}, ToolCalls: []tape.ToolCall{call},
			ToolResults: []tape.ToolResult{{ToolCallID: call.ID, Content: []tape.Block{{Type: tape.BlockText, Text: "ready"}}}},
			Timing:      tape.Timing{RequestAt: 0, FirstByteAt: 1, LastByteAt: 2}},
		{Response: tape.Response{Status: 200, StopReason: "end_turn"}, Timing: tape.Timing{RequestAt: 3, FirstByteAt: 4, LastByteAt: 5}},
	}}}
	return tp
}

// BenchmarkFirstResult measures what a user of "tapebox replay" waits for: the time from the
// replay's start (replay.Run) to the first tool call's result, at --speed 0, per backend,
// with and without the warm pool (corpus --pool: the sandbox is opened ahead, off the clock,
// and the replay starts on it):
//
//	first-result-p50-ms, -p99-ms   cold: opening the sandbox (container or pod created and
//	                               started, executor installed), the executor's hello and
//	                               the first call; warm: the hello and the first call
//
// ns/op is the whole replay of the two-step tape, the sandbox's removal not timed.
// Published sandboxes reach a first command in a median of 0.11 s (Daytona) to 0.44 s (E2B).
func BenchmarkFirstResult(b *testing.B) {
	rec := firstCallTape()
	backends := []struct {
		name, spec string
		need       func(b *testing.B)
	}{
		{"local", replay.LocalTemp, func(*testing.B) {}},
		{"docker-image", "docker-image:" + dockertest.SandboxImage, func(b *testing.B) { requireRuntime(b, "runc") }},
		{"k8s", "k8s:default?image=" + dockertest.SandboxImage + "&allow-network-unenforced=1", func(b *testing.B) { k8sClient(b) }},
	}
	for _, be := range backends {
		b.Run("backend="+be.name+"/pool=off", func(b *testing.B) {
			be.need(b)
			var lat sandboxtest.Latencies
			for b.Loop() {
				r, err := replay.Open(b.Context(), rec, be.spec, replay.Options{})
				if err != nil {
					b.Fatalf("open %s: %v", be.spec, err)
				}
				res, err := r.Play(b.Context())
				b.StopTimer()
				closeReplay(b, r)
				if err != nil || res.FirstResult == 0 {
					b.Fatalf("replay in %s: %v (first result %v)", be.spec, err, res.FirstResult)
				}
				lat = append(lat, res.Setup+res.FirstResult)
				b.StartTimer()
			}
			reportFirst(b, lat)
		})
		b.Run("backend="+be.name+"/pool=on", func(b *testing.B) {
			be.need(b)
			var lat sandboxtest.Latencies
			for b.Loop() {
				b.StopTimer()
				r, err := replay.Open(b.Context(), rec, be.spec, replay.Options{})
				if err != nil {
					b.Fatalf("open %s: %v", be.spec, err)
				}
				b.StartTimer()
				res, err := r.Play(b.Context())
				b.StopTimer()
				closeReplay(b, r)
				if err != nil || res.FirstResult == 0 {
					b.Fatalf("replay in %s: %v (first result %v)", be.spec, err, res.FirstResult)
				}
				lat = append(lat, res.FirstResult)
				b.StartTimer()
			}
			reportFirst(b, lat)
		})
	}
}

// reportFirst reports the latencies' median and 99th percentile as first-result-p50-ms and
// first-result-p99-ms.
func reportFirst(b *testing.B, lat sandboxtest.Latencies) {
	if len(lat) == 0 {
		return
	}
	s := slices.Clone(lat)
	slices.Sort(s)
	pct := func(p float64) float64 { return ms(s[int(p*float64(len(s)-1))]) }
	b.ReportMetric(pct(0.5), "first-result-p50-ms")
	b.ReportMetric(pct(0.99), "first-result-p99-ms")
}

func closeReplay(b *testing.B, r *replay.Replay) {
	b.Helper()
	if err := r.Close(b.Context()); err != nil {
		b.Errorf("%v", err)
	}
}
