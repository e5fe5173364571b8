package realharness

import (
	"encoding/json"
	"fmt"

	"github.com/tapebox/tapebox/tape"
)

// Sent is a tool result as a harness sent it in a request body.
type Sent struct {
	// Raw is the whole wire form: the Anthropic tool_result block, the Chat tool message,
	// or the Responses function_call_output or custom_tool_call_output item.
	Raw json.RawMessage
	// Result is the same in the tape's terms. The Chat and Responses wires carry no error
	// flag.
	Result tape.ToolResult
}

// SentResults reads the tool results of a request body of provider p (Anthropic messages,
// OpenAI Chat, OpenAI Responses or the Gemini API: functionResponse {"output"} or
// {"error"}), by call id. It reads the wire format itself, not
// through tape/provider, so that a test can hold what the tape says against what the
// harness sent.
func SentResults(p tape.Provider, body []byte) (map[string]Sent, error) {
	out := map[string]Sent{}
	switch p {
	case tape.ProviderAnthropic:
		var req struct {
			Messages []struct {
				Role    string          `json:"role"`
				Content json.RawMessage `json:"content"`
			} `json:"messages"`
		}
		if err := json.Unmarshal(body, &req); err != nil {
			return nil, fmt.Errorf("decode request: %w", err)
		}
		for _, m := range req.Messages {
			var blocks []json.RawMessage
			if m.Role != "user" || json.Unmarshal(m.Content, &blocks) != nil {
				continue
			}
			for _, raw := range blocks {
				var b struct {
					Type      string          `json:"type"`
					ToolUseID string          `json:"tool_use_id"`
					Content   json.RawMessage `json:"content"`
					IsError   bool            `json:"is_error"`
				}
				if json.Unmarshal(raw, &b) != nil || b.Type != "tool_result" {
					continue
				}
				content, err := contentBlocks(b.Content)
				if err != nil {
					return nil, fmt.Errorf("tool_result %s: %w", b.ToolUseID, err)
				}
				out[b.ToolUseID] = Sent{Raw: raw, Result: tape.ToolResult{ToolCallID: b.ToolUseID, Content: content, IsError: b.IsError}}
			}
		}
	case tape.ProviderOpenAIResponses:
		var req struct {
			Input []json.RawMessage `json:"input"`
		}
		if err := json.Unmarshal(body, &req); err != nil {
			return nil, fmt.Errorf("decode request: %w", err)
		}
		for _, raw := range req.Input {
			var it struct {
				Type   string          `json:"type"`
				CallID string          `json:"call_id"`
				Output json.RawMessage `json:"output"`
			}
			if json.Unmarshal(raw, &it) != nil || (it.Type != "function_call_output" && it.Type != "custom_tool_call_output") {
				continue
			}
			content, err := contentBlocks(it.Output)
			if err != nil {
				return nil, fmt.Errorf("%s %s: %w", it.Type, it.CallID, err)
			}
			out[it.CallID] = Sent{Raw: raw, Result: tape.ToolResult{ToolCallID: it.CallID, Content: content}}
		}
	case tape.ProviderOpenAIChat:
		var req struct {
			Messages []json.RawMessage `json:"messages"`
		}
		if err := json.Unmarshal(body, &req); err != nil {
			return nil, fmt.Errorf("decode request: %w", err)
		}
		for _, raw := range req.Messages {
			var m struct {
				Role       string          `json:"role"`
				ToolCallID string          `json:"tool_call_id"`
				Content    json.RawMessage `json:"content"`
			}
			if json.Unmarshal(raw, &m) != nil || m.Role != "tool" {
				continue
			}
			content, err := contentBlocks(m.Content)
			if err != nil {
				return nil, fmt.Errorf("tool message %s: %w", m.ToolCallID, err)
			}
			out[m.ToolCallID] = Sent{Raw: raw, Result: tape.ToolResult{ToolCallID: m.ToolCallID, Content: content}}
		}
	case tape.ProviderGemini:
		var req struct {
			Contents []struct {
				Parts []json.RawMessage `json:"parts"`
			} `json:"contents"`
		}
		if err := json.Unmarshal(body, &req); err != nil {
			return nil, fmt.Errorf("decode request: %w", err)
		}
		for _, c := range req.Contents {
			for _, raw := range c.Parts {
				var part struct {
					FunctionResponse *struct {
						ID       string                     `json:"id"`
						Response map[string]json.RawMessage `json:"response"`
					} `json:"functionResponse"`
				}
				if json.Unmarshal(raw, &part) != nil || part.FunctionResponse == nil {
					continue
				}
				fr := part.FunctionResponse
				var text string
				isError := false
				if e, ok := fr.Response["error"]; ok {
					isError = json.Unmarshal(e, &text) == nil
				} else if err := json.Unmarshal(fr.Response["output"], &text); err != nil {
					return nil, fmt.Errorf("functionResponse %s: output is not a string: %s", fr.ID, Excerpt(string(raw), 200))
				}
				out[fr.ID] = Sent{Raw: raw, Result: tape.ToolResult{ToolCallID: fr.ID, Content: []tape.Block{{Type: tape.BlockText, Text: text}}, IsError: isError}}
			}
		}
	default:
		return nil, fmt.Errorf("tool results of provider %s: not read here", p)
	}
	return out, nil
}

// contentBlocks turns a result's content (a string, or a list of parts) into the tape's
// blocks.
func contentBlocks(raw json.RawMessage) ([]tape.Block, error) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return []tape.Block{{Type: tape.BlockText, Text: s}}, nil
	}
	var parts []json.RawMessage
	if err := json.Unmarshal(raw, &parts); err != nil {
		return nil, fmt.Errorf("content is neither a string nor a list: %s", Excerpt(string(raw), 200))
	}
	blocks := make([]tape.Block, 0, len(parts))
	for _, p := range parts {
		var b struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}
		if err := json.Unmarshal(p, &b); err != nil {
			return nil, fmt.Errorf("content part: %w", err)
		}
		switch b.Type {
		case "text", "input_text", "output_text":
			blocks = append(blocks, tape.Block{Type: tape.BlockText, Text: b.Text})
		case "image", "input_image":
			blocks = append(blocks, tape.Block{Type: tape.BlockImage, Raw: p})
		default:
			blocks = append(blocks, tape.Block{Type: tape.BlockOther, Raw: p})
		}
	}
	return blocks, nil
}
