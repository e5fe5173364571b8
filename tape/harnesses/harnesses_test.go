package harnesses_test

import (
	"regexp"
	"strings"
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
		assert.True(t, len(h.CwdLines) > 0 || h.CwdElement != "" || h.CwdList != "", "%s: how does it name its working directory?", h.Name)
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
	assert.Equal(t, []string{"Agent", "Task", "spawn_agent", "invoke_agent", "task", "spawn_subagent", "create_agent"}, harnesses.SpawningTools())
}

func TestCompareVersions(t *testing.T) {
	for _, tt := range []struct {
		a, b string
		want int
	}{
		{"2.1.332", "2.1.332", 0},
		{"2.1.10", "2.1.9", 1},
		{"2.0.77", "2.1.0", -1},
		{"2.1", "2.1.0", 0},        // a missing field is 0
		{"1.0.0", "1.0.0-rc.1", 1}, // a release after its pre-releases
		{"10.0.0", "9.9.9", 1},
		{"1.0.0-beta", "1.0.0-alpha", 1},
		{"", "0.1", -1},
		{"x", "x", 0},
	} {
		if got := harnesses.CompareVersions(tt.a, tt.b); got != tt.want {
			t.Errorf("harnesses.CompareVersions(%q, %q) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
		if got := harnesses.CompareVersions(tt.b, tt.a); got != -tt.want {
			t.Errorf("harnesses.CompareVersions(%q, %q) = %d, want %d", tt.b, tt.a, got, -tt.want)
		}
	}
}

func TestVersionWarning(t *testing.T) {
	for _, tt := range []struct {
		harness, version, nearest string
	}{
		{"claude-code", "2.1.332", ""},
		{"claude-code", "2.0.77", ""},
		{"claude-code", "2.1.400", "2.1.332"},
		{"claude-code", "2.1.100", "2.0.77"},
		{"claude-code", "1.0.0", "2.0.77"},
		{"claude-code", "", ""},
		{"unknown-harness", "1.0", ""},
		{"claude-code", "hand-built", ""},
		{"codex", "0.200.0", "0.171.0"},
	} {
		w := harnesses.VersionWarning(tt.harness, tt.version)
		if tt.nearest == "" {
			if w != "" {
				t.Errorf("%s %s: warning %q, want none", tt.harness, tt.version, w)
			}
			continue
		}
		if !strings.Contains(w, tt.harness+" "+tt.version) || !strings.HasSuffix(w, "nearest version checked, "+tt.nearest) {
			t.Errorf("%s %s: warning %q, want one naming %s", tt.harness, tt.version, w, tt.nearest)
		}
	}
}
