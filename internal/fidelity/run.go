package fidelity

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tapebox/tapebox/compare"
	"github.com/tapebox/tapebox/gateway"
	"github.com/tapebox/tapebox/internal/testutil/realharness"
	"github.com/tapebox/tapebox/tape"
	"github.com/tapebox/tapebox/testkit"
	"github.com/tapebox/tapebox/testkit/fakeprovider"
)

// Target is one harness at one version, and how to run it.
type Target struct {
	// Harness is the harness's name, as in meta.harness.
	Harness string
	// Version is the version the run must record in meta.harness_version; a run that
	// records another is an error (the wrong binary ran).
	Version string
	// Run runs the harness once (realharness.RunClaude, RunCodex, RunPi, or one of them with
	// another binary).
	Run func(context.Context, realharness.Options) (realharness.Result, error)
	// Scratch returns the directories the harness keeps outside cwd for a run in cwd (Claude
	// Code's background task output): removed before the recording and before the replay,
	// so that neither sees what the other left.
	Scratch func(cwd string) []string
	// Sandbox is the replay's sandbox spec; empty means "local:" + the sequence's cwd (the
	// same absolute path, as the tool results hold absolute paths).
	Sandbox string
	// CallTimeout bounds each replayed call; 0 means a minute.
	CallTimeout time.Duration
	// Pace replays at the recording's pace, the harness's time between turns and after the
	// last one included (testkit.HarnessPace), so that a command left in the background
	// meets the later calls and the end state when it met them in the recording; without
	// it the replay runs the calls back to back.
	Pace bool
	// Settle is how long the recording goes on after the harness and what it left running
	// (realharness.Options.Linger) are done, before the tape ends. With Pace the replay
	// reads its end state as long after its last response as the recording did, so that a
	// background job of the replay that ends up to Settle later than the recording's did is
	// in the end state too.
	Settle time.Duration
	// Declare makes the recording name the harness and Version itself (as tapebox record
	// --harness does), for a harness the gateway cannot tell from its traffic (Pi).
	Declare bool
	// Keep, when set, is a directory that receives both tapes of every run
	// (<seed>.rec.json, <seed>.rep.json), to look at later.
	Keep string
}

// Divergence is one difference compare found between a recording and its replay.
type Divergence struct {
	// Field is compare's field ("tool_result", "tool_result.is_error", "step" ...), or
	// "end_state" for a workspace entry that differs.
	Field string `json:"field"`
	// Call is the index of the sequence's call the difference is about; -1 for none.
	Call int `json:"call"`
	// Tool and Input are that call's tool, and its input class.
	Tool  string `json:"tool,omitempty"`
	Input string `json:"input_class,omitempty"`
	// Recorded and Replayed are what compare reports on each side (a workspace change's
	// description for end_state).
	Recorded string `json:"recorded"`
	Replayed string `json:"replayed"`
	// Class is the known divergence class it belongs to; empty when none matches.
	Class string `json:"class,omitempty"`
	// Where, for a difference of no call of the sequence (a step of another thread), is
	// the recording's thread and step it is about ("thread t2 step 0").
	Where string `json:"where,omitempty"`
}

func (d Divergence) String() string {
	where := d.Field
	if d.Where != "" {
		where = d.Where + ": " + d.Field
	}
	if d.Call >= 0 {
		where = fmt.Sprintf("call %d (%s, %s): %s", d.Call, d.Tool, d.Input, d.Field)
	}
	cls := ""
	if d.Class != "" {
		cls = " [" + d.Class + "]"
	}
	return fmt.Sprintf("%s%s: recorded %q, replayed %q", where, cls, clip(d.Recorded, 300), clip(d.Replayed, 300))
}

// CallOutcome is how one call of a sequence replayed.
type CallOutcome struct {
	Tool  string `json:"tool"`
	Class string `json:"class"`
	// Identical says compare found no difference for the call.
	Identical bool `json:"identical"`
}

// Outcome is one sequence recorded and replayed.
type Outcome struct {
	Seq *Sequence
	// Version is the harness version the recording names (meta.harness_version).
	Version string
	// Calls are the calls the harness made, in order (a harness that stopped early made
	// fewer than the sequence has).
	Calls []CallOutcome
	// EndIdentical says the replay left the workspace the recording left.
	EndIdentical bool
	// Divergences lists every difference, classified.
	Divergences []Divergence
	// Warnings are the replay's log lines that warn (the unknown-version warning).
	Warnings []string
	// Err is why the sequence could not be recorded or replayed at all (not a divergence).
	Err error
	// Record and Replay are how long each half took.
	Record, Replay time.Duration
}

