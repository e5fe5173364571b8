package viewer_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/schema"
	"github.com/tapebox/tapebox/tape"
	"github.com/tapebox/tapebox/viewer"
)

// bigTape generates a tape of about size bytes in steps steps, shaped like a long agent
// run: a main thread whose Agent calls spawn 20 subagents of 20 steps each, every request
// carrying the thread's history since its last compaction (every compact steps) both
// normalized and as the raw body, streamed answers of a dozen chunks, Bash calls with
// results of a few kilobytes. The result size is tuned to reach size. With compact 1 every
// result is in the tape about once: the page then holds most of the tape.
func bigTape(steps, size, compact int) *tape.Tape {
	start := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	tp := tape.New(tape.ProviderAnthropic, start)
	tp.Meta.Harness, tp.Meta.HarnessVersion, tp.Meta.Model = "claude-code", "generated", "claude-sonnet-4-5"
	end := tape.Ended{Reason: tape.EndComplete, At: start.Add(time.Duration(steps) * 3 * time.Second)}
	tp.Meta.Ended = &end
	const subs, subSteps = 20, 20
	mainSteps := steps - subs*subSteps
	// the history repeats each result about compact/2 times, twice (raw and normalized)
	resultSize := size / steps / (compact + 2)
	if compact == 1 {
		resultSize = size / steps * 9 / 10
	}
	rng := rand.New(rand.NewPCG(1, 2))
	result := func(n int) string {
		var b strings.Builder
		for b.Len() < resultSize {
			fmt.Fprintf(&b, "%06d -rw-r--r-- 1 agent agent %5d Dec  1 12:00 src/%x/%x.go\n", n, rng.IntN(99999), rng.Uint32(), rng.Uint64())
		}
		return b.String()
	}
	clock := 0.0
	thread := func(id string, parent *tape.Parent, n int, spawn func(i int) *tape.ToolCall) *tape.Thread {
		th := &tape.Thread{ID: id, Parent: parent}
		var history []tape.Message
		for i := 0; i < n; i++ {
			if i%compact == 0 {
				history = []tape.Message{{Role: "user", Content: []tape.Block{{Type: tape.BlockText, Text: fmt.Sprintf("Task for %s, part %d: keep going.", id, i/40)}}}}
			}
			call := tape.ToolCall{ID: fmt.Sprintf("toolu_%s_%d", id, i), Name: "Bash", Input: json.RawMessage(fmt.Sprintf(`{"command":"ls -la dir%d && cat file%d.txt","description":"look around"}`, i, i))}
			if spawn != nil {
				if c := spawn(i); c != nil {
					call = *c
				}
			}
			last := i == n-1
			text := fmt.Sprintf("Step %d of %s: I will look at dir%d next.", i, id, i)
			content := []tape.Block{{Type: tape.BlockThinking, Text: "Thinking about step " + fmt.Sprint(i)}, {Type: tape.BlockText, Text: text}}
			var calls []tape.ToolCall
			var results []tape.ToolResult
			if !last {
				content = append(content, tape.Block{Type: tape.BlockToolUse, ID: call.ID, Name: call.Name, Input: call.Input})
				calls = []tape.ToolCall{call}
				d := 40.0
				results = []tape.ToolResult{{ToolCallID: call.ID, Content: []tape.Block{{Type: tape.BlockText, Text: result(i)}}, DurationMS: &d}}
			}
			raw, _ := json.Marshal(map[string]any{"model": tp.Meta.Model, "max_tokens": 32000, "stream": true, "messages": history})
			var chunks []tape.Chunk
			for k := 0; k < 12; k++ {
				chunks = append(chunks, tape.Chunk{AtMS: 300 + float64(k)*40, Data: fmt.Sprintf("event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"text_delta\",\"text\":\"part %d of the answer \"}}\n\n", k)})
			}
			req := clock
			clock += 800
			next := clock + 40
			s := &tape.Step{
				Request: tape.Request{Path: "/v1/messages", Messages: append([]tape.Message(nil), history...), Params: map[string]json.RawMessage{"model": json.RawMessage(`"` + tp.Meta.Model + `"`)},
					Stream: true, Headers: tape.Headers{}, Raw: raw, Tools: []tape.Tool{}},
				Response: tape.Response{Status: 200, Headers: tape.Headers{}, Content: content, StopReason: "tool_use",
					Usage: tape.Usage{InputTokens: 3000 + int64(i), OutputTokens: 120, CacheReadInputTokens: 20000}, Raw: json.RawMessage("null"), Chunks: chunks},
				ToolCalls: calls, ToolResults: results,
				Timing: tape.Timing{RequestAt: req, FirstByteAt: req + 300, LastByteAt: req + 760, NextRequestAt: &next},
			}
			if last {
				s.Response.StopReason = "end_turn"
				s.Timing.NextRequestAt = nil
			}
			if s.ToolCalls == nil {
				s.ToolCalls = []tape.ToolCall{}
				s.ToolResults = []tape.ToolResult{}
			}
			th.Steps = append(th.Steps, s)
			history = append(history, tape.Message{Role: "assistant", Content: content})
			if !last {
				history = append(history, tape.Message{Role: "user", Content: []tape.Block{{Type: tape.BlockToolResult, ToolCallID: call.ID, Content: results[0].Content}}})
			}
			clock = next
		}
		return th
	}
	every := mainSteps / (subs + 1)
	var spawned []string
	main := thread("main", nil, mainSteps, func(i int) *tape.ToolCall {
		if i > 0 && i%every == 0 && len(spawned) < subs {
			id := fmt.Sprintf("toolu_agent_%d", len(spawned))
			spawned = append(spawned, id)
			return &tape.ToolCall{ID: id, Name: "Agent", Input: json.RawMessage(`{"description":"help","prompt":"look at the other directory","subagent_type":"general-purpose"}`)}
		}
		return nil
	})
	tp.Threads = append(tp.Threads, main)
	for k, id := range spawned {
		tp.Threads = append(tp.Threads, thread(fmt.Sprintf("t%d", k+1), &tape.Parent{ThreadID: "main", ToolCallID: id}, subSteps, nil))
	}
	return tp
}

