package interop

import (
	"encoding/json"
	"fmt"
	"path"
	"regexp"

	"github.com/tapebox/tapebox/internal/jsonlex"
	"github.com/tapebox/tapebox/tape"
)

// ccEntry is one line of a Claude Code session file: a user or assistant message in the
// session's parentUuid chain. The field order is the harness's.
type ccEntry struct {
	ParentUUID              *string `json:"parentUuid"`
	IsSidechain             bool    `json:"isSidechain"`
	AgentID                 string  `json:"agentId,omitempty"`
	Type                    string  `json:"type"`
	Message                 any     `json:"message"`
	RequestID               string  `json:"requestId,omitempty"`
	UUID                    string  `json:"uuid"`
	Timestamp               string  `json:"timestamp"`
	SourceToolAssistantUUID string  `json:"sourceToolAssistantUUID,omitempty"`
	UserType                string  `json:"userType"`
	Entrypoint              string  `json:"entrypoint"`
	Cwd                     string  `json:"cwd"`
	SessionID               string  `json:"sessionId"`
	Version                 string  `json:"version"`
}

type ccUserMessage struct {
	Role    string `json:"role"`
	Content any    `json:"content"`
}

type ccAssistantMessage struct {
	ID           string  `json:"id"`
	Type         string  `json:"type"`
	Role         string  `json:"role"`
	Model        string  `json:"model"`
	Content      []any   `json:"content"`
	StopReason   *string `json:"stop_reason"`
	StopSequence *string `json:"stop_sequence"`
	Usage        ccUsage `json:"usage"`
}

type ccUsage struct {
	InputTokens              int64 `json:"input_tokens"`
	CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
	OutputTokens             int64 `json:"output_tokens"`
}

type ccToolResult struct {
	ToolUseID string `json:"tool_use_id"`
	Type      string `json:"type"`
	Content   any    `json:"content"`
	IsError   bool   `json:"is_error,omitempty"`
}

// ccAgentMeta is the .meta.json beside a subagent's sidechain file.
type ccAgentMeta struct {
	AgentType   string `json:"agentType,omitempty"`
	Description string `json:"description,omitempty"`
	ToolUseID   string `json:"toolUseId"`
}

var agentIDRE = regexp.MustCompile(`agentId: ([A-Za-z0-9]+)`)

// ClaudeSessionID is the session id of a tape's Claude Code export: the one the harness
// sent (x-claude-code-session-id) when the tape has it, else one derived from the tape id.
func ClaudeSessionID(tp *tape.Tape) string {
	if main := tp.Main(); main != nil && len(main.Steps) > 0 {
		if id := main.Steps[0].Request.Headers["x-claude-code-session-id"]; uuidRE.MatchString(id) {
			return id
		}
	}
	return uuidFrom("claude-session", tp.Meta.TapeID)
}

// ClaudeSessionPath is where Claude Code keeps a session of a working directory, relative
// to its projects folder (~/.claude/projects): <slug of cwd>/<session>.jsonl.
func ClaudeSessionPath(cwd, session string) string {
	return slug(cwd) + "/" + session + ".jsonl"
}

// ExportClaudeCode writes a tape as the session files Claude Code writes: the main
// thread's entries in <project>/<session>.jsonl, each subagent's sidechain in
// <project>/<session>/subagents/agent-<id>.jsonl with its .meta.json. The files are what
// `claude --resume <session>` reads when they are under $CLAUDE_CONFIG_DIR/projects (by
// default ~/.claude/projects).
func ExportClaudeCode(tp *tape.Tape) ([]File, error) {
	if tp.Meta.Provider != tape.ProviderAnthropic {
		return nil, fmt.Errorf("export claude-code: tape %s speaks %q; Claude Code sessions hold Anthropic Messages (use sts or atif)", tp.Meta.TapeID, tp.Meta.Provider)
	}
	main := tp.Main()
	if main == nil {
		return nil, fmt.Errorf("export claude-code: tape %s has no main thread", tp.Meta.TapeID)
	}
	cwd := tp.Meta.Cwd
	if cwd == "" {
		return nil, &MissingError{Format: ClaudeCode, TapeID: tp.Meta.TapeID, Missing: "meta.cwd", Why: "Claude Code files a session under its working directory"}
	}
	session := ClaudeSessionID(tp)
	project := slug(cwd)
	calls := map[string]tape.ToolCall{}
	results := map[string]tape.ToolResult{}
	for _, th := range tp.Threads {
		for _, s := range th.Steps {
			for _, c := range s.ToolCalls {
				calls[c.ID] = c
			}
			for _, r := range s.ToolResults {
				results[r.ToolCallID] = r
			}
		}
	}
	agentID := func(th *tape.Thread) string {
		if r, ok := results[th.Parent.ToolCallID]; ok {
			if m := agentIDRE.FindStringSubmatch(resultText(r)); m != nil {
				return m[1]
			}
		}
		return "a" + hexFrom(16, tp.Meta.TapeID, th.ID)
	}
	var files []File
	b, err := jsonl(ccThread(tp, main, session, "", false))
	if err != nil {
		return nil, fmt.Errorf("export claude-code: %w", err)
	}
	files = append(files, File{Path: project + "/" + session + ".jsonl", Data: b, Thread: main.ID})
	for _, th := range tp.Threads {
		if th == main || th.Parent == nil {
			continue
		}
		id := agentID(th)
		b, err := jsonl(ccThread(tp, th, session, id, true))
		if err != nil {
			return nil, fmt.Errorf("export claude-code: thread %s: %w", th.ID, err)
		}
		dir := path.Join(project, session, "subagents")
		files = append(files, File{Path: dir + "/agent-" + id + ".jsonl", Data: b, Thread: th.ID})
		meta := ccAgentMeta{ToolUseID: th.Parent.ToolCallID}
		if c, ok := calls[th.Parent.ToolCallID]; ok {
			var in struct {
				SubagentType string `json:"subagent_type"`
				Description  string `json:"description"`
			}
			_ = json.Unmarshal(c.Input, &in)
			meta.AgentType, meta.Description = in.SubagentType, in.Description
		}
		mb, err := jsonlex.Marshal(meta)
		if err != nil {
			return nil, err
		}
		files = append(files, File{Path: dir + "/agent-" + id + ".meta.json", Data: mb})
	}
	return files, nil
}