// Diverged says the replay differs from the recording in a call or in the end state.
func (o *Outcome) Diverged() bool {
	return o.Err == nil && (len(o.Divergences) > 0 || !o.EndIdentical)
}

// Unknown lists the divergences no known class explains.
func (o *Outcome) Unknown() []Divergence {
	var out []Divergence
	for _, d := range o.Divergences {
		if d.Class == "" {
			out = append(out, d)
		}
	}
	return out
}

// marker is the text of the prompt that selects the scripted thread.
const marker = "[fidelity]"

// Run records seq through the real harness of t and replays the recording in executor mode
// in a fresh sandbox, then compares them. Divergences are classified with classes. Run
// fails (Outcome.Err) only when a half could not run at all.
func Run(ctx context.Context, t Target, seq *Sequence, classes []Class) *Outcome {
	o := &Outcome{Seq: seq, EndIdentical: false}
	tmp, err := os.MkdirTemp("", "tapebox-fidelity-")
	if err != nil {
		o.Err = fmt.Errorf("fidelity: %w", err)
		return o
	}
	defer os.RemoveAll(tmp)
	recPath := filepath.Join(tmp, "rec.json")
	start := time.Now()
	rec, err := record(ctx, t, seq, recPath, tmp)
	o.Record = time.Since(start)
	if err != nil {
		o.Err = fmt.Errorf("record %s: %w", seq.Name(), err)
		return o
	}
	o.Version = rec.Meta.HarnessVersion
	if t.Version != "" && o.Version != t.Version {
		o.Err = fmt.Errorf("record %s: the harness says it is version %q, the target is %q", seq.Name(), o.Version, t.Version)
		return o
	}

	start = time.Now()
	rep, warnings, err := replay(ctx, t, seq, recPath, tmp)
	o.Replay, o.Warnings = time.Since(start), warnings
	if err != nil {
		o.Err = fmt.Errorf("replay %s: %w", seq.Name(), err)
		return o
	}
	if t.Keep != "" {
		keep(t.Keep, seq, recPath, filepath.Join(tmp, "rep.json"))
	}
	judge(o, seq, rec, rep, t.Version, classes)
	return o
}

// callIndex returns the index of the sequence call a fake provider's call id stands for:
// the model's i-th turn of thread main asks for call i (toolu_fake_main_I_0,
// call_fake_main_I_0).
func callIndex(id string) int {
	_, rest, ok := strings.Cut(id, "_fake_main_")
	if !ok {
		return -1
	}
	n, _, _ := strings.Cut(rest, "_")
	i, err := strconv.Atoi(n)
	if err != nil {
		return -1
	}
	return i
}

// callIndexes returns the index of the sequence call a recorded call id stands for: the
// fake provider's id (callIndex), or, for a harness that names the calls itself (Gemini CLI:
// the Gemini API sends no ids), the call's place among the main thread's calls when the
// sequence's call there is of the same tool (the scripted model asks for one call a turn).
func callIndexes(rec *tape.Tape, seq *Sequence) func(id string) int {
	byPlace := map[string]int{}
	if main := rec.Main(); main != nil {
		n := 0
		for _, st := range main.Steps {
			for _, c := range st.ToolCalls {
				if n < len(seq.Calls) && seq.Calls[n].Tool == c.Name {
					byPlace[c.ID] = n
				}
				n++
			}
		}
	}
	return func(id string) int {
		if i := callIndex(id); i >= 0 {
			return i
		}
		if i, ok := byPlace[id]; ok {
			return i
		}
		return -1
	}
}

