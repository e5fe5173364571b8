package provider

import (
	"encoding/json"
	"strings"

	"github.com/tapebox/tapebox/tape"
)

// What the gateway (recording) and the simulator (serving a recording) both read of a
// request, and the error both answer with: one definition each, so that the two ends of a
// tape agree.

// AssistantTurns counts the model's answers a request holds (tape.Request.Turns: runs of
// consecutive assistant messages).
func AssistantTurns(req *tape.Request) int { return req.Turns() }

// OpeningText is the text of the messages before the model's first answer, every role
// (a harness's role:system instructions included), one line per text block.
func OpeningText(req *tape.Request) string { return opening(req, false) }

// OpeningUserText is OpeningText of the user messages only. A subagent's task is among
// them, not always first: a Codex sub-agent's request opens with its environment context,
// then the task spawn_agent gave it.
func OpeningUserText(req *tape.Request) string { return opening(req, true) }

func opening(req *tape.Request, userOnly bool) string {
	var b strings.Builder
	for _, m := range req.Messages {
		if m.Role == "assistant" {
			break
		}
		if userOnly && m.Role != "user" {
			continue
		}
		for _, blk := range m.Content {
			if blk.Type == tape.BlockText {
				b.WriteString(blk.Text)
				b.WriteByte('\n')
			}
		}
	}
	return b.String()
}

// ErrorBody is an error body in p's wire format: Anthropic's
// {"type":"error","error":{"type":typ,"message":msg}}, OpenAI's
// {"error":{"message":msg,"type":typ,"param":null,"code":code}} (code null when empty).
// typ is the error type (api_error, invalid_request_error, ...). The Gemini API's is
// {"error":{"code":HTTP,"message":msg,"status":STATUS}}, the google.rpc status typ stands
// for (invalid_request_error is INVALID_ARGUMENT and 400, ...; code is not sent).
func ErrorBody(p tape.Provider, typ, code, msg string) []byte {
	var v any
	if p == tape.ProviderGemini {
		st, ok := geminiStatus[typ]
		if !ok {
			st = geminiStatus["api_error"]
		}
		v = map[string]any{"error": map[string]any{"code": st.code, "message": msg, "status": st.status}}
	} else if p == tape.ProviderAnthropic {
		v = map[string]any{"type": "error", "error": map[string]string{"type": typ, "message": msg}}
	} else {
		var c any
		if code != "" {
			c = code
		}
		v = map[string]any{"error": map[string]any{"message": msg, "type": typ, "param": nil, "code": c}}
	}
	b, _ := json.Marshal(v) // strings and nil only
	return b
}

// NormalizeResponse fills the normalized fields of a response (content, stop_reason, usage)
// from its Raw or Chunks and returns the tool calls it asks for, as Normalize does for a
// whole step; it reads no request.
func NormalizeResponse(p tape.Provider, r *tape.Response) ([]tape.ToolCall, error) {
	f, err := formatOf(p)
	if err != nil {
		return nil, err
	}
	return normalizeResponse(f, p, r)
}
