package cli

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/tapebox/tapebox/prices"
	"github.com/tapebox/tapebox/tape"
)

func init() {
	register(&command{name: "cost", summary: "what tapes cost: per tape, per model and in total", run: runCost})
}

// costReport is what cost --json prints.
type costReport struct {
	// PricesDate is the price table's date.
	PricesDate string     `json:"prices_date"`
	Tapes      []tapeCost `json:"tapes"`
	// Models sums every tape per model.
	Models []prices.ModelCost `json:"models"`
	Total  costTotal          `json:"total"`
	// Unpriced lists the models the table has no price for, sorted ("" is a step that
	// names no model).
	Unpriced []string `json:"unpriced"`
}

// tapeCost is one tape's cost per model.
type tapeCost struct {
	Path   string             `json:"path"`
	TapeID string             `json:"tape_id"`
	Models []prices.ModelCost `json:"models"`
	Usage  tape.Usage         `json:"usage"`
	// USD is nil when a model of the tape has no price: unknown, never a partial sum.
	USD *float64 `json:"usd"`
}

// costTotal sums every tape.
type costTotal struct {
	Tapes int        `json:"tapes"`
	Steps int        `json:"steps"`
	Usage tape.Usage `json:"usage"`
	USD   *float64   `json:"usd"`
}

func runCost(ctx context.Context, env *Env, args []string) int {
	fs := newFlagSet(env, "cost", "[--json] [--prices FILE] FILE|DIR...", `
Prices tapes with the price table compiled into tapebox (or --prices FILE): a table of each
tape's model calls per model (steps, input, output, cache read and cache write tokens, dollars),
the sum per model over all tapes, and the total. A DIR is searched for tapes (*.json) at any
depth. A model the table has no price for makes its rows, its tapes and the total "unknown"
(null in --json), never 0, and is named at the end. A call whose prompt is above a model's
long-context threshold is priced at that tier; cache writes are priced at the five-minute
rate, as tapes do not say how long a write was kept. Exits 1 when a tape cannot be read.`)
	asJSON := fs.Bool("json", false, "print the report as JSON")
	var pricesFile string
	pricesFlag(fs, &pricesFile, "for the costs")
	if code, done := parse(env, fs, args); done {
		return code
	}
	if fs.NArg() == 0 {
		return usageError(env, fs, "want at least one tape file or directory")
	}
	table, err := loadPrices(pricesFile)
	if err != nil {
		return failf(env, "cost", "%v", err)
	}
	paths, err := tapeArgs(fs.Args())
	if err != nil {
		return failf(env, "cost", "%v", err)
	}
	if len(paths) == 0 {
		return failf(env, "cost", "no tape (*.json) in %s", strings.Join(fs.Args(), ", "))
	}
	defer limitMemory(env)()
	rep := costReport{PricesDate: table.Date, Tapes: []tapeCost{}, Models: []prices.ModelCost{}, Unpriced: []string{}}
	byModel := map[string]*prices.ModelCost{}
	unpriced := map[string]bool{}
	total := 0.0
	totalKnown := true
	for _, p := range paths {
		if err := ctx.Err(); err != nil {
			return failf(env, "cost", "%v", err)
		}
		tp, code := loadValidSummary(env, "cost", p)
		if tp == nil {
			return code
		}
		tc := tapeCost{Path: p, TapeID: tp.Meta.TapeID, Models: table.ByModel(tp)}
		sum, known := 0.0, true
		for _, mc := range tc.Models {
			tc.Usage = tc.Usage.Add(mc.Usage)
			rep.Total.Steps += mc.Steps
			if mc.USD == nil {
				known = false
				unpriced[mc.Model] = true
			} else {
				sum += *mc.USD
			}
			agg := byModel[mc.Model]
			if agg == nil {
				agg = &prices.ModelCost{Model: mc.Model}
				if mc.USD != nil {
					agg.USD = new(float64)
				}
				byModel[mc.Model] = agg
			}
			agg.Steps += mc.Steps
			agg.Usage = agg.Usage.Add(mc.Usage)
			if agg.USD != nil && mc.USD != nil {
				*agg.USD += *mc.USD
			}
		}
		if known {
			tc.USD = &sum
			total += sum
		} else {
			totalKnown = false
		}
		rep.Total.Usage = rep.Total.Usage.Add(tc.Usage)
		rep.Tapes = append(rep.Tapes, tc)
	}
	rep.Total.Tapes = len(rep.Tapes)
	if totalKnown {
		rep.Total.USD = &total
	}
	for _, m := range slices.Sorted(maps.Keys(byModel)) {
		rep.Models = append(rep.Models, *byModel[m])
	}
	rep.Unpriced = slices.Sorted(maps.Keys(unpriced))
	if *asJSON {
		if err := writeJSON(env.Stdout, rep); err != nil {
			return failf(env, "cost", "%v", err)
		}
		return ExitOK
	}
	rep.writeText(env.Stdout)
	return ExitOK
}

func (r *costReport) writeText(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	row := func(cells ...string) { fmt.Fprintln(tw, strings.Join(cells, "\t")) }
	usage := func(u tape.Usage) []string {
		return []string{fmt.Sprint(u.InputTokens), fmt.Sprint(u.OutputTokens), fmt.Sprint(u.CacheReadInputTokens), fmt.Sprint(u.CacheCreationInputTokens)}
	}
	model := func(m string) string { return cmp.Or(m, "(no model)") }
	row(append(append([]string{"tape", "model", "steps"}, "input", "output", "cache read", "cache write"), "cost")...)
	for _, t := range r.Tapes {
		for _, m := range t.Models {
			row(append(append([]string{t.Path, model(m.Model), fmt.Sprint(m.Steps)}, usage(m.Usage)...), prices.Format(m.USD))...)
		}
		if len(t.Models) != 1 {
			row(append(append([]string{t.Path, "all models", fmt.Sprint(stepsOf(t.Models))}, usage(t.Usage)...), prices.Format(t.USD))...)
		}
	}
	if len(r.Tapes) > 1 {
		for _, m := range r.Models {
			row(append(append([]string{"all tapes", model(m.Model), fmt.Sprint(m.Steps)}, usage(m.Usage)...), prices.Format(m.USD))...)
		}
	}
	row(append(append([]string{"total", plural(r.Total.Tapes, "tape"), fmt.Sprint(r.Total.Steps)}, usage(r.Total.Usage)...), prices.Format(r.Total.USD))...)
	tw.Flush()
	fmt.Fprintf(w, "prices of %s", r.PricesDate)
	if len(r.Unpriced) > 0 {
		names := make([]string, len(r.Unpriced))
		for i, m := range r.Unpriced {
			names[i] = model(m)
		}
		fmt.Fprintf(w, "; no price for %s (their cost is unknown, never 0: give a table with --prices)", strings.Join(names, ", "))
	}
	fmt.Fprintln(w)
}

func stepsOf(ms []prices.ModelCost) int {
	n := 0
	for _, m := range ms {
		n += m.Steps
	}
	return n
}
