package provider

import (
	"encoding/json"
	"slices"
	"strings"

	"github.com/tapebox/tapebox/tape"
)

// chat is the OpenAI Chat Completions API (POST /v1/chat/completions), read with
// encoding/json.
var chat = format{request: chatRequest, body: chatBody, stream: chatStream}

type chatMessage struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	ToolCalls  []chatToolCall  `json:"tool_calls"`
	ToolCallID string          `json:"tool_call_id"`
	// ReasoningContent is sent by OpenAI-compatible servers that expose reasoning
	// (vLLM, DeepSeek); OpenAI itself does not.
	ReasoningContent string `json:"reasoning_content"`
}

type chatToolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name string `json:"name"`
		// Arguments is a string holding JSON; some compatible servers send the object.
		Arguments json.RawMessage `json:"arguments"`
	} `json:"function"`
	Custom struct {
		Name  string `json:"name"`
		Input string `json:"input"`
	} `json:"custom"`
}

func (c chatToolCall) kind() string {
	if c.Type == "custom" {
		return "custom"
	}
	return "function"
}

func (c chatToolCall) block() tape.Block {
	if c.Type == "custom" {
		return tape.Block{Type: tape.BlockToolUse, ID: c.ID, Name: c.Custom.Name, Input: customInput(c.Custom.Input)}
	}
	input := objectInput(c.Function.Arguments)
	if s, ok := jsonString(c.Function.Arguments); ok {
		input = argsInput(s)
	}
	return tape.Block{Type: tape.BlockToolUse, ID: c.ID, Name: c.Function.Name, Input: input}
}

func chatRequest(raw []byte) (request, error) {
	m, r, err := requestObject(raw, "messages", "tools")
	if err != nil {
		return request{}, err
	}
	if r.messages, err = requestMessages(m, "messages", chatMessage.normalize); err != nil {
		return request{}, err
	}
	type tool struct {
		Type     string `json:"type"`
		Function struct {
			Name        string          `json:"name"`
			Description string          `json:"description"`
			Parameters  json.RawMessage `json:"parameters"`
		} `json:"function"`
		Custom struct {
			Name        string `json:"name"`
			Description string `json:"description"`
		} `json:"custom"`
	}
	if r.tools, err = requestTools(m, func(t tool) tape.Tool {
		switch t.Type {
		case "function":
			return tape.Tool{Name: t.Function.Name, Description: t.Function.Description, Kind: "function", InputSchema: t.Function.Parameters}
		case "custom":
			return tape.Tool{Name: t.Custom.Name, Description: t.Custom.Description, Kind: "custom"}
		}
		return tape.Tool{Name: t.Type, Kind: t.Type}
	}); err != nil {
		return request{}, err
	}
	return r, nil
}

func (msg chatMessage) normalize() (tape.Message, error) {
	content, err := contentOf(msg.Content, chatPart)
	if err != nil {
		return tape.Message{}, err
	}
	if msg.Role == "tool" {
		return tape.Message{Role: "tool", Content: []tape.Block{{Type: tape.BlockToolResult, ToolCallID: msg.ToolCallID, Content: content}}}, nil
	}
	var blocks []tape.Block
	if msg.ReasoningContent != "" {
		blocks = append(blocks, tape.Block{Type: tape.BlockThinking, Text: msg.ReasoningContent})
	}
	blocks = append(blocks, content...)
	for _, c := range msg.ToolCalls {
		blocks = append(blocks, c.block())
	}
	return tape.Message{Role: role(msg.Role), Content: blocks}, nil
}

// chatPart normalizes a part of a message's content (which is a string, a list of these,
// or null).
func chatPart(typ string, p json.RawMessage) (tape.Block, error) {
	switch typ {
	case "text":
		return textPart(p)
	case "image_url":
		return rawBlock(tape.BlockImage, p), nil
	}
	return rawBlock(tape.BlockOther, p), nil
}