// bigTapeFile writes a 2,000-step, ~100 MB tape once, under $TMPDIR/tapebox-view-bench
// (kept between runs: generating it takes longer than what is measured).
func bigTapeFile(b *testing.B, compact int) string {
	dir := filepath.Join(os.TempDir(), "tapebox-view-bench")
	p := filepath.Join(dir, fmt.Sprintf("big-2000-100m-c%d.json", compact))
	if isFile(p) {
		return p
	}
	require.NoError(b, os.MkdirAll(dir, 0o755))
	data, err := tape.Marshal(bigTape(2000, 100<<20, compact))
	require.NoError(b, err)
	require.NoError(b, os.WriteFile(p, data, 0o644))
	return p
}

// The two big tapes: one whose requests carry their history (most of its bytes repeat), and
// one where almost every byte is in a tool result once (the page holds most of it).
var bigShapes = []struct {
	name    string
	compact int
}{{"history", 10}, {"unique", 1}}

// BenchmarkView is what tapebox view does with a 100 MB, 2,000-step tape: read it, check it
// against the schema, and write the page.
func BenchmarkView(b *testing.B) {
	for _, sh := range bigShapes {
		b.Run(sh.name, func(b *testing.B) { benchView(b, bigTapeFile(b, sh.compact)) })
	}
}

func benchView(b *testing.B, p string) {
	fi, err := os.Stat(p)
	require.NoError(b, err)
	out := filepath.Join(b.TempDir(), "big.html")
	b.SetBytes(fi.Size())
	cpu0 := cpuTime()
	for b.Loop() {
		data, err := os.ReadFile(p)
		require.NoError(b, err)
		require.NoError(b, schema.Validate(data))
		f, err := os.Create(out)
		require.NoError(b, err)
		require.NoError(b, viewer.Write(b.Context(), f, viewer.Options{Recording: viewer.Source{Path: p, Data: data}}))
		require.NoError(b, f.Close())
	}
	// CPU time is reported beside the wall time: on a machine shared with other jobs the
	// wall time says more about the others.
	b.ReportMetric(float64((cpuTime()-cpu0).Milliseconds())/float64(b.N), "cpu-ms/op")
	pg, err := os.Stat(out)
	require.NoError(b, err)
	b.ReportMetric(float64(fi.Size())/1e6, "MB-tape")
	b.ReportMetric(float64(pg.Size())/1e6, "MB-page")
}

type benchReport struct {
	Runs []struct {
		MS         float64 `json:"ms"`
		JSHeapUsed float64 `json:"jsHeapUsed"`
		Nodes      float64 `json:"nodes"`
	} `json:"runs"`
	Processes []struct {
		Type string   `json:"type"`
		RSS  *float64 `json:"rss"`
	} `json:"processes"`
	ProcessError string `json:"processError"`
}

// BenchmarkFirstView opens the page of the 100 MB tape in headless chromium: the time from
// navigation to the first view (lanes, timeline and list drawn, one step's detail opened),
// the JS heap and DOM size from Chromium's performance metrics, and the renderer's resident
// memory (the tab, as the kernel counts it).
func BenchmarkFirstView(b *testing.B) {
	browserEnv(b)
	for _, sh := range bigShapes {
		b.Run(sh.name, func(b *testing.B) { benchFirstView(b, bigTapeFile(b, sh.compact)) })
	}
}

func benchFirstView(b *testing.B, p string) {
	data, err := os.ReadFile(p)
	require.NoError(b, err)
	page := writePage(b, b.TempDir(), "big", data, nil)
	data = nil
	var ms, heap, rss, nodes float64
	n := 0
	for b.Loop() {
		var r benchReport
		drive(b, "bench", map[string]any{"page": page, "runs": 1}, &r)
		require.Len(b, r.Runs, 1)
		ms += r.Runs[0].MS
		heap = max(heap, r.Runs[0].JSHeapUsed)
		nodes = max(nodes, r.Runs[0].Nodes)
		require.Empty(b, r.ProcessError)
		for _, pr := range r.Processes {
			if pr.Type == "renderer" && pr.RSS != nil {
				rss = max(rss, *pr.RSS)
			}
		}
		n++
	}
	b.ReportMetric(ms/float64(n), "ms/first-view")
	b.ReportMetric(heap/1e6, "MB-js-heap")
	b.ReportMetric(rss/1e6, "MB-tab-rss")
	b.ReportMetric(nodes, "dom-nodes")
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
