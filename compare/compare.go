package compare

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/tapebox/tapebox/internal/term"
	"github.com/tapebox/tapebox/match"
	"github.com/tapebox/tapebox/tape"
	"github.com/tapebox/tapebox/tape/harnesses"
)

// Difference is one place where a replay did not do what the recording did.
type Difference struct {
	Thread string `json:"thread"`
	Step   int    `json:"step"`
	// Field is what differs: "step" (missing or extra), "response" (the recording did not
	// keep it), "stop_reason", "tool_calls", "tool_call.input", "tool_result",
	// "tool_result.is_error".
	Field    string `json:"field"`
	CallID   string `json:"call_id,omitempty"`
	Tool     string `json:"tool,omitempty"`
	Recorded string `json:"recorded"`
	Replayed string `json:"replayed"`
}

// Report is the outcome of Compare.
type Report struct {
	Recording     string `json:"recording"`
	Replay        string `json:"replay"`
	Harness       string `json:"harness"`
	StepsRecorded int    `json:"steps_recorded"`
	StepsReplayed int    `json:"steps_replayed"`
	StepsCompared int    `json:"steps_compared"`
	// ReachedEnd says whether the replay played every step of every thread and says it
	// ended complete (not in error or divergence, and not without an end at all).
	ReachedEnd bool   `json:"reached_end"`
	Ended      string `json:"ended"`
	// Identical says the replay reached the end, no tool call or result differs, and the
	// end state matches (EndState). A result the executor copied from the recording
	// compares equal: NotRun lists those, and the verdict line counts them.
	Identical bool `json:"identical"`
	// EndState compares the workspace each run left.
	EndState    EndState     `json:"end_state"`
	Differences []Difference `json:"differences"`
	// Identifiers lists every identifier learned, with its evidence.
	Identifiers []match.Learned `json:"identifiers"`
	// Volatile lists the fields ignored because the harness changes them on every run.
	Volatile []string `json:"volatile"`
	// NotRun lists the replay's tool calls whose result the executor copied from the
	// recording instead of running them; ResultsReplayed counts every result of the replay.
	NotRun          []NotRun `json:"not_run"`
	ResultsReplayed int      `json:"results_replayed"`

	provider tape.Provider
	// spawning are the harness's spawning tools; spawned holds the [thread, call] of each
	// recorded call that a thread of the recording names as its parent.
	spawning []string
	spawned  map[tape.Parent]bool
}

// Compare diffs a replay against its recording step by step: tool calls (after identifier
// substitution), tool results (volatile fields masked, identifiers learned in recorded
// order, one to one), stop reasons, whether every thread was played to its end, and the end
// state of the workspace (meta.workspace.end of both tapes). A thread no spawning call leads
// to is skipped only when it makes no tool call (a title or summary call); a recorded
// response the recorder did not keep, and a spawning call without a child thread (whose
// result the replay copies), are differences: the replay cannot have repeated them. Steps
// pair by the attempts each thread went on from (tape.Thread.Kept): a step the harness
// retried ran nothing in either run and is set aside, so a run that retried a call and one
// that did not compare alike, but a replay that ran a retried step's calls differs.
func Compare(rec, rep *tape.Tape) *Report {
	return CompareWith(rec, rep, Options{})
}

// Options change what CompareWith takes as the same.
type Options struct {
	// Cwd, when set and not the recording's meta.cwd, is the directory the replay's
	// harness worked in (a fork in a fresh directory): the recording's meta.cwd is known
	// from the start to stand for it (match.Identifiers.Pin), so that results naming
	// paths under it compare as the same, and Report.Identifiers lists the pair.
	Cwd string
}

