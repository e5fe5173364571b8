package benchmarks

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tapebox/tapebox/compare"
	"github.com/tapebox/tapebox/controller"
	"github.com/tapebox/tapebox/sandbox"
	"github.com/tapebox/tapebox/tape"
	"github.com/tapebox/tapebox/testkit"
	"github.com/tapebox/tapebox/testkit/miniagent"
)

// noopTape is a claude-code tape of n steps, each with one TodoWrite call (a Noop tool: the
// executor replays the recorded result), the shape of the controller-overhead target.
func noopTape(n int) *tape.Tape {
	tp := tape.New(tape.ProviderAnthropic, time.Unix(0, 0))
	tp.Meta.Harness = "claude-code"
	th := &tape.Thread{ID: "main"}
	for i := range n {
		id := fmt.Sprintf("toolu_%04d", i)
		th.Steps = append(th.Steps, &tape.Step{
			Response:  tape.Response{Status: 200, StopReason: "tool_use"},
			ToolCalls: []tape.ToolCall{{ID: id, Name: "TodoWrite", Input: json.RawMessage(`{"todos":[]}`)}},
			ToolResults: []tape.ToolResult{{ToolCallID: id, Content: []tape.Block{{Type: tape.BlockText,
				Text: "Todos have been modified successfully."}}}},
			Timing: tape.Timing{RequestAt: float64(i * 10), FirstByteAt: float64(i*10 + 2), LastByteAt: float64(i*10 + 5)},
		})
	}
	tp.Threads = []*tape.Thread{th}
	return tp
}

// openLocal opens a local sandbox in a fresh directory, removed when b ends.
func openLocal(b *testing.B) *sandbox.Sandbox {
	b.Helper()
	sb, err := sandbox.Open(b.Context(), "local:"+b.TempDir(), sandbox.Options{})
	if err != nil {
		b.Fatalf("open a local sandbox: %v", err)
	}
	return sb
}

// BenchmarkControllerStep replays a 1000-step tape of Noop calls at --speed 0, again and
// again in one sandbox, and reports per step:
//
//	ms/step            the replay's wall time per step
//	overhead-ms/step   the same without the tool time the executor measured: what the
//	                   controller and the executor session add (target: <= 0.1 ms)
//
// Sandboxes: local (pipes to a host process) and a container per runtime (runc, runsc).
func BenchmarkControllerStep(b *testing.B) {
	rec := noopTape(1000)
	withOutput := false
	run := func(b *testing.B, sb *sandbox.Sandbox) {
		var wall, path, model time.Duration
		steps := 0
		for b.Loop() {
			opts := controller.Options{Cwd: sb.Cwd(), Speed: 0}
			if withOutput {
				opts.Output = filepath.Join(b.TempDir(), "replay.json")
			}
			res, err := controller.Replay(b.Context(), rec, sb, opts)
			if err != nil {
				b.Fatalf("replay the Noop tape in %s: %v", sb.Spec(), err)
			}
			if res.Steps != 1000 || res.ToolCalls != 1000 {
				b.Fatalf("replay the Noop tape in %s: %d steps and %d tool calls, want 1000 of each", sb.Spec(), res.Steps, res.ToolCalls)
			}
			wall, path, model, steps = wall+res.Wall, path+res.ToolPath, model+res.ModelTime, steps+res.Steps
		}
		b.ReportMetric(ms(wall)/float64(steps), "ms/step")
		b.ReportMetric(ms(wall-path-model)/float64(steps), "overhead-ms/step")
	}
	b.Run("sandbox=local", func(b *testing.B) {
		sb := openLocal(b)
		defer closeSandbox(b, sb)
		run(b, sb)
	})
	// The same with the replay tape written after every step.
	b.Run("sandbox=local/output=tape", func(b *testing.B) {
		sb := openLocal(b)
		defer closeSandbox(b, sb)
		withOutput = true
		defer func() { withOutput = false }()
		run(b, sb)
	})
	for _, rt := range runtimes {
		b.Run("sandbox=docker-"+rt, func(b *testing.B) {
			sb := openDocker(b, rt, "/app")
			defer closeSandbox(b, sb)
			run(b, sb)
		})
	}
}

