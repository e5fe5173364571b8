package harnesses_test

import (
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/tape/harnesses"
)

func TestTable(t *testing.T) {
	names := map[string]bool{}
	for _, h := range harnesses.All {
		assert.False(t, names[h.Name], "harness %s listed twice", h.Name)
		names[h.Name] = true
		got, ok := harnesses.Lookup(h.Name)
		require.True(t, ok)
		assert.Same(t, h, got)
		assert.NotNil(t, h.SpawningTools, "%s: an empty list, not nil, for a harness without a spawning tool", h.Name)
		assert.True(t, len(h.CwdLines) > 0 || h.CwdElement != "", "%s: how does it name its working directory?", h.Name)
		for _, v := range h.Volatile {
			_, err := regexp.Compile(v.Expr)
			assert.NoError(t, err, "%s volatile %s", h.Name, v.Name)
			assert.NotEmpty(t, v.Replace, "%s volatile %s", h.Name, v.Name)
		}
		for _, id := range h.Identifiers {
			re, err := regexp.Compile(id.Expr)
			if assert.NoError(t, err, "%s identifier %s", h.Name, id.Name) {
				assert.Equal(t, 1, re.NumSubexp(), "%s identifier %s: the first group is the identifier", h.Name, id.Name)
			}
		}
	}
	_, ok := harnesses.Lookup("aider")
	assert.False(t, ok)
	assert.Equal(t, []string{"Agent", "Task", "spawn_agent", "spawn_subagent", "create_agent"}, harnesses.SpawningTools())
}
