package interop

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"time"

	"github.com/tapebox/tapebox/tape"
)

// cxLine is one line of a Codex rollout file.
type cxLine struct {
	Timestamp string `json:"timestamp"`
	Ordinal   int    `json:"ordinal"`
	Type      string `json:"type"`
	Payload   any    `json:"payload"`
}

type cxSessionMeta struct {
	SessionID        string         `json:"session_id"`
	ID               string         `json:"id"`
	ParentThreadID   string         `json:"parent_thread_id,omitempty"`
	Timestamp        string         `json:"timestamp"`
	Cwd              string         `json:"cwd"`
	Originator       string         `json:"originator"`
	CLIVersion       string         `json:"cli_version"`
	Source           any            `json:"source"`
	ThreadSource     string         `json:"thread_source"`
	ModelProvider    string         `json:"model_provider"`
	BaseInstructions map[string]any `json:"base_instructions,omitempty"`
}

type cxTurnContext struct {
	TurnID         string         `json:"turn_id"`
	Cwd            string         `json:"cwd"`
	ApprovalPolicy string         `json:"approval_policy"`
	SandboxPolicy  map[string]any `json:"sandbox_policy"`
	Model          string         `json:"model"`
	Summary        string         `json:"summary"`
}

// CodexThreadID is the Codex thread id of a tape thread: the thread-id header its first
// request carried, else one derived from the tape and thread ids. The main thread's is the
// session id that `codex exec resume` takes.
func CodexThreadID(tp *tape.Tape, th *tape.Thread) string {
	if len(th.Steps) > 0 {
		h := th.Steps[0].Request.Headers
		for _, name := range []string{"thread-id", "session-id"} {
			if id := h[name]; uuidRE.MatchString(id) {
				return id
			}
		}
	}
	// Codex's ids are UUID v7; any UUID is accepted.
	return uuidFrom("codex-thread", tp.Meta.TapeID, th.ID)
}

// LabelCodexModelProvider is the meta.labels key of the model_provider Codex ran with:
// the id of the provider in Codex's config (tapebox record's own is "tapebox"), which no
// request carries. tapebox record takes it from the rollout Codex wrote of the run (or from
// the -c override it passed); a Codex import from the rollout's session_meta. The Codex
// export writes it, as Codex resumes a session only with the provider it names.
const LabelCodexModelProvider = "tapebox.codex_model_provider"

