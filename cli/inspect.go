package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"slices"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/tapebox/tapebox/internal/term"
	"github.com/tapebox/tapebox/prices"
	"github.com/tapebox/tapebox/tape"
	"github.com/tapebox/tapebox/tape/seal"
)

func init() {
	register(&command{name: "inspect", summary: "summarize a tape: meta, threads, steps, tool calls", run: runInspect})
}

// inputWidth is how many characters of a tool call's input inspect shows.
const inputWidth = 80

// inspectSummary is what inspect --json prints.
type inspectSummary struct {
	Meta tape.Meta `json:"meta"`
	// Ended is how the run ended ("complete", "cut", ...), or "unknown" when the tape records
	// no end: the run was still going or its recorder was killed.
	Ended   string                 `json:"ended"`
	Totals  inspectSummaryTotals   `json:"totals"`
	Threads []inspectSummaryThread `json:"threads"`
	// Cost is the tape's cost per thread and in total at the price table's date; a null
	// usd is an unknown cost (a model the table has no price for), never 0.
	Cost prices.TapeCost `json:"cost"`
	// Digests is what tapebox verify says of the tape.
	Digests *inspectDigests `json:"digests"`
}

// inspectDigests is the state of a tape's digests.
type inspectDigests struct {
	State       string `json:"state"` // ok, no digests, mismatch
	Steps       int    `json:"steps"`
	Root        string `json:"root,omitempty"`
	PublicKey   string `json:"public_key,omitempty"`
	SignatureOK bool   `json:"signature_ok"`
	Pointer     string `json:"pointer,omitempty"`
	Problem     string `json:"problem,omitempty"`
}

// inspectSummaryTotals sums the tape.
type inspectSummaryTotals struct {
	Threads    int        `json:"threads"`
	Steps      int        `json:"steps"`
	ToolCalls  int        `json:"tool_calls"`
	Usage      tape.Usage `json:"usage"`
	DurationMS float64    `json:"duration_ms"`
	ToolNames  []string   `json:"tool_names"`
}

// inspectSummaryThread is one thread and its steps.
type inspectSummaryThread struct {
	ID     string                `json:"id"`
	Parent *inspectSummaryParent `json:"parent"`
	Steps  []inspectSummaryStep  `json:"steps"`
}

// inspectSummaryParent is the tool call that spawned a thread.
type inspectSummaryParent struct {
	ThreadID   string `json:"thread_id"`
	ToolCallID string `json:"tool_call_id"`
	// ToolName is the spawning tool's name; empty when the tape does not hold the call.
	ToolName string `json:"tool_name"`
	Step     *int   `json:"step"` // index of the parent thread's step holding the call
}

// inspectSummaryStep is one model call.
type inspectSummaryStep struct {
	Index     int     `json:"index"`
	Model     string  `json:"model"`
	RequestAt float64 `json:"request_at_ms"`
	// FirstByteMS and LastByteMS are the latencies from the request.
	FirstByteMS float64                  `json:"first_byte_ms"`
	LastByteMS  float64                  `json:"last_byte_ms"`
	Usage       tape.Usage               `json:"usage"`
	StopReason  string                   `json:"stop_reason"`
	Status      int                      `json:"status"`
	Stream      bool                     `json:"stream"`
	ToolCalls   []inspectSummaryToolCall `json:"tool_calls"`
	// RequestTruncated and ResponseTruncated say a body was over the recording limit, so
	// the tape holds only a marker of it (tape.Truncation); absent otherwise.
	RequestTruncated  *tape.Truncation `json:"request_truncated,omitempty"`
	ResponseTruncated *tape.Truncation `json:"response_truncated,omitempty"`
}

// inspectSummaryToolCall is one tool call and the outcome of its result.
type inspectSummaryToolCall struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	// Input is the call's input as the JSON value it is.
	Input json.RawMessage `json:"input"`
	// line is the input on one line, cut to about 80 characters, for the text output.
	line string
	// Result is "ok", "error", or "none" when the tape holds no result (the thread's last
	// step, or a run cut short).
	Result string `json:"result"`
}