type chatUsage struct {
	PromptTokens        int64 `json:"prompt_tokens"`
	CompletionTokens    int64 `json:"completion_tokens"`
	PromptTokensDetails struct {
		CachedTokens int64 `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
	CompletionTokensDetails struct {
		ReasoningTokens int64 `json:"reasoning_tokens"`
	} `json:"completion_tokens_details"`
}

func (u *chatUsage) tape() tape.Usage {
	if u == nil {
		return tape.Usage{}
	}
	return openAIUsage(u.PromptTokens, u.PromptTokensDetails.CachedTokens, u.CompletionTokens, u.CompletionTokensDetails.ReasoningTokens)
}

// chatReply is the reply made of an assistant message.
func chatReply(msg chatMessage, finish *string, usage *chatUsage) (reply, error) {
	nm, err := msg.normalize()
	if err != nil {
		return reply{}, err
	}
	rep := reply{content: nm.Content, usage: usage.tape()}
	for _, c := range msg.ToolCalls {
		rep.calls = append(rep.calls, toolCall(c.block(), c.kind()))
	}
	if finish != nil {
		rep.stop = *finish
	}
	return rep, nil
}

func chatBody(raw []byte) (reply, error) {
	var c struct {
		Choices []struct {
			Index        int         `json:"index"`
			Message      chatMessage `json:"message"`
			FinishReason *string     `json:"finish_reason"`
		} `json:"choices"`
		Usage *chatUsage `json:"usage"`
	}
	if err := json.Unmarshal(raw, &c); err != nil {
		return reply{}, err
	}
	if len(c.Choices) == 0 {
		return reply{usage: c.Usage.tape()}, nil // an error body, or n=0
	}
	// With n > 1 the first choice is the one a harness continues with.
	ch := c.Choices[0]
	for _, x := range c.Choices {
		if x.Index == 0 {
			ch = x
			break
		}
	}
	return chatReply(ch.Message, ch.FinishReason, c.Usage)
}

func chatStream(events []event) (reply, error) {
	var (
		reasoning, text strings.Builder
		calls           = map[int]*chatToolCall{}
		args            = map[int]*strings.Builder{}
		finish          *string
		usage           *chatUsage
	)
	for _, ev := range events {
		if strings.TrimSpace(ev.data) == "[DONE]" {
			break
		}
		var c struct {
			Choices []struct {
				Index int `json:"index"`
				Delta struct {
					Content          string `json:"content"`
					ReasoningContent string `json:"reasoning_content"`
					ToolCalls        []struct {
						Index    int    `json:"index"`
						ID       string `json:"id"`
						Type     string `json:"type"`
						Function struct {
							Name      string `json:"name"`
							Arguments string `json:"arguments"`
						} `json:"function"`
						Custom struct {
							Name  string `json:"name"`
							Input string `json:"input"`
						} `json:"custom"`
					} `json:"tool_calls"`
				} `json:"delta"`
				FinishReason *string `json:"finish_reason"`
			} `json:"choices"`
			Usage *chatUsage `json:"usage"`
		}
		if ok, err := decodeEvent(ev, &c); !ok {
			if err != nil {
				return reply{}, err
			}
			continue
		}
		if c.Usage != nil {
			usage = c.Usage
		}
		for _, ch := range c.Choices {
			if ch.Index != 0 {
				continue
			}
			reasoning.WriteString(ch.Delta.ReasoningContent)
			text.WriteString(ch.Delta.Content)
			for _, d := range ch.Delta.ToolCalls {
				tc := calls[d.Index]
				if tc == nil {
					tc = &chatToolCall{}
					calls[d.Index] = tc
					args[d.Index] = &strings.Builder{}
				}
				if d.ID != "" {
					tc.ID = d.ID
				}
				if d.Type != "" {
					tc.Type = d.Type
				}
				// Names come whole in the call's first delta (the official SDKs assign
				// them); only the arguments are spread over deltas.
				if d.Function.Name != "" {
					tc.Function.Name = d.Function.Name
				}
				if d.Custom.Name != "" {
					tc.Custom.Name = d.Custom.Name
				}
				tc.Custom.Input += d.Custom.Input
				args[d.Index].WriteString(d.Function.Arguments)
			}
			if ch.FinishReason != nil {
				finish = ch.FinishReason
			}
		}
	}
	msg := chatMessage{Role: "assistant", ReasoningContent: reasoning.String()}
	if text.Len() > 0 {
		msg.Content = marshal(text.String())
	}
	idx := make([]int, 0, len(calls))
	for i := range calls {
		idx = append(idx, i)
	}
	slices.Sort(idx)
	for _, i := range idx {
		tc := calls[i]
		tc.Function.Arguments = marshal(args[i].String())
		msg.ToolCalls = append(msg.ToolCalls, *tc)
	}
	return chatReply(msg, finish, usage)
}