// ccThread is one thread's entries, chained by parentUuid.
func ccThread(tp *tape.Tape, th *tape.Thread, session, agentID string, sidechain bool) []any {
	var out []any
	var prev *string
	n := 0
	add := func(e ccEntry) string {
		e.UUID = uuidFrom("claude-entry", tp.Meta.TapeID, th.ID, fmt.Sprint(n))
		n++
		e.ParentUUID = prev
		e.IsSidechain, e.AgentID = sidechain, agentID
		e.UserType, e.Entrypoint, e.Cwd, e.SessionID, e.Version = "external", "sdk-cli", tp.Meta.Cwd, session, tp.Meta.HarnessVersion
		id := e.UUID
		prev = &id
		out = append(out, e)
		return id
	}
	if p := prompt(th); p != "" && len(th.Steps) > 0 {
		add(ccEntry{Type: "user", Message: ccUserMessage{Role: "user", Content: p}, Timestamp: at(tp, th.Steps[0].Timing.RequestAt)})
	}
	for i, s := range th.Steps {
		if i > 0 {
			if text := followUp(th, i); text != "" {
				add(ccEntry{Type: "user", Message: ccUserMessage{Role: "user", Content: text}, Timestamp: at(tp, s.Timing.RequestAt)})
			}
		}
		msgID := responseID(s)
		if msgID == "" {
			msgID = "msg_" + hexFrom(24, tp.Meta.TapeID, th.ID, fmt.Sprint(i))
		}
		stop := s.Response.StopReason
		toolUse := map[string]string{}
		for _, bl := range s.Response.Content {
			var block any
			switch bl.Type {
			case tape.BlockText:
				block = map[string]any{"type": "text", "text": bl.Text}
			case tape.BlockThinking:
				block = map[string]any{"type": "thinking", "thinking": bl.Text, "signature": ""}
			case tape.BlockToolUse:
				block = map[string]any{"type": "tool_use", "id": bl.ID, "name": bl.Name, "input": input(bl.Input)}
			default:
				if len(bl.Raw) > 0 {
					block = bl.Raw
				} else {
					continue
				}
			}
			m := ccAssistantMessage{ID: msgID, Type: "message", Role: "assistant", Model: tape.StepModel(&tp.Meta, s), Content: []any{block},
				StopReason: &stop, Usage: ccUsage{InputTokens: s.Response.Usage.InputTokens, CacheCreationInputTokens: s.Response.Usage.CacheCreationInputTokens,
					CacheReadInputTokens: s.Response.Usage.CacheReadInputTokens, OutputTokens: s.Response.Usage.OutputTokens}}
			id := add(ccEntry{Type: "assistant", Message: m, RequestID: s.Response.Headers["request-id"], Timestamp: at(tp, s.Timing.LastByteAt)})
			if bl.Type == tape.BlockToolUse {
				toolUse[bl.ID] = id
			}
		}
		resultAt := resultsAt(s.Timing)
		for _, r := range s.ToolResults {
			add(ccEntry{Type: "user", Message: ccUserMessage{Role: "user", Content: []any{ccToolResult{ToolUseID: r.ToolCallID, Type: "tool_result",
				Content: ccResultContent(r), IsError: r.IsError}}}, Timestamp: at(tp, resultAt), SourceToolAssistantUUID: toolUse[r.ToolCallID]})
		}
	}
	return out
}

// ccResultContent is a tool result's content as Claude Code writes it: a string for text
// alone, else a list of blocks.
func ccResultContent(r tape.ToolResult) any {
	if len(r.Content) == 1 && r.Content[0].Type == tape.BlockText {
		return r.Content[0].Text
	}
	blocks := make([]any, 0, len(r.Content))
	for _, b := range r.Content {
		switch {
		case b.Type == tape.BlockText:
			blocks = append(blocks, map[string]any{"type": "text", "text": b.Text})
		case len(b.Raw) > 0:
			blocks = append(blocks, b.Raw)
		}
	}
	return blocks
}