// providerIDRE is what a model_provider id taken from a tape or a file may be: a config
// key (letters, digits, '_', '-', '.').
var providerIDRE = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,64}$`)

func validProviderID(s string) bool { return providerIDRE.MatchString(s) }

// CodexModelProvider is the model_provider a Codex export of tp names: the tape's
// LabelCodexModelProvider when it holds a provider id, else "openai" (Codex's built-in
// provider).
func CodexModelProvider(tp *tape.Tape) string {
	if p := tp.Meta.Labels[LabelCodexModelProvider]; validProviderID(p) {
		return p
	}
	return "openai"
}

// CodexRolloutProvider reads the model_provider of the rollout Codex wrote of thread id
// under codexHome (sessions/YYYY/MM/DD/rollout-*-<id>.jsonl, or archived_sessions/): its
// first line, session_meta. It returns "" when there is no such rollout or it names no
// valid provider id.
func CodexRolloutProvider(codexHome, id string) string {
	if !uuidRE.MatchString(id) {
		return ""
	}
	for _, pattern := range []string{"sessions/*/*/*/rollout-*-" + id + ".jsonl", "archived_sessions/rollout-*-" + id + ".jsonl"} {
		matches, _ := filepath.Glob(filepath.Join(codexHome, pattern))
		for _, m := range matches {
			f, err := os.Open(m)
			if err != nil {
				continue
			}
			// The base instructions make the line long; no rollout's is 8 MiB.
			line, err := bufio.NewReader(io.LimitReader(f, 8<<20)).ReadBytes('\n')
			f.Close()
			if err != nil && !errors.Is(err, io.EOF) {
				continue
			}
			var l struct {
				Type    string `json:"type"`
				Payload struct {
					ID            string `json:"id"`
					ModelProvider string `json:"model_provider"`
				} `json:"payload"`
			}
			if json.Unmarshal(line, &l) == nil && l.Type == "session_meta" && l.Payload.ID == id && validProviderID(l.Payload.ModelProvider) {
				return l.Payload.ModelProvider
			}
		}
	}
	return ""
}

// ExportCodex writes a tape as Codex rollout files, one per thread (a sub-agent's names its
// parent thread), under YYYY/MM/DD/rollout-<time>-<thread id>.jsonl, the layout of
// $CODEX_HOME/sessions that `codex exec resume <id>` searches. The rollouts name
// modelProvider, or when it is empty the tape's (CodexModelProvider).
func ExportCodex(tp *tape.Tape, modelProvider string) ([]File, error) {
	if modelProvider == "" {
		modelProvider = CodexModelProvider(tp)
	}
	if tp.Meta.Provider != tape.ProviderOpenAIResponses {
		return nil, fmt.Errorf("export codex: tape %s speaks %q; Codex rollouts hold OpenAI Responses items (use sts or atif)", tp.Meta.TapeID, tp.Meta.Provider)
	}
	main := tp.Main()
	if main == nil {
		return nil, fmt.Errorf("export codex: tape %s has no main thread", tp.Meta.TapeID)
	}
	if tp.Meta.Cwd == "" {
		return nil, &MissingError{Format: Codex, TapeID: tp.Meta.TapeID, Missing: "meta.cwd", Why: "a Codex rollout names its working directory"}
	}
	session := CodexThreadID(tp, main)
	var files []File
	for _, th := range tp.Threads {
		if len(th.Steps) == 0 {
			continue
		}
		id := CodexThreadID(tp, th)
		b, err := jsonl(cxThread(tp, th, session, id, modelProvider))
		if err != nil {
			return nil, fmt.Errorf("export codex: thread %s: %w", th.ID, err)
		}
		// The name holds when Codex made the thread, which no request says: the thread's
		// first request, or a sub-agent's spawn, comes closest.
		made := th.Steps[0].Timing.RequestAt
		if ref, _, ok := tp.ParentCall(th); ok && th.Parent != nil {
			for _, p := range tp.Threads {
				if p.ID == th.Parent.ThreadID && ref.Index < len(p.Steps) {
					made = min(made, p.Steps[ref.Index].Timing.LastByteAt)
				}
			}
		}
		start := tp.Meta.StartedAt.Add(time.Duration(made * float64(time.Millisecond))).UTC()
		files = append(files, File{Path: start.Format("2006/01/02/rollout-2006-01-02T15-04-05-") + id + ".jsonl", Data: b, Thread: th.ID})
	}
	return files, nil
}

func cxThread(tp *tape.Tape, th *tape.Thread, session, id, modelProvider string) []any {
	var out []any
	add := func(ms float64, typ string, payload any) {
		out = append(out, cxLine{Timestamp: at(tp, ms), Ordinal: len(out), Type: typ, Payload: payload})
	}
	first := th.Steps[0]
	turn := uuidFrom("codex-turn", tp.Meta.TapeID, th.ID)
	meta := cxSessionMeta{SessionID: session, ID: id, Timestamp: at(tp, first.Timing.RequestAt), Cwd: tp.Meta.Cwd, Originator: "codex_exec",
		CLIVersion: tp.Meta.HarnessVersion, Source: "exec", ThreadSource: "user", ModelProvider: modelProvider}
	msgs := first.Request.Messages
	// Codex sends its base instructions as the first input item (older versions as the
	// instructions field): the rollout keeps them in session_meta, not as an item.
	base := first.Request.System
	skip := 0
	if base == "" && len(msgs) > 0 && msgs[0].Role == "system" && len(msgs[0].Content) == 1 {
		base, skip = msgs[0].Content[0].Text, 1
	}
	if base != "" {
		meta.BaseInstructions = map[string]any{"text": base}
	}
	if th.Parent != nil && id != session {
		parent := session
		for _, p := range tp.Threads {
			if p.ID == th.Parent.ThreadID {
				parent = CodexThreadID(tp, p)
			}
		}
		meta.ParentThreadID = parent
		meta.Source = map[string]any{"subagent": map[string]any{"thread_spawn": map[string]any{"parent_thread_id": parent, "depth": 1}}}
		meta.ThreadSource = "subagent"
	}
	add(first.Timing.RequestAt, "session_meta", meta)
	add(first.Timing.RequestAt, "turn_context", cxTurnContext{TurnID: turn, Cwd: tp.Meta.Cwd, ApprovalPolicy: "never",
		SandboxPolicy: map[string]any{"type": "danger-full-access"}, Model: tape.StepModel(&tp.Meta, first), Summary: "none"})
	add(first.Timing.RequestAt, "event_msg", map[string]any{"type": "task_started", "turn_id": turn})
	calls := callsByID(th.Steps...)
	for _, m := range msgs[skip:] {
		if item := cxInputMessage(m); item != nil {
			add(first.Timing.RequestAt, "response_item", item)
		}
	}
	// Codex records what the user typed once more as an event, apart from the items with
	// their context blocks: its history and the Hub's trace viewer read the prompt there.
	if p := prompt(th); p != "" {
		add(first.Timing.RequestAt, "event_msg", cxUserMessage(p))
	}
	last := ""
	var total tape.Usage // the thread's so far, as Codex's total_token_usage sums it
	for i, s := range th.Steps {
		if text := followUp(th, i); text != "" {
			add(s.Timing.RequestAt, "response_item", map[string]any{"type": "message", "role": "user", "content": []any{map[string]any{"type": "input_text", "text": text}}})
			add(s.Timing.RequestAt, "event_msg", cxUserMessage(text))
		}
		for _, bl := range s.Response.Content {
			switch bl.Type {
			case tape.BlockText:
				last = bl.Text
				add(s.Timing.LastByteAt, "response_item", map[string]any{"type": "message", "role": "assistant", "status": "completed",
					"content": []any{map[string]any{"type": "output_text", "text": bl.Text, "annotations": []any{}}}})
			case tape.BlockThinking:
				add(s.Timing.LastByteAt, "response_item", map[string]any{"type": "reasoning", "summary": []any{map[string]any{"type": "summary_text", "text": bl.Text}}, "content": nil})
			case tape.BlockToolUse:
				add(s.Timing.LastByteAt, "response_item", cxCallItem(bl, calls[bl.ID]))
			default:
				if len(bl.Raw) > 0 && bl.Raw[0] == '{' {
					add(s.Timing.LastByteAt, "response_item", bl.Raw) // an item this version does not model, kept whole
				}
			}
		}
		total = total.Add(s.Response.Usage)
		add(s.Timing.LastByteAt, "event_msg", map[string]any{"type": "token_count", "info": map[string]any{
			"total_token_usage": codexUsage(total), "last_token_usage": codexUsage(s.Response.Usage)}})
		resultAt := resultsAt(s.Timing)
		// What the harness added before its next call: the next request's messages after
		// this request's and this response's (one message per item). The thread's last
		// step has no next request: its results are all there is.
		var added []tape.Message
		if i+1 < len(th.Steps) && len(th.Steps[i+1].Request.Messages) >= len(s.Request.Messages)+len(s.Response.Content) {
			added = th.Steps[i+1].Request.Messages[len(s.Request.Messages)+len(s.Response.Content):]
		} else {
			for _, r := range s.ToolResults {
				added = append(added, tape.Message{Role: "tool", Content: []tape.Block{{Type: tape.BlockToolResult, ToolCallID: r.ToolCallID, Content: r.Content, IsError: r.IsError}}})
			}
		}
		for _, m := range added {
			if m.Role != "tool" {
				if item := cxInputMessage(m); item != nil {
					add(resultAt, "response_item", item)
				}
				continue
			}
			for _, b := range m.Content {
				if b.Type != tape.BlockToolResult {
					continue
				}
				typ := "function_call_output"
				c, ok := calls[b.ToolCallID]
				switch {
				case !ok:
					continue // an output of a call the tape does not hold as a tool call (tool_search)
				case c.Kind == "custom":
					typ = "custom_tool_call_output"
				}
				add(resultAt, "response_item", map[string]any{"type": typ, "call_id": b.ToolCallID, "output": tape.BlocksText(b.Content)})
			}
		}
	}
	end := th.Steps[len(th.Steps)-1].Timing.LastByteAt
	add(end, "event_msg", map[string]any{"type": "task_complete", "turn_id": turn, "last_agent_message": last})
	return out
}

// cxUserMessage is the event_msg payload of a user's message.
func cxUserMessage(text string) map[string]any {
	return map[string]any{"type": "user_message", "message": text, "images": []any{}}
}

// callsByID indexes the tool calls of steps by id.
func callsByID(steps ...*tape.Step) map[string]tape.ToolCall {
	calls := map[string]tape.ToolCall{}
	for _, st := range steps {
		for _, c := range st.ToolCalls {
			calls[c.ID] = c
		}
	}
	return calls
}

// cxCallItem is a tool_use block as the Responses item of its call c: a custom_tool_call
// for a freeform tool, else a function_call, which names the namespace of a tool of a
// deferred namespace (Codex finds such a tool by namespace and name).
func cxCallItem(b tape.Block, c tape.ToolCall) map[string]any {
	if c.Kind == "custom" {
		return map[string]any{"type": "custom_tool_call", "status": "completed", "call_id": b.ID, "name": b.Name, "input": freeform(b.Input)}
	}
	it := map[string]any{"type": "function_call", "status": "completed", "name": b.Name, "arguments": string(input(b.Input)), "call_id": b.ID}
	if c.Namespace != "" {
		it["namespace"] = c.Namespace
	}
	return it
}

// cxInputMessage is a message of a first request as a rollout's response item: system
// messages are Codex's developer messages.
func cxInputMessage(m tape.Message) map[string]any {
	role := m.Role
	switch role {
	case "system":
		role = "developer"
	case "user", "assistant", "developer":
	default:
		return nil
	}
	kind := "input_text"
	if role == "assistant" {
		kind = "output_text"
	}
	var content []any
	for _, b := range m.Content {
		if b.Type == tape.BlockText {
			content = append(content, map[string]any{"type": kind, "text": b.Text})
		}
	}
	if len(content) == 0 {
		return nil
	}
	return map[string]any{"type": "message", "role": role, "content": content}
}

// freeform is the text of a custom tool call's {"input": TEXT}.
func freeform(raw []byte) string {
	var in struct {
		Input string `json:"input"`
	}
	if err := jsonUnmarshal(raw, &in); err == nil {
		return in.Input
	}
	return string(raw)
}

// codexUsage is a usage in the shape of Codex's token_count events.
func codexUsage(u tape.Usage) map[string]int64 {
	return map[string]int64{"input_tokens": u.InputTokens + u.CacheReadInputTokens, "cached_input_tokens": u.CacheReadInputTokens,
		"output_tokens": u.OutputTokens, "reasoning_output_tokens": u.ReasoningTokens, "total_tokens": u.InputTokens + u.CacheReadInputTokens + u.OutputTokens}
}
