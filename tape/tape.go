package tape

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/tapebox/tapebox/internal/jsonlex"
)

// Version is the tape format version this package reads and writes.
const Version = 1

// Provider names a wire format (an API shape), not a vendor's product.
type Provider string

// The wire formats a tape can hold.
const (
	// ProviderUnknown: a recording that has seen no model call yet.
	ProviderUnknown Provider = ""
	// ProviderAnthropic is the Anthropic Messages API (POST /v1/messages).
	ProviderAnthropic Provider = "anthropic"
	// ProviderOpenAIChat is the OpenAI Chat Completions API (POST /v1/chat/completions).
	ProviderOpenAIChat Provider = "openai-chat"
	// ProviderOpenAIResponses is the OpenAI Responses API (POST /v1/responses).
	ProviderOpenAIResponses Provider = "openai-responses"
	// ProviderGemini is the Gemini API (POST /v1beta/models/MODEL:generateContent and
	// :streamGenerateContent).
	ProviderGemini Provider = "gemini"
)

// EndReason says how a run ended.
type EndReason string

// The ways a run can end.
const (
	// EndComplete: the agent finished and the recorder (or replay) was closed normally.
	EndComplete EndReason = "complete"
	// EndCut: the run was stopped from outside (signal, POST /tapebox/end) before the agent finished,
	// or a replay was stopped by the user.
	EndCut EndReason = "cut"
	// EndUpstreamError: the provider failed (network error, 5xx) and the agent gave up.
	EndUpstreamError EndReason = "upstream_error"
	// EndDiverged: a replay's sandbox or harness did something the tape did not.
	EndDiverged EndReason = "diverged"
	// EndError: TapeBox itself failed (sandbox lost, executor error, disk full).
	EndError EndReason = "error"
	// EndBudget: the recorder's breaker stopped the run (a cost, step, token or repeat
	// limit); Ended.Limit names the limit and Ended.Detail the figure.
	EndBudget EndReason = "budget"
)

// EndReasons lists every valid EndReason, for validation and schemas.
var EndReasons = []EndReason{EndComplete, EndCut, EndUpstreamError, EndDiverged, EndError, EndBudget}

// Tape is one agent run: the model calls of every conversation (thread) the harness held,
// with the tool calls the model asked for and the tool results the harness sent back.
type Tape struct {
	Version int       `json:"version"`
	Meta    Meta      `json:"meta"`
	Threads []*Thread `json:"threads"`
	// Digest is the tape's tamper-evidence record (see Digest); nil in a tape written
	// without digests.
	Digest *Digest `json:"digest,omitempty"`
}

// Meta describes the run as a whole.
type Meta struct {
	TapeID         string   `json:"tape_id"`
	Harness        string   `json:"harness"`
	HarnessVersion string   `json:"harness_version"`
	Provider       Provider `json:"provider"`
	// Model is the agent's model: the one its first request offering tools names (a side
	// request before it, such as OpenCode's title request to its small model, does not
	// count), else the first request's. Each step's own is StepModel.
	Model string `json:"model"`
	// Cwd is the working directory the agent ran in, as an absolute path in the machine or
	// container it ran on; empty when unknown. A replay in a Docker sandbox runs there by
	// default; a replay tape holds the directory the replay ran in.
	Cwd       string            `json:"cwd,omitempty"`
	StartedAt time.Time         `json:"started_at"`
	Task      map[string]string `json:"task"`
	ReplayOf  *string           `json:"replay_of"`
	Labels    map[string]string `json:"labels"`
	// Workspace is the working directory's start snapshot and end manifest; nil when the
	// recording did not take them.
	Workspace *Workspace `json:"workspace,omitempty"`
	// Limits are the breaker's limits the recording ran under; nil when it ran without.
	Limits *Limits `json:"limits,omitempty"`
	// ForkedFrom is set on a fork tape (tapebox fork): the recording it forked from, where,
	// and which of its steps were served from that recording. Nil for any other tape.
	ForkedFrom *ForkedFrom `json:"forked_from,omitempty"`
	// Ended is nil while the run is in progress. A tape on disk whose Ended is nil was
	// either still being written or its writer was killed: treat it as cut short.
	Ended *Ended `json:"ended"`
	// Redactions lists what tapebox redact removed from the tape, in the order it removed
	// it: the rule and the place, never the value. Empty for a tape never redacted.
	Redactions []Redaction `json:"redactions,omitempty"`
}

