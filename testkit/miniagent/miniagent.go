// Package miniagent is a small, real agent harness: it sends model calls in any of the
// three wire formats TapeBox records (streaming or not), runs the Bash tool calls it gets for
// real in its working directory, runs a response's tool calls in parallel, and plays an
// Agent tool call as a subagent with a conversation of its own. Its tools take Claude Code's
// shapes and its results Claude Code's formats, so its recordings replay with the
// claude-code harness module. TapeBox uses it for the record-and-replay round trip and for
// `tapebox demo`.
package miniagent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"sync"

	"github.com/tapebox/tapebox/tape"
	"github.com/tapebox/tapebox/tape/provider"
)

// UserAgent is what the harness says it is.
const UserAgent = "tapebox-mini/0.1.0"

// Config configures a run.
type Config struct {
	// BaseURL is the provider's (or the gateway's) base URL, without /v1.
	BaseURL  string
	Provider tape.Provider
	Stream   bool
	Model    string
	APIKey   string
	// Prompt is the task; Dir is the working directory of the Bash tool.
	Prompt string
	Dir    string
	// Client sends the calls; nil means http.DefaultClient.
	Client *http.Client
	// MaxTurns bounds a conversation (default 50).
	MaxTurns int
	// Tools replaces the tools offered (default: Bash and Agent).
	Tools []Tool
	// RunTool, when set, answers tool calls instead of the built-in tools: it returns the
	// result and true, or false to let the built-in tool run (Agent always spawns). Tests use
	// it to record tapes whose results are written by hand in a harness's exact format.
	RunTool func(ctx context.Context, c tape.ToolCall) (tape.ToolResult, bool)
}

// Tool is a tool the harness offers the model. A Custom tool takes freeform text (an OpenAI
// custom tool, such as Codex's apply_patch).
type Tool struct {
	Name, Description string
	// Schema is the JSON Schema of a function tool's input.
	Schema string
	Custom bool
}

// System is the harness's system prompt.
const System = "You are tapebox-mini, a tiny coding agent. Use Bash to act and Agent to delegate."

// DefaultTools are Bash and Agent, in Claude Code's shapes.
var DefaultTools = []Tool{
	{"Bash", "Run a bash command in the working directory.", `{"type":"object","properties":{"command":{"type":"string"},"description":{"type":"string"}},"required":["command"]}`, false},
	{"Agent", "Delegate a task to a subagent; returns its final answer.", `{"type":"object","properties":{"description":{"type":"string"},"prompt":{"type":"string"},"subagent_type":{"type":"string"}},"required":["prompt"]}`, false},
}

// Run plays one conversation to its end and returns the model's final text.
func Run(ctx context.Context, cfg Config) (string, error) {
	if cfg.MaxTurns == 0 {
		cfg.MaxTurns = 50
	}
	if cfg.Client == nil {
		cfg.Client = http.DefaultClient
	}
	if cfg.Model == "" {
		cfg.Model = "fake-model"
	}
	if cfg.Tools == nil {
		cfg.Tools = DefaultTools
	}
	conv := newConversation(cfg)
	for turn := 0; turn < cfg.MaxTurns; turn++ {
		step, err := conv.call(ctx)
		if err != nil {
			return "", err
		}
		if len(step.ToolCalls) == 0 {
			return step.Response.Text(), nil
		}
		results := make([]tape.ToolResult, len(step.ToolCalls))
		var wg sync.WaitGroup
		for i, c := range step.ToolCalls {
			wg.Go(func() { results[i] = runTool(ctx, cfg, c) })
		}
		wg.Wait()
		conv.addResults(results)
	}
	return "", fmt.Errorf("miniagent: no final answer after %d turns", cfg.MaxTurns)
}