// CompareWith is Compare with options.
func CompareWith(rec, rep *tape.Tape, o Options) *Report {
	h := rec.Meta.Harness
	r := &Report{
		Recording:     rec.Meta.TapeID,
		Replay:        rep.Meta.TapeID,
		Harness:       h,
		StepsRecorded: rec.Totals().Steps,
		StepsReplayed: rep.Totals().Steps,
		Identifiers:   []match.Learned{},
		Volatile:      match.VolatileNames(h),
		Differences:   []Difference{},
		provider:      rec.Meta.Provider,
		spawned:       map[tape.Parent]bool{},
	}
	if hh, ok := harnesses.Lookup(h); ok {
		r.spawning = hh.SpawningTools
	}
	for _, th := range rec.Threads {
		if th.Parent != nil {
			r.spawned[*th.Parent] = true
		}
	}
	r.NotRun, r.ResultsReplayed = notRun(rep)
	ids := match.NewOneToOne(rec)
	if cwd := rec.Meta.Cwd; o.Cwd != "" && cwd != "" && cwd != "/" {
		ids.Pin(cwd, o.Cwd, "the working directory: meta.cwd of both tapes")
	}
	reached := true
	reachSet := rec.Reachable()
	recByID, repByID := rec.ThreadsByID(), rep.ThreadsByID()
	calls := rec.ToolCallers()
	// Each side's steps the harness went on from (tape.Thread.Kept), paired in order: a
	// superseded attempt (a step the harness retried) ran nothing, on either side, and a
	// harness may retry a turn in one run and not in the other.
	// Only threads with a superseded step have an entry.
	recKept, repKept := map[*tape.Thread]kept{}, map[string]kept{}
	for _, th := range rec.Threads {
		if k := keptOf(th); k != nil {
			recKept[th] = k
		}
	}
	for _, th := range rep.Threads {
		if k := keptOf(th); k != nil {
			repKept[th.ID] = k
		}
	}
	for ref := range rec.Steps() {
		reach := reachSet[ref.Thread]
		if !reach && !calls[ref.Thread] {
			continue // a side conversation (a title or summary call) that replays do not play
		}
		k, ok := recKept[ref.Thread].ordinal(ref.Index)
		if !ok {
			continue
		}
		th := repByID[ref.Thread.ID]
		if th == nil || k >= repKept[th.ID].len(th) {
			reached = false
			missing := "missing"
			if !reach {
				missing = "missing (the thread is not reachable from the main thread, and a replay plays only the main thread and the threads its spawning calls start)"
			}
			r.add(Difference{Thread: ref.Thread.ID, Step: ref.Index, Field: "step", Recorded: "present", Replayed: missing})
			continue
		}
		r.StepsCompared++
		compareStep(r, ids, h, ref.Thread.ID, ref.Index, ref.Step, th.Steps[repKept[th.ID].step(k)])
	}
	for _, th := range rep.Threads {
		rth := recByID[th.ID]
		ranSuperseded(r, rth, th)
		n := 0
		if rth != nil {
			n = recKept[rth].len(rth)
		}
		for k := n; k < repKept[th.ID].len(th); k++ {
			r.add(Difference{Thread: th.ID, Step: repKept[th.ID].step(k), Field: "step", Recorded: "missing", Replayed: "present"})
		}
	}
	// A replay tape that does not say how it ended was still being written or was cut
	// short (killed before tape.Writer.Finish): it cannot show that the run ended where the
	// recording did, even when every step is there (the last one, an answer without tool
	// calls, has nothing left to compare).
	r.Ended = "running or cut short"
	if rep.Meta.Ended == nil {
		reached = false
	}
	if e := rep.Meta.Ended; e != nil {
		r.Ended = string(e.Reason)
		if e.Detail != "" {
			r.Ended += ": " + e.Detail
		}
		if e.Reason != tape.EndComplete {
			reached = false
		}
	}
	r.ReachedEnd = reached
	r.EndState = compareEndState(rec, rep)
	r.Identical = reached && len(r.Differences) == 0 && r.EndState.Identical
	r.Identifiers = ids.Learned()
	return r
}

func (r *Report) add(d Difference) { r.Differences = append(r.Differences, d) }