func runInspect(ctx context.Context, env *Env, args []string) int {
	fs := newFlagSet(env, "inspect", "[--json] FILE", `
Prints a summary of a tape: its meta (id, harness, provider, model, the working directory it
ran in, start, task, labels, how and when the run ended), totals (threads, steps, tool calls, tokens, duration), and each
thread with the tool call that spawned it and its steps: model, latency to the first and last
byte, tokens, stop reason, and tool calls with short inputs and the outcome of their results.
It reads the normalized fields only, not the raw bodies and streams, so a large tape takes
little memory. Cost is priced per step from the request's model with the price table compiled
into tapebox (or --prices FILE), and printed with the table's date; a model the table does not
price makes the cost "unknown" (null in --json), never 0.`)
	asJSON := fs.Bool("json", false, "print the summary as JSON")
	var pricesFile string
	pricesFlag(fs, &pricesFile, "for the costs")
	if code, done := parse(env, fs, args); done {
		return code
	}
	if fs.NArg() != 1 {
		return usageError(env, fs, "want one tape file")
	}
	table, err := loadPrices(pricesFile)
	if err != nil {
		return failf(env, "inspect", "%v", err)
	}
	defer limitMemory(env)()
	t, err := tape.LoadSummaryFile(fs.Arg(0))
	if err != nil {
		return failf(env, "inspect", "%v", err)
	}
	s := summarizeTape(t)
	s.Cost = table.Tape(t)
	if s.Digests, err = inspectDigestsOf(fs.Arg(0), t); err != nil {
		return failf(env, "inspect", "%v", err)
	}
	if *asJSON {
		if err := writeJSON(env.Stdout, s); err != nil {
			return failf(env, "inspect", "write summary: %v", err)
		}
		return ExitOK
	}
	if err := s.writeText(env.Stdout); err != nil {
		return failf(env, "inspect", "write summary: %v", err)
	}
	return ExitOK
}

func summarizeTape(t *tape.Tape) *inspectSummary {
	tot := t.Totals()
	s := &inspectSummary{
		Meta:  t.Meta,
		Ended: "unknown",
		Totals: inspectSummaryTotals{
			Threads: tot.Threads, Steps: tot.Steps, ToolCalls: tot.ToolCalls,
			Usage: tot.Usage, DurationMS: roundMS(tot.DurationMS), ToolNames: tot.ToolNames,
		},
		Threads: []inspectSummaryThread{},
	}
	if s.Totals.ToolNames == nil {
		s.Totals.ToolNames = []string{}
	}
	if e := t.Meta.Ended; e != nil {
		s.Ended = string(e.Reason)
	}
	for _, th := range t.Threads {
		st := inspectSummaryThread{ID: th.ID, Steps: []inspectSummaryStep{}}
		if th.Parent != nil {
			st.Parent = &inspectSummaryParent{ThreadID: th.Parent.ThreadID, ToolCallID: th.Parent.ToolCallID}
			if ref, call, ok := t.ParentCall(th); ok {
				st.Parent.ToolName = call.Name
				st.Parent.Step = &ref.Index
			}
		}
		for i, step := range th.Steps {
			st.Steps = append(st.Steps, summarizeStep(t, i, step))
		}
		s.Threads = append(s.Threads, st)
	}
	return s
}

func summarizeStep(t *tape.Tape, i int, s *tape.Step) inspectSummaryStep {
	ss := inspectSummaryStep{
		Index:       i,
		Model:       tape.StepModel(&t.Meta, s),
		RequestAt:   roundMS(s.Timing.RequestAt),
		FirstByteMS: roundMS(s.Timing.FirstByteAt - s.Timing.RequestAt),
		LastByteMS:  roundMS(s.Timing.LastByteAt - s.Timing.RequestAt),
		Usage:       s.Response.Usage,
		StopReason:  s.Response.StopReason,
		Status:      s.Response.Status,
		Stream:      s.Request.Stream,
		ToolCalls:   []inspectSummaryToolCall{},
	}
	if tr, ok := tape.TruncationOf(s.Request.Raw); ok {
		ss.RequestTruncated = &tr
	}
	if tr, ok := tape.TruncationOf(s.Response.Raw); ok {
		ss.ResponseTruncated = &tr
	}
	for _, c := range s.ToolCalls {
		result := "none"
		if r, ok := s.ToolResult(c.ID); ok {
			result = "ok"
			if r.IsError {
				result = "error"
			}
		}
		ss.ToolCalls = append(ss.ToolCalls, inspectSummaryToolCall{ID: c.ID, Name: c.Name, Input: inputValue(c.Input), line: oneLine(c.Input, inputWidth), Result: result})
	}
	return ss
}

