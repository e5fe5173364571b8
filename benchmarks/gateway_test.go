package benchmarks

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tapebox/tapebox/internal/testutil/sandboxtest"
	"github.com/tapebox/tapebox/tape"
	"github.com/tapebox/tapebox/testkit"
)

// gatewayCallID is the tool call every scripted turn makes and every request answers, so
// that each call continues the same conversation, as an agent's calls do.
const gatewayCallID = "toolu_bench_0"

// gatewayRequest is an Anthropic Messages call at the second step of a conversation (the
// first tool call answered), with a prompt of about 4 KiB.
func gatewayRequest(b *testing.B, stream bool) []byte {
	body, err := json.Marshal(map[string]any{
		"model": "claude-sonnet-4-5", "max_tokens": 1024, "stream": stream,
		"system": []map[string]any{{"type": "text", "text": "You are a coding agent.\n# Environment\nPrimary working directory: /work"}},
		"tools":  []map[string]any{{"name": "Bash", "description": "Run a command.", "input_schema": map[string]any{"type": "object"}}},
		"messages": []map[string]any{
			{"role": "user", "content": []map[string]any{{"type": "text", "text": "Benchmark the gateway. " + strings.Repeat("lorem ipsum ", 4<<10/12)}}},
			{"role": "assistant", "content": []map[string]any{{"type": "text", "text": "Running it."},
				{"type": "tool_use", "id": gatewayCallID, "name": "Bash", "input": map[string]any{"command": "true"}}}},
			{"role": "user", "content": []map[string]any{{"type": "tool_result", "tool_use_id": gatewayCallID, "content": "(Bash completed with no output)"}}},
		},
	})
	if err != nil {
		b.Fatal(err)
	}
	return body
}

// gatewayTargets serves the scripted provider and a recording gateway in front of it, and
// returns their base URLs: the two sides of every gateway benchmark.
func gatewayTargets(b *testing.B) (direct, viaGateway string) {
	turn := testkit.Turn{Text: "Running it.", Calls: []tape.ToolCall{{ID: gatewayCallID, Name: "Bash",
		Input: json.RawMessage(`{"command":"true"}`), Kind: "function"}}}
	p := testkit.NewProvider(b, testkit.Script{Threads: []testkit.Thread{{Name: "main", Turns: []testkit.Turn{turn, turn}}}})
	// StartGateway rather than NewGateway: NewGateway logs every call to the benchmark's log.
	g, err := testkit.StartGateway(p.URL(), filepath.Join(b.TempDir(), "run.json"), testkit.Harness("claude-code"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { g.Close() })
	return p.URL(), g.URL
}

// post sends body to base's Messages endpoint, failing b on a transport error or a bad
// status.
func post(b *testing.B, c *http.Client, base string, body []byte) *http.Response {
	req, err := http.NewRequestWithContext(b.Context(), http.MethodPost, base+"/v1/messages", bytes.NewReader(body))
	if err != nil {
		b.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Anthropic-Version", "2023-06-01")
	req.Header.Set("X-Api-Key", "sk-bench-placeholder")
	resp, err := c.Do(req)
	if err != nil {
		b.Fatalf("call %s: %v", base, err)
	}
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		b.Fatalf("call %s: status %d: %s", base, resp.StatusCode, msg)
	}
	return resp
}

func benchClient(b *testing.B) *http.Client {
	tr := &http.Transport{MaxIdleConnsPerHost: 8, DisableCompression: true}
	b.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}

// BenchmarkGateway measures what the recording gateway adds to a model call, each case
// side by side with a direct call to the same (scripted, local) provider:
//
//	call=non-stream     a whole non-streamed call with a 4 KiB prompt, recorded and published
//	                    before it is answered (p50-ms; target: <= 0.3 ms over direct)
//	call=first-byte     a streamed call until its first event arrives (p50-ms is the time to
//	                    first byte; ns/op the whole call; target: <= 0.3 ms over direct)
func BenchmarkGateway(b *testing.B) {
	direct, viaGateway := gatewayTargets(b)
	sides := func(b *testing.B, run func(b *testing.B, base string)) {
		b.Run("direct", func(b *testing.B) { run(b, direct) })
		b.Run("gateway", func(b *testing.B) { run(b, viaGateway) })
	}

	b.Run("call=non-stream", func(b *testing.B) {
		body := gatewayRequest(b, false)
		sides(b, func(b *testing.B, base string) {
			c := benchClient(b)
			var lat sandboxtest.Latencies
			for b.Loop() {
				start := time.Now()
				resp := post(b, c, base, body)
				_, err := io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if err != nil {
					b.Fatalf("read the answer: %v", err)
				}
				lat.Time(start)
			}
			lat.Report(b)
		})
	})

	b.Run("call=first-byte", func(b *testing.B) {
		body := gatewayRequest(b, true)
		sides(b, func(b *testing.B, base string) {
			c := benchClient(b)
			buf := make([]byte, 32<<10)
			var lat sandboxtest.Latencies
			for b.Loop() {
				start := time.Now()
				resp := post(b, c, base, body)
				if n, err := resp.Body.Read(buf); n == 0 {
					resp.Body.Close()
					b.Fatalf("read the first event: %v", err)
				}
				lat.Time(start)
				_, err := io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if err != nil {
					b.Fatalf("read the stream: %v", err)
				}
			}
			lat.Report(b)
		})
	})
}
