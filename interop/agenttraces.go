package interop

import (
	"encoding/json"
	"fmt"

	"github.com/tapebox/tapebox/internal/jsonlex"
	"github.com/tapebox/tapebox/tape"
)

// AgentTrace is one session file of a tape in the Hugging Face Hub's agent-traces schema:
// the columns the Hub's `datasets` library gives a session file it recognizes (harness,
// session_id, prompt, messages, tools, metadata, sent_at, num_user_messages,
// num_tool_calls, trace, file_path), which its trace viewer shows. The values are what
// the Hub derives from the file itself, taken from the tape instead of parsed back.
type AgentTrace struct {
	// Path is the session file, as File.Path names it.
	Path string
	// Harness is the Hub's id of the harness (claude_code, codex) or, for a Session Trace
	// Simple file, the tape's harness.
	Harness string
	// SessionID is the session id the file gives: Claude Code's sessionId (a subagent's
	// file gives its parent session's), a Codex thread id, an STS session id.
	SessionID string
	// Prompt is what the user typed first, and SentAt when (2026-04-01T10:01:00.000Z);
	// nil when the thread has no user text.
	Prompt *string
	SentAt *string
	// Messages is the thread's conversation as chat messages (role, content, and for the
	// assistant reasoning_content and tool_calls, for a tool result tool_call_id and
	// name), one JSON object each; Tools the tools its requests offered, in the
	// {"type": "function", "function": {...}} form, each once.
	Messages []json.RawMessage
	Tools    []json.RawMessage
	// Metadata is a JSON object: the tape and thread ids, the parent tool call of a
	// subagent, model, provider, working directory, harness version, counts and usage.
	Metadata json.RawMessage
	// NumUserMessages counts the user's prompts (the first and each follow-up), not tool
	// results; NumToolCalls the tool calls of the thread's answers.
	NumUserMessages int64
	NumToolCalls    int64
	// Trace is the session file's content.
	Trace []byte
}

// HubFormat is the session-file format a tape is published in for the Hub's trace viewer:
// Claude Code's own files for an Anthropic Messages tape of Claude Code with a working
// directory, Codex's rollouts for an OpenAI Responses tape of Codex with one, the Session
// Trace Simple format for any other tape.
func HubFormat(tp *tape.Tape) Format {
	switch {
	case tp.Meta.Harness == "claude-code" && tp.Meta.Provider == tape.ProviderAnthropic && tp.Meta.Cwd != "":
		return ClaudeCode
	case tp.Meta.Harness == "codex" && tp.Meta.Provider == tape.ProviderOpenAIResponses && tp.Meta.Cwd != "":
		return Codex
	}
	return STS
}

// AgentTraces exports a tape in its HubFormat and describes each session file in the
// Hub's agent-traces schema, one per thread the files hold. It returns the format and
// the files too (a subagent's .meta.json among them, which no row describes).
func AgentTraces(tp *tape.Tape, opts Options) (Format, []File, []AgentTrace, error) {
	f := HubFormat(tp)
	files, err := Export(tp, f, opts)
	if err != nil {
		return f, nil, nil, err
	}
	threads := map[string]*tape.Thread{}
	for _, th := range tp.Threads {
		threads[th.ID] = th
	}
	var out []AgentTrace
	for _, fl := range files {
		th := threads[fl.Thread]
		if th == nil {
			continue
		}
		row, err := agentTrace(tp, th, f, fl)
		if err != nil {
			return f, nil, nil, fmt.Errorf("agent traces: tape %s: thread %s: %w", tp.Meta.TapeID, th.ID, err)
		}
		out = append(out, row)
	}
	return f, files, out, nil
}

// hubHarness is the Hub's id of a harness (the trace viewer's, as `datasets` names it).
func hubHarness(tp *tape.Tape, f Format) string {
	switch f {
	case ClaudeCode:
		return "claude_code"
	case Codex:
		return "codex"
	}
	if tp.Meta.Harness == "" {
		return "tapebox" // as the STS header says
	}
	return tp.Meta.Harness
}

// Chat messages in the form the agent-traces schema's messages column holds (OpenAI's
// chat shape, as the Hub's converter writes it).
type (
	atMessage struct {
		Role             string       `json:"role"`
		Content          string       `json:"content"`
		ReasoningContent string       `json:"reasoning_content,omitempty"`
		ToolCalls        []atToolCall `json:"tool_calls,omitempty"`
		ToolCallID       string       `json:"tool_call_id,omitempty"`
		Name             string       `json:"name,omitempty"`
	}
	atToolCall struct {
		ID       string     `json:"id"`
		Type     string     `json:"type"`
		Function atFunction `json:"function"`
	}
	atFunction struct {
		Name string `json:"name"`
		// Arguments is the call's input: a JSON object, or a string for a freeform call.
		Arguments json.RawMessage `json:"arguments"`
	}
	atTool struct {
		Type     string         `json:"type"`
		Function atToolFunction `json:"function"`
	}
	atToolFunction struct {
		Name        string          `json:"name"`
		Description string          `json:"description,omitempty"`
		Parameters  json.RawMessage `json:"parameters,omitempty"`
	}
	atMetadata struct {
		SessionID        string     `json:"session_id"`
		TraceType        string     `json:"trace_type"`
		TapeID           string     `json:"tape_id"`
		ThreadID         string     `json:"thread_id"`
		ParentThreadID   *string    `json:"parent_thread_id"`
		ParentToolCallID *string    `json:"parent_tool_call_id"`
		Harness          string     `json:"harness"`
		CLIVersion       string     `json:"cli_version"`
		Provider         string     `json:"provider"`
		Model            string     `json:"model"`
		Cwd              *string    `json:"cwd"`
		TurnCount        int64      `json:"turn_count"`
		NumSteps         int        `json:"num_steps"`
		Usage            tape.Usage `json:"usage"`
		FirstMessageAt   *string    `json:"first_message_timestamp"`
		EndedReason      *string    `json:"ended_reason"`
	}
)

