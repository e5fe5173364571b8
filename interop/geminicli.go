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

// ExportGeminiCLI writes a tape's main thread as the session file Gemini CLI 0.61 writes:
// <project>/chats/session-<time>-<session>.jsonl (the session's metadata, then each user
// message, each model message with its tool calls and their results, and the results sent
// back as a user message, as its ChatRecordingService appends them), and
// <project>/.project_root naming meta.cwd, the marker by which Gemini CLI finds a
// project's folder. Copied under $GEMINI_CLI_HOME/.gemini/tmp (by default ~/.gemini/tmp),
// `gemini --resume <session>` run in meta.cwd continues the run. Gemini API tapes only;
// subagent threads are not written (their files need the CLI's own agent ids).
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
	last := main.Steps[len(main.Steps)-1].Timing.LastByteAt
	lines := []any{map[string]any{"sessionId": session, "projectHash": hex.EncodeToString(hash[:]),
		"startTime": at(tp, 0), "lastUpdated": at(tp, last), "kind": "main"}}
	msgID := func(parts ...string) string {
		return uuidFrom(append([]string{"gemini-message", tp.Meta.TapeID, main.ID}, parts...)...)
	}
	seen := 0 // the request messages already written
	for i, st := range main.Steps {
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
		lines = append(lines, geminiModelMessage(tp, st, msgID(fmt.Sprint(i), "model")))
		// What the CLI sent back, recorded as a user message as it records it.
		var responses []any
		for _, c := range st.ToolCalls {
			if r, ok := st.ToolResult(c.ID); ok {
				responses = append(responses, geminiResponse(c.ID, c.Name, r))
			}
		}
		if len(responses) > 0 {
			lines = append(lines, map[string]any{"id": msgID(fmt.Sprint(i), "results"),
				"timestamp": at(tp, st.Timing.LastByteAt), "type": "user", "content": responses})
		}
	}
	b, err := jsonl(lines)
	if err != nil {
		return nil, fmt.Errorf("export %s: %w", GeminiCLI, err)
	}
	project := GeminiProject(cwd)
	stamp := strings.NewReplacer(":", "-").Replace(at(tp, 0)[:16])
	name := "session-" + stamp + "-" + session[:8] + ".jsonl"
	return []File{
		{Path: project + "/chats/" + name, Data: b, Thread: main.ID},
		{Path: project + "/.project_root", Data: []byte(cwd)},
	}, nil
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