// record lays out the sequence's files in its cwd and runs the harness there against the
// scripted provider, through a recording gateway; it returns the recording.
func record(ctx context.Context, t Target, seq *Sequence, recPath, tmp string) (*tape.Tape, error) {
	if err := clearScratch(t, seq.Cwd); err != nil {
		return nil, err
	}
	if err := seq.Layout(seq.Cwd); err != nil {
		return nil, err
	}
	turns := make([]fakeprovider.Turn, 0, len(seq.Calls)+1)
	var subErr error
	var mu sync.Mutex
	for _, c := range seq.Calls {
		if !HasRefs(c.Input) {
			turns = append(turns, fakeprovider.Turn{Calls: []tape.ToolCall{c.ToolCall()}})
			continue
		}
		// The model passes back an id the harness made up: fill it in from the results
		// the harness has sent so far.
		turns = append(turns, fakeprovider.Turn{Dynamic: func(r *fakeprovider.Request) fakeprovider.Turn {
			call := c.ToolCall()
			input, err := fill(seq.Harness, r, c.Input)
			if err != nil {
				mu.Lock()
				subErr = cmp.Or(subErr, fmt.Errorf("call %s: %w", c.Tool, err))
				mu.Unlock()
				return fakeprovider.Turn{Text: "fidelity: " + err.Error()}
			}
			call.Input = input
			return fakeprovider.Turn{Calls: []tape.ToolCall{call}}
		}})
	}
	// A background command that ends after the last call wakes the harness up for
	// another turn or two (Claude Code 2.1 tells the model it finished).
	for range 4 {
		turns = append(turns, fakeprovider.Turn{Text: "Done."})
	}
	srv := fakeprovider.New(script(turns))
	if err := srv.Start(); err != nil {
		return nil, err
	}
	defer srv.Close()
	opts := []testkit.GatewayOption{testkit.Workspace(seq.Cwd)}
	if t.Declare {
		opts = append(opts, testkit.Harness(t.Harness), func(c *gateway.Config) { c.HarnessVersion = t.Version })
	}
	g, err := testkit.StartGateway(srv.URL(), recPath, opts...)
	if err != nil {
		return nil, err
	}
	defer g.Close()
	res, err := t.Run(ctx, realharness.Options{
		BaseURL: g.URL,
		Dir:     seq.Cwd,
		Home:    filepath.Join(tmp, "home"),
		Prompt:  marker + " Run the tool calls you are given, then stop.",
	})
	if err != nil {
		return nil, err
	}
	if t.Settle > 0 {
		select {
		case <-time.After(t.Settle):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	rec, err := g.Finish()
	if err != nil {
		return nil, err
	}
	if t.Keep != "" {
		_ = os.MkdirAll(t.Keep, 0o755)
		_ = os.WriteFile(filepath.Join(t.Keep, fmt.Sprintf("%s-%d.stdout", seq.Harness, seq.Seed)), append(res.Stdout, res.Stderr...), 0o644)
	}
	// Claude Code 2.0.77 exits 1 when a background command ends after the last answer
	// ("only prompt commands are supported in streaming mode"): a run whose tape ended
	// complete did all it was asked.
	if res.ExitCode != 0 && (rec.Meta.Ended == nil || rec.Meta.Ended.Reason != tape.EndComplete) {
		return nil, fmt.Errorf("%s exited %d: %s", t.Harness, res.ExitCode, realharness.Excerpt(string(res.Stderr)+string(res.Stdout), 2000))
	}
	if rec.Meta.Harness != t.Harness {
		return nil, fmt.Errorf("the recording says the harness is %q, not %q", rec.Meta.Harness, t.Harness)
	}
	if err := srv.Err(); err != nil {
		return nil, fmt.Errorf("the scripted provider: %w", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if subErr != nil {
		return nil, fmt.Errorf("the scripted provider: %w", subErr)
	}
	return rec, nil
}

// script is the scripted model of a sequence: the main thread, which the marker of the
// prompt picks, answers with turns. Harnesses make side calls of their own (Claude Code 2.0
// asks a small model for a Bash command's prefix and warms up its subagents; Gemini CLI
// checks a long run for loops with its last 20 messages): the side thread answers each
// (sideAnswer), at whatever step its history puts it.
func script(turns []fakeprovider.Turn) fakeprovider.Script {
	side := fakeprovider.Thread{Name: "side", Repeat: true, Turns: []fakeprovider.Turn{{Dynamic: sideAnswer}}}
	return fakeprovider.Script{Threads: []fakeprovider.Thread{{Name: "main", Marker: marker, Turns: turns}, side}}
}

// fill substitutes the placeholders of input with the ids the harness's results in
// request r hold.
func fill(harness string, r *fakeprovider.Request, input json.RawMessage) (json.RawMessage, error) {
	p := tape.ProviderAnthropic
	switch r.Endpoint {
	case fakeprovider.EndpointResponses:
		p = tape.ProviderOpenAIResponses
	case fakeprovider.EndpointChat:
		p = tape.ProviderOpenAIChat
	}
	sent, err := realharness.SentResults(p, r.Body)
	if err != nil {
		return nil, err
	}
	results := map[int]tape.ToolResult{}
	for id, s := range sent {
		if i := callIndex(id); i >= 0 {
			results[i] = s.Result
		}
	}
	return substitute(input, harvest(harness, results))
}

// replay empties the sequence's cwd and replays the recording into it (or into t.Sandbox).
func replay(ctx context.Context, t Target, seq *Sequence, recPath, tmp string) (*tape.Tape, []string, error) {
	if err := clearScratch(t, seq.Cwd); err != nil {
		return nil, nil, err
	}
	if err := os.RemoveAll(seq.Cwd); err != nil {
		return nil, nil, fmt.Errorf("fidelity: empty %s: %w", seq.Cwd, err)
	}
	spec := t.Sandbox
	if spec == "" {
		if err := os.MkdirAll(seq.Cwd, 0o755); err != nil {
			return nil, nil, fmt.Errorf("fidelity: %w", err)
		}
		spec = "local:" + seq.Cwd
	}
	timeout := t.CallTimeout
	if timeout == 0 {
		timeout = time.Minute
	}
	var warnings []string
	logf := func(format string, args ...any) {
		line := fmt.Sprintf(format, args...)
		if strings.Contains(strings.ToLower(line), "warning") {
			warnings = append(warnings, line)
		}
	}
	opts := []testkit.Option{testkit.Speed(0), testkit.CallTimeout(timeout), testkit.Output(filepath.Join(tmp, "rep.json")), testkit.Logf(logf)}
	if t.Pace {
		opts = append(opts, testkit.Speed(1), testkit.HarnessPace())
	}
	r, err := testkit.Run(ctx, recPath, spec, opts...)
	if err != nil {
		return nil, warnings, err
	}
	defer r.Close()
	if r.Tape == nil {
		return nil, warnings, errors.New("no replay tape")
	}
	return r.Tape, warnings, nil
}

// clearScratch removes the harness's directories outside cwd.
func clearScratch(t Target, cwd string) error {
	if t.Scratch == nil {
		return nil
	}
	for _, d := range t.Scratch(cwd) {
		if err := os.RemoveAll(d); err != nil {
			return fmt.Errorf("fidelity: clear %s: %w", d, err)
		}
	}
	return nil
}

// judge compares the recording with the replay and fills in o's calls and divergences.
func judge(o *Outcome, seq *Sequence, rec, rep *tape.Tape, version string, classes []Class) {
	report := compare.Compare(rec, rep)
	bad := map[string]bool{}
	index := callIndexes(rec, seq)
	add := func(d Divergence) {
		d.Class = Classify(classes, version, d)
		o.Divergences = append(o.Divergences, d)
	}
	for _, d := range report.Differences {
		i := index(d.CallID)
		dv := Divergence{Field: d.Field, Call: i, Tool: d.Tool, Recorded: d.Recorded, Replayed: d.Replayed}
		if i >= 0 && i < len(seq.Calls) {
			dv.Tool, dv.Input = seq.Calls[i].Tool, seq.Calls[i].Class
			bad[d.CallID] = true
		} else {
			dv.Call = -1
			if d.Thread != "" {
				dv.Where = fmt.Sprintf("thread %s step %d", d.Thread, d.Step)
			}
		}
		add(dv)
	}
	if !report.ReachedEnd {
		add(Divergence{Field: "reached_end", Call: -1, Recorded: "complete", Replayed: report.Ended})
	}
	if main := rec.Main(); main != nil {
		for _, st := range main.Steps {
			for _, c := range st.ToolCalls {
				co := CallOutcome{Tool: c.Name, Class: "?", Identical: !bad[c.ID]}
				if i := index(c.ID); i >= 0 && i < len(seq.Calls) {
					co.Class = seq.Calls[i].Class
				}
				o.Calls = append(o.Calls, co)
			}
		}
	}
	follow(classes, o.Divergences)
	// A call's is_error flag differs along with its text: it takes the text's class.
	for i := range o.Divergences {
		d := &o.Divergences[i]
		for _, e := range o.Divergences {
			if d.Class == "" && d.Call >= 0 && e.Call == d.Call && e.Class != "" {
				d.Class = e.Class
			}
		}
	}
	o.EndIdentical = report.EndState.Compared && report.EndState.Identical
	if !report.EndState.Compared {
		add(Divergence{Field: "end_state", Call: -1, Recorded: "compared", Replayed: report.EndState.Note})
	}
	for _, c := range report.EndState.Changes {
		add(Divergence{Field: "end_state", Call: -1, Recorded: c.Recorded, Replayed: c.String()})
	}
}

// keep copies both tapes of a run into dir.
func keep(dir string, seq *Sequence, rec, rep string) {
	_ = os.MkdirAll(dir, 0o755)
	stem := strconv.FormatUint(seq.Seed, 10)
	if seq.Seed == 0 {
		stem = fmt.Sprintf("shrunk-%d", seq.Origin)
		if seq.Origin == 0 {
			stem = filepath.Base(seq.Cwd) // a case written by hand
		}
	}
	for src, suffix := range map[string]string{rec: ".rec.json", rep: ".rep.json"} {
		if b, err := os.ReadFile(src); err == nil {
			_ = os.WriteFile(filepath.Join(dir, seq.Harness+"-"+stem+suffix), b, 0o644)
		}
	}
}

func clip(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}