// runTool runs one tool call and formats its result as Claude Code does.
func runTool(ctx context.Context, cfg Config, c tape.ToolCall) tape.ToolResult {
	if cfg.RunTool != nil && c.Name != "Agent" {
		if res, ok := cfg.RunTool(ctx, c); ok {
			res.ToolCallID = c.ID
			return res
		}
	}
	res := tape.ToolResult{ToolCallID: c.ID}
	var in map[string]any
	_ = json.Unmarshal(c.Input, &in)
	text := func(s string) { res.Content = []tape.Block{{Type: tape.BlockText, Text: s}} }
	switch c.Name {
	case "Bash":
		cmdline, _ := in["command"].(string)
		out, code := bash(ctx, cfg.Dir, cmdline)
		switch {
		case code != 0:
			res.IsError = true
			text(strings.TrimRight(fmt.Sprintf("Exit code %d\n%s", code, out), "\n"))
		case strings.TrimRight(out, "\n") == "":
			text("(Bash completed with no output)")
		default:
			text(strings.TrimRight(out, "\n"))
		}
	case "Agent":
		prompt, _ := in["prompt"].(string)
		sub := cfg
		sub.Prompt = prompt
		final, err := Run(ctx, sub)
		if err != nil {
			res.IsError = true
			text("subagent failed: " + err.Error())
			break
		}
		text(final)
	default:
		res.IsError = true
		text(fmt.Sprintf("<tool_use_error>Error: No such tool available: %s</tool_use_error>", c.Name))
	}
	return res
}

// bash runs a command and returns its combined output and exit code.
func bash(ctx context.Context, dir, cmdline string) (string, int) {
	shell := "bash"
	if _, err := exec.LookPath(shell); err != nil {
		shell = "sh"
	}
	cmd := exec.CommandContext(ctx, shell, "-c", cmdline)
	cmd.Dir = dir
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &out
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return out.String(), 0
	case errors.As(err, &ee):
		return out.String(), ee.ExitCode()
	}
	return err.Error(), 1
}

// conversation holds one thread's messages in the wire format's own shape.
type conversation struct {
	cfg      Config
	messages []any // wire-format messages (Anthropic, Chat) or input items (Responses)
	custom   map[string]bool
}

