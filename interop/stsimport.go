package interop

import (
	"cmp"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/tapebox/tapebox/internal/jsonlex"
	"github.com/tapebox/tapebox/tape"
)

// stsReadMessage is what the import reads of an STS message: content may be a string or
// a list of text parts, and a call's arguments a JSON string or an object.
type stsReadMessage struct {
	Role             string          `json:"role"`
	Content          json.RawMessage `json:"content"`
	ReasoningContent string          `json:"reasoningContent"`
	ToolCalls        []struct {
		ID       string `json:"id"`
		Function struct {
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
		} `json:"function"`
	} `json:"toolCalls"`
	ToolCallID string `json:"toolCallId"`
	Timestamp  int64  `json:"timestamp"`
	Model      string `json:"model"`
}

// stsText reads an STS message's content: a string, or a list of parts whose text is
// joined.
func stsText(raw json.RawMessage) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil
	}
	var parts []struct {
		Text string `json:"text"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", fmt.Errorf("content: want a string or a list of parts: %w", err)
	}
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(p.Text)
	}
	return b.String(), nil
}

// stsThread is one STS file read: a session, which is one thread.
type stsThread struct {
	path     string
	head     stsReadSession
	th       *tape.Thread
	model    string
	first    time.Time
	last     time.Time
	provider tape.Provider
}

// stsReadSession is the header as the import reads it; tapeId, threadId, parent, provider,
// calls and steps are the extra metadata TapeBox's own export writes.
type stsReadSession struct {
	Type     string                 `json:"type"`
	Harness  *string                `json:"harness"`
	ID       string                 `json:"id"`
	Name     string                 `json:"name"`
	TapeID   string                 `json:"tapeId"`
	ThreadID string                 `json:"threadId"`
	Parent   *tape.Parent           `json:"parent"`
	Cwd      string                 `json:"cwd"`
	Provider string                 `json:"provider"`
	Calls    map[string]stsCallMeta `json:"calls"`
	Steps    []stsStepMeta          `json:"steps"`
}

// stsProvider is the provider a header names, when it is one a tape knows.
func stsProvider(s string) tape.Provider {
	switch p := tape.Provider(s); p {
	case tape.ProviderAnthropic, tape.ProviderOpenAIChat, tape.ProviderOpenAIResponses:
		return p
	}
	return tape.ProviderUnknown
}

// stsStop is the stop reason of an answer in a provider's normalized form (STS has none).
func stsStop(p tape.Provider, calls bool) string {
	switch p {
	case tape.ProviderAnthropic:
		return map[bool]string{true: "tool_use", false: "end_turn"}[calls]
	case tape.ProviderOpenAIChat:
		return map[bool]string{true: "tool_calls", false: "stop"}[calls]
	case tape.ProviderOpenAIResponses:
		return "completed"
	}
	return ""
}

// readSTS reads one STS file into a thread: each assistant message is a model call whose
// request holds the messages before it.
func readSTS(p string) (*stsThread, error) {
	r := &stsThread{path: p, th: &tape.Thread{Steps: []*tape.Step{}}}
	var history []tape.Message
	calls := map[string]*tape.Step{}
	var system string
	n := 0
	err := readLines(p, func(_ int, b []byte) error {
		n++
		if n == 1 {
			if err := json.Unmarshal(b, &r.head); err != nil {
				return fmt.Errorf("not an STS session header: %w", err)
			}
			if r.head.Type != "session" || r.head.Harness == nil || r.head.ID == "" {
				return fmt.Errorf(`not an STS session header (want {"type":"session","harness":…,"id":…})`)
			}
			r.provider = stsProvider(r.head.Provider)
			return nil
		}
		var l struct {
			Type    string          `json:"type"`
			Message *stsReadMessage `json:"message"`
		}
		if err := json.Unmarshal(b, &l); err != nil {
			return fmt.Errorf("not an STS line: %w", err)
		}
		if l.Type != "message" || l.Message == nil {
			return fmt.Errorf(`an STS line is {"type":"message","message":{…}}, not type %q`, l.Type)
		}
		m := l.Message
		if m.Timestamp > 0 {
			t := time.UnixMilli(m.Timestamp).UTC()
			if r.first.IsZero() {
				r.first = t
			}
			r.last = t
		}
		text, err := stsText(m.Content)
		if err != nil {
			return err
		}
		switch m.Role {
		case "system", "developer":
			if len(r.th.Steps) == 0 && len(history) == 0 {
				system += text
			} else if text != "" {
				history = append(history, tape.Message{Role: "system", Content: []tape.Block{{Type: tape.BlockText, Text: text}}})
			}
		case "user":
			if text != "" {
				history = appendMessage(history, "user", []tape.Block{{Type: tape.BlockText, Text: text}})
			}
		case "assistant":
			st := newStep(r.provider, m.Model, history)
			st.Request.System = system
			r.model = cmp.Or(r.model, m.Model)
			var blocks []tape.Block
			if m.ReasoningContent != "" {
				blocks = append(blocks, tape.Block{Type: tape.BlockThinking, Text: m.ReasoningContent})
			}
			if text != "" {
				blocks = append(blocks, tape.Block{Type: tape.BlockText, Text: text})
			}
			for i, c := range m.ToolCalls {
				if c.ID == "" || c.Function.Name == "" {
					return fmt.Errorf("toolCalls[%d]: no id or function.name", i)
				}
				in, err := stsArguments(c.Function.Arguments)
				if err != nil {
					return fmt.Errorf("toolCalls[%d] (%s): %w", i, c.ID, err)
				}
				blocks = append(blocks, tape.Block{Type: tape.BlockToolUse, ID: c.ID, Name: c.Function.Name, Input: in})
				meta := r.head.Calls[c.ID]
				st.ToolCalls = append(st.ToolCalls, tape.ToolCall{ID: c.ID, Name: c.Function.Name, Input: in, Kind: cmp.Or(meta.Kind, "function"), Namespace: meta.Namespace})
				calls[c.ID] = st
			}
			st.Response.Content = append(st.Response.Content, blocks...)
			st.Response.StopReason = stsStop(r.provider, len(m.ToolCalls) > 0)
			if i := len(r.th.Steps); i < len(r.head.Steps) {
				st.Response.Usage = r.head.Steps[i].Usage
				st.Response.StopReason = cmp.Or(r.head.Steps[i].StopReason, st.Response.StopReason)
			}
			r.th.Steps = append(r.th.Steps, st)
			if r.provider == tape.ProviderOpenAIResponses {
				// As the Responses adapter normalizes output items: one message each.
				for _, b := range blocks {
					history = append(history, tape.Message{Role: "assistant", Content: []tape.Block{b}})
				}
			} else if len(blocks) > 0 {
				history = append(history, tape.Message{Role: "assistant", Content: blocks})
			}
		case "tool":
			st, ok := calls[m.ToolCallID]
			if !ok {
				return fmt.Errorf("tool message for %q, which no earlier assistant message called", m.ToolCallID)
			}
			content := []tape.Block{}
			if text != "" {
				content = append(content, tape.Block{Type: tape.BlockText, Text: text})
			}
			isErr := r.head.Calls[m.ToolCallID].ResultError
			st.ToolResults = append(st.ToolResults, tape.ToolResult{ToolCallID: m.ToolCallID, Content: content, IsError: isErr})
			res := tape.Block{Type: tape.BlockToolResult, ToolCallID: m.ToolCallID, Content: content, IsError: isErr}
			if r.provider == tape.ProviderAnthropic {
				history = appendMessage(history, "user", []tape.Block{res})
			} else {
				history = append(history, tape.Message{Role: "tool", Content: []tape.Block{res}})
			}
		default:
			return fmt.Errorf("message role %q (want system, user, assistant or tool)", m.Role)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, fmt.Errorf("%s: empty: not an STS session file", p)
	}
	if len(r.th.Steps) == 0 {
		return nil, fmt.Errorf("%s: no assistant message: not a session with model calls", p)
	}
	return r, nil
}

// stsArguments reads a call's arguments: a string holding a JSON object (as the format
// writes them) or an object. Text that is not a JSON object is a freeform input, stored as
// {"input": TEXT} the way a tape stores one.
func stsArguments(raw json.RawMessage) (json.RawMessage, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return json.RawMessage("{}"), nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		if s == "" {
			return json.RawMessage("{}"), nil
		}
		var obj map[string]json.RawMessage
		if json.Unmarshal([]byte(s), &obj) == nil && obj != nil {
			return json.RawMessage(s), nil
		}
		return jsonlex.Marshal(map[string]string{"input": s})
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil || obj == nil {
		return nil, fmt.Errorf("function.arguments is neither a string nor an object")
	}
	return raw, nil
}

// ImportSTS reads Session Trace Simple files: a file or a directory holding them. Each
// file is a session; the files TapeBox's own export wrote for one tape (the same tapeId in
// their headers) become one tape again, a subagent's thread linked to the call its header
// names. Every other file is a tape of one thread.
func ImportSTS(path string) ([]*tape.Tape, error) { return importPath(STS, path) }

func importSTSFiles(files []string) ([]*tape.Tape, error) {
	var tapes []*tape.Tape
	byKey := map[string]*tape.Tape{}
	threads := map[*tape.Tape][]*stsThread{}
	for _, f := range files {
		r, err := readSTS(f)
		if err != nil {
			return nil, fmt.Errorf("import sts: %w", err)
		}
		key := "session\x00" + r.head.ID
		if r.head.TapeID != "" && r.head.ThreadID != "" {
			key = "tape\x00" + r.head.TapeID
		}
		tp, ok := byKey[key]
		if !ok {
			tp = newImported(STS, *r.head.Harness, f)
			tp.Meta.TapeID = hexFrom(32, "sts", key)
			tp.Meta.Task = map[string]string{"session_id": cmp.Or(r.head.TapeID, r.head.ID)}
			byKey[key] = tp
			tapes = append(tapes, tp)
		}
		threads[tp] = append(threads[tp], r)
	}
	for _, tp := range tapes {
		ths := threads[tp]
		// The thread without a parent first, then in the order of their ids (t1, t2, …
		// t10, as a tape numbers them).
		sort.SliceStable(ths, func(i, j int) bool {
			a, b := ths[i], ths[j]
			if (a.head.Parent == nil) != (b.head.Parent == nil) {
				return a.head.Parent == nil
			}
			return naturalLess(a.head.ThreadID, b.head.ThreadID)
		})
		ids := map[string]bool{}
		var first, last time.Time
		for i, r := range ths {
			r.th.ID = r.head.ThreadID
			if r.th.ID == "" || len(ths) == 1 && r.head.Parent == nil {
				r.th.ID = "main"
			}
			if i > 0 && r.head.Parent == nil {
				return nil, fmt.Errorf("import sts: %s: a second thread of tape %s without a parent (the first is %s)", r.path, r.head.TapeID, ths[0].path)
			}
			if ids[r.th.ID] {
				return nil, fmt.Errorf("import sts: %s: thread %s of tape %s is given twice", r.path, r.th.ID, r.head.TapeID)
			}
			ids[r.th.ID] = true
			r.th.Parent = r.head.Parent
			tp.Threads = append(tp.Threads, r.th)
			if !r.first.IsZero() && (first.IsZero() || r.first.Before(first)) {
				first = r.first
			}
			if r.last.After(last) {
				last = r.last
			}
		}
		for _, r := range ths[1:] {
			if !hasCall(tp, r.th.Parent) {
				return nil, fmt.Errorf("import sts: %s: its parent, call %s of thread %s, is not in tape %s", r.path, r.th.Parent.ToolCallID, r.th.Parent.ThreadID, r.head.TapeID)
			}
		}
		main := ths[0]
		tp.Meta.Provider = main.provider
		tp.Meta.Model, tp.Meta.Cwd = main.model, main.head.Cwd
		if !first.IsZero() {
			tp.Meta.StartedAt = first
		}
		tp.Meta.Ended = &tape.Ended{Reason: tape.EndComplete, At: cmpTime(last, tp.Meta.StartedAt), Detail: "imported from a Session Trace Simple file, which does not say how the run ended"}
	}
	return tapes, nil
}

// hasCall says whether p names a tool call of a thread of tp.
func hasCall(tp *tape.Tape, p *tape.Parent) bool {
	for _, th := range tp.Threads {
		if th.ID != p.ThreadID {
			continue
		}
		for _, s := range th.Steps {
			for _, c := range s.ToolCalls {
				if c.ID == p.ToolCallID {
					return true
				}
			}
		}
	}
	return false
}

// naturalLess orders strings with their trailing numbers compared as numbers (t2 < t10).
func naturalLess(a, b string) bool {
	split := func(s string) (string, int) {
		i := len(s)
		for i > 0 && s[i-1] >= '0' && s[i-1] <= '9' {
			i--
		}
		n, _ := strconv.Atoi(s[i:])
		return s[:i], n
	}
	pa, na := split(a)
	pb, nb := split(b)
	if pa != pb {
		return pa < pb
	}
	return na < nb
}
