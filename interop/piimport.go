package interop

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/tapebox/tapebox/internal/jsonlex"
	"github.com/tapebox/tapebox/tape"
)

// piEntry is what the import reads of a Pi session file line: the header (type "session")
// or an entry of the session tree.
type piEntry struct {
	Type      string          `json:"type"`
	ID        string          `json:"id"`
	ParentID  *string         `json:"parentId"`
	Timestamp string          `json:"timestamp"`
	Message   json.RawMessage `json:"message"`
	// The header.
	Cwd string `json:"cwd"`
	// compaction, branch_summary, custom_message.
	Summary          string          `json:"summary"`
	FirstKeptEntryID string          `json:"firstKeptEntryId"`
	Content          json.RawMessage `json:"content"`

	line int
}

// piMessage is an entry's AgentMessage.
type piMessage struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	API        string          `json:"api"`
	Model      string          `json:"model"`
	StopReason string          `json:"stopReason"`
	Error      string          `json:"errorMessage"`
	Usage      *struct {
		Input      int64 `json:"input"`
		Output     int64 `json:"output"`
		CacheRead  int64 `json:"cacheRead"`
		CacheWrite int64 `json:"cacheWrite"`
	} `json:"usage"`
	// toolResult.
	ToolCallID string `json:"toolCallId"`
	IsError    bool   `json:"isError"`
	// bashExecution.
	Command            string `json:"command"`
	Output             string `json:"output"`
	ExitCode           *int   `json:"exitCode"`
	Cancelled          bool   `json:"cancelled"`
	Truncated          bool   `json:"truncated"`
	FullOutputPath     string `json:"fullOutputPath"`
	ExcludeFromContext bool   `json:"excludeFromContext"`
	// branchSummary, compactionSummary.
	Summary string `json:"summary"`
}

// piBlock is a content block of a Pi message.
type piBlock struct {
	Type              string          `json:"type"`
	Text              string          `json:"text"`
	Thinking          string          `json:"thinking"`
	ThinkingSignature string          `json:"thinkingSignature"`
	Redacted          bool            `json:"redacted"`
	ID                string          `json:"id"`
	Name              string          `json:"name"`
	Arguments         json.RawMessage `json:"arguments"`
	Data              string          `json:"data"`
	MimeType          string          `json:"mimeType"`

	raw json.RawMessage
}

// UnmarshalJSON reads a block, keeping its JSON for the blocks the tape keeps whole.
func (b *piBlock) UnmarshalJSON(data []byte) error {
	type plain piBlock
	if err := json.Unmarshal(data, (*plain)(b)); err != nil {
		return err
	}
	b.raw = append(json.RawMessage(nil), data...)
	return nil
}

// piAPIs maps a Pi assistant message's api to the provider whose wire format it is.
var piAPIs = map[string]tape.Provider{
	"anthropic-messages": tape.ProviderAnthropic,
	"openai-completions": tape.ProviderOpenAIChat,
	"openai-responses":   tape.ProviderOpenAIResponses,
}

// piStops maps Pi's stop reasons, per provider, to the provider's own word (tape
// Response.StopReason). Pi's "error" and "aborted" have none: the response did not say.
var piStops = map[tape.Provider]map[string]string{
	tape.ProviderAnthropic:       {"stop": "end_turn", "length": "max_tokens", "toolUse": "tool_use"},
	tape.ProviderOpenAIChat:      {"stop": "stop", "length": "length", "toolUse": "tool_calls"},
	tape.ProviderOpenAIResponses: {"stop": "completed", "length": "max_output_tokens", "toolUse": "completed"},
}

// The text Pi (0.73) puts around a summary when it sends one to the model
// (packages/coding-agent/src/core/messages.ts).
const (
	piCompactionPrefix = "The conversation history before this point was compacted into the following summary:\n\n<summary>\n"
	piCompactionSuffix = "\n</summary>"
	piBranchPrefix     = "The following is a summary of a branch that this conversation came back from:\n\n<summary>\n"
	piBranchSuffix     = "</summary>"
)

