package fakeprovider

import (
	"encoding/json"
	"net/http"
	"strings"
	"time"
)

// Endpoint names what the server took a request for.
type Endpoint string

// The endpoints the server knows.
const (
	// EndpointMessages is Anthropic Messages, POST .../messages.
	EndpointMessages Endpoint = "messages"
	// EndpointCountTokens is Anthropic's POST .../messages/count_tokens.
	EndpointCountTokens Endpoint = "count_tokens"
	// EndpointModels is GET .../models or .../models/ID.
	EndpointModels Endpoint = "models"
	// EndpointChat is OpenAI Chat Completions, POST .../chat/completions.
	EndpointChat Endpoint = "chat_completions"
	// EndpointResponses is OpenAI Responses, POST .../responses.
	EndpointResponses Endpoint = "responses"
	// EndpointWebSocket is a WebSocket upgrade on GET .../responses, refused with 426.
	EndpointWebSocket Endpoint = "responses_websocket"
	// EndpointGemini is the Gemini API, POST .../models/MODEL:generateContent or
	// :streamGenerateContent (which streams, whatever the body says).
	EndpointGemini Endpoint = "gemini"
	// EndpointUnknown is any other request, answered 404.
	EndpointUnknown Endpoint = "unknown"
)

// Request is a request the server received, as recorded.
type Request struct {
	// Time is when the request arrived.
	Time time.Time
	// Method, Path and Query are the request line (Query without "?").
	Method, Path, Query string
	// Header holds the request's headers.
	Header http.Header
	// Body is the request body, gzip content-encoding undone.
	Body []byte
	// Endpoint is what the server took the request for.
	Endpoint Endpoint
	// Thread and Step say which turn answered a model call (Thread "" and Step -1 when
	// none did; for other endpoints too).
	Thread string
	Step   int
	// Attempt counts the calls at the same thread and step before this one.
	Attempt int
	// Faulted says a Fault with a Status answered instead of the turn.
	Faulted bool
	// Stream says the client asked for a stream.
	Stream bool

	parsed map[string]json.RawMessage
}

// JSON returns the body's top-level fields (nil when the body is not a JSON object).
func (r *Request) JSON() map[string]json.RawMessage {
	if r.parsed == nil {
		_ = json.Unmarshal(r.Body, &r.parsed)
	}
	return r.parsed
}

// Opening returns the text a conversation starts with: the system prompt (or
// instructions) and the text of the user, system and developer messages before the first
// assistant turn, one per line. Harnesses keep the opening of a thread fixed while the
// thread grows, so it identifies the thread.
func (r *Request) Opening() string {
	var b strings.Builder
	add := func(s string) {
		if s != "" {
			b.WriteString(s)
			b.WriteByte('\n')
		}
	}
	m := r.JSON()
	add(contentText(m["system"]))
	add(contentText(m["instructions"]))
	if r.Endpoint == EndpointGemini {
		var sys struct {
			Parts json.RawMessage `json:"parts"`
		}
		if json.Unmarshal(m["systemInstruction"], &sys) == nil {
			add(contentText(sys.Parts))
		}
	}
	var s string
	if json.Unmarshal(m["input"], &s) == nil {
		add(s)
	}
	for _, msg := range r.items() {
		if msg.isOutput(r.Endpoint) {
			break
		}
		switch msg.Role {
		case "user", "system", "developer":
			add(contentText(msg.Content))
			add(contentText(msg.Parts))
		}
	}
	return b.String()
}

// AssistantTurns returns how many assistant turns the request already holds: the step
// of the conversation it asks for.
//
// Anthropic and Responses count runs of consecutive model output (an assistant message, or
// the output items of one response: message, function_call, custom_tool_call, reasoning
// ...) since one answer may be spread over several entries; Chat Completions counts
// assistant messages, since tool messages separate its answers.
func (r *Request) AssistantTurns() int {
	n := 0
	inRun := false
	for _, it := range r.items() {
		out := it.isOutput(r.Endpoint)
		if r.Endpoint == EndpointChat {
			if out {
				n++
			}
			continue
		}
		if out && !inRun {
			n++
		}
		inRun = out
	}
	return n
}

// item is a message of Anthropic or Chat messages, or an item of Responses input.
type item struct {
	Type    string          `json:"type"`
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
	// Parts is a Gemini content's.
	Parts json.RawMessage `json:"parts"`
}

// items returns the conversation entries of the request.
func (r *Request) items() []item {
	m := r.JSON()
	key := "messages"
	switch r.Endpoint {
	case EndpointResponses:
		key = "input"
	case EndpointGemini:
		key = "contents"
	}
	var items []item
	_ = json.Unmarshal(m[key], &items)
	return items
}

// isOutput says whether the entry is something the model produced.
func (it item) isOutput(e Endpoint) bool {
	if e == EndpointGemini {
		return it.Role == "model"
	}
	if e != EndpointResponses {
		return it.Role == "assistant"
	}
	switch it.Type {
	case "message", "":
		return it.Role == "assistant"
	case "function_call", "custom_tool_call", "reasoning", "local_shell_call", "web_search_call",
		"tool_search_call", "file_search_call", "computer_call", "image_generation_call",
		"code_interpreter_call", "mcp_call":
		return true
	}
	return false
}

// contentText returns the text of a content value: a string, or a list of parts whose
// text fields are joined with newlines.
func contentText(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &parts) != nil {
		return ""
	}
	texts := make([]string, 0, len(parts))
	for _, p := range parts {
		if p.Text != "" {
			texts = append(texts, p.Text)
		}
	}
	return strings.Join(texts, "\n")
}