// Redaction is one value tapebox redact removed (replaced with RedactedValue).
type Redaction struct {
	// Rule is the secret-scan rule that found it (aws-access-token) or "pattern:REGEX".
	Rule string `json:"rule"`
	// Pointer is the JSON pointer of the string it was removed from (of the member, for
	// a member name; its new name). For the start snapshot it is /meta/workspace/snapshot/
	// and the entry's name in the redacted snapshot, as one escaped token.
	Pointer string `json:"pointer"`
}

// ForkedFrom says where a fork tape parted from its recording. Its first Served[id] steps of
// thread id were served from the recording (their requests and answers are the harness's
// requests and the recorded answers, as in a simulator replay); every later step was
// recorded live from the upstream, as in a recording.
type ForkedFrom struct {
	// TapeID is the recording's meta.tape_id.
	TapeID string `json:"tape_id"`
	// Thread and Step are the fork point: the first step of that thread that went to the
	// upstream, numbered from 0 as inspect prints it.
	Thread string `json:"thread"`
	Step   int    `json:"step"`
	// Served counts, per thread id, the steps served from the recording.
	Served map[string]int `json:"served"`
	// Overrides are what the live steps changed in each request: "model" (the model
	// field) and "system_append" (text appended to the system prompt); empty when none.
	Overrides map[string]string `json:"overrides"`
}

// FromTape says whether step si of thread id was served from the recording (always false
// for a tape that is not a fork).
func (f *ForkedFrom) FromTape(thread string, si int) bool {
	return f != nil && si < f.Served[thread]
}

// Ended says how and when a run ended.
type Ended struct {
	Reason EndReason `json:"reason"`
	At     time.Time `json:"at"`
	// Detail is a human explanation: the upstream error, the diverging step, the signal.
	Detail string `json:"detail,omitempty"`
	// Limit names the breaker limit that ended a run with EndBudget (max_cost, max_steps,
	// max_thread_steps, max_tokens, max_repeat); empty otherwise.
	Limit string `json:"limit,omitempty"`
}

// Limits are a recorder's breaker limits; a zero field is no limit.
type Limits struct {
	// MaxCostUSD bounds the run's cost at the price table's prices.
	MaxCostUSD float64 `json:"max_cost_usd,omitempty"`
	// MaxSteps bounds the model calls of the run; MaxThreadSteps those of one thread.
	MaxSteps       int `json:"max_steps,omitempty"`
	MaxThreadSteps int `json:"max_thread_steps,omitempty"`
	// MaxTokens bounds the tokens of the run (input, output, cache read and write).
	MaxTokens int64 `json:"max_tokens,omitempty"`
	// MaxRepeat is how many consecutive requests of a thread may repeat an earlier step's
	// tool calls.
	MaxRepeat int `json:"max_repeat,omitempty"`
}

// Thread is one conversation: the main agent's, or a subagent's.
type Thread struct {
	ID string `json:"id"`
	// Parent is the tool call that spawned this thread; nil for the main thread.
	Parent *Parent `json:"parent"`
	Steps  []*Step `json:"steps"`
}

// Parent points at the tool call that spawned a thread. On disk it is the pair
// [thread id, tool call id].
type Parent struct {
	ThreadID   string
	ToolCallID string
}

// MarshalJSON encodes p as [thread id, tool call id], as json.Marshal encodes the pair
// (HTML escaped). It is written by hand, and UnmarshalJSON decodes with jsonlex, so that
// the executor, which links the field table, links no encoding/json.
func (p Parent) MarshalJSON() ([]byte, error) {
	b := jsonlex.AppendString([]byte("["), p.ThreadID, true)
	return append(jsonlex.AppendString(append(b, ','), p.ToolCallID, true), ']'), nil
}

// UnmarshalJSON decodes [thread id, tool call id].
func (p *Parent) UnmarshalJSON(b []byte) error {
	var pair []string
	if err := jsonlex.Unmarshal(b, &pair); err != nil {
		return fmt.Errorf("parent: want [thread id, tool call id]: %w", err)
	}
	if len(pair) != 2 {
		return fmt.Errorf("parent: want [thread id, tool call id], got %d elements", len(pair))
	}
	p.ThreadID, p.ToolCallID = pair[0], pair[1]
	return nil
}

