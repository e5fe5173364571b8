package benchmarks

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tapebox/tapebox/internal/testutil/bigbody"
	"github.com/tapebox/tapebox/tape"
	"github.com/tapebox/tapebox/tape/provider"
)

// tapeboxBinary builds cmd/tapebox once per run, for the benchmarks that measure a
// `tapebox` process (its peak RSS is its own, not the benchmark's).
var tapeboxBinary = sync.OnceValues(func() (string, error) {
	dir, err := scratchDir("tapebox-bench-bin-")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "tapebox")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/tapebox")
	cmd.Dir = ".."
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/tapebox: %v\n%s", err, out)
	}
	return bin, nil
})

func tapeboxBin(b *testing.B) string {
	b.Helper()
	bin, err := tapeboxBinary()
	if err != nil {
		b.Fatal(err)
	}
	return bin
}

// bigBody is how large the bodies of BenchmarkMemory/gateway are.
const bigBody = 100 << 20

// gatewayProcess is a running `tapebox gateway`.
type gatewayProcess struct {
	cmd  *exec.Cmd
	url  string
	logs *bytes.Buffer
	done chan struct{}
}

// startGatewayProcess runs `tapebox gateway` recording into out, in front of upstream.
func startGatewayProcess(b *testing.B, out, upstream string) *gatewayProcess {
	b.Helper()
	cmd := exec.Command(tapeboxBin(b), "gateway", "--quiet", "--output", out, "--listen", "127.0.0.1:0", "--upstream", upstream)
	pipe, err := cmd.StderrPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	p := &gatewayProcess{cmd: cmd, logs: &bytes.Buffer{}, done: make(chan struct{})}
	addr := make(chan string, 1)
	go func() {
		defer close(p.done)
		sc := bufio.NewScanner(pipe)
		for sc.Scan() {
			line := sc.Text()
			p.logs.WriteString(line + "\n")
			if _, a, ok := strings.Cut(line, "listening on http://"); ok {
				a, _, _ = strings.Cut(a, " ")
				select {
				case addr <- a:
				default:
				}
			}
		}
		cmd.Wait()
	}()
	select {
	case a := <-addr:
		p.url = "http://" + a
	case <-p.done:
		b.Fatalf("tapebox gateway exited before listening:\n%s", p.logs)
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		b.Fatal("tapebox gateway did not listen within 30 s")
	}
	return p
}

// end finishes the recording and waits for the process to exit.
func (p *gatewayProcess) end(b *testing.B) {
	b.Helper()
	resp, err := http.Post(p.url+"/tapebox/end", "", nil)
	if err != nil {
		b.Fatalf("end the recording: %v", err)
	}
	resp.Body.Close()
	select {
	case <-p.done:
	case <-time.After(time.Minute):
		p.cmd.Process.Kill()
		b.Fatal("tapebox gateway did not exit within a minute of /tapebox/end")
	}
}

// procStatusKB reads a field (VmRSS, VmHWM) of /proc/PID/status, in KiB.
func procStatusKB(b *testing.B, pid int, field string) int64 {
	b.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Skipf("no /proc to measure memory with: %v", err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				b.Fatalf("parse %s of /proc/%d/status: %q", field, pid, line)
			}
			return kb
		}
	}
	b.Fatalf("/proc/%d/status has no %s", pid, field)
	return 0
}

// resetPeak makes VmHWM start again from the current RSS (Linux: clear_refs 5).
func resetPeak(b *testing.B, pid int) {
	b.Helper()
	if err := os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0); err != nil {
		b.Skipf("cannot reset the peak RSS of the gateway: %v", err)
	}
}

// conversationRequest is the request of turn n of one conversation: a short prompt, then n
// turns of a short answer and a user message of turnSize bytes (a tool result, a file), as
// an agent's requests carry their whole history.
func conversationRequest(n, turnSize int) *bigbody.Hashing {
	var b strings.Builder
	b.WriteString(`{"model":"claude-sonnet-4-5","max_tokens":64,"stream":false,"messages":[{"role":"user","content":"Start."}`)
	text := strings.Repeat("drwxr-xr-x 2 user user 4096 Jan  1 00:00 some-directory\\n", turnSize/58)
	for range n {
		b.WriteString(`,{"role":"assistant","content":"ok"},{"role":"user","content":"` + text + `"}`)
	}
	b.WriteString("]}")
	return bigbody.NewHashing(strings.NewReader(b.String()))
}

// BenchmarkMemory measures the memory of tapebox processes (the benchmark's own is not
// counted). It is not named after the gateway so that -bench Gateway leaves it out.
//
//	gateway/...   a `tapebox gateway` forwarding and recording one large call
//	summary/...   `tapebox inspect` and `tapebox compare` on a tape of about 200 MB
func BenchmarkMemory(b *testing.B) {
	b.Run("gateway", benchGatewayMemory)
	b.Run("summary", benchSummaryMemory)
}

