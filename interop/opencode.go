package interop

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/tapebox/tapebox/tape"
)

// openCodeProviderIDs maps the tape's wire format to OpenCode's provider id.
var openCodeProviderIDs = map[tape.Provider]string{
	tape.ProviderAnthropic:       "anthropic",
	tape.ProviderOpenAIResponses: "openai",
}

// openCodeFinishes maps each provider's stop reason back to OpenCode's finish reason.
var openCodeFinishes = map[string]string{
	"end_turn": "stop", "max_tokens": "length", "tool_use": "tool-calls",
	"completed": "stop", "max_output_tokens": "length",
}

// OpenCodeSessionID is the session id an OpenCode export gives a thread: the one OpenCode
// sent (the X-Session-Id header of the thread's requests, or the session the tape was
// imported from), else one derived from the tape and thread ids in OpenCode's form.
func OpenCodeSessionID(tp *tape.Tape, th *tape.Thread) string {
	if len(th.Steps) > 0 {
		if id := th.Steps[0].Request.Headers["x-session-id"]; openCodeIDRE(id, "ses_") {
			return id
		}
	}
	if id := tp.Meta.Task["session_id"]; th.Parent == nil && openCodeIDRE(id, "ses_") && tp.Meta.Labels[LabelImportedFrom] == string(OpenCode) {
		return id
	}
	return "ses_" + openCodeSuffix(hexFrom(26, "opencode-session", tp.Meta.TapeID, th.ID))
}