// corpusTape is a tape of the replay corpus and the working directory it was recorded in.
type corpusTape struct {
	name, path, cwd string
	// local says the tape can replay in a fresh local directory: it never names its
	// recorded working directory (a tape that does writes to that absolute path on the host).
	local bool
}

// corpus returns testdata/replay/*.json and a fresh miniagent recording.
func corpus(b *testing.B) []corpusTape {
	b.Helper()
	paths, err := filepath.Glob(filepath.Join("..", "testdata", "replay", "*.json"))
	if err != nil || len(paths) == 0 {
		b.Fatalf("no tapes in ../testdata/replay: %v", err)
	}
	var tapes []corpusTape
	for _, p := range paths {
		name := strings.TrimSuffix(filepath.Base(p), ".json")
		data, err := os.ReadFile(p)
		if err != nil {
			b.Fatal(err)
		}
		tp, err := tape.Unmarshal(data)
		if err != nil {
			b.Fatalf("%s: %v", p, err)
		}
		cwd := tp.Meta.Cwd
		if cwd == "" {
			b.Fatalf("%s: no meta.cwd: the benchmark needs to know where it was recorded", p)
		}
		tp.Meta.Cwd = "" // what matters is whether the calls name it
		rest, err := tape.Marshal(tp)
		if err != nil {
			b.Fatal(err)
		}
		tapes = append(tapes, corpusTape{name: name, path: p, cwd: cwd, local: !bytes.Contains(rest, []byte(cwd))})
	}
	mini, err := miniRecording()
	if err != nil {
		b.Fatalf("record the miniagent tape: %v", err)
	}
	return append(tapes, corpusTape{name: "miniagent", path: mini, cwd: "/work", local: true})
}

// miniScript is a small agent run: two calls in parallel, a subagent, a failing command.
var miniScript = testkit.Script{Threads: []testkit.Thread{
	{Name: "main", Turns: []testkit.Turn{
		{Text: "Setting up.", Calls: []tape.ToolCall{
			bash("mkdir -p app && printf 'hello tapebox\\n' > app/greeting.txt && echo created"),
			bash("printf '#!/bin/sh\\necho run\\n' > run.sh && chmod 755 run.sh && ./run.sh"),
		}},
		{Calls: []tape.ToolCall{testkit.Call("Agent", map[string]string{
			"description": "count words", "prompt": "SUBTASK: count the words in app/greeting.txt into app/count.txt"})}},
		{Calls: []tape.ToolCall{bash("test -f app/missing.txt || { echo 'app/missing.txt is not there'; exit 1; }")}},
		{Calls: []tape.ToolCall{bash("cat app/greeting.txt app/count.txt; ls -l app | wc -l")}},
		{Text: "Done."},
	}},
	{Name: "sub", Marker: "SUBTASK:", Turns: []testkit.Turn{
		{Calls: []tape.ToolCall{bash("wc -w < app/greeting.txt | tr -d ' ' > app/count.txt && cat app/count.txt")}},
		{Text: "Wrote 2 to app/count.txt."},
	}},
}}

func bash(cmd string) tape.ToolCall { return testkit.Call("Bash", map[string]string{"command": cmd}) }

