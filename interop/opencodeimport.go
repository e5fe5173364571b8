package interop

import (
	"cmp"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/tapebox/tapebox/tape"
)

// openCodeSession is what `opencode export <session>` prints (OpenCode 1.18): the
// session's info and its messages, each with its parts. OpenCode keeps its sessions in a
// SQLite database (~/.local/share/opencode/opencode.db); export is its own way out of it,
// and `opencode import FILE` its way back in.
type openCodeSession struct {
	Info     openCodeInfo      `json:"info"`
	Messages []openCodeMessage `json:"messages"`
}

type openCodeInfo struct {
	ID        string `json:"id"`
	ParentID  string `json:"parentID"`
	Directory string `json:"directory"`
	Title     string `json:"title"`
	Version   string `json:"version"`
	Time      struct {
		Created int64 `json:"created"`
		Updated int64 `json:"updated"`
	} `json:"time"`
}

type openCodeMessage struct {
	Info  openCodeMessageInfo `json:"info"`
	Parts []openCodePart      `json:"parts"`
}

type openCodeMessageInfo struct {
	ID         string          `json:"id"`
	Role       string          `json:"role"`
	ModelID    string          `json:"modelID"`
	ProviderID string          `json:"providerID"`
	Finish     string          `json:"finish"`
	Error      json.RawMessage `json:"error"`
	Tokens     *struct {
		Input     int64 `json:"input"`
		Output    int64 `json:"output"`
		Reasoning int64 `json:"reasoning"`
		Cache     struct {
			Read  int64 `json:"read"`
			Write int64 `json:"write"`
		} `json:"cache"`
	} `json:"tokens"`
	Time struct {
		Created   int64 `json:"created"`
		Completed int64 `json:"completed"`
	} `json:"time"`
}

type openCodePart struct {
	Type   string `json:"type"`
	Text   string `json:"text"`
	Tool   string `json:"tool"`
	CallID string `json:"callID"`
	State  *struct {
		Status   string          `json:"status"`
		Input    json.RawMessage `json:"input"`
		Output   string          `json:"output"`
		Error    string          `json:"error"`
		Metadata struct {
			SessionID string `json:"sessionId"`
		} `json:"metadata"`
		Time struct {
			Start int64 `json:"start"`
			End   int64 `json:"end"`
		} `json:"time"`
	} `json:"state"`
	Synthetic bool `json:"synthetic"`
	Ignored   bool `json:"ignored"`
	Time      *struct {
		Start int64 `json:"start"`
		End   int64 `json:"end"`
	} `json:"time"`

	raw json.RawMessage
}

// UnmarshalJSON reads a part, keeping its JSON for the parts the tape keeps whole.
func (p *openCodePart) UnmarshalJSON(data []byte) error {
	type plain openCodePart
	if err := json.Unmarshal(data, (*plain)(p)); err != nil {
		return err
	}
	p.raw = append(json.RawMessage(nil), data...)
	return nil
}

// openCodeProviders maps OpenCode's provider ids to the wire format the tape names.
var openCodeProviders = map[string]tape.Provider{
	"anthropic": tape.ProviderAnthropic,
	"openai":    tape.ProviderOpenAIResponses,
}

// openCodeStops maps OpenCode's finish reasons (the AI SDK's) to each provider's word.
var openCodeStops = map[tape.Provider]map[string]string{
	tape.ProviderAnthropic:       {"stop": "end_turn", "length": "max_tokens", "tool-calls": "tool_use"},
	tape.ProviderOpenAIResponses: {"stop": "completed", "length": "max_output_tokens", "tool-calls": "completed"},
}

// What an OpenCode import can lose, as LabelLost names it.
const (
	// LostOpenCodeParts: parts OpenCode keeps that it does not send the model as they are
	// (patches, snapshots, files, agents, compactions, and parts of unknown types).
	LostOpenCodeParts = "parts the model is not sent"
	// LostOpenCodeErrors: the error an assistant message ended with (a failed call).
	LostOpenCodeErrors = "model call errors"
)

