package provider_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/tape"
	"github.com/tapebox/tapebox/tape/provider"
)

// A Responses function_call of a deferred tool namespace (Codex's multi_agent_v1 tools)
// keeps its namespace in the tool call, from a JSON body and from a stream alike; a call
// without one has none.
func TestResponsesCallNamespace(t *testing.T) {
	spawn := `{"type":"function_call","id":"fc_1","status":"completed","call_id":"call_1","name":"spawn_agent","namespace":"multi_agent_v1","arguments":"{\"message\":\"go\"}"}`
	plain := `{"type":"function_call","id":"fc_2","status":"completed","call_id":"call_2","name":"exec_command","arguments":"{}"}`
	want := []tape.ToolCall{
		{ID: "call_1", Name: "spawn_agent", Input: json.RawMessage(`{"message":"go"}`), Kind: "function", Namespace: "multi_agent_v1"},
		{ID: "call_2", Name: "exec_command", Input: json.RawMessage(`{}`), Kind: "function"},
	}
	body := &tape.Step{Request: tape.Request{Raw: json.RawMessage(`{"input":[]}`)},
		Response: tape.Response{Raw: json.RawMessage(`{"status":"completed","output":[` + spawn + `,` + plain + `]}`)}}
	event := func(typ string, i int, item string) tape.Chunk {
		return tape.Chunk{Data: "event: " + typ + "\ndata: {\"type\":\"" + typ + "\",\"output_index\":" + string(rune('0'+i)) + ",\"item\":" + item + "}\n\n"}
	}
	stream := &tape.Step{Request: tape.Request{Raw: json.RawMessage(`{"input":[],"stream":true}`)}, Response: tape.Response{Chunks: []tape.Chunk{
		event("response.output_item.added", 0, spawn), event("response.output_item.done", 0, spawn),
		event("response.output_item.added", 1, plain), event("response.output_item.done", 1, plain),
		{Data: "event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"status\":\"completed\",\"output\":[]}}\n\n"},
	}}}
	for name, s := range map[string]*tape.Step{"body": body, "stream": stream} {
		t.Run(name, func(t *testing.T) {
			require.NoError(t, provider.Normalize(tape.ProviderOpenAIResponses, s))
			require.Len(t, s.ToolCalls, 2)
			for i := range want {
				assert.Equal(t, want[i].ID, s.ToolCalls[i].ID)
				assert.Equal(t, want[i].Namespace, s.ToolCalls[i].Namespace, "call %s", want[i].ID)
				assert.JSONEq(t, string(want[i].Input), string(s.ToolCalls[i].Input))
			}
		})
	}
}
