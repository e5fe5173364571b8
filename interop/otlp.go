package interop

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/tapebox/tapebox/internal/jsonlex"
	"github.com/tapebox/tapebox/tape"
)

// OTLP/JSON (opentelemetry-proto, ExportTraceServiceRequest in its JSON mapping): ids in
// hex, times as decimal strings of nanoseconds, 64-bit integers as strings.
type otlpRequest struct {
	ResourceSpans []otlpResourceSpans `json:"resourceSpans"`
}

type otlpResourceSpans struct {
	Resource   otlpResource     `json:"resource"`
	ScopeSpans []otlpScopeSpans `json:"scopeSpans"`
}

type otlpResource struct {
	Attributes []otlpKV `json:"attributes"`
}

type otlpScopeSpans struct {
	Scope otlpScope  `json:"scope"`
	Spans []otlpSpan `json:"spans"`
}

type otlpScope struct {
	Name    string `json:"name"`
	Version string `json:"version,omitempty"`
}

type otlpSpan struct {
	TraceID           string      `json:"traceId"`
	SpanID            string      `json:"spanId"`
	ParentSpanID      string      `json:"parentSpanId,omitempty"`
	Name              string      `json:"name"`
	Kind              int         `json:"kind"`
	StartTimeUnixNano string      `json:"startTimeUnixNano"`
	EndTimeUnixNano   string      `json:"endTimeUnixNano"`
	Attributes        []otlpKV    `json:"attributes"`
	Status            *otlpStatus `json:"status,omitempty"`
}

type otlpStatus struct {
	Code    int    `json:"code"`
	Message string `json:"message,omitempty"`
}

type otlpKV struct {
	Key   string    `json:"key"`
	Value otlpValue `json:"value"`
}

type otlpValue struct {
	StringValue *string     `json:"stringValue,omitempty"`
	IntValue    *string     `json:"intValue,omitempty"`
	BoolValue   *bool       `json:"boolValue,omitempty"`
	ArrayValue  *otlpValues `json:"arrayValue,omitempty"`
}

type otlpValues struct {
	Values []otlpValue `json:"values"`
}

// Span kinds and status codes of the OTLP protocol.
const (
	spanInternal = 1
	spanClient   = 3
	statusError  = 2
)

func str(k, v string) otlpKV { return otlpKV{Key: k, Value: otlpValue{StringValue: &v}} }
func num(k string, v int64) otlpKV {
	s := strconv.FormatInt(v, 10)
	return otlpKV{Key: k, Value: otlpValue{IntValue: &s}}
}
func strs(k string, vs ...string) otlpKV {
	a := &otlpValues{Values: []otlpValue{}}
	for _, v := range vs {
		a.Values = append(a.Values, otlpValue{StringValue: &v})
	}
	return otlpKV{Key: k, Value: otlpValue{ArrayValue: a}}
}

// genAIProvider is gen_ai.provider.name for a wire format.
func genAIProvider(p tape.Provider) string {
	switch p {
	case tape.ProviderAnthropic:
		return "anthropic"
	case tape.ProviderOpenAIChat, tape.ProviderOpenAIResponses:
		return "openai"
	}
	return string(p)
}

// conversationID is the harness's id of the session a tape recorded: Claude Code's
// session id, Codex's main thread id (the one codex exec resume takes), else the tape id.
func conversationID(tp *tape.Tape) string {
	main := tp.Main()
	if main == nil || len(main.Steps) == 0 {
		return tp.Meta.TapeID
	}
	h := main.Steps[0].Request.Headers
	if id := h["x-claude-code-session-id"]; uuidRE.MatchString(id) {
		return id
	}
	for _, name := range []string{"thread-id", "session-id"} {
		if id := h[name]; uuidRE.MatchString(id) {
			return id
		}
	}
	return tp.Meta.TapeID
}

