package jsonlex

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestMarshal(t *testing.T) {
	v := map[string]any{"text": "a <b> & c\u2028", "n": 1.5, "list": []string{"x"}}
	got, err := Marshal(v)
	require.NoError(t, err)
	assert.Equal(t, `{"list":["x"],"n":1.5,"text":"a <b> & c\u2028"}`, string(got), "no HTML escaping, no newline")
	std, err := json.Marshal(v)
	require.NoError(t, err)
	assert.JSONEq(t, string(std), string(got), "the same value as json.Marshal's")
	_, err = Marshal(func() {})
	assert.Error(t, err)
}
