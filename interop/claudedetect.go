package interop

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/tapebox/tapebox/tape"
)

// ccMessageShape is what the checks of a Claude Code entry's message read.
type ccMessageShape struct {
	Role    *string         `json:"role"`
	Content json.RawMessage `json:"content"`
	Parts   json.RawMessage `json:"parts"`
}

// checkCCMessage says why the message of a Claude Code user or assistant entry (raw, the
// entry's "message") is not one the importer can read (nil when it is): it must be an
// object whose content is a string or a list of blocks. The reason names the field by its
// JSON pointer, and says when the message looks like another harness's: Gemini-style
// parts instead of content (Qwen Code's session files, kept in ~/.qwen/projects/*/chats,
// have entries shaped like Claude Code's whose messages are Gemini contents).
func checkCCMessage(raw json.RawMessage) error {
	var m ccMessageShape
	if err := json.Unmarshal(raw, &m); err != nil {
		return fmt.Errorf("/message: not an object: %w", err)
	}
	if len(m.Content) == 0 || string(m.Content) == "null" {
		if len(m.Parts) > 0 && string(m.Parts) != "null" {
			return errors.New("/message/content: missing, and /message/parts holds Gemini-style parts instead: not a Claude Code message (a Qwen Code session file?)")
		}
		return errors.New("/message/content: missing: a Claude Code message holds its text and tool calls there")
	}
	switch m.Content[0] {
	case '"', '[':
	default:
		return fmt.Errorf("/message/content: %s, not a string or a list of blocks", jsonKind(m.Content))
	}
	return nil
}

// jsonKind names the kind of the JSON value raw, for errors.
func jsonKind(raw json.RawMessage) string {
	if len(raw) == 0 {
		return "nothing"
	}
	switch raw[0] {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}

// checkClaudeCode says why the JSONL file at path, whose first line looks like a Claude
// Code entry, is not a Claude Code session file (nil when it may be), as a *LineError
// naming the line: an entry of a type Claude Code does not write but Qwen Code does
// (tool_result), or a user or assistant entry whose message has another role than user
// or assistant (Qwen Code's model) or holds Gemini-style parts and no content. Auto tells
// Claude Code's files by it, so that a Qwen Code session is not read as an empty one.
//
// Lines it cannot read (bad JSON, say) are left to the importer, whose error names the
// format; so is a file that cannot be read.
func checkClaudeCode(path string) error {
	err := readLines(path, func(_ int, b []byte) error {
		if !maybeLookalike(b) {
			return nil
		}
		var e struct {
			Type    string          `json:"type"`
			Message json.RawMessage `json:"message"`
		}
		if json.Unmarshal(b, &e) != nil {
			return errSkipCheck
		}
		if e.Type == "tool_result" {
			return lookalikeError{errors.New(`/type: "tool_result", an entry type Claude Code does not write (Qwen Code does)`)}
		}
		if e.Type != "user" && e.Type != "assistant" || len(e.Message) == 0 || string(e.Message) == "null" {
			return nil
		}
		var m ccMessageShape
		if json.Unmarshal(e.Message, &m) != nil {
			return errSkipCheck
		}
		if m.Role != nil && *m.Role != "user" && *m.Role != "assistant" {
			return lookalikeError{fmt.Errorf("/message/role: %q, neither user nor assistant", *m.Role)}
		}
		if (len(m.Content) == 0 || string(m.Content) == "null") && len(m.Parts) > 0 && string(m.Parts) != "null" {
			return lookalikeError{checkCCMessage(e.Message)}
		}
		return nil
	})
	var la lookalikeError
	if !errors.As(err, &la) {
		return nil
	}
	return err
}

// maybeLookalike says whether the line b may hold what checkClaudeCode looks for: a
// "parts" or "tool_result" anywhere, or a role that is not, written compactly, user or
// assistant. Claude Code's lines, which name neither and write their roles compactly, are
// then not decoded a second time.
func maybeLookalike(b []byte) bool {
	if bytes.Contains(b, []byte(`"parts"`)) || bytes.Contains(b, []byte("tool_result")) {
		return true
	}
	return bytes.Contains(b, []byte(`"role"`)) && !bytes.Contains(b, []byte(`"role":"user"`)) && !bytes.Contains(b, []byte(`"role":"assistant"`))
}

// errSkipCheck stops checkClaudeCode at a line it cannot read, leaving it to the importer.
var errSkipCheck = errors.New("line left to the importer")

// lookalikeError is why checkClaudeCode takes a line for another harness's.
type lookalikeError struct{ error }

func (e lookalikeError) Unwrap() error { return e.error }

// anyAnswer says whether any of steps holds something of a model's answer (content or a
// tool call): an import whose steps hold none read nothing of the file it was given, and
// is an error rather than an empty tape.
func anyAnswer(steps []*tape.Step) bool {
	return slices.ContainsFunc(steps, func(s *tape.Step) bool {
		return len(s.Response.Content) > 0 || len(s.ToolCalls) > 0
	})
}
