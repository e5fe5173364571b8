package fidelity

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/tapebox/tapebox/internal/term"
)

// Board tallies outcomes for the scoreboard: by harness, version and tool, and by
// divergence class. It knows nothing of any one harness. The zero Board is ready to use;
// it is not safe for concurrent use.
type Board struct {
	rows    map[rowKey]*Row
	classes map[classKey]*ClassRow
	errs    []string
	elapsed time.Duration
	times   map[rowKey]time.Duration
}

type rowKey struct{ harness, version, tool string }

type classKey struct{ harness, version, name string }

// Row is one line of the scoreboard: a tool of a harness version (Tool "all" for every
// tool).
type Row struct {
	Harness, Version, Tool string
	// Calls is how many calls of the tool the harness made; Identical how many of them
	// replayed with no difference.
	Calls, Identical int
	// Sequences counts the sequences with at least one call of the tool; EndIdentical
	// those of them whose end state the replay reproduced.
	Sequences, EndIdentical int
}

// ClassRow is one divergence class seen on a harness version.
type ClassRow struct {
	Harness, Version, Name, Reason string
	// Count is how many divergences of the class were seen.
	Count int
	// Seed is the first sequence that showed it; Example its first divergence.
	Seed    string
	Example string
}

// Add counts an outcome of harness version (the target's). classes supply the reasons of
// the classes the outcome's divergences name.
func (b *Board) Add(version string, o *Outcome, classes []Class) {
	b.AddEntry(o.Entry(version), classes)
}

// AddEntry counts a ledger entry; classes supply the reasons of the classes its
// divergences name.
func (b *Board) AddEntry(e Entry, classes []Class) {
	if b.rows == nil {
		b.rows, b.classes, b.times = map[rowKey]*Row{}, map[classKey]*ClassRow{}, map[rowKey]time.Duration{}
	}
	h, version := e.Harness, e.Version
	b.elapsed += e.elapsed()
	b.times[rowKey{h, version, "all"}] += e.elapsed()
	if e.Err != "" {
		b.errs = append(b.errs, fmt.Sprintf("%s %s, %s: %s", h, version, e.name(), e.Err))
		return
	}
	row := func(tool string) *Row {
		k := rowKey{h, version, tool}
		r := b.rows[k]
		if r == nil {
			r = &Row{Harness: h, Version: version, Tool: tool}
			b.rows[k] = r
		}
		return r
	}
	seen := map[string]bool{"all": true}
	for _, c := range e.Calls {
		seen[c.Tool] = true
		for _, r := range []*Row{row(c.Tool), row("all")} {
			r.Calls++
			if c.Identical {
				r.Identical++
			}
		}
	}
	for tool := range seen {
		r := row(tool)
		r.Sequences++
		if e.EndIdentical {
			r.EndIdentical++
		}
	}
	for _, d := range e.Divergences {
		name, reason := d.Class, ""
		if name == "" {
			name, reason = "unclassified", "no known class explains it: a bug to fix or a class to add"
		}
		for _, c := range classes {
			if c.Name == name {
				reason = c.Reason
			}
		}
		k := classKey{h, version, name}
		cr := b.classes[k]
		if cr == nil {
			cr = &ClassRow{Harness: h, Version: version, Name: name, Reason: reason, Seed: e.name(), Example: d.String()}
			b.classes[k] = cr
		}
		cr.Count++
	}
}

// Time returns the time the sequences of harness version took to record and replay, summed.
func (b *Board) Time(harness, version string) time.Duration {
	return b.times[rowKey{harness, version, "all"}]
}

// Rows returns the scoreboard's rows, by harness, version, then tool ("all" last).
func (b *Board) Rows() []Row {
	var out []Row
	for _, r := range b.rows {
		out = append(out, *r)
	}
	slices.SortFunc(out, func(x, y Row) int {
		return cmp.Or(cmp.Compare(x.Harness, y.Harness), cmp.Compare(x.Version, y.Version),
			cmp.Compare(boolInt(x.Tool == "all"), boolInt(y.Tool == "all")), cmp.Compare(x.Tool, y.Tool))
	})
	return out
}

