package interop

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path"
	"regexp"
	"strings"

	"github.com/tapebox/tapebox/tape"
)

// GeminiSessionID is the session id a Gemini CLI export names: the one the tape was
// imported from (meta.task.session_id, a UUID), else one derived from the tape's id.
func GeminiSessionID(tp *tape.Tape) string {
	if id := tp.Meta.Task["session_id"]; uuidRE.MatchString(id) {
		return id
	}
	return uuidFrom("gemini-session", tp.Meta.TapeID)
}

// GeminiProject is the folder Gemini CLI (0.61) keeps a working directory's sessions in,
// below ~/.gemini/tmp, when no other folder claims the directory: its base name in lower
// case, every run of other characters than letters and digits one "-" (its project
// registry's slugify).
func GeminiProject(cwd string) string {
	s := strings.Trim(geminiSlugRE.ReplaceAllString(strings.ToLower(path.Base(cwd)), "-"), "-")
	if s == "" || cwd == "" || cwd == "/" {
		return "project"
	}
	return s
}

var geminiSlugRE = regexp.MustCompile(`[^a-z0-9]+`)

// ExportGeminiCLI writes a tape as the session files Gemini CLI 0.61 writes: its main
// thread as <project>/chats/session-<time>-<session>.jsonl (the session's metadata, then
// each user message, each model message with its tool calls and their results, and the
// results sent back as a user message, as its ChatRecordingService appends them), each
// subagent's thread (one a spawning call started) as <project>/chats/<session>/<agent
// id>.jsonl (kind "subagent"; the invoke_agent call that ran it names the agent id, as
// the CLI's does), and <project>/.project_root naming meta.cwd, the marker by which Gemini
// CLI finds a project's folder. Copied under $GEMINI_CLI_HOME/.gemini/tmp (by default
// ~/.gemini/tmp), `gemini --resume <session>` run in meta.cwd continues the run, and
// ImportGeminiCLI reads the files back as one tape. Gemini API tapes only; side threads
// (no spawning call) are not written.
func ExportGeminiCLI(tp *tape.Tape) ([]File, error) {
	if tp.Meta.Provider != tape.ProviderGemini {
		return nil, fmt.Errorf("export %s: tape %s speaks %q; Gemini CLI sessions hold the Gemini API's contents (use sts or atif)", GeminiCLI, tp.Meta.TapeID, tp.Meta.Provider)
	}
	main := tp.Main()
	if main == nil || len(main.Steps) == 0 {
		return nil, fmt.Errorf("export %s: tape %s has no main thread with steps", GeminiCLI, tp.Meta.TapeID)
	}
	cwd := tp.Meta.Cwd
	if cwd == "" {
		return nil, &MissingError{Format: GeminiCLI, TapeID: tp.Meta.TapeID, Missing: "meta.cwd", Why: "Gemini CLI files a session under its project, the working directory"}
	}
	session := GeminiSessionID(tp)
	hash := sha256.Sum256([]byte(cwd))
	project := GeminiProject(cwd)
	// The subagents: every thread a spawning call of a written thread started, by its call.
	agents := map[tape.Parent]string{}
	var subs []*tape.Thread
	written := map[string]bool{main.ID: true}
	for grew := true; grew; {
		grew = false
		for _, th := range tp.Threads {
			if th.Parent == nil || written[th.ID] || !written[th.Parent.ThreadID] || len(th.Steps) == 0 {
				continue
			}
			written[th.ID], grew = true, true
			agents[*th.Parent] = uuidFrom("gemini-agent", tp.Meta.TapeID, th.ID)
			subs = append(subs, th)
		}
	}
	head := func(id, kind string, th *tape.Thread) map[string]any {
		start, last := 0.0, th.Steps[len(th.Steps)-1].Timing.LastByteAt
		if kind == "subagent" {
			start = th.Steps[0].Timing.RequestAt
		}
		m := map[string]any{"sessionId": id, "projectHash": hex.EncodeToString(hash[:]),
			"startTime": at(tp, start), "lastUpdated": at(tp, last), "kind": kind}
		if kind == "subagent" {
			m["directories"] = []string{cwd}
		}
		return m
	}
	b, err := jsonl(geminiSessionLines(tp, main, head(session, "main", main), agents))
	if err != nil {
		return nil, fmt.Errorf("export %s: %w", GeminiCLI, err)
	}
	stamp := strings.NewReplacer(":", "-").Replace(at(tp, 0)[:16])
	files := []File{{Path: project + "/chats/session-" + stamp + "-" + session[:8] + ".jsonl", Data: b, Thread: main.ID}}
	for _, th := range subs {
		id := agents[*th.Parent]
		b, err := jsonl(geminiSessionLines(tp, th, head(id, "subagent", th), agents))
		if err != nil {
			return nil, fmt.Errorf("export %s: thread %s: %w", GeminiCLI, th.ID, err)
		}
		files = append(files, File{Path: project + "/chats/" + session + "/" + id + ".jsonl", Data: b, Thread: th.ID})
	}
	return append(files, File{Path: project + "/.project_root", Data: []byte(cwd)}), nil
}

