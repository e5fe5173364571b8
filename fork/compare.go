package fork

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/tapebox/tapebox/compare"
	"github.com/tapebox/tapebox/internal/term"
	"github.com/tapebox/tapebox/prices"
	"github.com/tapebox/tapebox/tape"
)

// Comparison sets a fork beside the recording it forked from.
type Comparison struct {
	Recording string `json:"recording"`
	Fork      string `json:"fork"`
	Harness   string `json:"harness"`
	// Thread and At are the fork point the fork tape declares (meta.forked_from).
	Thread string `json:"thread"`
	At     int    `json:"at"`
	// Served counts per thread the steps the fork served from the recording.
	Served map[string]int `json:"served"`
	// Overrides are the fork's (model, system_append).
	Overrides map[string]string `json:"overrides"`
	// CommonPrefix is how many steps of the fork thread the two timelines share (tool
	// calls and results the same); PartsAt is the first step where they part, nil when
	// they never do.
	CommonPrefix int              `json:"common_prefix"`
	PartsAt      *Parting         `json:"parts_at"`
	Sides        [2]Side          `json:"sides"`
	EndState     compare.EndState `json:"end_state"`
}

// Parting is where two timelines part, and how.
type Parting struct {
	Thread   string `json:"thread"`
	Step     int    `json:"step"`
	Field    string `json:"field"`
	Recorded string `json:"recorded"`
	Forked   string `json:"forked"`
}

// Side is one tape of the comparison.
type Side struct {
	Name      string     `json:"name"` // "recording" or "fork"
	TapeID    string     `json:"tape_id"`
	Models    []string   `json:"models"`
	Steps     int        `json:"steps"`
	ToolCalls int        `json:"tool_calls"`
	Usage     tape.Usage `json:"usage"`
	// USD is nil when a model has no price.
	USD   *float64 `json:"usd"`
	Ended string   `json:"ended"`
	// EndFiles counts the end manifest's entries (0 when there is none).
	EndFiles int `json:"end_files"`
}

// IsForkOf says whether f is a fork of rec.
func IsForkOf(f, rec *tape.Tape) bool {
	return f.Meta.ForkedFrom != nil && f.Meta.ForkedFrom.TapeID == rec.Meta.TapeID
}

// Compare sets fork beside rec (fork must be a fork of rec: IsForkOf), pricing each side
// with table (nil means prices.Default()).
func Compare(rec, fork *tape.Tape, table *prices.Table) *Comparison {
	if table == nil {
		table = prices.Default()
	}
	f := fork.Meta.ForkedFrom
	c := &Comparison{Recording: rec.Meta.TapeID, Fork: fork.Meta.TapeID, Harness: rec.Meta.Harness,
		Thread: f.Thread, At: f.Step, Served: f.Served, Overrides: f.Overrides}
	if c.Overrides == nil {
		c.Overrides = map[string]string{}
	}
	if c.Served == nil {
		c.Served = map[string]int{}
	}
	// A fork in a fresh directory (the default) names paths under it where the recording
	// named its own meta.cwd.
	r := compare.CompareWith(rec, fork, compare.Options{Cwd: fork.Meta.Cwd})
	c.EndState = r.EndState
	// The first difference: on the fork thread first, by step; a missing or extra step
	// counts as parting too.
	diffs := r.Differences
	sort.SliceStable(diffs, func(i, j int) bool {
		a, b := diffs[i], diffs[j]
		if (a.Thread == f.Thread) != (b.Thread == f.Thread) {
			return a.Thread == f.Thread
		}
		return a.Step < b.Step
	})
	th := rec.Thread(f.Thread)
	c.CommonPrefix = 0
	if th != nil {
		c.CommonPrefix = len(th.Steps)
		if ft := fork.Thread(f.Thread); ft != nil {
			c.CommonPrefix = min(len(th.Steps), len(ft.Steps))
		}
	}
	if len(diffs) > 0 {
		d := diffs[0]
		c.PartsAt = &Parting{Thread: d.Thread, Step: d.Step, Field: d.Field, Recorded: d.Recorded, Forked: d.Replayed}
		if d.Thread == f.Thread {
			c.CommonPrefix = d.Step
		}
	}
	c.Sides[0] = side("recording", rec, table)
	c.Sides[1] = side("fork", fork, table)
	return c
}

