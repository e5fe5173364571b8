package interop

import (
	"fmt"
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
			m := stsMessage{Role: "assistant", Timestamp: ms(s.Timing.LastByteAt), Model: stepModel(tp, s)}
			for _, b := range s.Response.Content {
				switch b.Type {
				case tape.BlockText:
					m.Content += b.Text
				case tape.BlockThinking:
					m.ReasoningContent += b.Text
				}
			}
			for _, c := range s.ToolCalls {
				m.ToolCalls = append(m.ToolCalls, stsToolCall{ID: c.ID, Function: stsFunction{Name: c.Name, Arguments: string(input(c.Input))}})
			}
			msg(m)
			at := s.Timing.LastByteAt
			if s.Timing.NextRequestAt != nil {
				at = *s.Timing.NextRequestAt
			}
			for _, r := range s.ToolResults {
				msg(stsMessage{Role: "tool", ToolCallID: r.ToolCallID, Content: resultText(r), Timestamp: ms(at)})
			}
		}
		b, err := jsonl(lines)
		if err != nil {
			return nil, fmt.Errorf("export sts: thread %s: %w", th.ID, err)
		}
		files = append(files, File{Path: safeName(tp.Meta.TapeID) + "/" + safeName(th.ID) + ".jsonl", Data: b})
	}
	return files, nil
}