// ranSuperseded reports the results of a replay's superseded step (one its recording
// retried, rec's thread rth, nil when the recording has none) where the recording has none:
// the replay ran calls the harness never ran.
func ranSuperseded(r *Report, rth, th *tape.Thread) {
	for i, st := range th.Steps {
		if len(st.ToolResults) == 0 || !th.Superseded(i) || rth != nil && i < len(rth.Steps) && len(rth.Steps[i].ToolResults) > 0 {
			continue
		}
		for _, res := range st.ToolResults {
			r.add(Difference{Thread: th.ID, Step: i, Field: "tool_result", CallID: res.ToolCallID,
				Recorded: "missing: the harness retried this step and never ran its calls", Replayed: "present"})
		}
	}
}

// kept is a thread's steps the harness went on from (tape.Thread.Kept), nil when that is
// every step: the common case, which then costs no allocation.
type kept []int

func keptOf(th *tape.Thread) kept {
	for i := range th.Steps {
		if th.Superseded(i) {
			return th.Kept()
		}
	}
	return nil
}

// len is how many steps of th the harness went on from.
func (k kept) len(th *tape.Thread) int {
	if k == nil {
		return len(th.Steps)
	}
	return len(k)
}

// step is the index of the n-th of them.
func (k kept) step(n int) int {
	if k == nil {
		return n
	}
	return k[n]
}

// ordinal is the place of step si among them; false for a superseded step.
func (k kept) ordinal(si int) (int, bool) {
	if k == nil {
		return si, true
	}
	return slices.BinarySearch(k, si)
}

func compareStep(r *Report, ids *match.Identifiers, h, thread string, i int, a, b *tape.Step) {
	// A response the recorder did not keep (over --max-record-body) normalizes into an answer
	// without tool calls: the replay plays that, and what the run did there is unknown.
	if tr, ok := tape.TruncationOf(a.Response.Raw); ok {
		r.add(Difference{Thread: thread, Step: i, Field: "response",
			Recorded: fmt.Sprintf("not kept: %d bytes, over the recording limit of %d; its tool calls are unknown", tr.Bytes, tr.Limit),
			Replayed: "played as an answer without tool calls"})
	}
	if a.Response.StopReason != b.Response.StopReason {
		r.add(Difference{Thread: thread, Step: i, Field: "stop_reason", Recorded: a.Response.StopReason, Replayed: b.Response.StopReason})
	}
	if len(a.ToolCalls) != len(b.ToolCalls) {
		r.add(Difference{Thread: thread, Step: i, Field: "tool_calls", Recorded: callNames(a.ToolCalls), Replayed: callNames(b.ToolCalls)})
		return
	}
	for k, ca := range a.ToolCalls {
		cb := b.ToolCalls[k]
		if ca.Name != cb.Name {
			r.add(Difference{Thread: thread, Step: i, Field: "tool_calls", CallID: ca.ID, Recorded: ca.Name, Replayed: cb.Name})
			continue
		}
		if want := ids.ApplyJSON(ca.Input); !jsonEqual(want, cb.Input) {
			r.add(Difference{Thread: thread, Step: i, Field: "tool_call.input", CallID: ca.ID, Tool: ca.Name, Recorded: string(want), Replayed: string(cb.Input)})
		}
	}
	// A step may name two calls alike (a recording is anyone's): the n-th call of an id
	// goes with the n-th result of that id on each side, as the replay writes them, so that
	// no call's result goes unread behind another's.
	resA, resB := resultsByID(a), resultsByID(b)
	seen := map[string]int{}
	for _, ca := range a.ToolCalls {
		n := seen[ca.ID]
		seen[ca.ID]++
		ra, okA := nth(resA[ca.ID], n)
		rb, okB := nth(resB[ca.ID], n)
		if !okA && !okB {
			continue
		}
		if okA != okB {
			r.add(Difference{Thread: thread, Step: i, Field: "tool_result", CallID: ca.ID, Tool: ca.Name, Recorded: presence(okA), Replayed: presence(okB)})
			continue
		}
		// A spawning call without a child thread has nothing to play: the replay copies its
		// recorded result (playChild), so that the two agree says nothing of the run.
		if slices.Contains(r.spawning, ca.Name) && !r.spawned[tape.Parent{ThreadID: thread, ToolCallID: ca.ID}] {
			r.add(Difference{Thread: thread, Step: i, Field: "tool_result", CallID: ca.ID, Tool: ca.Name, Recorded: ra.Flat(),
				Replayed: "copied from the recording: the spawning call has no child thread to play"})
			continue
		}
		ta, tb := match.Mask(h, ra.Flat()), match.Mask(h, rb.Flat())
		ids.Learn(match.Site{Thread: thread, Step: i}, ta, tb)
		if ids.Apply(ta) != tb {
			r.add(Difference{Thread: thread, Step: i, Field: "tool_result", CallID: ca.ID, Tool: ca.Name, Recorded: ta, Replayed: tb})
		}
		// OpenAI's wire formats cannot carry is_error, so a recording from them never has it.
		if ra.IsError != rb.IsError && r.provider.MarksErrors() {
			r.add(Difference{Thread: thread, Step: i, Field: "tool_result.is_error", CallID: ca.ID, Tool: ca.Name, Recorded: fmt.Sprint(ra.IsError), Replayed: fmt.Sprint(rb.IsError)})
		}
	}
}