// Step is one model call: what the harness sent, what the model answered, the tool calls
// in the answer, and the results of those calls as the harness reported them in the
// thread's next request.
type Step struct {
	Request     Request      `json:"request"`
	Response    Response     `json:"response"`
	ToolCalls   []ToolCall   `json:"tool_calls"`
	ToolResults []ToolResult `json:"tool_results"`
	Timing      Timing       `json:"timing"`
	// ServedFromTape marks a step of a fork tape that was answered from the recording, not
	// by the live upstream (see ForkedFrom); omitted (false) everywhere else.
	ServedFromTape bool `json:"served_from_tape,omitempty"`
	// Digest is "sha256:HEX", the link of this step in its thread's chain (see Digest);
	// empty in a tape written without digests.
	Digest string `json:"digest,omitempty"`
}

// Request is a model call as the harness sent it. System, Messages, Tools and Params are
// derived from Raw by the provider adapter (package tape/provider).
type Request struct {
	// Path is the request URI (path and query) as sent, credentials in the query redacted
	// (RedactURL).
	Path     string                     `json:"path"`
	System   string                     `json:"system"`
	Messages []Message                  `json:"messages"`
	Tools    []Tool                     `json:"tools"`
	Params   map[string]json.RawMessage `json:"params"`
	Stream   bool                       `json:"stream"`
	Headers  Headers                    `json:"headers"`
	Raw      json.RawMessage            `json:"raw"`
}

// Headers are HTTP headers, lower-cased names, one value each (repeated headers are joined
// with ", "), with credentials redacted.
type Headers map[string]string

// Message is one turn of a conversation in normalized form.
type Message struct {
	// Role is user, assistant, system (instructions that arrive inside the conversation,
	// as Claude Code's role:system entries and OpenAI's developer messages), or tool.
	Role    string  `json:"role"`
	Content []Block `json:"content"`
}

// Block types.
const (
	BlockText       = "text"
	BlockThinking   = "thinking"
	BlockToolUse    = "tool_use"
	BlockToolResult = "tool_result"
	BlockImage      = "image"
	// BlockOther holds a block this version does not model; Raw keeps it whole.
	BlockOther = "other"
)

// Block is one piece of content.
type Block struct {
	Type string `json:"type"`
	Text string `json:"text,omitempty"`
	// ID and Name identify a tool_use block; Input is its arguments.
	ID    string          `json:"id,omitempty"`
	Name  string          `json:"name,omitempty"`
	Input json.RawMessage `json:"input,omitempty"`
	// ToolCallID, Content and IsError describe a tool_result block.
	ToolCallID string  `json:"tool_call_id,omitempty"`
	Content    []Block `json:"content,omitempty"`
	IsError    bool    `json:"is_error,omitempty"`
	// Raw keeps the provider's own form of blocks of type image and other.
	Raw json.RawMessage `json:"raw,omitempty"`
}

// Tool is a tool offered to the model.
type Tool struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	// Kind is "function" for tools with a JSON input schema, "custom" for freeform tools
	// (Codex apply_patch), or the provider's own type for built-in tools (web_search).
	Kind        string          `json:"kind"`
	InputSchema json.RawMessage `json:"input_schema,omitempty"`
}

// Response is the model's answer. Content, StopReason and Usage are derived from Raw (a JSON
// body) or Chunks (a stream) by the provider adapter.
type Response struct {
	Status     int     `json:"status"`
	Headers    Headers `json:"headers"`
	Content    []Block `json:"content"`
	StopReason string  `json:"stop_reason"`
	Usage      Usage   `json:"usage"`
	// Raw is the response body when it was not a stream: JSON as received, or a JSON string
	// holding a body that was not JSON. Null for a stream.
	Raw json.RawMessage `json:"raw"`
	// Chunks is the stream as received, one server-sent event each; empty when not a stream.
	Chunks []Chunk `json:"chunks"`
}

// Usage counts tokens. Cache counts are zero when the provider did not report them.
type Usage struct {
	InputTokens              int64 `json:"input_tokens"`
	OutputTokens             int64 `json:"output_tokens"`
	CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
	CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
	ReasoningTokens          int64 `json:"reasoning_tokens"`
}

// Add returns the sum of u and v.
func (u Usage) Add(v Usage) Usage {
	return Usage{
		InputTokens:              u.InputTokens + v.InputTokens,
		OutputTokens:             u.OutputTokens + v.OutputTokens,
		CacheReadInputTokens:     u.CacheReadInputTokens + v.CacheReadInputTokens,
		CacheCreationInputTokens: u.CacheCreationInputTokens + v.CacheCreationInputTokens,
		ReasoningTokens:          u.ReasoningTokens + v.ReasoningTokens,
	}
}

