package prices_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/prices"
	"github.com/tapebox/tapebox/tape"
)

func TestLookup(t *testing.T) {
	tab := prices.Default()
	for _, tc := range []struct {
		model string
		want  string // the entry it must resolve to, "" for none
	}{
		{"claude-sonnet-4-5", "claude-sonnet-4-5"},
		{"claude-sonnet-4-5-20250929", "claude-sonnet-4-5"},
		{"anthropic/claude-opus-4-5", "claude-opus-4-5"},
		{"claude-opus-4-6[1m]", "claude-opus-4-6"},
		{"gpt-5-2025-08-07", "gpt-5"},
		{"gpt-5.5", "gpt-5.5"},
		{"gpt-5.1-codex-mini", ""}, // no guessing from a prefix
		{"claude-opus-5-5", ""},
		{"fake-model", ""},
		{"", ""},
	} {
		t.Run(tc.model, func(t *testing.T) {
			p, ok := tab.Lookup(tc.model)
			if tc.want == "" {
				assert.False(t, ok, "price %+v", p)
				return
			}
			require.True(t, ok)
			assert.Equal(t, tab.Models[tc.want], p)
		})
	}
}

func TestCost(t *testing.T) {
	p := prices.Price{Input: 3, Output: 15, CacheRead: 0.3, CacheWrite: 3.75}
	u := tape.Usage{InputTokens: 1_000_000, OutputTokens: 100_000, CacheReadInputTokens: 2_000_000, CacheCreationInputTokens: 400_000, ReasoningTokens: 50_000}
	// 3 + 1.5 + 0.6 + 1.5; reasoning tokens are inside OutputTokens, never counted twice.
	assert.InDelta(t, 6.6, p.Cost(u), 1e-9)
	assert.Nil(t, prices.Default().Cost("fake-model", u))
	c := prices.Default().Cost("claude-sonnet-4-5", u)
	require.NotNil(t, c)
	assert.InDelta(t, 6.6, *c, 1e-9)
}

func model(m string) map[string]json.RawMessage {
	b, _ := json.Marshal(m)
	return map[string]json.RawMessage{"model": b}
}

func TestTapeCost(t *testing.T) {
	tab := prices.Default()
	step := func(m string, in, out int64) *tape.Step {
		return &tape.Step{Request: tape.Request{Params: model(m)}, Response: tape.Response{Usage: tape.Usage{InputTokens: in, OutputTokens: out}}}
	}
	tp := &tape.Tape{Meta: tape.Meta{Model: "gpt-5"}, Threads: []*tape.Thread{
		{ID: "main", Steps: []*tape.Step{step("gpt-5", 1_000_000, 0), {Response: tape.Response{Usage: tape.Usage{OutputTokens: 1_000_000}}}}},
		{ID: "sub", Steps: []*tape.Step{step("fake-model", 10, 10)}},
	}}
	c := tab.Tape(tp)
	assert.Equal(t, tab.Date, c.PricesDate)
	require.Len(t, c.Threads, 2)
	require.NotNil(t, c.Threads[0].USD, "a step without a model parameter takes meta.model")
	assert.InDelta(t, 1.25+10, *c.Threads[0].USD, 1e-9)
	assert.Nil(t, c.Threads[1].USD)
	assert.Nil(t, c.USD, "one unpriced step makes the total unknown, never a partial sum")
	assert.Equal(t, []string{"fake-model"}, c.Unpriced)
	assert.Equal(t, tape.Usage{InputTokens: 1_000_010, OutputTokens: 1_000_010}, c.Usage)

	tp.Threads = tp.Threads[:1]
	c = tab.Tape(tp)
	require.NotNil(t, c.USD)
	assert.Equal(t, "$11.25", prices.Format(c.USD))
}

func TestFormat(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	assert.Equal(t, "unknown", prices.Format(nil))
	assert.Equal(t, "$0.00", prices.Format(f(0)))
	assert.Equal(t, "$0.0012", prices.Format(f(0.00123)))
	assert.Equal(t, "$1.50", prices.Format(f(1.5)))
}

func TestLoadErrors(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct{ name, body, want string }{
		{"date", `{"date":"May 2026","models":{"m":{"input":1}}}`, `date: want YYYY-MM-DD`},
		{"negative", `{"date":"2026-01-01","models":{"m":{"input":-1}}}`, `models.m.input: want a price >= 0`},
		{"unknown", `{"date":"2026-01-01","models":{"m":{"inptu":1}}}`, `unknown field "inptu"`},
		{"empty", `{"date":"2026-01-01","models":{}}`, `models: empty`},
		{"syntax", `{"date":`, `unexpected EOF`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(dir, tc.name+".json")
			require.NoError(t, os.WriteFile(p, []byte(tc.body), 0o644))
			_, err := prices.Load(p)
			require.Error(t, err)
			assert.Contains(t, err.Error(), p)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
	p := filepath.Join(dir, "ok.json")
	require.NoError(t, os.WriteFile(p, []byte(`{"date":"2026-01-01","models":{"fake-model":{"input":1,"output":2}}}`), 0o644))
	tab, err := prices.Load(p)
	require.NoError(t, err)
	assert.NotNil(t, tab.Cost("fake-model", tape.Usage{InputTokens: 1}))
}

func TestEmbeddedTable(t *testing.T) {
	tab := prices.Default()
	assert.Regexp(t, `^\d{4}-\d{2}-\d{2}$`, tab.Date)
	for name, p := range tab.Models {
		assert.Positive(t, p.Input, name)
		assert.GreaterOrEqual(t, p.Output, p.Input, name)
		assert.LessOrEqual(t, p.CacheRead, p.Input, "%s: a cache read costs no more than input", name)
	}
}