// canonicalNumber spells the value of a JSON number literal one way: sign, significant
// digits, exponent ("-15e-1" for -1.50). It works on the digits, without arithmetic, so
// that 1e999999 costs its length (an exact big.Rat of it takes megabytes). A literal it
// cannot read (an exponent past int) stays as it is.
func canonicalNumber(lit string) string {
	sign := ""
	m := lit
	if strings.HasPrefix(m, "-") {
		sign, m = "-", m[1:]
	}
	exp := 0
	if i := strings.IndexAny(m, "eE"); i >= 0 {
		e, err := strconv.Atoi(strings.TrimPrefix(m[i+1:], "+"))
		if err != nil {
			return lit
		}
		exp, m = e, m[:i]
	}
	intPart, frac, _ := strings.Cut(m, ".")
	digits := strings.TrimLeft(intPart+frac, "0")
	if digits == "" {
		return "0" // -0 is 0
	}
	trimmed := strings.TrimRight(digits, "0")
	shift := len(digits) - len(trimmed) - len(frac)
	if exp > 0 && shift > math.MaxInt-exp || exp < 0 && shift < math.MinInt-exp {
		return lit
	}
	return sign + trimmed + "e" + strconv.Itoa(exp+shift)
}

// resultsByID groups a step's tool results by call id, in order.
func resultsByID(s *tape.Step) map[string][]tape.ToolResult {
	out := make(map[string][]tape.ToolResult, len(s.ToolResults))
	for _, r := range s.ToolResults {
		out[r.ToolCallID] = append(out[r.ToolCallID], r)
	}
	return out
}

// nth returns rs[n] when there is one.
func nth(rs []tape.ToolResult, n int) (tape.ToolResult, bool) {
	if n < len(rs) {
		return rs[n], true
	}
	return tape.ToolResult{}, false
}

func presence(ok bool) string {
	if ok {
		return "present"
	}
	return "missing"
}

func callNames(cs []tape.ToolCall) string {
	names := make([]string, len(cs))
	for i, c := range cs {
		names[i] = c.Name
	}
	return "[" + strings.Join(names, ", ") + "]"
}

// jsonEqual says whether two JSON documents hold the same value, whatever their spacing and
// member order. Numbers compare exactly (1.0 is 1, but 9007199254740993 is not
// 9007199254740992, as it would be after decoding both into float64).
func jsonEqual(a, b json.RawMessage) bool {
	if bytes.Equal(a, b) {
		return true
	}
	x, okA := exactJSON(a)
	y, okB := exactJSON(b)
	if !okA || !okB {
		return false
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return bytes.Equal(xa, ya)
}

// exactJSON decodes a JSON document with each number as the exact value it writes, in one
// spelling (canonicalNumber: 1.0, 1 and 1e0 are one).
func exactJSON(raw json.RawMessage) (any, bool) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil || dec.More() {
		return nil, false
	}
	var norm func(v any) any
	norm = func(v any) any {
		switch x := v.(type) {
		case json.Number:
			return canonicalNumber(string(x))
		case []any:
			for i := range x {
				x[i] = norm(x[i])
			}
		case map[string]any:
			for k := range x {
				x[k] = norm(x[k])
			}
		}
		return v
	}
	return norm(v), true
}