// ImportPi reads Pi coding agent session files (~/.pi/agent/sessions/--<cwd>--/*.jsonl): a
// file or a directory holding them. A session file is a tree of entries (a branch is a
// second child of an earlier entry, made with /tree); the tape holds the branch that ends
// at the file's last entry, which is where Pi resumes, and LabelLost counts the entries of
// the other branches.
func ImportPi(path string) ([]*tape.Tape, error) { return importPath(Pi, path) }

func importPiFiles(files []string) ([]*tape.Tape, error) {
	var out []*tape.Tape
	for _, f := range files {
		tp, err := importPiSession(f)
		if err != nil {
			return nil, fmt.Errorf("import pi: %w", err)
		}
		out = append(out, tp)
	}
	return out, nil
}

// piSession is a session file read: its header and its entries in file order.
type piSession struct {
	path    string
	header  piEntry
	entries []*piEntry
	byID    map[string]*piEntry
	last    time.Time
}

func readPiSession(path string) (*piSession, error) {
	s := &piSession{path: path, byID: map[string]*piEntry{}}
	headed := false
	err := readLines(path, func(n int, b []byte) error {
		e := &piEntry{line: n}
		if err := json.Unmarshal(b, e); err != nil {
			return fmt.Errorf("not a Pi session entry: %w", err)
		}
		if t, ok := parseTime(e.Timestamp); ok && t.After(s.last) {
			s.last = t
		}
		if !headed {
			if e.Type != "session" || e.ID == "" {
				return fmt.Errorf("not a Pi session header (want {\"type\":\"session\",\"id\":…})")
			}
			s.header, headed = *e, true
			return nil
		}
		if e.ID == "" {
			// Version 1 sessions are linear: no ids, each entry follows the one before.
			e.ID = fmt.Sprintf("#%d", n)
			if e.ParentID == nil && len(s.entries) > 0 {
				e.ParentID = &s.entries[len(s.entries)-1].ID
			}
		}
		if prev, ok := s.byID[e.ID]; ok {
			return fmt.Errorf("entry id %q repeats the id of line %d", e.ID, prev.line)
		}
		s.byID[e.ID] = e
		s.entries = append(s.entries, e)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if !headed {
		return nil, fmt.Errorf("%s: empty: not a Pi session file", path)
	}
	return s, nil
}

// branch is the path from the root to the file's last entry (where Pi resumes).
func (s *piSession) branch() ([]*piEntry, error) {
	if len(s.entries) == 0 {
		return nil, nil
	}
	var path []*piEntry
	seen := map[string]bool{}
	for e := s.entries[len(s.entries)-1]; e != nil; {
		if seen[e.ID] {
			return nil, fmt.Errorf("%s:%d: parentId %q closes a cycle", s.path, e.line, *e.ParentID)
		}
		seen[e.ID] = true
		path = append(path, e)
		if e.ParentID == nil || *e.ParentID == "" {
			break
		}
		p, ok := s.byID[*e.ParentID]
		if !ok {
			return nil, fmt.Errorf("%s:%d: parentId %q names no entry of the file", s.path, e.line, *e.ParentID)
		}
		e = p
	}
	for i, j := 0, len(path)-1; i < j; i, j = i+1, j-1 {
		path[i], path[j] = path[j], path[i]
	}
	return path, nil
}

// piReader builds the thread of one branch.
type piReader struct {
	provider tape.Provider
	th       *tape.Thread
	history  []tape.Message
	calls    map[string]*tape.Step
	lost     losses
	model    string
	apis     map[string]int
}

func importPiSession(path string) (*tape.Tape, error) {
	s, err := readPiSession(path)
	if err != nil {
		return nil, err
	}
	br, err := s.branch()
	if err != nil {
		return nil, err
	}
	r := &piReader{th: &tape.Thread{ID: "main", Steps: []*tape.Step{}}, calls: map[string]*tape.Step{}, lost: losses{}, apis: map[string]int{}}
	r.lost.add(LostOtherBranches, len(s.entries)-len(br))
	// The tape's provider: the one every model call of the branch used.
	var msgs []*piMessage
	for _, e := range br {
		var m *piMessage
		if e.Type == "message" {
			m = &piMessage{}
			if err := json.Unmarshal(e.Message, m); err != nil {
				return nil, fmt.Errorf("%s:%d: message: %w", path, e.line, err)
			}
			if m.Role == "assistant" {
				r.apis[m.API]++
			}
		}
		msgs = append(msgs, m)
	}
	if len(r.apis) == 1 {
		for api := range r.apis {
			r.provider = piAPIs[api]
		}
	}
	for i, e := range br {
		if err := r.entry(br[:i+1], msgs[:i+1]); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, e.line, err)
		}
	}
	if len(r.th.Steps) == 0 {
		return nil, fmt.Errorf("%s: no assistant message on the branch Pi resumes: not a Pi session with model calls", path)
	}
	if !anyAnswer(r.th.Steps) && r.lost[LostErrorMessages] == 0 {
		return nil, fmt.Errorf("%s: no assistant message has content (/message/content) or an error (/message/errorMessage): nothing recognized as Pi's model calls", path)
	}
	tp := newImported(Pi, "pi", path)
	tp.Meta.Provider = r.provider
	if r.provider == tape.ProviderUnknown {
		names := make([]string, 0, len(r.apis))
		for api, n := range r.apis {
			names = append(names, fmt.Sprintf("%s (%d)", cmp.Or(api, "none"), n))
		}
		sort.Strings(names)
		tp.Meta.Labels[LabelHarnessAPI] = strings.Join(names, ", ")
	}
	tp.Meta.TapeID = hexFrom(32, "pi", s.header.ID)
	tp.Meta.Model, tp.Meta.Cwd = r.model, s.header.Cwd
	tp.Meta.Task = map[string]string{"session_id": s.header.ID}
	if t, ok := parseTime(s.header.Timestamp); ok {
		tp.Meta.StartedAt = t
	}
	tp.Meta.Ended = &tape.Ended{Reason: tape.EndComplete, At: cmpTime(s.last, tp.Meta.StartedAt), Detail: "imported from a Pi session file, which does not say how the run ended"}
	tp.Threads = append(tp.Threads, r.th)
	r.lost.label(tp)
	return tp, nil
}