// geminiSessionLines are the records of one thread's session file after its metadata
// line head: each user message, each model message with its tool calls and their results
// (an invoke_agent call naming the agent id of the thread it started, from agents), and
// the results sent back as a user message.
func geminiSessionLines(tp *tape.Tape, th *tape.Thread, head map[string]any, agents map[tape.Parent]string) []any {
	lines := []any{head}
	msgID := func(parts ...string) string {
		return uuidFrom(append([]string{"gemini-message", tp.Meta.TapeID, th.ID}, parts...)...)
	}
	seen := 0 // the request messages already written
	for i, st := range th.Steps {
		msgs := st.Request.Messages
		if seen > len(msgs) {
			seen = 0 // a request that does not extend the one before (a compressed history)
		}
		for j, m := range msgs[seen:] {
			if m.Role != "user" {
				continue
			}
			// The results a request carries are written after the answer that called
			// for them, named by the tape's call ids (a recording's requests name the
			// ids the CLI made up for calls the API sent without one).
			for k, b := range m.Content {
				if b.Type == tape.BlockText {
					lines = append(lines, map[string]any{"id": msgID(fmt.Sprint(i), fmt.Sprint(seen+j), fmt.Sprint(k)),
						"timestamp": at(tp, st.Timing.RequestAt), "type": "user", "content": []any{map[string]any{"text": b.Text}}})
				}
			}
		}
		seen = len(msgs) + 1 // the next request holds this answer too
		msg := geminiModelMessage(tp, st, msgID(fmt.Sprint(i), "model"))
		if calls, ok := msg["toolCalls"].([]any); ok {
			for k, c := range st.ToolCalls {
				if id, ok := agents[tape.Parent{ThreadID: th.ID, ToolCallID: c.ID}]; ok {
					calls[k].(map[string]any)["agentId"] = id
				}
			}
		}
		lines = append(lines, msg)
		// What the CLI sent back, recorded as a user message as it records it.
		var responses []any
		for _, c := range st.ToolCalls {
			if r, ok := st.ToolResult(c.ID); ok {
				responses = append(responses, geminiResponse(c.ID, c.Name, r))
			}
		}
		if len(responses) > 0 {
			// Sent with the next request (a subagent's call waits for the subagent).
			sent := st.Timing.LastByteAt
			if i+1 < len(th.Steps) {
				sent = max(sent, th.Steps[i+1].Timing.RequestAt)
			}
			lines = append(lines, map[string]any{"id": msgID(fmt.Sprint(i), "results"),
				"timestamp": at(tp, sent), "type": "user", "content": responses})
		}
	}
	return lines
}

// geminiModelMessage is a step's answer as a model message of the session file.
func geminiModelMessage(tp *tape.Tape, st *tape.Step, id string) map[string]any {
	var text strings.Builder
	thoughts := []any{}
	for _, b := range st.Response.Content {
		switch b.Type {
		case tape.BlockText:
			text.WriteString(b.Text)
		case tape.BlockThinking:
			thoughts = append(thoughts, map[string]any{"subject": "", "description": b.Text, "timestamp": at(tp, st.Timing.FirstByteAt)})
		}
	}
	u := st.Response.Usage
	out := max(0, u.OutputTokens-u.ReasoningTokens)
	msg := map[string]any{"id": id, "timestamp": at(tp, st.Timing.LastByteAt), "type": "gemini", "content": text.String(),
		"thoughts": thoughts, "tokens": map[string]any{"input": u.InputTokens, "output": out, "cached": u.CacheReadInputTokens,
			"thoughts": u.ReasoningTokens, "tool": 0, "total": u.InputTokens + u.OutputTokens}}
	if m := tape.StepModel(&tp.Meta, st); m != "" {
		msg["model"] = m
	}
	if len(st.ToolCalls) > 0 {
		calls := make([]any, 0, len(st.ToolCalls))
		for _, c := range st.ToolCalls {
			call := map[string]any{"id": c.ID, "name": c.Name, "args": input(c.Input), "status": "success",
				"timestamp": at(tp, st.Timing.LastByteAt), "displayName": c.Name, "description": "", "renderOutputAsMarkdown": false}
			if r, ok := st.ToolResult(c.ID); ok {
				call["result"] = []any{geminiResponse(c.ID, c.Name, r)}
				if r.IsError {
					call["status"] = "error"
				}
			}
			calls = append(calls, call)
		}
		msg["toolCalls"] = calls
	}
	return msg
}

// geminiResponse is a tool result as the functionResponse part Gemini CLI sends:
// {"output": TEXT}, or {"error": TEXT} for an error.
func geminiResponse(id, name string, r tape.ToolResult) map[string]any {
	key := "output"
	if r.IsError {
		key = "error"
	}
	return map[string]any{"functionResponse": map[string]any{"id": id, "name": name, "response": map[string]any{key: resultText(r)}}}
}
