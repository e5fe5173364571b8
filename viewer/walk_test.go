package viewer

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The scanner reads escaped keys as their value, and refuses a key that is not valid JSON
// rather than guess at it.
func TestScannerKeys(t *testing.T) {
	s := &scanner{data: []byte(`{"thr\u0065ads": [1, "]"], "a\\b": {}, "plain": null}`)}
	var keys, spans []string
	require.NoError(t, s.members(func(k string) error {
		keys = append(keys, k)
		v, err := s.value()
		spans = append(spans, string(v))
		return err
	}))
	assert.Equal(t, []string{"threads", `a\b`, "plain"}, keys)
	assert.Equal(t, []string{`[1, "]"]`, `{}`, `null`}, spans)

	for in, want := range map[string]string{
		`{"a\x": 1}`:   `key: offset 4: invalid escape character 'x' in a string`,
		`{"a": ]}`:     `offset 6: unexpected ']'`,
		`{"a": "b`:     `unexpected end of JSON`,
		`{"a": 1 "b"}`: `want ',' or '}'`,
	} {
		s := &scanner{data: []byte(in)}
		err := s.members(func(string) error { _, err := s.value(); return err })
		if assert.Error(t, err, in) {
			assert.Contains(t, err.Error(), want, in)
		}
	}
}