// entry reads the last entry of br, the branch up to it; msgs are the branch's messages
// (nil for an entry that is none).
func (r *piReader) entry(br []*piEntry, msgs []*piMessage) error {
	e, m := br[len(br)-1], msgs[len(msgs)-1]
	switch e.Type {
	case "message":
		switch m.Role {
		case "assistant":
			if err := r.assistant(m); err != nil {
				return err
			}
		case "toolResult":
			id := r.callID(m.ToolCallID)
			st, ok := r.calls[id]
			if !ok {
				return fmt.Errorf("toolResult for %q, which no earlier assistant message of the branch called", m.ToolCallID)
			}
			content, err := r.blocks(m.Content)
			if err != nil {
				return fmt.Errorf("toolResult content: %w", err)
			}
			st.ToolResults = append(st.ToolResults, tape.ToolResult{ToolCallID: id, Content: content, IsError: m.IsError})
		}
	case "compaction":
		// What Pi sends from here on: the summary, then the branch from the first entry
		// the compaction kept.
		h := []tape.Message{{Role: "user", Content: []tape.Block{{Type: tape.BlockText, Text: piCompactionPrefix + e.Summary + piCompactionSuffix}}}}
		kept := false
		for i, k := range br[:len(br)-1] {
			kept = kept || k.ID == e.FirstKeptEntryID
			if !kept {
				continue
			}
			var err error
			if h, err = r.context(h, k, msgs[i], false); err != nil {
				return fmt.Errorf("line %d: %w", k.line, err)
			}
		}
		r.history = h
		return nil
	case "session", "model_change", "thinking_level_change", "custom", "label", "session_info", "branch_summary", "custom_message":
	default:
		r.lost.add(LostPiUnknown, 1)
		return nil
	}
	var err error
	r.history, err = r.context(r.history, e, m, true)
	return err
}