// miniRecording records miniScript once per test binary: the scripted provider, the
// recording gateway and the real mini harness running its Bash calls in a scratch directory.
var miniRecording = sync.OnceValues(func() (string, error) {
	dir, err := scratchDir("tapebox-bench-mini-")
	if err != nil {
		return "", err
	}
	p, err := testkit.StartProvider(miniScript)
	if err != nil {
		return "", err
	}
	defer p.Close()
	g, err := testkit.StartGateway(p.URL(), filepath.Join(dir, "miniagent.json"), testkit.Harness("claude-code"))
	if err != nil {
		return "", err
	}
	work := filepath.Join(dir, "work")
	if err := os.Mkdir(work, 0o755); err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := miniagent.Run(ctx, miniagent.Config{BaseURL: g.URL, Provider: tape.ProviderAnthropic, Stream: true,
		Prompt: "Set up app/ with a greeting and its word count.", Dir: work, APIKey: "sk-bench-placeholder"}); err != nil {
		g.Close()
		return "", err
	}
	rec, err := g.Finish()
	if err != nil {
		return "", err
	}
	if err := p.Err(); err != nil {
		return "", fmt.Errorf("the scripted provider: %w", err)
	}
	if rec.Meta.Ended == nil || rec.Meta.Ended.Reason != tape.EndComplete {
		return "", fmt.Errorf("the recording %s did not complete", g.Path)
	}
	return g.Path, nil
})

// BenchmarkReplayCorpus replays each tape of the corpus (testdata/replay/*.json and a
// miniagent recording) at --speed 0 in a fresh sandbox per iteration (opening and closing
// it is not timed), side by side on each sandbox: local (only for tapes that stay in their
// working directory) and a container on each runtime docker info lists (runc; runsc when
// gVisor is installed). Every replay must be identical to its recording, or the benchmark
// fails with the differences. Metrics as testkit.Bench reports them: replay-ms/op,
// tool-ms/op, overhead-ms/step, steps/s.
func BenchmarkReplayCorpus(b *testing.B) {
	for _, ct := range corpus(b) {
		rec, err := testkit.LoadTape(ct.path)
		if err != nil {
			b.Fatal(err)
		}
		b.Run("tape="+ct.name, func(b *testing.B) {
			b.Run("sandbox=local", func(b *testing.B) {
				if !ct.local {
					b.Skipf("%s names its recorded working directory %s (absolute paths on the host): replayed only in containers", ct.name, ct.cwd)
				}
				benchReplay(b, rec, func(b *testing.B) *sandbox.Sandbox { return openLocal(b) })
			})
			for _, rt := range runtimes {
				b.Run("sandbox=docker-"+rt, func(b *testing.B) {
					requireRuntime(b, rt)
					benchReplay(b, rec, func(b *testing.B) *sandbox.Sandbox { return openDocker(b, rt, ct.cwd) })
				})
			}
		})
	}
}

// benchReplay replays rec once per iteration in a sandbox open gives, checks that the replay
// is identical to the recording, and reports testkit.Bench's metrics.
func benchReplay(b *testing.B, rec *tape.Tape, open func(b *testing.B) *sandbox.Sandbox) {
	var wall, tool, path, model time.Duration
	steps, ops := 0, 0
	for b.Loop() {
		b.StopTimer()
		sb := open(b)
		b.StartTimer()
		res, err := controller.Replay(b.Context(), rec, sb, controller.Options{Cwd: sb.Cwd(), Speed: 0})
		b.StopTimer()
		closeSandbox(b, sb)
		if err != nil {
			b.Fatalf("replay in %s: %v", sb.Spec(), err)
		}
		if rep := compare.Compare(rec, res.Tape); !rep.Identical {
			var diff strings.Builder
			rep.WriteText(&diff)
			b.Fatalf("the replay in %s differs from its recording:\n%s", sb.Spec(), diff.String())
		}
		wall, tool, path, model = wall+res.Wall, tool+res.ToolTime, path+res.ToolPath, model+res.ModelTime
		steps += res.Steps
		ops++
		b.StartTimer()
	}
	if ops == 0 || steps == 0 {
		return
	}
	b.ReportMetric(ms(wall)/float64(ops), "replay-ms/op")
	b.ReportMetric(ms(tool)/float64(ops), "tool-ms/op")
	b.ReportMetric(ms(wall-path-model)/float64(steps), "overhead-ms/step")
	b.ReportMetric(float64(steps)/wall.Seconds(), "steps/s")
}