// agentTrace describes the file fl, which holds thread th.
func agentTrace(tp *tape.Tape, th *tape.Thread, f Format, fl File) (AgentTrace, error) {
	row := AgentTrace{Path: fl.Path, Harness: hubHarness(tp, f), Trace: fl.Data, Messages: []json.RawMessage{}, Tools: []json.RawMessage{}}
	switch f {
	case ClaudeCode:
		row.SessionID = ClaudeSessionID(tp)
	case Codex:
		row.SessionID = CodexThreadID(tp, th)
	default:
		row.SessionID = tp.Meta.TapeID + "-" + th.ID
	}
	var msgs []atMessage
	if p := prompt(th); p != "" {
		sent := at(tp, th.Steps[0].Timing.RequestAt)
		row.Prompt, row.SentAt = &p, &sent
		row.NumUserMessages++
		if s := th.Steps[0].Request.System; s != "" {
			msgs = append(msgs, atMessage{Role: "system", Content: s})
		}
		msgs = append(msgs, atMessage{Role: "user", Content: p})
	}
	names := map[string]string{} // tool call id: tool name
	var usage tape.Usage
	seenTool := map[string]bool{}
	for i, s := range th.Steps {
		for _, t := range s.Request.Tools {
			if seenTool[t.Name] {
				continue
			}
			seenTool[t.Name] = true
			b, err := jsonlex.Marshal(atTool{Type: "function", Function: atToolFunction{Name: t.Name, Description: t.Description, Parameters: t.InputSchema}})
			if err != nil {
				return row, err
			}
			row.Tools = append(row.Tools, b)
		}
		if text := followUp(th, i); text != "" {
			msgs = append(msgs, atMessage{Role: "user", Content: text})
			row.NumUserMessages++
		}
		m := atMessage{Role: "assistant"}
		m.Content, m.ReasoningContent = answerText(s.Response.Content)
		for _, c := range s.ToolCalls {
			args := input(c.Input)
			if c.Kind == "custom" {
				// A freeform call's input is its text, as a JSON string.
				if b, err := jsonlex.Marshal(freeform(c.Input)); err == nil {
					args = b
				}
			}
			m.ToolCalls = append(m.ToolCalls, atToolCall{ID: c.ID, Type: "function", Function: atFunction{Name: c.Name, Arguments: args}})
			names[c.ID] = c.Name
			row.NumToolCalls++
		}
		msgs = append(msgs, m)
		for _, r := range s.ToolResults {
			msgs = append(msgs, atMessage{Role: "tool", ToolCallID: r.ToolCallID, Name: names[r.ToolCallID], Content: stsResultText(r)})
		}
		usage = usage.Add(s.Response.Usage)
	}
	for _, m := range msgs {
		b, err := jsonlex.Marshal(m)
		if err != nil {
			return row, err
		}
		row.Messages = append(row.Messages, b)
	}
	md := atMetadata{SessionID: row.SessionID, TraceType: row.Harness, TapeID: tp.Meta.TapeID, ThreadID: th.ID, Harness: tp.Meta.Harness,
		CLIVersion: tp.Meta.HarnessVersion, Provider: string(tp.Meta.Provider), Model: tp.Meta.Model, TurnCount: row.NumUserMessages,
		NumSteps: len(th.Steps), Usage: usage, FirstMessageAt: row.SentAt}
	if len(th.Steps) > 0 {
		md.Model = tape.StepModel(&tp.Meta, th.Steps[0]) // a subagent's may differ from the tape's
	}
	if th.Parent != nil {
		md.ParentThreadID, md.ParentToolCallID = &th.Parent.ThreadID, &th.Parent.ToolCallID
	}
	if tp.Meta.Cwd != "" {
		md.Cwd = &tp.Meta.Cwd
	}
	if tp.Meta.Ended != nil {
		r := string(tp.Meta.Ended.Reason)
		md.EndedReason = &r
	}
	b, err := jsonlex.Marshal(md)
	if err != nil {
		return row, err
	}
	row.Metadata = b
	return row, nil
}