// ImportOpenCode reads what `opencode export <session>` prints, saved as .json files: a
// file or a directory holding them. Each session is a tape; a subagent's session (one
// whose info names a parentID) is a thread of its parent's tape, linked to the task call
// that started it, when its parent's file is among those read, else a tape of its own.
// Every assistant message is a step, whose request is the conversation before it (the
// system prompt and tools, which the export does not keep, left out).
func ImportOpenCode(path string) ([]*tape.Tape, error) { return importPath(OpenCode, path) }

func importOpenCodeFiles(files []string) ([]*tape.Tape, error) {
	sessions := map[string]*openCodeSession{}
	source := map[string]string{}
	var order []string
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("import %s: %w", OpenCode, err)
		}
		s := &openCodeSession{}
		if err := json.Unmarshal(b, s); err != nil {
			return nil, fmt.Errorf("import %s: %s: not an OpenCode session export: %w", OpenCode, f, err)
		}
		if s.Info.ID == "" {
			return nil, fmt.Errorf("import %s: %s: /info/id: missing: not an OpenCode session export (opencode export SESSION)", OpenCode, f)
		}
		if prev, ok := source[s.Info.ID]; ok {
			return nil, fmt.Errorf("import %s: %s: session %s is exported by %s too", OpenCode, f, s.Info.ID, prev)
		}
		sessions[s.Info.ID], source[s.Info.ID] = s, f
		order = append(order, s.Info.ID)
	}
	var out []*tape.Tape
	for _, id := range order {
		s := sessions[id]
		if openCodeHasRoot(s, sessions) {
			continue // a thread of its parent's tape
		}
		tp, err := importOpenCodeSession(s, source[id], sessions, source)
		if err != nil {
			return nil, fmt.Errorf("import %s: %w", OpenCode, err)
		}
		out = append(out, tp)
	}
	return out, nil
}

// openCodeHasRoot says whether s is a subagent's session whose parents, up to one that
// has none, are all among sessions: it is then read as a thread of that one's tape. A
// session whose parents go round in a circle is a tape of its own.
func openCodeHasRoot(s *openCodeSession, sessions map[string]*openCodeSession) bool {
	seen := map[string]bool{s.Info.ID: true}
	for p := s.Info.ParentID; p != ""; {
		ps := sessions[p]
		if ps == nil || seen[p] {
			return false
		}
		if ps.Info.ParentID == "" {
			return true
		}
		seen[p] = true
		p = ps.Info.ParentID
	}
	return false
}

// openCodeReader builds one tape from a session and its subagents' sessions.
type openCodeReader struct {
	tp       *tape.Tape
	sessions map[string]*openCodeSession
	source   map[string]string
	lost     losses
	apis     map[string]int
	children map[string]string // a task call's id -> the session it started
	read     map[string]bool   // the sessions read into threads
	last     time.Time
}

func importOpenCodeSession(s *openCodeSession, path string, sessions map[string]*openCodeSession, source map[string]string) (*tape.Tape, error) {
	r := &openCodeReader{sessions: sessions, source: source, lost: losses{}, apis: map[string]int{}, children: map[string]string{}, read: map[string]bool{}}
	r.countAPIs(s, map[string]bool{})
	tp := newImported(OpenCode, "opencode", path)
	r.tp = tp
	if len(r.apis) == 1 {
		for api := range r.apis {
			tp.Meta.Provider = openCodeProviders[api]
		}
	}
	if tp.Meta.Provider == tape.ProviderUnknown {
		names := make([]string, 0, len(r.apis))
		for api, n := range r.apis {
			names = append(names, fmt.Sprintf("%s (%d)", cmp.Or(api, "none"), n))
		}
		sort.Strings(names)
		tp.Meta.Labels[LabelHarnessAPI] = strings.Join(names, ", ")
	}
	tp.Meta.TapeID = hexFrom(32, string(OpenCode), s.Info.ID)
	tp.Meta.Task = map[string]string{"session_id": s.Info.ID}
	tp.Meta.Cwd, tp.Meta.HarnessVersion = s.Info.Directory, s.Info.Version
	if s.Info.Time.Created > 0 {
		tp.Meta.StartedAt = time.UnixMilli(s.Info.Time.Created).UTC()
	}
	if err := r.thread(s, "main", nil, path); err != nil {
		return nil, err
	}
	if len(tp.Threads[0].Steps) == 0 {
		return nil, fmt.Errorf("%s: no assistant message: not an OpenCode session with model calls", path)
	}
	if !anyAnswer(tp.Threads[0].Steps) && r.lost[LostOpenCodeErrors] == 0 {
		// An OpenCode answer that failed (info.error) may hold nothing; one that did not
		// and still holds no text, reasoning or tool part is another tool's file.
		return nil, fmt.Errorf("%s: no assistant message has a text, reasoning or tool part (/messages/N/parts/M/type), nor an error (/messages/N/info/error): nothing recognized as OpenCode's model calls", path)
	}
	tp.Meta.Ended = &tape.Ended{Reason: tape.EndComplete, At: cmpTime(r.last, tp.Meta.StartedAt), Detail: "imported from an OpenCode session export, which does not say how the run ended"}
	r.lost.label(tp)
	return tp, nil
}

