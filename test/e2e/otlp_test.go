package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/internal/testutil/dockertest"
	"github.com/tapebox/tapebox/internal/testutil/realharness"
	"github.com/tapebox/tapebox/tape"
)

// otelcol finds the OpenTelemetry Collector of the OTLP tests: $TAPEBOX_OTELCOL, else what
// scripts/otelcol.sh builds (from the module proxy, once per version; ci-setup.sh runs it).
// Without it the test skips, unless CI's TAPEBOX_REQUIRE_* says it must run.
func otelcol(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("TAPEBOX_OTELCOL"); p != "" {
		return p
	}
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	cmd := exec.CommandContext(t.Context(), "sh", filepath.Join(root, "scripts", "otelcol.sh"))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		msg := fmt.Sprintf("scripts/otelcol.sh could not build the OpenTelemetry Collector: %v\n%s", err, stderr.String())
		if dockertest.Required() || realharness.Required() {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return strings.TrimSpace(string(out))
}

// otlpSpan is a span as the collector's file exporter writes it (OTLP/JSON).
type otlpSpan struct {
	TraceID      string `json:"traceId"`
	SpanID       string `json:"spanId"`
	ParentSpanID string `json:"parentSpanId"`
	Name         string `json:"name"`
	Kind         int    `json:"kind"`
	Start        string `json:"startTimeUnixNano"`
	End          string `json:"endTimeUnixNano"`
	Attributes   []struct {
		Key   string         `json:"key"`
		Value map[string]any `json:"value"`
	} `json:"attributes"`
}

func (s otlpSpan) attr(k string) string {
	for _, a := range s.Attributes {
		if a.Key == k {
			for kind, v := range a.Value {
				if kind == "arrayValue" {
					var parts []string
					for _, e := range v.(map[string]any)["values"].([]any) {
						parts = append(parts, fmt.Sprint(e.(map[string]any)["stringValue"]))
					}
					return strings.Join(parts, ",")
				}
				return fmt.Sprint(v)
			}
		}
	}
	return ""
}

// TestOTLPCollector sends a tape's spans with tapebox export --to otlp --otlp-endpoint to a
// real OpenTelemetry Collector (OTLP/HTTP receiver, file exporter) and checks what it
// received: one span per thread, model call and tool call, their parent links (a subagent's
// thread under the execute_tool span of its spawning call), and the GenAI attributes.
func TestOTLPCollector(t *testing.T) {
	bin := otelcol(t)
	r := newRig(t)
	tapePath, err := filepath.Abs("../../testdata/replay/claude-code.json")
	require.NoError(t, err)
	tp, err := tape.LoadFile(tapePath)
	require.NoError(t, err)

	dir := t.TempDir()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	l.Close()
	out := filepath.Join(dir, "spans.json")
	config := fmt.Sprintf(`receivers:
  otlp:
    protocols:
      http:
        endpoint: %s
exporters:
  file:
    path: %s
    flush_interval: 100ms
service:
  telemetry:
    metrics:
      level: none
  pipelines:
    traces:
      receivers: [otlp]
      exporters: [file]
`, addr, out)
	cfg := filepath.Join(dir, "config.yaml")
	require.NoError(t, os.WriteFile(cfg, []byte(config), 0o644))
	col := startProc(t, dir, os.Environ(), bin, "--config", cfg)
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the collector does not listen on %s:\n%s", addr, clipText(col.stderr(), 4000))
		}
		time.Sleep(100 * time.Millisecond)
	}

	code, stdout, stderr := r.run(t, dir, cleanEnv(), "export", "--to", "otlp", "--otlp-endpoint", "http://"+addr, tapePath)
	require.Equal(t, 0, code, "tapebox export --to otlp\n%s%s", stdout, stderr)

	want := len(tp.Threads)
	for _, th := range tp.Threads {
		for _, s := range th.Steps {
			want += 1 + len(s.ToolCalls)
		}
	}
	var spans []otlpSpan
	for deadline := time.Now().Add(20 * time.Second); len(spans) < want && time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		spans = nil
		b, _ := os.ReadFile(out)
		sc := bufio.NewScanner(bytes.NewReader(b))
		sc.Buffer(nil, 64<<20)
		for sc.Scan() {
			var req struct {
				ResourceSpans []struct {
					ScopeSpans []struct {
						Spans []otlpSpan `json:"spans"`
					} `json:"scopeSpans"`
				} `json:"resourceSpans"`
			}
			require.NoError(t, json.Unmarshal(sc.Bytes(), &req))
			for _, rs := range req.ResourceSpans {
				for _, ss := range rs.ScopeSpans {
					spans = append(spans, ss.Spans...)
				}
			}
		}
	}
	require.Len(t, spans, want, "one span per thread, model call and tool call (the collector wrote:\n%s)", clipText(col.stderr(), 2000))

	byID := map[string]otlpSpan{}
	threadSpan := map[string]otlpSpan{}
	toolSpan := map[string]otlpSpan{}
	for _, s := range spans {
		byID[s.SpanID] = s
		assert.Equal(t, tp.Meta.TapeID, s.TraceID, "one trace per tape, its id the tape's")
		switch s.attr("gen_ai.operation.name") {
		case "invoke_agent":
			threadSpan[s.attr("gen_ai.agent.id")] = s
		case "execute_tool":
			toolSpan[s.attr("gen_ai.tool.call.id")] = s
		}
	}
	require.Len(t, threadSpan, len(tp.Threads))
	chats := 0
	for _, th := range tp.Threads {
		ts := threadSpan[th.ID]
		if th.Parent == nil {
			assert.Empty(t, ts.ParentSpanID, "the main thread's span is the root")
		} else {
			spawn, ok := toolSpan[th.Parent.ToolCallID]
			require.True(t, ok, "no execute_tool span for the spawning call %s", th.Parent.ToolCallID)
			assert.Equal(t, spawn.SpanID, ts.ParentSpanID, "subagent %s under the span of the call that spawned it", th.ID)
		}
		for i, s := range th.Steps {
			var chat *otlpSpan
			for _, sp := range spans {
				if sp.attr("gen_ai.operation.name") == "chat" && sp.attr("tapebox.thread") == th.ID && sp.attr("tapebox.step") == fmt.Sprint(i) {
					chat = &sp
				}
			}
			require.NotNil(t, chat, "no chat span for %s step %d", th.ID, i)
			chats++
			assert.Equal(t, ts.SpanID, chat.ParentSpanID, "chat span of %s/%d under its thread", th.ID, i)
			assert.Equal(t, 3, chat.Kind, "chat spans are CLIENT spans")
			assert.Equal(t, "anthropic", chat.attr("gen_ai.provider.name"))
			model := tp.Meta.Model
			if raw, ok := s.Request.Params["model"]; ok {
				_ = json.Unmarshal(raw, &model)
			}
			assert.Equal(t, model, chat.attr("gen_ai.request.model"))
			assert.Equal(t, "chat "+model, chat.Name)
			u := s.Response.Usage
			assert.Equal(t, fmt.Sprint(u.InputTokens+u.CacheReadInputTokens+u.CacheCreationInputTokens), chat.attr("gen_ai.usage.input_tokens"))
			assert.Equal(t, fmt.Sprint(u.OutputTokens), chat.attr("gen_ai.usage.output_tokens"))
			assert.Equal(t, s.Response.StopReason, chat.attr("gen_ai.response.finish_reasons"))
			assert.Equal(t, fmt.Sprint(tp.Meta.StartedAt.Add(time.Duration(s.Timing.RequestAt*float64(time.Millisecond))).UnixNano()), chat.Start, "the tape's clock")
			for _, c := range s.ToolCalls {
				sp := toolSpan[c.ID]
				assert.Equal(t, ts.SpanID, sp.ParentSpanID, "execute_tool %s under its thread", c.ID)
				assert.Equal(t, c.Name, sp.attr("gen_ai.tool.name"))
				assert.Equal(t, "execute_tool "+c.Name, sp.Name)
			}
		}
	}
	t.Logf("the collector received %d spans: %d threads, %d chat, %d execute_tool", len(spans), len(threadSpan), chats, len(toolSpan))
}
