package interop

import (
	"fmt"
	"strings"
	"time"

	"github.com/tapebox/tapebox/tape"
)

// The Hub's Session Trace Simple format (hf.co/docs/hub/session-traces-format): a session
// header line, then one message per line.
type stsSession struct {
	Type    string `json:"type"`
	Harness string `json:"harness"`
	ID      string `json:"id"`
	Name    string `json:"name,omitempty"`
	// Extra metadata, which the format allows and the viewer ignores.
	TapeID   string `json:"tapeId"`
	ThreadID string `json:"threadId"`
	Parent   any    `json:"parent,omitempty"`
	Cwd      string `json:"cwd,omitempty"`
	// Provider is the tape's wire format, which an import needs to rebuild its
	// normalized requests in the same form.
	Provider string `json:"provider,omitempty"`
	// Calls holds, by call id, what STS messages have no field for: a call's kind
	// (freeform) and namespace, and whether its result was an error. Only calls with one of
	// them are listed.
	Calls map[string]stsCallMeta `json:"calls,omitempty"`
	// Steps holds, for each assistant message in order (each a model call), its usage and
	// stop reason, which STS messages have no field for either.
	Steps []stsStepMeta `json:"steps,omitempty"`
}

// stsStepMeta is what a session header says of one model call.
type stsStepMeta struct {
	Usage      tape.Usage `json:"usage"`
	StopReason string     `json:"stopReason,omitempty"`
}

// stsCallMeta is what a session header says of one call.
type stsCallMeta struct {
	Kind        string `json:"kind,omitempty"`
	Namespace   string `json:"namespace,omitempty"`
	ResultError bool   `json:"resultError,omitempty"`
}

// call updates what the header says of call id.
func (h *stsSession) call(id string, f func(*stsCallMeta)) {
	if h.Calls == nil {
		h.Calls = map[string]stsCallMeta{}
	}
	m := h.Calls[id]
	f(&m)
	h.Calls[id] = m
}

type stsLine struct {
	Type    string     `json:"type"`
	Message stsMessage `json:"message"`
}

type stsMessage struct {
	Role             string        `json:"role"`
	Content          string        `json:"content"`
	ReasoningContent string        `json:"reasoningContent,omitempty"`
	ToolCalls        []stsToolCall `json:"toolCalls,omitempty"`
	ToolCallID       string        `json:"toolCallId,omitempty"`
	Timestamp        int64         `json:"timestamp,omitempty"`
	Model            string        `json:"model,omitempty"`
}

type stsToolCall struct {
	ID       string      `json:"id"`
	Function stsFunction `json:"function"`
}

type stsFunction struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// ExportSTS writes a tape in the Session Trace Simple format, one session file per thread
// (<tape id>/<thread id>.jsonl); a subagent's header names the call that spawned it.
func ExportSTS(tp *tape.Tape) ([]File, error) {
	harness := tp.Meta.Harness
	if harness == "" {
		harness = "tapebox"
	}
	var files []File
	for _, th := range tp.Threads {
		if len(th.Steps) == 0 {
			continue
		}
		ms := func(v float64) int64 {
			return tp.Meta.StartedAt.Add(time.Duration(v * float64(time.Millisecond))).UnixMilli()
		}
		p := prompt(th)
		name := p
		if r := []rune(name); len(r) > 80 {
			name = string(r[:79]) + "…"
		}
		head := stsSession{Type: "session", Harness: harness, ID: tp.Meta.TapeID + "-" + th.ID, Name: name, TapeID: tp.Meta.TapeID, ThreadID: th.ID, Cwd: tp.Meta.Cwd, Provider: string(tp.Meta.Provider)}
		if th.Parent != nil {
			head.Parent = th.Parent
		}
		for _, st := range th.Steps {
			head.Steps = append(head.Steps, stsStepMeta{Usage: st.Response.Usage, StopReason: st.Response.StopReason})
			for _, c := range st.ToolCalls {
				if c.Kind == "custom" {
					head.call(c.ID, func(m *stsCallMeta) { m.Kind = c.Kind })
				}
				if c.Namespace != "" {
					head.call(c.ID, func(m *stsCallMeta) { m.Namespace = c.Namespace })
				}
			}
			for _, r := range st.ToolResults {
				if r.IsError {
					head.call(r.ToolCallID, func(m *stsCallMeta) { m.ResultError = true })
				}
			}
		}
		lines := []any{head}
		msg := func(m stsMessage) { lines = append(lines, stsLine{Type: "message", Message: m}) }
		if s := th.Steps[0].Request.System; s != "" {
			msg(stsMessage{Role: "system", Content: s, Timestamp: ms(th.Steps[0].Timing.RequestAt)})
		}
		if p != "" {
			msg(stsMessage{Role: "user", Content: p, Timestamp: ms(th.Steps[0].Timing.RequestAt)})
		}
		for i, s := range th.Steps {
			if text := followUp(th, i); text != "" {
				msg(stsMessage{Role: "user", Content: text, Timestamp: ms(s.Timing.RequestAt)})
			}
			m := stsMessage{Role: "assistant", Timestamp: ms(s.Timing.LastByteAt), Model: tape.StepModel(&tp.Meta, s)}
			m.Content, m.ReasoningContent = answerText(s.Response.Content)
			for _, c := range s.ToolCalls {
				m.ToolCalls = append(m.ToolCalls, stsToolCall{ID: c.ID, Function: stsFunction{Name: c.Name, Arguments: string(input(c.Input))}})
			}
			msg(m)
			for _, r := range s.ToolResults {
				msg(stsMessage{Role: "tool", ToolCallID: r.ToolCallID, Content: stsResultText(r), Timestamp: ms(resultsAt(s.Timing))})
			}
		}
		b, err := jsonl(lines)
		if err != nil {
			return nil, fmt.Errorf("export sts: thread %s: %w", th.ID, err)
		}
		files = append(files, File{Path: safeName(tp.Meta.TapeID) + "/" + safeName(th.ID) + ".jsonl", Data: b, Thread: th.ID})
	}
	return files, nil
}

// stsResultText is a tool result as one string, its blocks one per line (as a simulator
// joins them to compare a result, so that a result of several blocks, such as Claude Code's
// Agent result, compares equal after a round trip).
func stsResultText(r tape.ToolResult) string {
	parts := make([]string, 0, len(r.Content))
	for _, bl := range r.Content {
		switch bl.Type {
		case tape.BlockText:
			parts = append(parts, bl.Text)
		case tape.BlockImage:
			parts = append(parts, "[image]")
		}
	}
	return strings.Join(parts, "\n")
}
