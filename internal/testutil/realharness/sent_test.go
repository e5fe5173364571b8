package realharness_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/internal/testutil/realharness"
	"github.com/tapebox/tapebox/tape"
)

func TestSentResults(t *testing.T) {
	anth := `{"messages":[
		{"role":"user","content":"hi"},
		{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"Bash","input":{}}]},
		{"role":"user","content":[
			{"type":"tool_result","tool_use_id":"toolu_1","content":"a\nb"},
			{"type":"tool_result","tool_use_id":"toolu_2","is_error":true,"content":[{"type":"text","text":"no "},{"type":"image","source":{}},{"type":"text","text":"such file"}]},
			{"type":"text","text":"go on"}]}]}`
	sent, err := realharness.SentResults(tape.ProviderAnthropic, []byte(anth))
	require.NoError(t, err)
	require.Len(t, sent, 2)
	assert.Equal(t, "a\nb", sent["toolu_1"].Result.Text())
	assert.False(t, sent["toolu_1"].Result.IsError)
	assert.Equal(t, "no such file", sent["toolu_2"].Result.Text())
	assert.True(t, sent["toolu_2"].Result.IsError)
	assert.Equal(t, []string{tape.BlockText, tape.BlockImage, tape.BlockText}, types(sent["toolu_2"].Result.Content))
	assert.JSONEq(t, `{"type":"tool_result","tool_use_id":"toolu_1","content":"a\nb"}`, string(sent["toolu_1"].Raw))

	resp := `{"input":[
		{"type":"message","role":"user","content":[{"type":"input_text","text":"hi"}]},
		{"type":"function_call","call_id":"call_1","name":"exec_command","arguments":"{}"},
		{"type":"function_call_output","call_id":"call_1","output":"Output:\nREADME.md\n"},
		{"type":"custom_tool_call_output","call_id":"call_2","output":[{"type":"input_text","text":"Success."}]}]}`
	sent, err = realharness.SentResults(tape.ProviderOpenAIResponses, []byte(resp))
	require.NoError(t, err)
	require.Len(t, sent, 2)
	assert.Equal(t, "Output:\nREADME.md\n", sent["call_1"].Result.Text())
	assert.Equal(t, "Success.", sent["call_2"].Result.Text())

	_, err = realharness.SentResults(tape.ProviderAnthropic, []byte(`{"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_9","content":7}]}]}`))
	assert.ErrorContains(t, err, "tool_result toolu_9: content is neither a string nor a list")
	_, err = realharness.SentResults(tape.ProviderOpenAIResponses, []byte(`{"input":`))
	assert.ErrorContains(t, err, "decode request")
	chat := `{"messages":[
		{"role":"system","content":"be brief"},
		{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"bash","arguments":"{}"}}]},
		{"role":"tool","tool_call_id":"call_1","content":"printed\n"},
		{"role":"tool","tool_call_id":"call_2","content":[{"type":"text","text":"ok"}]}]}`
	sent, err = realharness.SentResults(tape.ProviderOpenAIChat, []byte(chat))
	require.NoError(t, err)
	texts := map[string]string{}
	for id, s := range sent {
		texts[id] = s.Result.Text()
	}
	assert.Equal(t, map[string]string{"call_1": "printed\n", "call_2": "ok"}, texts)
	assert.JSONEq(t, `{"role":"tool","tool_call_id":"call_1","content":"printed\n"}`, string(sent["call_1"].Raw))
	_, err = realharness.SentResults(tape.ProviderUnknown, []byte(`{}`))
	assert.ErrorContains(t, err, "not read here")
}

func types(bs []tape.Block) []string {
	var out []string
	for _, b := range bs {
		out = append(out, b.Type)
	}
	return out
}