// WriteText prints the report for people.
func (r *Report) WriteText(w io.Writer) {
	verdict := "IDENTICAL"
	if len(r.NotRun) > 0 {
		verdict = fmt.Sprintf("IDENTICAL, %d of %d tool results not run", len(r.NotRun), r.ResultsReplayed)
	}
	switch {
	case !r.ReachedEnd:
		verdict = "DID NOT REACH THE END"
	case !r.Identical:
		verdict = "DIFFERS"
	}
	fmt.Fprintf(w, "compare %s -> %s (%s): %s\n", ShortID(r.Recording), ShortID(r.Replay), r.Harness, verdict)
	fmt.Fprintf(w, "  steps: %d recorded, %d replayed, %d compared; replay ended: %s\n", r.StepsRecorded, r.StepsReplayed, r.StepsCompared, r.Ended)
	r.writeNotRun(w)
	if len(r.Identifiers) > 0 {
		fmt.Fprintf(w, "  identifiers learned: %d\n", len(r.Identifiers))
		for _, l := range r.Identifiers {
			fmt.Fprintf(w, "    %s -> %s (%s)\n", term.Excerpt(l.Recorded, 120), term.Excerpt(l.Replayed, 120), l.Evidence)
		}
	}
	for _, d := range r.Differences {
		where := fmt.Sprintf("thread %s step %d", d.Thread, d.Step)
		if d.CallID != "" {
			where += fmt.Sprintf(" call %s", d.CallID)
			if d.Tool != "" {
				where += " (" + d.Tool + ")"
			}
		}
		a, b := diffExcerpts(d.Recorded, d.Replayed, 300)
		fmt.Fprintf(w, "  - %s: %s differs\n      recorded: %s\n      replayed: %s\n", where, d.Field, a, b)
	}
	r.EndState.writeText(w)
	if len(r.Volatile) > 0 {
		fmt.Fprintf(w, "  ignored as volatile: %s\n", strings.Join(r.Volatile, "; "))
	}
}

// First is the report's first difference on one line, as a list of many tapes shows it (a
// corpus replay's): where the replay stopped when it did not reach the end, else the first
// tool call or result that differs, else the first change of the end state; "" for an
// identical replay.
func (r *Report) First() string {
	switch {
	case r.Identical:
		return ""
	case !r.ReachedEnd:
		return fmt.Sprintf("did not reach the end: %d of %d steps replayed, ended %s", r.StepsReplayed, r.StepsRecorded, term.Excerpt(r.Ended, 200))
	case len(r.Differences) > 0:
		d := r.Differences[0]
		where := fmt.Sprintf("thread %s step %d", d.Thread, d.Step)
		if d.CallID != "" {
			where += " call " + d.CallID
			if d.Tool != "" {
				where += " (" + d.Tool + ")"
			}
		}
		a, b := diffExcerpts(d.Recorded, d.Replayed, 120)
		return fmt.Sprintf("%s: %s differs: recorded %s, replayed %s", where, d.Field, a, b)
	case len(r.EndState.Changes) > 0:
		return "end state: " + term.Printable(r.EndState.Changes[0].String())
	}
	return "differs"
}

// ShortID is a tape id as a report shows it: its first 12 characters.
func ShortID(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

// diffExcerpts are two differing texts as a report shows them (Excerpt): from their start,
// or, when they agree beyond the first n bytes, from a little before the first byte where
// they part (after a "…"), so that two long results that differ late do not print alike.
func diffExcerpts(a, b string, n int) (string, string) {
	k := 0
	for k < len(a) && k < len(b) && a[k] == b[k] {
		k++
	}
	if k < n-n/4 {
		return term.Excerpt(a, n), term.Excerpt(b, n)
	}
	from := k - n/4
	for from > 0 && !utf8.RuneStart(a[from]) {
		from--
	}
	return "…" + term.Excerpt(a[from:], n), "…" + term.Excerpt(b[from:], n)
}