// openCodeIDRE says whether id is an OpenCode id of prefix: letters and digits after it.
func openCodeIDRE(id, prefix string) bool {
	rest, ok := strings.CutPrefix(id, prefix)
	if !ok || len(rest) < 8 {
		return false
	}
	for _, r := range rest {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}

// openCodeSuffix turns hex digits into the 26 characters after an OpenCode id's prefix.
func openCodeSuffix(hex string) string { return (hex + strings.Repeat("0", 26))[:26] }

// ExportOpenCode writes each agent thread of a tape as the JSON `opencode export`
// prints (OpenCode 1.18): <session>.json, the session's info and its messages (the user's
// prompt and follow-ups, an assistant message per step with its text, reasoning and tool
// parts, each tool's result as its output or error). `opencode import <session>.json`, run
// in meta.cwd, puts it in OpenCode's database; `opencode run --session <session>` then
// continues it. A subagent's thread is a session of its own whose parentID is its parent's,
// named in the task call's metadata. Threads that make no tool call and spawn from no call
// (OpenCode's title request) are left out. Anthropic and OpenAI Responses tapes only.
func ExportOpenCode(tp *tape.Tape) ([]File, error) {
	providerID, ok := openCodeProviderIDs[tp.Meta.Provider]
	if !ok {
		return nil, fmt.Errorf("export %s: tape %s speaks %q; OpenCode sessions here hold Anthropic Messages or OpenAI Responses (use sts or atif)", OpenCode, tp.Meta.TapeID, tp.Meta.Provider)
	}
	if tp.Meta.Cwd == "" {
		return nil, &MissingError{Format: OpenCode, TapeID: tp.Meta.TapeID, Missing: "meta.cwd", Why: "an OpenCode session names its directory"}
	}
	sessions := map[string]string{}
	for _, th := range tp.Threads {
		sessions[th.ID] = OpenCodeSessionID(tp, th)
	}
	spawned := map[string]string{} // task call id -> child session
	for _, th := range tp.Threads {
		if th.Parent != nil {
			spawned[th.Parent.ToolCallID] = sessions[th.ID]
		}
	}
	var files []File
	for _, th := range tp.Threads {
		if th.Parent == nil && !threadCalls(th) {
			continue
		}
		if len(th.Steps) == 0 {
			continue
		}
		data, err := jsonIndent(openCodeSessionOf(tp, th, providerID, sessions, spawned))
		if err != nil {
			return nil, fmt.Errorf("export %s: %w", OpenCode, err)
		}
		files = append(files, File{Path: safeName(sessions[th.ID]) + ".json", Data: data, Thread: th.ID})
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("export %s: tape %s has no thread that makes a tool call", OpenCode, tp.Meta.TapeID)
	}
	return files, nil
}

// threadCalls says whether a thread makes a tool call.
func threadCalls(th *tape.Thread) bool {
	for _, s := range th.Steps {
		if len(s.ToolCalls) > 0 {
			return true
		}
	}
	return false
}

// openCodeSessionOf is one thread as an OpenCode export.
func openCodeSessionOf(tp *tape.Tape, th *tape.Thread, providerID string, sessions, spawned map[string]string) map[string]any {
	sid := sessions[th.ID]
	ms := func(at float64) int64 { return tp.Meta.StartedAt.UnixMilli() + int64(at) }
	n := 0
	id := func(prefix string) string {
		n++
		// Ascending, as OpenCode's own message and part ids are: it orders by them.
		return prefix + fmt.Sprintf("%012x", tp.Meta.StartedAt.UnixMilli()*100+int64(n)) + openCodeSuffix(hexFrom(14, tp.Meta.TapeID, th.ID, fmt.Sprint(n)))[:14]
	}
	model := func(s *tape.Step) string { return tape.StepModel(&tp.Meta, s) }
	var messages []any
	var userID string
	var usage tape.Usage
	user := func(text string, at float64) {
		userID = id("msg_")
		messages = append(messages, map[string]any{
			"info": map[string]any{"id": userID, "sessionID": sid, "role": "user", "time": map[string]any{"created": ms(at)},
				"agent": "build", "model": map[string]any{"providerID": providerID, "modelID": model(th.Steps[0])}},
			"parts": []any{map[string]any{"id": id("prt_"), "sessionID": sid, "messageID": userID, "type": "text", "text": text}},
		})
	}
	if p := prompt(th); p != "" {
		user(p, th.Steps[0].Timing.RequestAt)
	}
	for i, s := range th.Steps {
		if f := followUp(th, i); f != "" {
			user(f, s.Timing.RequestAt)
		}
		mid := id("msg_")
		u := s.Response.Usage
		usage.InputTokens += u.InputTokens
		usage.OutputTokens += u.OutputTokens
		tokens := map[string]any{"total": u.InputTokens + u.OutputTokens, "input": u.InputTokens, "output": u.OutputTokens, "reasoning": u.ReasoningTokens,
			"cache": map[string]any{"read": u.CacheReadInputTokens, "write": u.CacheCreationInputTokens}}
		finish := openCodeFinishes[s.Response.StopReason]
		if finish == "" {
			finish = "stop"
			if len(s.ToolCalls) > 0 {
				finish = "tool-calls"
			}
		}
		part := func(fields map[string]any) map[string]any {
			fields["id"], fields["sessionID"], fields["messageID"] = id("prt_"), sid, mid
			return fields
		}
		span := map[string]any{"start": ms(s.Timing.FirstByteAt), "end": ms(s.Timing.LastByteAt)}
		parts := []any{part(map[string]any{"type": "step-start"})}
		for _, b := range s.Response.Content {
			switch b.Type {
			case tape.BlockText:
				parts = append(parts, part(map[string]any{"type": "text", "text": b.Text, "time": span}))
			case tape.BlockThinking:
				parts = append(parts, part(map[string]any{"type": "reasoning", "text": b.Text, "time": span}))
			}
		}
		for _, c := range s.ToolCalls {
			state := map[string]any{"status": "running", "input": input(c.Input), "time": map[string]any{"start": ms(s.Timing.LastByteAt)}}
			if r, ok := s.ToolResult(c.ID); ok {
				end := ms(s.Timing.LastByteAt)
				if i+1 < len(th.Steps) {
					end = ms(th.Steps[i+1].Timing.RequestAt)
				}
				meta := map[string]any{}
				if child, ok := spawned[c.ID]; ok {
					meta["sessionId"], meta["parentSessionId"] = child, sid
				}
				state = map[string]any{"status": "completed", "input": input(c.Input), "output": resultText(r), "title": "", "metadata": meta,
					"time": map[string]any{"start": ms(s.Timing.LastByteAt), "end": end}}
				if r.IsError {
					state = map[string]any{"status": "error", "input": input(c.Input), "error": resultText(r), "metadata": meta,
						"time": map[string]any{"start": ms(s.Timing.LastByteAt), "end": end}}
				}
			}
			parts = append(parts, part(map[string]any{"type": "tool", "tool": c.Name, "callID": c.ID, "state": state}))
		}
		parts = append(parts, part(map[string]any{"type": "step-finish", "reason": finish, "tokens": tokens, "cost": 0}))
		messages = append(messages, map[string]any{
			"info": map[string]any{"id": mid, "sessionID": sid, "role": "assistant", "parentID": userID, "mode": "build", "agent": "build",
				"path": map[string]any{"cwd": tp.Meta.Cwd, "root": "/"}, "cost": 0, "tokens": tokens, "modelID": model(s), "providerID": providerID,
				"time": map[string]any{"created": ms(s.Timing.RequestAt), "completed": ms(s.Timing.LastByteAt)}, "finish": finish},
			"parts": parts,
		})
	}
	last := th.Steps[len(th.Steps)-1].Timing.LastByteAt
	info := map[string]any{"id": sid, "slug": "tapebox-" + tp.Meta.TapeID[:min(8, len(tp.Meta.TapeID))], "projectID": "global", "directory": tp.Meta.Cwd,
		"title": cmpString(prompt(th), "TapeBox export"), "version": cmpString(tp.Meta.HarnessVersion, "1.18.33"),
		"summary": map[string]any{"additions": 0, "deletions": 0, "files": 0}, "cost": 0,
		"tokens": map[string]any{"input": usage.InputTokens, "output": usage.OutputTokens, "reasoning": 0, "cache": map[string]any{"read": 0, "write": 0}},
		"time":   map[string]any{"created": ms(th.Steps[0].Timing.RequestAt), "updated": ms(last)}}
	if th.Parent != nil {
		info["parentID"] = sessions[th.Parent.ThreadID]
	}
	return map[string]any{"info": info, "messages": messages}
}

func cmpString(s, def string) string {
	if s == "" {
		return def
	}
	if len(s) > 100 {
		return s[:100]
	}
	return s
}

// jsonIndent encodes v as `opencode export` prints it: indented by two spaces.
func jsonIndent(v any) ([]byte, error) {
	b, err := jsonMarshalIndent(v)
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// jsonMarshalIndent is json.MarshalIndent without HTML escaping.
func jsonMarshalIndent(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}
