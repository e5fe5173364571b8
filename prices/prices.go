package prices

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"regexp"
	"sort"
	"strings"
	"sync"

	"github.com/tapebox/tapebox/tape"
)

// Price is one model's list price in US dollars per million tokens.
type Price struct {
	Input     float64 `json:"input"`
	Output    float64 `json:"output"`
	CacheRead float64 `json:"cache_read"`
	// CacheWrite is the rate of a cache write with the default lifetime (Anthropic's five
	// minutes); CacheWrite1h that of a one-hour write, 0 where the provider has none.
	// tape.Usage does not split cache writes by lifetime, so Cost prices every write at
	// CacheWrite: a one-hour write costs more, and such a cost is a lower bound.
	CacheWrite   float64 `json:"cache_write"`
	CacheWrite1h float64 `json:"cache_write_1h,omitempty"`
	// LongContext, when set, is the rate of a call whose prompt (input, cache reads and
	// cache writes) is longer than its AbovePromptTokens: the provider then bills the
	// whole call at it.
	LongContext *Tier `json:"long_context,omitempty"`
}

// Tier is the rate of a call above a prompt size.
type Tier struct {
	AbovePromptTokens int64   `json:"above_prompt_tokens"`
	Input             float64 `json:"input"`
	Output            float64 `json:"output"`
	CacheRead         float64 `json:"cache_read"`
	CacheWrite        float64 `json:"cache_write"`
	CacheWrite1h      float64 `json:"cache_write_1h,omitempty"`
}

// Cost is what u, one model call, costs at p in dollars: at the long-context rate when the
// call's prompt is above its threshold. Usage follows tape's rule: InputTokens exclude the
// cached ones, and OutputTokens include reasoning.
func (p Price) Cost(u tape.Usage) float64 {
	in, out, read, write := p.Input, p.Output, p.CacheRead, p.CacheWrite
	if lc := p.LongContext; lc != nil && u.InputTokens+u.CacheReadInputTokens+u.CacheCreationInputTokens > lc.AbovePromptTokens {
		in, out, read, write = lc.Input, lc.Output, lc.CacheRead, lc.CacheWrite
	}
	return (float64(u.InputTokens)*in +
		float64(u.OutputTokens)*out +
		float64(u.CacheReadInputTokens)*read +
		float64(u.CacheCreationInputTokens)*write) / 1e6
}

// Table is a dated price list.
type Table struct {
	// Date is the day the prices were read (YYYY-MM-DD); print it beside any cost.
	Date string `json:"date"`
	// Source says where they come from.
	Source string           `json:"source,omitempty"`
	Models map[string]Price `json:"models"`
}

//go:embed prices.json
var embedded []byte

// builtin is parsed on first use, not at start-up: most commands never price anything.
var builtin = sync.OnceValue(func() *Table {
	t, err := Parse("prices.json (embedded)", embedded)
	if err != nil {
		panic(err) // TestEmbeddedTable parses it
	}
	return t
})

// Default returns the table compiled into the binary. Callers must not modify it.
func Default() *Table { return builtin() }

// Load reads a table from a JSON file of the embedded table's shape:
// {"date": "YYYY-MM-DD", "models": {"name": {"input": 3, "output": 15, "cache_read": 0.3, "cache_write": 3.75}}}.
func Load(path string) (*Table, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("load prices: %w", err)
	}
	return Parse(path, b)
}