// context appends to h what Pi sends the model for entry e (message m, when it is one),
// as its convertToLlm does; count says whether what has no place is counted lost.
func (r *piReader) context(h []tape.Message, e *piEntry, m *piMessage, count bool) ([]tape.Message, error) {
	text := func(s string) []tape.Block { return []tape.Block{{Type: tape.BlockText, Text: s}} }
	switch e.Type {
	case "custom_message":
		blocks, err := r.blocks(e.Content)
		return appendMessage(h, "user", blocks), err
	case "branch_summary":
		if e.Summary == "" {
			return h, nil
		}
		return appendMessage(h, "user", text(piBranchPrefix+e.Summary+piBranchSuffix)), nil
	case "message":
	default:
		return h, nil
	}
	switch m.Role {
	case "user", "custom":
		blocks, err := r.blocks(m.Content)
		return appendMessage(h, "user", blocks), err
	case "assistant":
		// Pi never sends an errored or aborted turn again.
		if m.StopReason == "error" || m.StopReason == "aborted" {
			return h, nil
		}
		blocks, _, err := r.assistantBlocks(m.Content, false)
		return appendMessage(h, "assistant", blocks), err
	case "toolResult":
		content, err := r.blocks(m.Content)
		if err != nil {
			return h, err
		}
		b := tape.Block{Type: tape.BlockToolResult, ToolCallID: r.callID(m.ToolCallID), Content: content, IsError: m.IsError}
		if r.provider == tape.ProviderAnthropic {
			return appendMessage(h, "user", []tape.Block{b}), nil
		}
		return append(h, tape.Message{Role: "tool", Content: []tape.Block{b}}), nil
	case "bashExecution":
		if m.ExcludeFromContext {
			return h, nil
		}
		return appendMessage(h, "user", text(piBashText(m))), nil
	case "branchSummary":
		return appendMessage(h, "user", text(piBranchPrefix+m.Summary+piBranchSuffix)), nil
	case "compactionSummary":
		return appendMessage(h, "user", text(piCompactionPrefix+m.Summary+piCompactionSuffix)), nil
	}
	if count {
		r.lost.add(LostPiUnknown, 1)
	}
	return h, nil
}

// assistant reads an assistant message: a model call.
func (r *piReader) assistant(m *piMessage) error {
	st := newStep(piAPIs[m.API], m.Model, r.history)
	blocks, calls, err := r.assistantBlocks(m.Content, true)
	if err != nil {
		return err
	}
	st.Response.Content = append(st.Response.Content, blocks...)
	for _, c := range calls {
		st.ToolCalls = append(st.ToolCalls, c)
		r.calls[c.ID] = st
	}
	st.Response.StopReason = piStops[r.provider][m.StopReason]
	if u := m.Usage; u != nil {
		st.Response.Usage = tape.Usage{InputTokens: u.Input, OutputTokens: u.Output, CacheReadInputTokens: u.CacheRead, CacheCreationInputTokens: u.CacheWrite}
	}
	if m.Error != "" {
		r.lost.add(LostErrorMessages, 1)
	}
	r.model = cmp.Or(r.model, m.Model)
	r.th.Steps = append(r.th.Steps, st)
	return nil
}