// oneLine shows a JSON value compactly on one line, cut to about width characters. A
// freeform tool's {"input": TEXT} shows as the text.
func oneLine(raw json.RawMessage, width int) string {
	var s string
	var freeform struct {
		Input *string `json:"input"`
	}
	var probe map[string]json.RawMessage
	if json.Unmarshal(raw, &probe) == nil && len(probe) == 1 && json.Unmarshal(raw, &freeform) == nil && freeform.Input != nil {
		s = *freeform.Input
	} else {
		var buf bytes.Buffer
		if json.Compact(&buf, raw) == nil {
			s = unescapeHTML(buf.String())
		} else {
			s = string(raw)
		}
	}
	s = term.Printable(strings.Join(strings.Fields(s), " "))
	if utf8.RuneCountInString(s) <= width {
		return s
	}
	runes := []rune(s)
	return string(runes[:width-1]) + "…"
}

// unescapeHTML turns the \u0026, \u003c and \u003e escapes that encoding/json writes
// by default back into &, < and >, for reading.
func unescapeHTML(s string) string {
	if !strings.Contains(s, `\u00`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			if s[i+1] == 'u' && i+6 <= len(s) {
				switch s[i+2 : i+6] {
				case "0026":
					b.WriteByte('&')
					i += 5
					continue
				case "003c":
					b.WriteByte('<')
					i += 5
					continue
				case "003e":
					b.WriteByte('>')
					i += 5
					continue
				}
			}
			b.WriteString(s[i : i+2]) // any other escape, kept whole
			i++
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func (s *inspectSummary) writeText(w io.Writer) error {
	var b strings.Builder
	s.writeMeta(&b)
	s.writeTotals(&b)
	s.writeThreads(&b)
	_, err := io.WriteString(w, b.String())
	return err
}

// row writes one "label  value" line of the summary.
func row(b *strings.Builder, label, format string, args ...any) {
	fmt.Fprintf(b, "%-10s %s\n", label, fmt.Sprintf(format, args...))
}

// writeMeta writes what the tape says about itself: ids, harness, where and when it ran, its
// workspace, end, limits and digests.
func (s *inspectSummary) writeMeta(b *strings.Builder) {
	m := s.Meta
	id := m.TapeID
	if m.ReplayOf != nil {
		id += " (replay of " + *m.ReplayOf + ")"
	}
	row(b, "tape", "%s", id)
	if f := m.ForkedFrom; f != nil {
		var served []string
		for th, n := range f.Served {
			served = append(served, fmt.Sprintf("%s %d", th, n))
		}
		sort.Strings(served)
		var over []string
		for k, v := range f.Overrides {
			over = append(over, fmt.Sprintf("%s=%q", k, v))
		}
		sort.Strings(over)
		line := fmt.Sprintf("fork of %s at thread %s step %d; steps served from it: %s", f.TapeID, f.Thread, f.Step, strings.Join(served, ", "))
		if len(over) > 0 {
			line += "; overrides: " + strings.Join(over, ", ")
		}
		row(b, "forked", "%s", line)
	}
	row(b, "harness", "%s", strings.TrimSpace(m.Harness+" "+m.HarnessVersion))
	row(b, "provider", "%s", m.Provider)
	row(b, "model", "%s", m.Model)
	if m.Cwd != "" {
		row(b, "cwd", "%s", m.Cwd)
	} else {
		row(b, "cwd", "unknown: the tape does not say where it ran (a replay in Docker needs --cwd)")
	}
	if ws := m.Workspace; ws != nil {
		start := "start: empty (no snapshot)"
		if ws.Snapshot != "" {
			start = fmt.Sprintf("start: %s (%d entries, %d bytes of files, %d compressed, %s)", ws.Snapshot, ws.Files, ws.Bytes, ws.Size, ws.Digest)
		}
		end := "end: not recorded"
		if ws.End != nil {
			end = fmt.Sprintf("end: %d entries", len(ws.End))
		}
		row(b, "workspace", "%s; %s", start, end)
	} else {
		row(b, "workspace", "not recorded")
	}
	row(b, "started", "%s", m.StartedAt.Format(time.RFC3339Nano))
	if len(m.Task) > 0 {
		row(b, "task", "%s", pairs(m.Task))
	}
	if len(m.Labels) > 0 {
		row(b, "labels", "%s", pairs(m.Labels))
	}
	if e := m.Ended; e != nil {
		line := fmt.Sprintf("%s at %s (%s after the start)", e.Reason, e.At.Format(time.RFC3339Nano), e.At.Sub(m.StartedAt).Round(time.Millisecond))
		if e.Limit != "" {
			line += ", limit " + e.Limit
		}
		if e.Detail != "" {
			line += ": " + e.Detail
		}
		row(b, "ended", "%s", line)
	} else {
		row(b, "ended", "no end recorded: still running or cut short")
	}
	if l := m.Limits; l != nil {
		row(b, "limits", "%s", limitsLine(l))
	}
	if d := s.Digests; d != nil {
		switch d.State {
		case string(tape.DigestsOK):
			signed := "unsigned"
			if d.PublicKey != "" {
				signed = "signed by " + d.PublicKey + ", signature ok"
			}
			row(b, "digests", "ok: %s chained, root %s, %s", plural(d.Steps, "step"), d.Root, signed)
		case string(tape.DigestsNone):
			row(b, "digests", "no digests (written without them, or before they existed)")
		default:
			row(b, "digests", "MISMATCH at %s: %s (after %s that match)", d.Pointer, d.Problem, plural(d.Steps, "step"))
		}
	}
}

// writeTotals writes the counts, tokens, duration and cost of the whole tape.
func (s *inspectSummary) writeTotals(b *strings.Builder) {
	tot := s.Totals
	b.WriteByte('\n')
	row(b, "totals", "%s, %s, %s", plural(tot.Threads, "thread"), plural(tot.Steps, "step"), plural(tot.ToolCalls, "tool call"))
	if len(tot.ToolNames) > 0 {
		row(b, "tools", "%s", strings.Join(tot.ToolNames, ", "))
	}
	u := tot.Usage
	row(b, "tokens", "input %d, output %d, cache read %d, cache write %d, reasoning %d", u.InputTokens, u.OutputTokens, u.CacheReadInputTokens, u.CacheCreationInputTokens, u.ReasoningTokens)
	row(b, "duration", "%s", duration(tot.DurationMS))
	cost := prices.Format(s.Cost.USD) + " (prices of " + s.Cost.PricesDate + ")"
	if len(s.Cost.Unpriced) > 0 {
		cost += "; no price for " + strings.Join(quoteModels(s.Cost.Unpriced), ", ")
	}
	row(b, "cost", "%s", cost)
}

// writeThreads writes each thread and its steps, one line per tool call.
func (s *inspectSummary) writeThreads(b *strings.Builder) {
	for ti, th := range s.Threads {
		fmt.Fprintf(b, "\nthread %s", th.ID)
		if p := th.Parent; p != nil {
			name := p.ToolName
			if name == "" {
				name = "call not in the tape"
			}
			fmt.Fprintf(b, "  spawned by %s / %s (%s)", p.ThreadID, p.ToolCallID, name)
		}
		fmt.Fprintf(b, ": %s", plural(len(th.Steps), "step"))
		if ti < len(s.Cost.Threads) {
			fmt.Fprintf(b, ", cost %s", prices.Format(s.Cost.Threads[ti].USD))
		}
		b.WriteByte('\n')
		for _, st := range th.Steps {
			u := st.Usage
			fmt.Fprintf(b, "  step %-3d %s  first byte %.0f ms, last byte %.0f ms  tokens in %d out %d cache-read %d cache-write %d  stop %s\n",
				st.Index, st.Model, st.FirstByteMS, st.LastByteMS,
				u.InputTokens, u.OutputTokens, u.CacheReadInputTokens, u.CacheCreationInputTokens, orDash(st.StopReason))
			for _, cut := range []struct {
				what string
				tr   *tape.Truncation
			}{{"request", st.RequestTruncated}, {"response", st.ResponseTruncated}} {
				if cut.tr != nil {
					fmt.Fprintf(b, "    [%s body not recorded: %s, over the %s recording limit]\n", cut.what, size(cut.tr.Bytes), size(cut.tr.Limit))
				}
			}
			for _, c := range st.ToolCalls {
				flag := ""
				switch c.Result {
				case "error":
					flag = "  [error]"
				case "none":
					flag = "  [no result]"
				}
				fmt.Fprintf(b, "    %s %s %s%s\n", c.Name, c.ID, c.line, flag)
			}
		}
	}
}

// quoteModels names unpriced models for the cost line; a step that named none is "(none)".
func quoteModels(ms []string) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		if m == "" {
			m = "(none)"
		}
		out[i] = m
	}
	return out
}