// countAPIs counts the providers of the assistant messages of s and its subagents.
func (r *openCodeReader) countAPIs(s *openCodeSession, seen map[string]bool) {
	if seen[s.Info.ID] {
		return
	}
	seen[s.Info.ID] = true
	for _, m := range s.Messages {
		if m.Info.Role == "assistant" {
			r.apis[m.Info.ProviderID]++
		}
		for _, p := range m.Parts {
			if p.Type == "tool" && p.State != nil && p.State.Metadata.SessionID != "" {
				if child := r.sessions[p.State.Metadata.SessionID]; child != nil && child.Info.ParentID == s.Info.ID {
					r.countAPIs(child, seen)
				}
			}
		}
	}
}

// thread reads session s into a thread named id (its parent link given), then the threads
// of the subagent sessions its task calls started.
func (r *openCodeReader) thread(s *openCodeSession, id string, parent *tape.Parent, path string) error {
	p := r.tp.Meta.Provider
	r.read[s.Info.ID] = true
	th := &tape.Thread{ID: id, Parent: parent, Steps: []*tape.Step{}}
	r.tp.Threads = append(r.tp.Threads, th)
	var history []tape.Message
	clock := map[*tape.Step]*stepClock{}
	var children []tape.Parent
	prevAt := r.tp.Meta.StartedAt
	for i, m := range s.Messages {
		where := fmt.Sprintf("%s: /messages/%d", path, i)
		if m.Info.Completed() > 0 {
			if t := time.UnixMilli(m.Info.Completed()).UTC(); t.After(r.last) {
				r.last = t
			}
		}
		switch m.Info.Role {
		case "user":
			var blocks []tape.Block
			for j, part := range m.Parts {
				switch part.Type {
				case "text":
					if !part.Ignored {
						blocks = append(blocks, tape.Block{Type: tape.BlockText, Text: part.Text})
					}
				default:
					if err := r.other(part, fmt.Sprintf("%s/parts/%d", where, j)); err != nil {
						return err
					}
				}
			}
			history = appendMessage(history, "user", blocks)
			if m.Info.Time.Created > 0 {
				prevAt = time.UnixMilli(m.Info.Time.Created).UTC()
			}
		case "assistant":
			st := newStep(p, m.Info.ModelID, history)
			var results []tape.Block
			for j, part := range m.Parts {
				switch part.Type {
				case "text":
					st.Response.Content = append(st.Response.Content, tape.Block{Type: tape.BlockText, Text: part.Text})
				case "reasoning":
					st.Response.Content = append(st.Response.Content, tape.Block{Type: tape.BlockThinking, Text: part.Text})
				case "tool":
					if part.CallID == "" || part.Tool == "" || part.State == nil {
						return fmt.Errorf("%s/parts/%d: a tool part without callID, tool or state", where, j)
					}
					in := input(part.State.Input)
					st.Response.Content = append(st.Response.Content, tape.Block{Type: tape.BlockToolUse, ID: part.CallID, Name: part.Tool, Input: in})
					st.ToolCalls = append(st.ToolCalls, tape.ToolCall{ID: part.CallID, Name: part.Tool, Input: in, Kind: "function"})
					res, ok := openCodeResult(part)
					if !ok {
						continue // never ran: OpenCode sends no result
					}
					st.ToolResults = append(st.ToolResults, res)
					results = append(results, tape.Block{Type: tape.BlockToolResult, ToolCallID: res.ToolCallID, Content: res.Content, IsError: res.IsError})
					if sid := part.State.Metadata.SessionID; sid != "" && part.Tool == "task" {
						children = append(children, tape.Parent{ThreadID: id, ToolCallID: part.CallID})
						r.children[part.CallID] = sid
					}
				case "step-start", "step-finish":
				default:
					if err := r.other(part, fmt.Sprintf("%s/parts/%d", where, j)); err != nil {
						return err
					}
				}
			}
			st.Response.StopReason = openCodeStops[p][m.Info.Finish]
			if t := m.Info.Tokens; t != nil {
				st.Response.Usage = tape.Usage{InputTokens: t.Input, OutputTokens: t.Output, ReasoningTokens: t.Reasoning,
					CacheReadInputTokens: t.Cache.Read, CacheCreationInputTokens: t.Cache.Write}
			}
			if len(m.Info.Error) > 0 && string(m.Info.Error) != "null" {
				r.lost.add(LostOpenCodeErrors, 1)
			}
			r.tp.Meta.Model = cmp.Or(r.tp.Meta.Model, m.Info.ModelID)
			th.Steps = append(th.Steps, st)
			if m.Info.Time.Created > 0 {
				first := time.UnixMilli(m.Info.Time.Created).UTC()
				clock[st] = &stepClock{req: prevAt, first: first, last: cmpTime(time.UnixMilli(m.Info.Completed()).UTC(), first)}
				prevAt = clock[st].last
			}
			history = appendMessage(history, "assistant", st.Response.Content)
			if p == tape.ProviderAnthropic {
				history = appendMessage(history, "user", results)
			} else {
				for _, b := range results {
					history = append(history, tape.Message{Role: "tool", Content: []tape.Block{b}})
				}
			}
		default:
			return fmt.Errorf("%s/info/role: %q: want user or assistant", where, m.Info.Role)
		}
	}
	if applyClock(r.tp, th, clock) && id == "main" {
		r.tp.Meta.Labels[LabelTiming] = TimingEntries
	}
	for _, c := range children {
		sid := r.children[c.ToolCallID]
		child := r.sessions[sid]
		if child == nil || child.Info.ParentID != s.Info.ID || r.read[sid] {
			continue // its session was not among the files read (or is read already)
		}
		if err := r.thread(child, "t"+fmt.Sprint(len(r.tp.Threads)), &tape.Parent{ThreadID: c.ThreadID, ToolCallID: c.ToolCallID}, r.source[sid]); err != nil {
			return err
		}
	}
	return nil
}

// Completed is when an assistant message was done (0 for a user message or one cut short).
func (i openCodeMessageInfo) Completed() int64 { return max(i.Time.Completed, i.Time.Created) }

// openCodeResult is a tool part's result as OpenCode sends it back: its output when it
// completed, its error when it failed; a call still pending or running has none.
func openCodeResult(p openCodePart) (tape.ToolResult, bool) {
	switch p.State.Status {
	case "completed":
		return tape.ToolResult{ToolCallID: p.CallID, Content: []tape.Block{{Type: tape.BlockText, Text: p.State.Output}}}, true
	case "error":
		return tape.ToolResult{ToolCallID: p.CallID, Content: []tape.Block{{Type: tape.BlockText, Text: p.State.Error}}, IsError: true}, true
	}
	return tape.ToolResult{}, false
}

// other counts a part the tape has no place for; a part without a type is an error.
func (r *openCodeReader) other(p openCodePart, where string) error {
	if p.Type == "" {
		return fmt.Errorf("%s/type: missing", where)
	}
	r.lost.add(LostOpenCodeParts, 1)
	return nil
}
