package controller_test

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/tapebox/tapebox/controller"
	"github.com/tapebox/tapebox/sandbox"
	"github.com/tapebox/tapebox/tape"
)

// noopTape is a claude-code tape of n steps, each with one TodoWrite call (a Noop tool: the
// executor replays the recorded result), the shape of the controller-overhead target.
func noopTape(n int) *tape.Tape {
	tp := tape.New(tape.ProviderAnthropic, time.Unix(0, 0))
	tp.Meta.Harness = "claude-code"
	th := &tape.Thread{ID: "main"}
	for i := range n {
		id := fmt.Sprintf("toolu_%04d", i)
		s := &tape.Step{
			Response:  tape.Response{Status: 200, StopReason: "tool_use"},
			ToolCalls: []tape.ToolCall{{ID: id, Name: "TodoWrite", Input: json.RawMessage(`{"todos":[]}`)}},
			ToolResults: []tape.ToolResult{{ToolCallID: id, Content: []tape.Block{{Type: tape.BlockText,
				Text: "Todos have been modified successfully."}}}},
			Timing: tape.Timing{RequestAt: float64(i * 10), FirstByteAt: float64(i*10 + 2), LastByteAt: float64(i*10 + 5)},
		}
		th.Steps = append(th.Steps, s)
	}
	tp.Threads = []*tape.Thread{th}
	return tp
}

// BenchmarkReplayNoopSteps replays a 1000-step tape of Noop calls at --speed 0 on the local
// sandbox and reports the time per step: the controller's own work plus one executor round
// trip over pipes. "with-output" also writes the replay tape after every step.
func BenchmarkReplayNoopSteps(b *testing.B) {
	rec := noopTape(1000)
	for _, withOutput := range []bool{false, true} {
		name := "no-output"
		if withOutput {
			name = "with-output"
		}
		b.Run(name, func(b *testing.B) {
			sb, err := sandbox.Open(b.Context(), "local:"+b.TempDir(), sandbox.Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer sb.Close(b.Context())
			var steps int
			var wall time.Duration
			for b.Loop() {
				opts := controller.Options{Cwd: sb.Cwd(), Speed: 0}
				if withOutput {
					opts.Output = filepath.Join(b.TempDir(), "replay.json")
				}
				res, err := controller.Replay(b.Context(), rec, sb, opts)
				if err != nil {
					b.Fatal(err)
				}
				steps += res.Steps
				wall += res.Wall
			}
			b.ReportMetric(float64(wall.Microseconds())/float64(steps)/1000, "ms/step")
		})
	}
}
