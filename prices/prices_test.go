package prices_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
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
		{"claude-opus-5-5", "claude-opus-5-5"},
		{"claude-opus-5-5[1m]", "claude-opus-5-5"},
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

// The model the pinned Claude Code (2.1.332) sends by default is priced, at the rate its own
// session file gives it ($4 / $20 per million input / output tokens).
func TestPinnedHarnessModelsPriced(t *testing.T) {
	tp, err := tape.LoadFile(filepath.Join("..", "viewer", "testdata", "claude-code.json"))
	require.NoError(t, err)
	c := prices.Default().Tape(tp)
	require.NotNil(t, c.USD, "unpriced: %v", c.Unpriced)
	p, ok := prices.Default().Lookup(tp.Meta.Model)
	require.True(t, ok, tp.Meta.Model)
	assert.Equal(t, prices.Price{Input: 4, Output: 20, CacheRead: 0.2, CacheWrite: 5, CacheWrite1h: 8}, p)
	for _, m := range []string{"claude-opus-5-5", "claude-haiku-4-5", "claude-haiku-5-5", "claude-sonnet-5-5", "gpt-5.5"} {
		_, ok := prices.Default().Lookup(m)
		assert.True(t, ok, "%s has a price", m)
	}
}

// A call whose prompt is above a long-context threshold is billed whole at the tier's rate;
// one token below, at the base rate.
func TestLongContext(t *testing.T) {
	p, ok := prices.Default().Lookup("claude-haiku-5-5")
	require.True(t, ok)
	require.NotNil(t, p.LongContext)
	at := tape.Usage{InputTokens: 40_000, CacheReadInputTokens: 50_000, CacheCreationInputTokens: 10_000, OutputTokens: 1_000_000}
	assert.InDelta(t, (40_000*0.1+50_000*0.01+10_000*0.125+1_000_000*0.5)/1e6, p.Cost(at), 1e-12, "100,000 prompt tokens: the base rate")
	above := at
	above.InputTokens++
	assert.InDelta(t, (40_001*0.5+50_000*0.05+10_000*0.625+1_000_000*2.5)/1e6, p.Cost(above), 1e-12, "100,001: the long-context rate for the whole call")

	_, err := prices.Parse("x.json", []byte(`{"date":"2026-01-01","models":{"m":{"input":1,"output":1,"cache_read":1,"cache_write":1,"long_context":{"above_prompt_tokens":0,"input":1,"output":1,"cache_read":1,"cache_write":1}}}}`))
	assert.ErrorContains(t, err, "prices x.json: models.m.long_context.above_prompt_tokens: want a count > 0, got 0")
	_, err = prices.Parse("x.json", []byte(`{"date":"2026-01-01","models":{"m":{"input":1,"output":1,"cache_read":1,"cache_write":1,"cache_write_1h":-2}}}`))
	assert.ErrorContains(t, err, "models.m.cache_write_1h: want a price >= 0, got -2")
}

// Every model in the catalog compiled into the pinned Claude Code is in the table at the
// catalog's rates (input, output, cache read, 5-minute and 1-hour cache writes). The catalog is
// read from the harness binary itself (harnesses/node_modules).
func TestPricesAgreeWithClaudeCodeCatalog(t *testing.T) {
	bin := filepath.Join("..", "harnesses", "node_modules", "@anthropic-ai", "claude-code-linux-x64", "claude")
	data, err := os.ReadFile(bin)
	if err != nil {
		if os.Getenv("TAPEBOX_REQUIRE_HARNESSES") == "1" {
			t.Fatalf("the harnesses are required: %v", err)
		}
		t.Skipf("no Claude Code binary: %v", err)
	}
	cat := claudeCatalog(t, data)
	require.NotEmpty(t, cat)
	tab := prices.Default()
	for id, want := range cat {
		got, ok := tab.Lookup(id)
		if assert.True(t, ok, "%s: not in the table", id) {
			got.LongContext = nil
			assert.Equal(t, want, got, id)
		}
	}
	t.Logf("%d models of Claude Code's catalog checked", len(cat))
}

var (
	catalogTier  = regexp.MustCompile(`(\w+):\{input:([\d.]+),output:([\d.]+),cache_write_5m:([\d.]+),cache_write_1h:([\d.]+),cache_read:([\d.]+)`)
	catalogModel = regexp.MustCompile(`\{id:"([^"]+)",family:"[^"]+"`)
	catalogPrice = regexp.MustCompile(`pricing:"(\w+)"`)
)

// claudeCatalog reads the model catalog of a Claude Code binary: pricing_tiers, then models
// naming a tier each.
func claudeCatalog(t *testing.T, bin []byte) map[string]prices.Price {
	t.Helper()
	i := bytes.Index(bin, []byte("pricing_tiers:{"))
	require.GreaterOrEqual(t, i, 0, "no pricing_tiers in the binary")
	s := string(bin[i:min(len(bin), i+100_000)])
	num := func(x string) float64 {
		f, err := strconv.ParseFloat(x, 64)
		require.NoError(t, err)
		return f
	}
	tiers := map[string]prices.Price{}
	for _, m := range catalogTier.FindAllStringSubmatch(s, -1) {
		tiers[m[1]] = prices.Price{Input: num(m[2]), Output: num(m[3]), CacheWrite: num(m[4]), CacheWrite1h: num(m[5]), CacheRead: num(m[6])}
	}
	out := map[string]prices.Price{}
	ms := catalogModel.FindAllStringSubmatchIndex(s, -1)
	for k, m := range ms {
		end := len(s)
		if k+1 < len(ms) {
			end = ms[k+1][0]
		}
		p := catalogPrice.FindStringSubmatch(s[m[0]:end])
		if p == nil {
			continue
		}
		tier, ok := tiers[p[1]]
		require.True(t, ok, "tier %s", p[1])
		out[s[m[2]:m[3]]] = tier
	}
	return out
}