var dateRE = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}$`)

// Parse decodes a table; name (a file name) goes into every error.
func Parse(name string, b []byte) (*Table, error) {
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	var t Table
	if err := dec.Decode(&t); err != nil {
		return nil, fmt.Errorf("prices %s: %w", name, err)
	}
	if !dateRE.MatchString(t.Date) {
		return nil, fmt.Errorf("prices %s: date: want YYYY-MM-DD, got %q", name, t.Date)
	}
	if len(t.Models) == 0 {
		return nil, fmt.Errorf("prices %s: models: empty", name)
	}
	type field struct {
		name string
		v    float64
	}
	for m, p := range t.Models {
		fields := []field{{"input", p.Input}, {"output", p.Output}, {"cache_read", p.CacheRead}, {"cache_write", p.CacheWrite}, {"cache_write_1h", p.CacheWrite1h}}
		if lc := p.LongContext; lc != nil {
			if lc.AbovePromptTokens <= 0 {
				return nil, fmt.Errorf("prices %s: models.%s.long_context.above_prompt_tokens: want a count > 0, got %d", name, m, lc.AbovePromptTokens)
			}
			fields = append(fields, field{"long_context.input", lc.Input}, field{"long_context.output", lc.Output},
				field{"long_context.cache_read", lc.CacheRead}, field{"long_context.cache_write", lc.CacheWrite}, field{"long_context.cache_write_1h", lc.CacheWrite1h})
		}
		for _, f := range fields {
			if f.v < 0 || math.IsNaN(f.v) || math.IsInf(f.v, 0) {
				return nil, fmt.Errorf("prices %s: models.%s.%s: want a price >= 0, got %v", name, m, f.name, f.v)
			}
		}
	}
	return &t, nil
}

// dated matches the snapshot suffixes providers put on model names: -20250929, -2025-08-07.
var dated = regexp.MustCompile(`-(\d{8}|\d{4}-\d{2}-\d{2})$`)

// Lookup finds model's price: by its exact name, then without a vendor prefix
// ("anthropic/"), a context-window tag ("[1m]") or a snapshot date suffix. It never guesses
// from a name's prefix: "gpt-5.1-codex-mini" is not "gpt-5.1".
func (t *Table) Lookup(model string) (Price, bool) {
	if t == nil || model == "" {
		return Price{}, false
	}
	m := model
	if p, ok := t.Models[m]; ok {
		return p, true
	}
	if i := strings.LastIndexByte(m, '/'); i >= 0 {
		m = m[i+1:]
	}
	if i := strings.IndexByte(m, '['); i > 0 && strings.HasSuffix(m, "]") {
		m = m[:i]
	}
	m = dated.ReplaceAllString(m, "")
	p, ok := t.Models[m]
	return p, ok
}

// Cost is what u costs on model, or nil when the table has no price for it.
func (t *Table) Cost(model string, u tape.Usage) *float64 {
	p, ok := t.Lookup(model)
	if !ok {
		return nil
	}
	c := p.Cost(u)
	return &c
}

// ThreadCost is one thread's usage and cost.
type ThreadCost struct {
	ID    string     `json:"id"`
	Steps int        `json:"steps"`
	Usage tape.Usage `json:"usage"`
	// USD is nil when a step's model has no price.
	USD *float64 `json:"usd"`
}

// TapeCost is a tape's cost per thread and in total.
type TapeCost struct {
	// PricesDate is the price table's date.
	PricesDate string       `json:"prices_date"`
	Threads    []ThreadCost `json:"threads"`
	Usage      tape.Usage   `json:"usage"`
	// USD is nil when any step's model has no price.
	USD *float64 `json:"usd"`
	// Unpriced lists the models the table has no price for, sorted.
	Unpriced []string `json:"unpriced,omitempty"`
}

// Tape prices every step of tp. Steps without a model at all (an imported tape that never
// said) count as unpriced under the name "".
func (t *Table) Tape(tp *tape.Tape) TapeCost {
	out := TapeCost{PricesDate: t.Date, Threads: make([]ThreadCost, 0, len(tp.Threads))}
	unpriced := map[string]bool{}
	total, totalKnown := 0.0, true
	for _, th := range tp.Threads {
		tc := ThreadCost{ID: th.ID, Steps: len(th.Steps)}
		sum, known := 0.0, true
		for _, s := range th.Steps {
			tc.Usage = tc.Usage.Add(s.Response.Usage)
			m := tape.StepModel(&tp.Meta, s)
			if c := t.Cost(m, s.Response.Usage); c != nil {
				sum += *c
			} else {
				known = false
				unpriced[m] = true
			}
		}
		if known {
			tc.USD = &sum
			total += sum
		} else {
			totalKnown = false
		}
		out.Usage = out.Usage.Add(tc.Usage)
		out.Threads = append(out.Threads, tc)
	}
	if totalKnown {
		out.USD = &total
	}
	for m := range unpriced {
		out.Unpriced = append(out.Unpriced, m)
	}
	sort.Strings(out.Unpriced)
	return out
}

// Format prints a cost as dollars, or "unknown" for nil. Costs under a cent keep four
// decimals.
func Format(usd *float64) string {
	if usd == nil {
		return "unknown"
	}
	if *usd != 0 && math.Abs(*usd) < 0.01 {
		return fmt.Sprintf("$%.4f", *usd)
	}
	return fmt.Sprintf("$%.2f", *usd)
}

// ModelCost is the usage and cost of the model calls to one model.
type ModelCost struct {
	Model string     `json:"model"`
	Steps int        `json:"steps"`
	Usage tape.Usage `json:"usage"`
	// USD is nil when the table has no price for Model.
	USD *float64 `json:"usd"`
}

// ByModel prices every step of tp and sums them per model (tape.StepModel), sorted by model;
// a step without a model counts under "".
func (t *Table) ByModel(tp *tape.Tape) []ModelCost {
	idx := map[string]int{}
	out := []ModelCost{}
	for _, th := range tp.Threads {
		for _, s := range th.Steps {
			m := tape.StepModel(&tp.Meta, s)
			i, ok := idx[m]
			if !ok {
				i = len(out)
				idx[m] = i
				out = append(out, ModelCost{Model: m})
				if _, priced := t.Lookup(m); priced {
					out[i].USD = new(float64)
				}
			}
			mc := &out[i]
			mc.Steps++
			mc.Usage = mc.Usage.Add(s.Response.Usage)
			if c := t.Cost(m, s.Response.Usage); c != nil && mc.USD != nil {
				*mc.USD += *c
			}
		}
	}
	sort.Slice(out, func(a, b int) bool { return out[a].Model < out[b].Model })
	return out
}