// Chunk is one server-sent event of a streamed response, verbatim (the "event:" and "data:"
// lines and the blank line that ends the event).
type Chunk struct {
	// AtMS is milliseconds since the step's request_at.
	AtMS float64 `json:"at_ms"`
	Data string  `json:"data"`
}

// ToolCall is a tool call parsed from a response.
type ToolCall struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	// Input is the call's arguments, a JSON object. A freeform (custom) tool's text input is
	// stored as {"input": TEXT}, the shape older harness versions used for the same tool.
	Input json.RawMessage `json:"input"`
	// Kind is "function" or "custom" (freeform input); empty means function.
	Kind string `json:"kind,omitempty"`
	// Namespace is the namespace an OpenAI Responses function_call names for a tool of a
	// deferred tool namespace (Codex's multi_agent_v1 tools); empty for every other call.
	// A harness finds such a tool by namespace and name.
	Namespace string `json:"namespace,omitempty"`
}

// ToolResult is a tool call's result, as the harness reported it in the thread's next
// request (in a recording) or as the sandbox produced it (in a replay).
type ToolResult struct {
	ToolCallID string  `json:"tool_call_id"`
	Content    []Block `json:"content"`
	IsError    bool    `json:"is_error"`
	// DurationMS is how long the tool ran, when known (a replay measures it; a recording
	// does not see it).
	DurationMS *float64 `json:"duration_ms"`
	// CopiedFromTape marks a replay's result that the executor did not produce by running
	// the call: it copied the recorded result (a tool with no effect in the sandbox, such as
	// an MCP tool or a web fetch, or one it cannot perform there). Compare reports these as
	// not run. Omitted (false) everywhere else.
	CopiedFromTape bool `json:"copied_from_tape,omitempty"`
}

// Text returns the concatenated text of the result's text blocks.
func (r ToolResult) Text() string { return BlocksText(r.Content) }

// BlocksText concatenates the text of text blocks.
func BlocksText(bs []Block) string {
	var s string
	for _, b := range bs {
		if b.Type == BlockText {
			s += b.Text
		}
	}
	return s
}

// Timing of a step, in milliseconds since Meta.StartedAt.
type Timing struct {
	RequestAt   float64 `json:"request_at"`
	FirstByteAt float64 `json:"first_byte_at"`
	LastByteAt  float64 `json:"last_byte_at"`
	// NextRequestAt is when the thread's next request arrived; nil for a thread's last step.
	NextRequestAt *float64 `json:"next_request_at"`
}

// ErrUnsupportedVersion is returned when a tape has a version this package does not read.
var ErrUnsupportedVersion = errors.New("unsupported tape version")

// New returns an empty tape of the current version with a fresh id.
func New(provider Provider, startedAt time.Time) *Tape {
	return &Tape{
		Version: Version,
		Meta: Meta{
			TapeID:    NewID(),
			Provider:  provider,
			StartedAt: startedAt.UTC(),
			Task:      map[string]string{},
			Labels:    map[string]string{},
		},
		Threads: []*Thread{},
	}
}

// MS converts a point in time into milliseconds since the tape's start, rounded to
// microseconds.
func (t *Tape) MS(at time.Time) float64 {
	return RoundMS(at.Sub(t.Meta.StartedAt))
}

// RoundMS converts a duration to milliseconds, rounded to microseconds so that encodings
// stay short and stable.
func RoundMS(d time.Duration) float64 {
	return float64(d.Microseconds()) / 1000
}

// MarksErrors says whether a wire format can tell a failed tool result from a good one
// (Anthropic's is_error, a Gemini functionResponse's "error"); the OpenAI formats cannot.
func (p Provider) MarksErrors() bool {
	return p != ProviderOpenAIChat && p != ProviderOpenAIResponses
}

// Flat is a result's content as one text to compare: text blocks as they are, other blocks
// as their JSON, one block a line.
func (r ToolResult) Flat() string {
	var b strings.Builder
	for i, blk := range r.Content {
		if i > 0 {
			b.WriteString("\n")
		}
		if blk.Type == BlockText {
			b.WriteString(blk.Text)
			continue
		}
		j, _ := json.Marshal(blk)
		b.Write(j)
	}
	return b.String()
}
