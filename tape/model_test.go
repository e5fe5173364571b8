package tape

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestStepModel(t *testing.T) {
	meta := &Meta{Model: "claude-sonnet-4-5"}
	for _, tc := range []struct {
		name string
		meta *Meta
		step Step
		want string
	}{
		{"params", meta, Step{Request: Request{Params: map[string]json.RawMessage{"model": json.RawMessage(`"claude-opus-4-1"`)}, Raw: json.RawMessage(`{"model":"x"}`)}}, "claude-opus-4-1"},
		{"empty param, raw body", meta, Step{Request: Request{Params: map[string]json.RawMessage{"model": json.RawMessage(`""`)}, Raw: json.RawMessage(`{"model":"claude-haiku-4-5"}`)}}, "claude-haiku-4-5"},
		{"raw body", meta, Step{Request: Request{Raw: json.RawMessage(`{"model":"claude-haiku-4-5","messages":[]}`)}}, "claude-haiku-4-5"},
		{"meta", meta, Step{Request: Request{Raw: json.RawMessage(`null`)}}, "claude-sonnet-4-5"},
		{"no meta", nil, Step{Request: Request{Raw: json.RawMessage(`{"messages":[]}`)}}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, StepModel(tc.meta, &tc.step))
			if tc.name == "params" {
				assert.Equal(t, "claude-opus-4-1", ParamModel(&tc.step))
			} else {
				assert.Empty(t, ParamModel(&tc.step), "no model parameter: the raw body is not read")
			}
		})
	}
}

func TestBodyModel(t *testing.T) {
	for _, tc := range []struct{ raw, want string }{
		{`{"model":"claude-opus-5-5","messages":[]}`, "claude-opus-5-5"},
		{`{"messages":[],"model":"gpt-5.5"}`, "gpt-5.5"},
		{`{"messages":[]}`, ""},
		{`{"model":42}`, ""},
		{`{"model":null}`, ""},
		{`not json`, ""},
		{`[1,2]`, ""},
		{``, ""},
	} {
		assert.Equal(t, tc.want, BodyModel([]byte(tc.raw)), tc.raw)
	}
}