// pricesFlag defines --prices FILE on fs, into p: the price table to use instead of the
// built-in one, for what the verb prices (forWhat). loadPrices reads it.
func pricesFlag(fs *flag.FlagSet, p *string, forWhat string) {
	fs.StringVar(p, "prices", "", "price table `FILE` (JSON: {\"date\": \"YYYY-MM-DD\", \"models\": {NAME: {\"input\": USD/Mtok, ...}}}) instead of the built-in one, "+forWhat)
}

// loadPrices is the built-in price table, or the one in path when given.
func loadPrices(path string) (*prices.Table, error) {
	if path == "" {
		return prices.Default(), nil
	}
	return prices.Load(path)
}

func pairs(m map[string]string) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, k+"="+m[k])
	}
	return strings.Join(parts, " ")
}

// duration formats milliseconds: "812 ms" below ten seconds, else seconds.
func duration(v float64) string {
	if v < 10000 {
		return fmt.Sprintf("%.0f ms", v)
	}
	return fmt.Sprintf("%.1f s", v/1000)
}

// size formats a byte count: "812 B", "4.0 KiB", "100.0 MiB".
func size(n int64) string {
	switch {
	case n < 1<<10:
		return fmt.Sprintf("%d B", n)
	case n < 1<<20:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	case n < 1<<30:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// roundMS rounds milliseconds to the microsecond, which is what the tape measures: a
// difference of two times should not print as 12.299999999999997.
func roundMS(ms float64) float64 { return math.Round(ms*1000) / 1000 }

// inputValue is a tool call's input as a JSON value for --json: the input itself when it is
// valid JSON, else the bytes as a JSON string.
func inputValue(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 {
		return json.RawMessage("null")
	}
	if json.Valid(raw) {
		return raw
	}
	b, _ := json.Marshal(string(raw))
	return b
}

// inspectDigestsOf verifies the tape at path (a second, streaming pass over the file).
func inspectDigestsOf(path string, t *tape.Tape) (*inspectDigests, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("verify %s: %w", path, err)
	}
	defer f.Close()
	v, err := seal.Verify(bufio.NewReaderSize(f, 1<<20), nil)
	if err != nil {
		return nil, fmt.Errorf("verify %s: %w", path, err)
	}
	d := &inspectDigests{State: string(v.State), Steps: v.Steps, Root: v.Root, SignatureOK: v.SignatureOK, Pointer: v.Pointer, Problem: v.Problem}
	if t.Digest != nil {
		d.PublicKey = t.Digest.PublicKey
	}
	return d, nil
}

// limitsLine lists the breaker limits that are set.
func limitsLine(l *tape.Limits) string {
	var parts []string
	if l.MaxCostUSD > 0 {
		parts = append(parts, fmt.Sprintf("max cost $%g", l.MaxCostUSD))
	}
	if l.MaxSteps > 0 {
		parts = append(parts, fmt.Sprintf("max steps %d", l.MaxSteps))
	}
	if l.MaxThreadSteps > 0 {
		parts = append(parts, fmt.Sprintf("max steps per thread %d", l.MaxThreadSteps))
	}
	if l.MaxTokens > 0 {
		parts = append(parts, fmt.Sprintf("max tokens %d", l.MaxTokens))
	}
	if l.MaxRepeat > 0 {
		parts = append(parts, fmt.Sprintf("max repeat %d", l.MaxRepeat))
	}
	return strings.Join(parts, ", ")
}