// benchGatewayMemory measures how much a `tapebox gateway` process grows to forward and
// record one large call, from its resident set when idle (after a small call) to its peak
// (VmHWM) during the call; the client reads every byte and checks its SHA-256:
//
//	answer=json-100MB      a 100 MB JSON answer, streamed by the upstream without a length
//	answer=sse-100MB       a 100 MB event stream of small text deltas
//	request=json-100MB     a 100 MB request body, sent without a length, and a small answer
//	answer=json-24MB       a 24 MB JSON answer: under the default --max-record-body, recorded
//	answer=sse-one-event-100MB  a stream whose one event is 100 MB
//	session=60-turns       one conversation of 60 calls, each adding 40 KB to the history (the
//	                       last request is 2.4 MB, the tape 150 MB): what a recording keeps
//	requests=10x30MB-concurrent  ten calls at once, each with a 30 MB request body (under the
//	                       recording limit, so recorded whole) and a Content-Length, each its
//	                       own conversation: 300 MB in flight
//
// Metrics: growth-MB (peak minus idle; target: <= 64 MB for 100 MB), idle-MB, peak-MB, and
// tape-MB (the tape's size at the end); for concurrent calls also x-in-flight, the growth
// over the bytes in flight (target: about 1.5).
func benchGatewayMemory(b *testing.B) {
	cases := []struct {
		name          string
		answer        string
		requestSize   int
		requestStream bool
		turns         int // a conversation of this many calls (conversationRequest) instead
		concurrent    int // this many calls at once, each with a request of requestSize and a length
	}{
		{name: "answer=json-100MB", answer: fmt.Sprintf("json %d", bigBody)},
		{name: "answer=sse-100MB", answer: fmt.Sprintf("sse %d", bigBody), requestStream: true},
		{name: "request=json-100MB", answer: "small", requestSize: bigBody},
		{name: "answer=json-24MB", answer: fmt.Sprintf("json %d", 24<<20)},
		{name: "answer=sse-one-event-100MB", answer: fmt.Sprintf("sse-one-event %d", bigBody), requestStream: true},
		{name: "session=60-turns", answer: "small", turns: 60},
		{name: "requests=10x30MB-concurrent", answer: "short", requestSize: 30 << 20, concurrent: 10},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			up := &bigbody.Upstream{}
			srv := httptest.NewServer(up)
			defer srv.Close()
			client := &http.Client{Transport: &http.Transport{DisableCompression: true}}
			var growth, idle, peak, tapeSize int64
			for b.Loop() {
				b.StopTimer()
				out := filepath.Join(b.TempDir(), "run.json")
				gw := startGatewayProcess(b, out, srv.URL)
				pid := gw.cmd.Process.Pid
				call := func(answer string, body *bigbody.Hashing) {
					req, err := http.NewRequestWithContext(b.Context(), http.MethodPost, gw.url+"/v1/messages", body)
					if err != nil {
						b.Fatal(err)
					}
					req.ContentLength = -1
					if c.concurrent > 0 && answer == c.answer {
						req.ContentLength = requestLength(c.requestSize, c.requestStream)
						// Each its own conversation; the upstream's hashes are those of the
						// last call to finish, so each call checks its status only.
						concurrentCall(b, client, req)
						return
					}
					req.Header.Set("Content-Type", "application/json")
					req.Header.Set("Anthropic-Version", "2023-06-01")
					req.Header.Set("X-Answer", answer)
					resp, err := client.Do(req)
					if err != nil {
						b.Fatalf("call through the gateway: %v\n%s", err, gw.logs)
					}
					h := sha256.New()
					_, err = io.Copy(h, resp.Body)
					resp.Body.Close()
					if err != nil {
						b.Fatalf("read the answer: %v", err)
					}
					sent, read := up.Hashes()
					if got := hex.EncodeToString(h.Sum(nil)); got != sent {
						b.Fatalf("the client got an answer with SHA-256 %s, the upstream sent %s", got, sent)
					}
					if got := body.Sum(); got != read {
						b.Fatalf("the upstream read a request with SHA-256 %s, the client sent %s", read, got)
					}
				}
				call("small", bigbody.NewHashing(bigbody.Request(1<<10, false)))
				time.Sleep(100 * time.Millisecond)
				rss := procStatusKB(b, pid, "VmRSS")
				resetPeak(b, pid)
				b.StartTimer()
				switch {
				case c.concurrent > 0:
					var wg sync.WaitGroup
					for range c.concurrent {
						wg.Go(func() { call(c.answer, bigbody.NewHashing(bigbody.Request(c.requestSize, c.requestStream))) })
					}
					wg.Wait()
				case c.turns == 0:
					call(c.answer, bigbody.NewHashing(bigbody.Request(max(c.requestSize, 1<<10), c.requestStream)))
				}
				for n := range c.turns {
					call(c.answer, conversationRequest(n, 40<<10))
				}
				b.StopTimer()
				hwm := procStatusKB(b, pid, "VmHWM")
				gw.end(b)
				if fi, err := os.Stat(out); err == nil {
					tapeSize = fi.Size()
				}
				if hwm-rss > growth {
					growth, idle, peak = hwm-rss, rss, hwm
				}
				b.StartTimer()
			}
			b.ReportMetric(float64(growth)/1024, "growth-MB")
			b.ReportMetric(float64(idle)/1024, "idle-MB")
			b.ReportMetric(float64(peak)/1024, "peak-MB")
			b.ReportMetric(float64(tapeSize)/(1<<20), "tape-MB")
			if c.concurrent > 0 {
				inFlight := float64(c.concurrent) * float64(requestLength(c.requestSize, c.requestStream))
				b.ReportMetric(float64(growth)*1024/inFlight, "x-in-flight")
			}
		})
	}
}

