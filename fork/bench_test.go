package fork_test

import (
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/tapebox/tapebox/controller"
	"github.com/tapebox/tapebox/fork"
	"github.com/tapebox/tapebox/gateway"
	"github.com/tapebox/tapebox/tape"
	"github.com/tapebox/tapebox/testkit/fakeprovider"
	"github.com/tapebox/tapebox/testkit/miniagent"
)

// BenchmarkForkReachStepN measures how long a fork at --speed 0 takes to reach step N (its
// first live request) against the recording's own time to step N, for a run recorded
// against a model that takes modelLatency per answer (the mini agent runs its Bash calls for
// real in both). Metrics: reach-ms (the fork), recorded-ms (the recording), reach-% (the
// ratio), saved-requests (upstream requests the fork did not make).
func BenchmarkForkReachStepN(b *testing.B) {
	const at = 4
	for _, modelLatency := range []time.Duration{0, 300 * time.Millisecond} {
		b.Run("model-"+modelLatency.String(), func(b *testing.B) {
			slow := &fakeprovider.Fault{Times: -1, FirstByte: modelLatency}
			var turns []fakeprovider.Turn
			for i := range 6 {
				turns = append(turns, fakeprovider.Turn{Calls: []tape.ToolCall{bash("echo " + string(rune('a'+i)) + " >> a.txt; ls -l")}, Fault: slow})
			}
			turns = append(turns, fakeprovider.Turn{Text: "done", Fault: slow})
			p := fakeprovider.New(fakeprovider.Script{Threads: []fakeprovider.Thread{{Name: "main", Marker: marker, Turns: turns}}})
			if err := p.Start(); err != nil {
				b.Fatal(err)
			}
			defer p.Close()
			live := fakeprovider.New(fakeprovider.Script{Threads: []fakeprovider.Thread{{Name: "main", Marker: marker, Turns: turns[: len(turns)-1 : len(turns)-1]}}})
			live.Start()
			defer live.Close()

			dir := b.TempDir()
			work := filepath.Join(dir, "rec")
			os.Mkdir(work, 0o755)
			recPath := filepath.Join(dir, "run.json")
			g, err := gateway.New(gateway.Config{Output: recPath, Upstream: p.URL(), Workspace: work})
			if err != nil {
				b.Fatal(err)
			}
			hs := httptest.NewServer(g)
			if _, err := miniagent.Run(b.Context(), miniagent.Config{BaseURL: hs.URL, Provider: tape.ProviderAnthropic, Prompt: marker + " go", Dir: work}); err != nil {
				b.Fatal(err)
			}
			hs.Close()
			g.Finish(tape.EndComplete, "")
			rec, err := tape.LoadFile(recPath)
			if err != nil {
				b.Fatal(err)
			}
			snap, _ := controller.SnapshotFor(recPath, rec)
			recorded := rec.Main().Steps[at].Timing.RequestAt - rec.Main().Steps[0].Timing.RequestAt
			var reach time.Duration
			n := 0
			for b.Loop() {
				w := filepath.Join(b.TempDir(), "w")
				if err := controller.RestoreSnapshot(b.Context(), rec, snap, w); err != nil {
					b.Fatal(err)
				}
				srv, err := fork.New(fork.Config{Recording: rec, At: at, Upstream: live.URL(), Output: filepath.Join(b.TempDir(), "fork.json"), Workspace: w})
				if err != nil {
					b.Fatal(err)
				}
				fs := httptest.NewServer(srv)
				start := time.Now()
				miniagent.Run(b.Context(), miniagent.Config{BaseURL: fs.URL, Provider: tape.ProviderAnthropic, Prompt: marker + " go", Dir: w})
				ok, at := srv.Live()
				fs.Close()
				srv.Finish("")
				if !ok {
					b.Fatal("the fork point was not reached")
				}
				reach += at.Sub(start)
				n++
			}
			reachMS := float64(reach.Microseconds()) / 1000 / float64(n)
			b.ReportMetric(reachMS, "reach-ms")
			b.ReportMetric(recorded, "recorded-ms")
			b.ReportMetric(100*reachMS/recorded, "reach-%")
			b.ReportMetric(at, "saved-requests")
		})
	}
}