// serverAddress is the public API host of a provider, for server.address: the tape does not
// say which upstream the gateway used (tapebox record --upstream may have named another).
func serverAddress(p tape.Provider) string {
	switch p {
	case tape.ProviderAnthropic:
		return "api.anthropic.com"
	case tape.ProviderOpenAIChat, tape.ProviderOpenAIResponses:
		return "api.openai.com"
	}
	return ""
}

// ExportOTLP writes a tape as OTLP/JSON traces following the OpenTelemetry GenAI semantic
// conventions: one trace per tape; per thread an invoke_agent span (a subagent's is the
// child of the execute_tool span of the call that spawned it); in it a chat span per model
// call (provider, server.address, request and response model, response id, token usage,
// finish reasons; error.type, the HTTP status, when the call failed) and an execute_tool
// span per tool call (tool name and call id), timed by the tape's clock. Every span carries
// gen_ai.conversation.id, the harness's session id (conversationID). It needs the recorded
// timing and raw responses: an imported tape has only the timing its session file's
// timestamps give (meta.labels tapebox.timing), and no response ids.
func ExportOTLP(tp *tape.Tape) ([]byte, error) {
	if Imported(tp) && tp.Meta.Labels[LabelTiming] == "" {
		return nil, &MissingError{Format: OTLP, TapeID: tp.Meta.TapeID, Missing: "raw bodies or timing (it was imported from " + cmp.Or(tp.Meta.Labels[LabelImportedFrom], "a session file") + ": meta.labels " + LabelForm + "=" + tp.Meta.Labels[LabelForm] + ")",
			Why: "OTLP spans need the recorded request and response times and the response ids and models of the raw bodies"}
	}
	trace := tp.Meta.TapeID
	if len(trace) != 32 || strings.Trim(trace, "0123456789abcdef") != "" {
		trace = hexFrom(32, "trace", tp.Meta.TapeID)
	}
	spanID := func(parts ...string) string { return hexFrom(16, append([]string{tp.Meta.TapeID}, parts...)...) }
	nanos := func(ms float64) string {
		return strconv.FormatInt(tp.Meta.StartedAt.Add(time.Duration(ms*float64(time.Millisecond))).UnixNano(), 10)
	}
	toolSpan := map[string]string{}
	for _, th := range tp.Threads {
		for _, s := range th.Steps {
			for _, c := range s.ToolCalls {
				toolSpan[c.ID] = spanID("tool", th.ID, c.ID)
			}
		}
	}
	var spans []otlpSpan
	conv := str("gen_ai.conversation.id", conversationID(tp))
	server := serverAddress(tp.Meta.Provider)
	for _, th := range tp.Threads {
		if len(th.Steps) == 0 {
			continue
		}
		threadSpan := spanID("thread", th.ID)
		parent := ""
		name := cmp.Or(tp.Meta.Harness, "agent")
		if th.Parent != nil {
			parent = toolSpan[th.Parent.ToolCallID]
			name = "subagent " + th.ID
		}
		start, end := th.Steps[0].Timing.RequestAt, 0.0
		for i, s := range th.Steps {
			t := s.Timing
			end = max(end, t.LastByteAt)
			model := tape.StepModel(&tp.Meta, s)
			attrs := []otlpKV{str("gen_ai.operation.name", "chat"), str("gen_ai.provider.name", genAIProvider(tp.Meta.Provider)),
				str("gen_ai.request.model", model), str("gen_ai.response.model", cmp.Or(responseModel(s), model)), conv}
			if server != "" {
				attrs = append(attrs, str("server.address", server))
			}
			if id := responseID(s); id != "" {
				attrs = append(attrs, str("gen_ai.response.id", id))
			}
			u := s.Response.Usage
			attrs = append(attrs, num("gen_ai.usage.input_tokens", u.InputTokens+u.CacheReadInputTokens+u.CacheCreationInputTokens),
				num("gen_ai.usage.output_tokens", u.OutputTokens),
				num("gen_ai.usage.cache_read.input_tokens", u.CacheReadInputTokens),
				num("gen_ai.usage.cache_creation.input_tokens", u.CacheCreationInputTokens),
				num("tapebox.step", int64(i)), str("tapebox.thread", th.ID), num("http.response.status_code", int64(s.Response.Status)))
			if s.Response.StopReason != "" {
				attrs = append(attrs, strs("gen_ai.response.finish_reasons", s.Response.StopReason))
			}
			sp := otlpSpan{TraceID: trace, SpanID: spanID("chat", th.ID, strconv.Itoa(i)), ParentSpanID: threadSpan, Name: "chat " + model, Kind: spanClient,
				StartTimeUnixNano: nanos(t.RequestAt), EndTimeUnixNano: nanos(t.LastByteAt), Attributes: attrs}
			if s.Response.Status >= 400 {
				sp.Status = &otlpStatus{Code: statusError, Message: fmt.Sprintf("HTTP %d", s.Response.Status)}
				sp.Attributes = append(sp.Attributes, str("error.type", strconv.Itoa(s.Response.Status)))
			}
			spans = append(spans, sp)
			for _, c := range s.ToolCalls {
				from, to := t.LastByteAt, resultsAt(t)
				r, ok := s.ToolResult(c.ID)
				if ok && r.DurationMS != nil {
					to = from + *r.DurationMS
				}
				end = max(end, to)
				kind := "function"
				if c.Kind == "custom" {
					kind = "extension"
				}
				ts := otlpSpan{TraceID: trace, SpanID: toolSpan[c.ID], ParentSpanID: threadSpan, Name: "execute_tool " + c.Name, Kind: spanInternal,
					StartTimeUnixNano: nanos(from), EndTimeUnixNano: nanos(to),
					Attributes: []otlpKV{str("gen_ai.operation.name", "execute_tool"), str("gen_ai.tool.name", c.Name), str("gen_ai.tool.call.id", c.ID), str("gen_ai.tool.type", kind), conv}}
				if ok && r.IsError {
					ts.Status = &otlpStatus{Code: statusError, Message: "the tool reported an error"}
					ts.Attributes = append(ts.Attributes, str("error.type", "tool_error"))
				}
				spans = append(spans, ts)
			}
		}
		spans = append(spans, otlpSpan{TraceID: trace, SpanID: threadSpan, ParentSpanID: parent, Name: "invoke_agent " + name, Kind: spanInternal,
			StartTimeUnixNano: nanos(start), EndTimeUnixNano: nanos(end),
			Attributes: []otlpKV{str("gen_ai.operation.name", "invoke_agent"), str("gen_ai.agent.name", name), str("gen_ai.agent.id", th.ID),
				str("gen_ai.provider.name", genAIProvider(tp.Meta.Provider)), conv}})
	}
	req := otlpRequest{ResourceSpans: []otlpResourceSpans{{
		Resource: otlpResource{Attributes: []otlpKV{str("service.name", "tapebox"), str("tapebox.tape_id", tp.Meta.TapeID),
			str("tapebox.harness", tp.Meta.Harness), str("tapebox.harness_version", tp.Meta.HarnessVersion)}},
		ScopeSpans: []otlpScopeSpans{{Scope: otlpScope{Name: "github.com/tapebox/tapebox/interop"}, Spans: spans}},
	}}}
	b, err := jsonlex.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("export otlp: %w", err)
	}
	return b, nil
}

// PostOTLP sends an OTLP/JSON export to an OTLP/HTTP receiver: endpoint is its base URL
// (http://host:4318, to which /v1/traces is added) or the full traces URL.
func PostOTLP(ctx context.Context, client *http.Client, endpoint string, body []byte) error {
	u, err := url.Parse(endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("post otlp: endpoint %q: want http(s)://host:port[/v1/traces]", endpoint)
	}
	if u.Path == "" || u.Path == "/" {
		u.Path = "/v1/traces"
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("post otlp to %s: %w", u, err)
	}
	req.Header.Set("Content-Type", "application/json")
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("post otlp to %s: %w", u, err)
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("post otlp to %s: %s: %s", u, resp.Status, strings.TrimSpace(string(msg)))
	}
	return nil
}