// assistantBlocks normalizes an assistant message's content, with its tool calls; count
// says whether what has no place is counted lost (once per block, when it is first read).
func (r *piReader) assistantBlocks(raw json.RawMessage, count bool) ([]tape.Block, []tape.ToolCall, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil, errors.New("/message/content: missing: a Pi assistant message holds its text and tool calls there")
	}
	var list []piBlock
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, nil, fmt.Errorf("/message/content: want a list of blocks: %w", err)
	}
	out := make([]tape.Block, 0, len(list))
	var calls []tape.ToolCall
	for i, b := range list {
		switch b.Type {
		case "text":
			out = append(out, tape.Block{Type: tape.BlockText, Text: b.Text})
		case "thinking":
			text := b.Thinking
			if b.Redacted {
				text = ""
			}
			out = append(out, tape.Block{Type: tape.BlockThinking, Text: text})
			if count && b.ThinkingSignature != "" {
				switch r.provider {
				case tape.ProviderAnthropic:
					r.lost.add(LostThinkingSignature, 1)
				case tape.ProviderOpenAIResponses:
					// The signature is the Responses reasoning item, as JSON.
					var item struct {
						EncryptedContent string `json:"encrypted_content"`
					}
					if json.Unmarshal([]byte(b.ThinkingSignature), &item) == nil && item.EncryptedContent != "" {
						r.lost.add(LostEncryptedReasoning, 1)
					}
				}
			}
		case "toolCall":
			if b.ID == "" || b.Name == "" {
				return nil, nil, fmt.Errorf("content[%d]: toolCall without id or name", i)
			}
			in, id := input(b.Arguments), r.callID(b.ID)
			out = append(out, tape.Block{Type: tape.BlockToolUse, ID: id, Name: b.Name, Input: in})
			calls = append(calls, tape.ToolCall{ID: id, Name: b.Name, Input: in, Kind: "function"})
		default:
			out = append(out, tape.Block{Type: tape.BlockOther, Raw: b.raw})
		}
	}
	return out, calls, nil
}

// callID is a Pi tool call id as the tape's provider names the call. On the Responses
// API Pi keeps "<call_id>|<function_call item id>"; the wire, and so the tape, names the
// call by call_id alone.
func (r *piReader) callID(id string) string {
	if r.provider == tape.ProviderOpenAIResponses {
		id, _, _ = strings.Cut(id, "|")
	}
	return id
}

// blocks normalizes user or tool result content: a string, or a list of text and image
// blocks. An image becomes the tape provider's image block.
func (r *piReader) blocks(raw json.RawMessage) ([]tape.Block, error) {
	out := []tape.Block{}
	if len(raw) == 0 || string(raw) == "null" {
		return out, nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return append(out, tape.Block{Type: tape.BlockText, Text: s}), nil
	}
	var list []piBlock
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, fmt.Errorf("content: want a string or a list of blocks: %w", err)
	}
	for i, b := range list {
		switch b.Type {
		case "text":
			out = append(out, tape.Block{Type: tape.BlockText, Text: b.Text})
		case "image":
			img, err := r.image(b)
			if err != nil {
				return nil, fmt.Errorf("content[%d]: %w", i, err)
			}
			out = append(out, tape.Block{Type: tape.BlockImage, Raw: img})
		default:
			out = append(out, tape.Block{Type: tape.BlockOther, Raw: b.raw})
		}
	}
	return out, nil
}

// image is a Pi image block ({data: base64, mimeType}) as the tape provider's wire writes it.
func (r *piReader) image(b piBlock) (json.RawMessage, error) {
	url := "data:" + b.MimeType + ";base64," + b.Data
	switch r.provider {
	case tape.ProviderAnthropic:
		return jsonlex.Marshal(map[string]any{"type": "image", "source": map[string]any{"type": "base64", "media_type": b.MimeType, "data": b.Data}})
	case tape.ProviderOpenAIChat:
		return jsonlex.Marshal(map[string]any{"type": "image_url", "image_url": map[string]any{"url": url}})
	case tape.ProviderOpenAIResponses:
		return jsonlex.Marshal(map[string]any{"type": "input_image", "image_url": url})
	}
	return jsonlex.Marshal(map[string]any{"type": "image", "data": b.Data, "mimeType": b.MimeType})
}

// piBashText is a user's ! command as Pi sends it (bashExecutionToText).
func piBashText(m *piMessage) string {
	text := "Ran `" + m.Command + "`\n"
	if m.Output != "" {
		text += "```\n" + m.Output + "\n```"
	} else {
		text += "(no output)"
	}
	if m.Cancelled {
		text += "\n\n(command cancelled)"
	} else if m.ExitCode != nil && *m.ExitCode != 0 {
		text += fmt.Sprintf("\n\nCommand exited with code %d", *m.ExitCode)
	}
	if m.Truncated && m.FullOutputPath != "" {
		text += "\n\n[Output truncated. Full output: " + m.FullOutputPath + "]"
	}
	return text
}