// requestLength is the length of bigbody.Request(size, stream).
func requestLength(size int, stream bool) int64 {
	n, _ := io.Copy(io.Discard, bigbody.Request(size, stream))
	return n
}

// concurrentCall sends req, one of several at once, and checks that it got a 200 with a
// whole answer.
func concurrentCall(b *testing.B, client *http.Client, req *http.Request) {
	resp, err := client.Do(req)
	if err != nil {
		b.Errorf("call through the gateway: %v", err)
		return
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK || !json.Valid(answer) {
		b.Errorf("call through the gateway: status %d, %v: %.200s", resp.StatusCode, err, answer)
	}
}

// bigTapeSize is about how large the tape of BenchmarkMemory/summary is.
const bigTapeSize = 200 << 20

// bigTapePath writes, once per run, a tape of about bigTapeSize bytes made of what makes
// tapes large: streamed answers of many small events, and requests that carry a large tool
// result. Its normalized fields are what provider.Normalize derives from them.
var bigTapePath = sync.OnceValues(func() (string, error) {
	dir, err := scratchDir("tapebox-bench-bigtape-")
	if err != nil {
		return "", err
	}
	t, err := bigTape(bigTapeSize)
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, "big.json")
	return path, tape.Save(path, t)
})

// bigTape builds a tape of about size bytes: one thread whose steps each call Bash, get
// the result back as 256 KiB of text in the next request, and stream their answer as
// about 20,000 small deltas.
func bigTape(size int) (*tape.Tape, error) {
	start := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	t := tape.New(tape.ProviderAnthropic, start)
	t.Meta.Harness, t.Meta.Model = "claude-code", "claude-sonnet-4-5"
	th := &tape.Thread{ID: "main"}
	t.Threads = append(t.Threads, th)
	result := strings.Repeat("drwxr-xr-x  2 user user 4096 Jan  1 00:00 some-directory-name\n", 256<<10/62)
	const deltas = 20000
	total := 0
	for i := 0; total < size; i++ {
		msgs := []any{map[string]any{"role": "user", "content": "List the files, then do it again."}}
		if i > 0 {
			prev := fmt.Sprintf("toolu_%04d", i-1)
			msgs = append(msgs,
				map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "tool_use", "id": prev, "name": "Bash", "input": map[string]any{"command": "ls -la"}}}},
				map[string]any{"role": "user", "content": []any{map[string]any{"type": "tool_result", "tool_use_id": prev, "content": result}}})
		}
		req, err := json.Marshal(map[string]any{"model": "claude-sonnet-4-5", "max_tokens": 4096, "stream": true,
			"system": "You are a coding agent.", "messages": msgs,
			"tools": []any{map[string]any{"name": "Bash", "input_schema": map[string]any{"type": "object"}}}})
		if err != nil {
			return nil, err
		}
		s := &tape.Step{Request: tape.Request{Path: "/v1/messages", Raw: req}}
		s.Response.Status = http.StatusOK
		s.Response.Headers = tape.Headers{"content-type": "text/event-stream"}
		at := 0.0
		chunk := func(data string) {
			at += 0.05
			s.Response.Chunks = append(s.Response.Chunks, tape.Chunk{AtMS: tape.RoundMS(time.Duration(at * float64(time.Millisecond))), Data: data})
			total += len(data) + 60
		}
		chunk(`event: message_start` + "\n" + `data: {"type":"message_start","message":{"id":"msg_` + strconv.Itoa(i) + `","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[],"stop_reason":null,"usage":{"input_tokens":1000,"output_tokens":1}}}` + "\n\n")
		chunk(`event: content_block_start` + "\n" + `data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}` + "\n\n")
		for k := range deltas {
			chunk(`event: content_block_delta` + "\n" + `data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"word` + strconv.Itoa(k%97) + ` "}}` + "\n\n")
		}
		chunk(`event: content_block_stop` + "\n" + `data: {"type":"content_block_stop","index":0}` + "\n\n")
		chunk(`event: content_block_start` + "\n" + `data: {"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_` + fmt.Sprintf("%04d", i) + `","name":"Bash","input":{}}}` + "\n\n")
		chunk(`event: content_block_delta` + "\n" + `data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"command\":\"ls -la\"}"}}` + "\n\n")
		chunk(`event: content_block_stop` + "\n" + `data: {"type":"content_block_stop","index":1}` + "\n\n")
		chunk(`event: message_delta` + "\n" + `data: {"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":` + strconv.Itoa(deltas) + `}}` + "\n\n")
		chunk(`event: message_stop` + "\n" + `data: {"type":"message_stop"}` + "\n\n")
		total += 2 * len(req)
		if err := provider.Normalize(tape.ProviderAnthropic, s); err != nil {
			return nil, fmt.Errorf("normalize step %d: %w", i, err)
		}
		base := float64(i) * 2000
		s.Timing = tape.Timing{RequestAt: base, FirstByteAt: base + 300, LastByteAt: base + 300 + at}
		if i > 0 {
			last := th.Steps[i-1]
			last.ToolResults = tape.ResultsFor(s.Request.Messages, last.ToolCalls)
			last.Timing.NextRequestAt = &s.Timing.RequestAt
		}
		th.Steps = append(th.Steps, s)
	}
	t.Meta.Ended = &tape.Ended{Reason: tape.EndComplete, At: start.Add(time.Duration(len(th.Steps)) * 2 * time.Second)}
	return t, nil
}

