package fakeprovider

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/tapebox/tapebox/internal/jsonlex"
	"github.com/tapebox/tapebox/tape"
)

// Script is what the fake model answers: one list of turns per thread.
type Script struct {
	// Threads are the conversations the server knows. Thread names must be unique.
	Threads []Thread
	// Match picks the thread of a model call by name; "" means no thread. Nil means: the
	// thread whose Marker appears in the request's opening text (see Request.Opening; the
	// longest such marker wins), else the first thread with an empty Marker.
	Match func(r *Request) string
	// Models are the model ids GET .../models lists; empty means ["fake-model"].
	Models []string
	// PieceSize is the number of bytes per streamed text or argument delta (split on
	// character boundaries); 0 means 16.
	PieceSize int
}

// ByModel is a Script.Match that picks the thread threads names for the request body's
// "model" field; "" (no thread) for a model it does not name or a body that is not JSON.
func ByModel(threads map[string]string) func(r *Request) string {
	return func(r *Request) string {
		var b struct{ Model string }
		if json.Unmarshal(r.Body, &b) != nil {
			return ""
		}
		return threads[b.Model]
	}
}

// Thread is one conversation of the script.
type Thread struct {
	// Name identifies the thread and goes into the ids of its answers.
	Name string
	// Marker selects the thread's requests with DefaultMatch: a string that appears in the
	// thread's opening text (the prompt given to the harness, or a subagent's prompt). A
	// thread with an empty Marker takes the requests no other thread matches.
	Marker string
	// Turns are the model's answers in order: the request with n assistant turns already in
	// it gets Turns[n].
	Turns []Turn
	// Repeat makes the last turn answer every later step too: a thread for a harness's side
	// requests, which carry as much of the conversation they look at as the harness likes
	// (Gemini CLI's loop detection sends the last 20 messages of a run of any length).
	// Without it, a step past the last turn is unscripted (Server.Err reports it).
	Repeat bool
}

// Turn is one model answer: text, tool calls, or both (text first).
type Turn struct {
	// Text is the answer's text; with no Calls it ends the agent's turn.
	Text string
	// Calls are the tool calls the model asks for, in order. An empty ID is filled in
	// deterministically from the thread name, the step and the call's position.
	Calls []tape.ToolCall
	// Namespaces gives, by call name, the namespace a Responses function_call carries
	// (Codex's multi_agent_v1 tools: {"spawn_agent": "multi_agent_v1"}). Other wire
	// formats have none and ignore it.
	Namespaces map[string]string
	// Items are further Responses output items, sent whole before the text and the calls
	// (Codex's tool_search_call, which loads a deferred tool namespace). Other wire formats
	// ignore them.
	Items []map[string]any
	// Fault, when set, spoils or slows the answer to this step.
	Fault *Fault
	// Dynamic, when set, computes the turn from the request instead (the fields above are
	// ignored): a model that reacts to what the harness sent, such as an id it made up.
	// It is called on the request's goroutine, once per attempt.
	Dynamic func(r *Request) Turn
}

// Fault changes how a step is answered, for testing what sits between a harness and its
// provider. Status answers with an error instead of the turn; the delays and Cut apply to
// the turn itself.
type Fault struct {
	// Times is how many attempts at the step the fault affects: 0 means the first attempt
	// only, a negative number means every attempt. Later attempts get the plain turn.
	Times int
	// Status, when non-zero, answers with this HTTP status and Body instead of the turn.
	Status int
	// Body is the error body; empty means a JSON error in the wire format's own shape.
	Body string
	// RetryAfter, when set, is sent as the Retry-After header.
	RetryAfter string
	// Header holds further headers to send with the answer.
	Header http.Header
	// FirstByte is how long to wait before sending anything.
	FirstByte time.Duration
	// BetweenChunks is how long to wait between two events of a stream.
	BetweenChunks time.Duration
	// Cut, when positive, drops the connection after that many stream events (or, for a
	// non-streamed answer, after half of the body), without ending the response.
	Cut int
}

// Call returns a function tool call named name whose input is input encoded as JSON
// (json.RawMessage and []byte are taken as JSON text). It panics when input cannot be
// encoded, as regexp.MustCompile does for a bad pattern.
func Call(name string, input any) tape.ToolCall {
	var raw json.RawMessage
	switch v := input.(type) {
	case json.RawMessage:
		raw = v
	case []byte:
		raw = v
	default:
		// Without HTML escaping: a model writes "<" in a command as "<", not "\u003c".
		b, err := jsonlex.Marshal(v)
		if err != nil {
			panic(fmt.Sprintf("fakeprovider.Call(%q): %v", name, err))
		}
		raw = b
	}
	if !json.Valid(raw) {
		panic(fmt.Sprintf("fakeprovider.Call(%q): input is not JSON: %q", name, raw))
	}
	return tape.ToolCall{Name: name, Input: raw, Kind: "function"}
}

// Custom returns a freeform tool call (an OpenAI custom tool such as Codex's apply_patch)
// whose input is text. Like the tape, it stores the text as {"input": text}.
func Custom(name, text string) tape.ToolCall {
	b, _ := jsonlex.Marshal(map[string]string{"input": text})
	return tape.ToolCall{Name: name, Input: b, Kind: "custom"}
}

// pieceSize is the effective delta size.
func (s *Script) pieceSize() int {
	if s.PieceSize > 0 {
		return s.PieceSize
	}
	return 16
}

// thread returns the named thread or nil.
func (s *Script) thread(name string) *Thread {
	for i := range s.Threads {
		if s.Threads[i].Name == name {
			return &s.Threads[i]
		}
	}
	return nil
}

// matchMarker is the default matcher (see Script.Match).
func (s *Script) matchMarker(r *Request) string {
	opening := r.Opening()
	best, fallback := -1, -1
	for i, t := range s.Threads {
		if t.Marker == "" {
			if fallback < 0 {
				fallback = i
			}
			continue
		}
		if len(opening) > 0 && strings.Contains(opening, t.Marker) && (best < 0 || len(t.Marker) > len(s.Threads[best].Marker)) {
			best = i
		}
	}
	if best >= 0 {
		return s.Threads[best].Name
	}
	if fallback >= 0 {
		return s.Threads[fallback].Name
	}
	return ""
}
