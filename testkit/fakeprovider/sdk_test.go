package fakeprovider_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/tape"
	"github.com/tapebox/tapebox/testkit/fakeprovider"
)

// The official SDKs parse every answer of the fake provider, streamed and not, into the
// text and tool calls of the script: the wire formats are the real ones, down to the event
// order the SDKs' stream helpers check.
func TestOfficialSDKs(t *testing.T) {
	harnesses, err := filepath.Abs(filepath.Join("..", "..", "harnesses"))
	require.NoError(t, err)
	node, nodeErr := exec.LookPath("node")
	_, sdkErr := os.Stat(filepath.Join(harnesses, "node_modules", "@anthropic-ai", "sdk"))
	if nodeErr != nil || sdkErr != nil {
		if os.Getenv("TAPEBOX_REQUIRE_HARNESSES") == "1" {
			t.Fatalf("node or the SDKs are missing (TAPEBOX_REQUIRE_HARNESSES=1): %v %v", nodeErr, sdkErr)
		}
		t.Skipf("node or the SDKs are missing (cd harnesses && npm ci): %v %v", nodeErr, sdkErr)
	}

	bash := fakeprovider.Call("Bash", map[string]any{"command": "ls -la — ünïcode", "timeout": 5})
	patch := fakeprovider.Custom("apply_patch", "*** Begin Patch\n*** Add File: a.txt\n+x\n*** End Patch")
	turn := func(calls ...tape.ToolCall) []fakeprovider.Turn {
		return []fakeprovider.Turn{{Text: "Working on it.", Calls: calls}}
	}
	var threads []fakeprovider.Thread
	for _, name := range []string{"anthropic-json", "anthropic-stream", "chat-json", "chat-stream"} {
		threads = append(threads, fakeprovider.Thread{Name: name, Marker: "[" + name + "]", Turns: turn(bash)})
	}
	for _, name := range []string{"responses-json", "responses-stream"} {
		threads = append(threads, fakeprovider.Thread{Name: name, Marker: "[" + name + "]", Turns: turn(bash, patch)})
	}
	srv := start(t, fakeprovider.Script{Threads: threads, Models: []string{"m1", "m2"}, PieceSize: 5})

	cmd := exec.CommandContext(t.Context(), node, filepath.Join("testdata", "sdks.cjs"), harnesses, srv.URL())
	out, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("node sdks.cjs: %v\n%s", err, stderr)
	}
	var got struct {
		AnthropicJSON, AnthropicStream []anthropicBlock
		CountTokens                    int
		AnthropicModels, OpenaiModels  []string
		ChatJSON, ChatStream           chatMessage
		ResponsesJSON, ResponsesStream []responsesItem
	}
	require.NoError(t, json.Unmarshal(out, &got), "%s", out)

	for name, c := range map[string][]anthropicBlock{"json": got.AnthropicJSON, "stream": got.AnthropicStream} {
		t.Run("anthropic "+name, func(t *testing.T) {
			require.Len(t, c, 2)
			assert.Equal(t, "Working on it.", c[0].Text)
			assert.Equal(t, "Bash", c[1].Name)
			assert.Equal(t, "toolu_fake_anthropic_"+name+"_0_0", c[1].ID)
			assert.JSONEq(t, string(bash.Input), string(c[1].Input))
		})
	}
	assert.Positive(t, got.CountTokens)
	assert.Equal(t, []string{"m1", "m2"}, got.AnthropicModels)
	assert.Equal(t, []string{"m1", "m2"}, got.OpenaiModels)

	for name, m := range map[string]chatMessage{"json": got.ChatJSON, "stream": got.ChatStream} {
		t.Run("chat "+name, func(t *testing.T) {
			assert.Equal(t, "Working on it.", m.Content)
			require.Len(t, m.ToolCalls, 1)
			assert.Equal(t, "Bash", m.ToolCalls[0].Function.Name)
			assert.JSONEq(t, string(bash.Input), m.ToolCalls[0].Function.Arguments)
		})
	}
	for name, o := range map[string][]responsesItem{"json": got.ResponsesJSON, "stream": got.ResponsesStream} {
		t.Run("responses "+name, func(t *testing.T) {
			require.Len(t, o, 3)
			require.Len(t, o[0].Content, 1)
			assert.Equal(t, "Working on it.", o[0].Content[0].Text)
			assert.Equal(t, "function_call", o[1].Type)
			assert.JSONEq(t, string(bash.Input), o[1].Args)
			assert.Equal(t, "custom_tool_call", o[2].Type)
			assert.Equal(t, "apply_patch", o[2].Name)
			assert.Equal(t, "*** Begin Patch\n*** Add File: a.txt\n+x\n*** End Patch", o[2].Input)
		})
	}
	require.NoError(t, srv.Err())
}

type anthropicBlock struct {
	Type  string          `json:"type"`
	Text  string          `json:"text"`
	ID    string          `json:"id"`
	Name  string          `json:"name"`
	Input json.RawMessage `json:"input"`
}

type chatMessage struct {
	Content   string `json:"content"`
	ToolCalls []struct {
		ID       string `json:"id"`
		Function struct {
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		} `json:"function"`
	} `json:"tool_calls"`
}

type responsesItem struct {
	Type    string `json:"type"`
	Name    string `json:"name"`
	CallID  string `json:"call_id"`
	Args    string `json:"arguments"`
	Input   string `json:"input"`
	Content []struct {
		Text string `json:"text"`
	} `json:"content"`
}