// peakRSSEnv makes the test binary run the command it holds (a JSON array) and print the
// command's peak RSS in KiB (see peakRSS).
const peakRSSEnv = "TAPEBOX_BENCH_PEAK_RSS"

// runForPeakRSS runs the command cmd names, its output discarded, and prints its peak RSS
// in KiB; it returns the command's exit code (2 when it did not run).
func runForPeakRSS(cmd string) int {
	var args []string
	if err := json.Unmarshal([]byte(cmd), &args); err != nil || len(args) == 0 {
		fmt.Fprintf(os.Stderr, "%s: want a JSON array: %v\n", peakRSSEnv, err)
		return 2
	}
	c := exec.Command(args[0], args[1:]...)
	c.Stdout, c.Stderr = io.Discard, os.Stderr
	err := c.Run()
	if c.ProcessState == nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	if ru, ok := c.ProcessState.SysUsage().(*syscall.Rusage); ok {
		fmt.Println(ru.Maxrss)
	}
	return c.ProcessState.ExitCode()
}

// peakRSS runs args and returns its peak RSS in KiB and its exit code. The command runs as
// the grandchild of this process, under a fresh copy of the test binary: on Linux a
// child's rusage counts the high-water mark of the memory it was forked from (Go starts
// children with CLONE_VM), which here is the benchmark's, holding a generated tape.
func peakRSS(b *testing.B, args ...string) (int64, int) {
	b.Helper()
	spec, _ := json.Marshal(args)
	cmd := exec.CommandContext(b.Context(), os.Args[0])
	cmd.Env = append(os.Environ(), peakRSSEnv+"="+string(spec))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		b.Fatalf("%s: %v", strings.Join(args, " "), err)
	}
	kb, perr := strconv.ParseInt(strings.TrimSpace(stdout.String()), 10, 64)
	if perr != nil || code == 2 && stdout.Len() == 0 {
		b.Fatalf("%s: exit %d, no peak RSS: %q\n%s", strings.Join(args, " "), code, stdout.String(), stderr.String())
	}
	return kb, code
}

// benchSummaryMemory measures the peak RSS of `tapebox inspect` and `tapebox compare`
// (the tape against itself) on a generated tape of about 200 MB (target: < 300 MB), and
// the tape's size (tape-MB).
func benchSummaryMemory(b *testing.B) {
	path, err := bigTapePath()
	if err != nil {
		b.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name string
		args []string
	}{
		{"verb=inspect", []string{"inspect", path}},
		{"verb=inspect-json", []string{"inspect", "--json", path}},
		{"verb=compare", []string{"compare", path, path}},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(fi.Size())
			var rss int64
			for b.Loop() {
				kb, code := peakRSS(b, append([]string{tapeboxBin(b)}, c.args...)...)
				if code > 1 {
					b.Fatalf("tapebox %s: exit %d", strings.Join(c.args, " "), code)
				}
				rss = max(rss, kb)
			}
			b.ReportMetric(float64(rss)/1024, "peak-rss-MB")
			b.ReportMetric(float64(fi.Size())/(1<<20), "tape-MB")
		})
	}
}