// Classes returns the divergence classes seen, by harness, version, then name.
func (b *Board) Classes() []ClassRow {
	var out []ClassRow
	for _, c := range b.classes {
		out = append(out, *c)
	}
	slices.SortFunc(out, func(x, y ClassRow) int {
		return cmp.Or(cmp.Compare(x.Harness, y.Harness), cmp.Compare(x.Version, y.Version), cmp.Compare(x.Name, y.Name))
	})
	return out
}

// Errors lists the sequences that could not be recorded or replayed.
func (b *Board) Errors() []string { return b.errs }

// Total returns the "all" row of harness version (zero when nothing was added).
func (b *Board) Total(harness, version string) Row {
	if r := b.rows[rowKey{harness, version, "all"}]; r != nil {
		return *r
	}
	return Row{Harness: harness, Version: version, Tool: "all"}
}

// PerThousand is the time the recorded and replayed calls took, per 1,000 calls, summed
// over sequences (wall time is lower when sequences run side by side).
func (b *Board) PerThousand() time.Duration {
	n := 0
	for k, r := range b.rows {
		if k.tool == "all" {
			n += r.Calls
		}
	}
	if n == 0 {
		return 0
	}
	return b.elapsed * 1000 / time.Duration(n)
}

// Markdown renders the scoreboard: header says how it was made.
func (b *Board) Markdown(header string) string {
	var s strings.Builder
	s.WriteString("# Executor fidelity\n\n")
	s.WriteString(header)
	s.WriteString("\n\n| Harness | Version | Calls tried | Calls identical | % | Sequences | End state identical | % | Record + replay per 1,000 calls |\n")
	s.WriteString("|---|---|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range b.Rows() {
		if r.Tool != "all" {
			continue
		}
		per := "-"
		if r.Calls > 0 {
			per = (b.Time(r.Harness, r.Version) * 1000 / time.Duration(r.Calls)).Round(time.Second).String()
		}
		fmt.Fprintf(&s, "| %s | %s | %d | %d | %s | %d | %d | %s | %s |\n", r.Harness, r.Version,
			r.Calls, r.Identical, pct(r.Identical, r.Calls), r.Sequences, r.EndIdentical, pct(r.EndIdentical, r.Sequences), per)
	}
	s.WriteString("\n## By tool\n\n| Harness | Version | Tool | Calls tried | Calls identical | % | Sequences | End state identical | % |\n")
	s.WriteString("|---|---|---|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range b.Rows() {
		tool := "`" + r.Tool + "`"
		if r.Tool == "all" {
			tool = "**all**"
		}
		fmt.Fprintf(&s, "| %s | %s | %s | %d | %d | %s | %d | %d | %s |\n", r.Harness, r.Version, tool,
			r.Calls, r.Identical, pct(r.Identical, r.Calls), r.Sequences, r.EndIdentical, pct(r.EndIdentical, r.Sequences))
	}
	s.WriteString("\n## Divergence classes\n\n")
	cls := b.Classes()
	if len(cls) == 0 {
		s.WriteString("None: every call and every end state replayed identical.\n")
	} else {
		s.WriteString("| Harness | Version | Class | Divergences | First seed | Reason |\n|---|---|---|---:|---|---|\n")
		for _, c := range cls {
			fmt.Fprintf(&s, "| %s | %s | %s | %d | %s | %s |\n", c.Harness, c.Version, c.Name, c.Count, c.Seed, cell(c.Reason))
		}
		s.WriteString("\nFirst example of each:\n\n")
		for _, c := range cls {
			fmt.Fprintf(&s, "- **%s** (%s %s, %s): `%s`\n", c.Name, c.Harness, c.Version, c.Seed, cell(clip(c.Example, 400)))
		}
	}
	if len(b.errs) > 0 {
		fmt.Fprintf(&s, "\n## Sequences that did not run (%d)\n\n", len(b.errs))
		for _, e := range b.errs {
			fmt.Fprintf(&s, "- %s\n", cell(clip(e, 400)))
		}
	}
	return s.String()
}

func pct(n, of int) string {
	if of == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f", 100*float64(n)/float64(of))
}

// cell makes text safe in a Markdown table cell or code span on one line.
func cell(s string) string {
	s = term.Printable(s)
	return strings.NewReplacer("|", "\\|", "\n", "⏎", "`", "'").Replace(s)
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