func side(name string, tp *tape.Tape, table *prices.Table) Side {
	s := Side{Name: name, TapeID: tp.Meta.TapeID, Ended: "running or cut short", Models: []string{}}
	seen := map[string]bool{}
	for _, th := range tp.Threads {
		for _, st := range th.Steps {
			s.Steps++
			s.ToolCalls += len(st.ToolCalls)
			if m := tape.StepModel(&tp.Meta, st); m != "" && !seen[m] {
				seen[m] = true
				s.Models = append(s.Models, m)
			}
		}
	}
	cost := table.Tape(tp)
	s.Usage, s.USD = cost.Usage, cost.USD
	if e := tp.Meta.Ended; e != nil {
		s.Ended = string(e.Reason)
		if e.Detail != "" {
			s.Ended += ": " + e.Detail
		}
	}
	if w := tp.Meta.Workspace; w != nil {
		s.EndFiles = len(w.End)
	}
	return s
}

// WriteText prints the comparison for people.
func (c *Comparison) WriteText(w io.Writer) {
	fmt.Fprintf(w, "compare %s -> %s (%s): FORK at thread %s step %d", compare.ShortID(c.Recording), compare.ShortID(c.Fork), c.Harness, c.Thread, c.At)
	if len(c.Overrides) > 0 {
		var kv []string
		for k, v := range c.Overrides {
			kv = append(kv, fmt.Sprintf("%s=%q", k, term.Excerpt(v, 60)))
		}
		sort.Strings(kv)
		fmt.Fprintf(w, " (%s)", strings.Join(kv, ", "))
	}
	fmt.Fprintln(w)
	served := 0
	for _, n := range c.Served {
		served += n
	}
	fmt.Fprintf(w, "  served from the recording: %s; common prefix: %s of thread %s\n", steps(served), steps(c.CommonPrefix), c.Thread)
	if p := c.PartsAt; p != nil {
		fmt.Fprintf(w, "  timelines part at thread %s step %d: %s\n      recorded: %s\n      fork:     %s\n", p.Thread, p.Step, p.Field, term.Excerpt(p.Recorded, 200), term.Excerpt(p.Forked, 200))
	} else {
		fmt.Fprintf(w, "  the timelines never part: the fork did what the recording did\n")
	}
	fmt.Fprintf(w, "  %-12s %-28s %s\n", "", "recording", "fork")
	row := func(name string, f func(s Side) string) {
		fmt.Fprintf(w, "  %-12s %-28s %s\n", name, f(c.Sides[0]), f(c.Sides[1]))
	}
	row("models", func(s Side) string { return strings.Join(s.Models, ", ") })
	row("steps", func(s Side) string { return fmt.Sprint(s.Steps) })
	row("tool calls", func(s Side) string { return fmt.Sprint(s.ToolCalls) })
	row("tokens", func(s Side) string { return fmt.Sprintf("%d in, %d out", s.Usage.InputTokens, s.Usage.OutputTokens) })
	row("cost", func(s Side) string { return prices.Format(s.USD) })
	row("ended", func(s Side) string { return term.Excerpt(s.Ended, 28) })
	row("end files", func(s Side) string { return fmt.Sprint(s.EndFiles) })
	es := c.EndState
	switch {
	case !es.Compared:
		fmt.Fprintf(w, "  end state: not compared: %s\n", es.Note)
	case es.Identical:
		fmt.Fprintf(w, "  end state: identical\n")
	default:
		n := fmt.Sprintf("%d differences", len(es.Changes))
		if len(es.Changes) == 1 {
			n = "1 difference"
		}
		fmt.Fprintf(w, "  end state: %s\n", n)
		for _, ch := range es.Changes {
			fmt.Fprintf(w, "    %s\n", ch)
		}
	}
}

// steps is "1 step" or "n steps".
func steps(n int) string {
	if n == 1 {
		return "1 step"
	}
	return fmt.Sprintf("%d steps", n)
}