func newConversation(cfg Config) *conversation {
	c := &conversation{cfg: cfg}
	switch cfg.Provider {
	case tape.ProviderAnthropic:
		c.messages = []any{map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": cfg.Prompt}}}}
	case tape.ProviderOpenAIChat:
		c.messages = []any{
			map[string]any{"role": "system", "content": System},
			map[string]any{"role": "user", "content": cfg.Prompt},
		}
	default:
		c.messages = []any{map[string]any{"type": "message", "role": "user", "content": []any{map[string]any{"type": "input_text", "text": cfg.Prompt}}}}
	}
	return c
}

func (c *conversation) body() ([]byte, string) {
	var ts []any
	body := map[string]any{"model": c.cfg.Model, "stream": c.cfg.Stream}
	path := "/v1/messages"
	for _, t := range c.cfg.Tools {
		schema := json.RawMessage(t.Schema)
		switch {
		case c.cfg.Provider == tape.ProviderAnthropic:
			ts = append(ts, map[string]any{"name": t.Name, "description": t.Description, "input_schema": schema})
		case c.cfg.Provider == tape.ProviderOpenAIChat:
			ts = append(ts, map[string]any{"type": "function", "function": map[string]any{"name": t.Name, "description": t.Description, "parameters": schema}})
		case t.Custom:
			ts = append(ts, map[string]any{"type": "custom", "name": t.Name, "description": t.Description})
		default:
			ts = append(ts, map[string]any{"type": "function", "name": t.Name, "description": t.Description, "parameters": schema})
		}
	}
	body["tools"] = ts
	switch c.cfg.Provider {
	case tape.ProviderAnthropic:
		body["system"] = System
		body["max_tokens"] = 4096
		body["messages"] = c.messages
	case tape.ProviderOpenAIChat:
		path = "/v1/chat/completions"
		body["messages"] = c.messages
		body["parallel_tool_calls"] = true
		if c.cfg.Stream {
			body["stream_options"] = map[string]any{"include_usage": true}
		}
	default:
		path = "/v1/responses"
		body["instructions"] = System
		body["input"] = c.messages
		body["parallel_tool_calls"] = true
		body["store"] = false
	}
	b, _ := json.Marshal(body)
	return b, path
}

// call sends the conversation and parses the answer with TapeBox's own provider adapters.
func (c *conversation) call(ctx context.Context) (*tape.Step, error) {
	body, path := c.body()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimSuffix(c.cfg.BaseURL, "/")+path, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", UserAgent)
	if c.cfg.Provider == tape.ProviderAnthropic {
		req.Header.Set("x-api-key", c.cfg.APIKey)
		req.Header.Set("anthropic-version", "2023-06-01")
	} else {
		req.Header.Set("Authorization", "Bearer "+c.cfg.APIKey)
	}
	resp, err := c.cfg.Client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("miniagent: model call: %w", err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("miniagent: read answer: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("miniagent: model call: %s: %s", resp.Status, bytes.TrimSpace(data))
	}
	step := &tape.Step{Request: tape.Request{Raw: body}}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		step.Response.Chunks = []tape.Chunk{{Data: string(data)}}
	} else {
		step.Response.Raw = data
	}
	if err := provider.Normalize(c.cfg.Provider, step); err != nil {
		return nil, fmt.Errorf("miniagent: parse answer: %w", err)
	}
	c.addAnswer(step)
	return step, nil
}

// addAnswer appends the model's answer to the conversation.
func (c *conversation) addAnswer(s *tape.Step) {
	text := s.Response.Text()
	switch c.cfg.Provider {
	case tape.ProviderAnthropic:
		var blocks []any
		if text != "" {
			blocks = append(blocks, map[string]any{"type": "text", "text": text})
		}
		for _, tc := range s.ToolCalls {
			blocks = append(blocks, map[string]any{"type": "tool_use", "id": tc.ID, "name": tc.Name, "input": tc.Input})
		}
		c.messages = append(c.messages, map[string]any{"role": "assistant", "content": blocks})
	case tape.ProviderOpenAIChat:
		msg := map[string]any{"role": "assistant", "content": text}
		var calls []any
		for _, tc := range s.ToolCalls {
			calls = append(calls, map[string]any{"id": tc.ID, "type": "function", "function": map[string]any{"name": tc.Name, "arguments": string(tc.Input)}})
		}
		if calls != nil {
			msg["tool_calls"] = calls
		}
		c.messages = append(c.messages, msg)
	default:
		if text != "" {
			c.messages = append(c.messages, map[string]any{"type": "message", "role": "assistant", "content": []any{map[string]any{"type": "output_text", "text": text}}})
		}
		for _, tc := range s.ToolCalls {
			if tc.Kind == "custom" {
				var in struct {
					Input string `json:"input"`
				}
				_ = json.Unmarshal(tc.Input, &in)
				c.messages = append(c.messages, map[string]any{"type": "custom_tool_call", "call_id": tc.ID, "name": tc.Name, "input": in.Input})
				continue
			}
			c.messages = append(c.messages, map[string]any{"type": "function_call", "call_id": tc.ID, "name": tc.Name, "arguments": string(tc.Input)})
		}
		c.custom = map[string]bool{}
		for _, tc := range s.ToolCalls {
			c.custom[tc.ID] = tc.Kind == "custom"
		}
	}
}

// addResults appends tool results.
func (c *conversation) addResults(rs []tape.ToolResult) {
	switch c.cfg.Provider {
	case tape.ProviderAnthropic:
		var blocks []any
		for _, r := range rs {
			blocks = append(blocks, map[string]any{"type": "tool_result", "tool_use_id": r.ToolCallID, "content": r.Text(), "is_error": r.IsError})
		}
		c.messages = append(c.messages, map[string]any{"role": "user", "content": blocks})
	case tape.ProviderOpenAIChat:
		for _, r := range rs {
			c.messages = append(c.messages, map[string]any{"role": "tool", "tool_call_id": r.ToolCallID, "content": r.Text()})
		}
	default:
		for _, r := range rs {
			typ := "function_call_output"
			if c.custom[r.ToolCallID] {
				typ = "custom_tool_call_output"
			}
			c.messages = append(c.messages, map[string]any{"type": typ, "call_id": r.ToolCallID, "output": r.Text()})
		}
	}
}
