package viewer_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/sandbox/telemetry"
	"github.com/tapebox/tapebox/tape"
)

type laneLabel struct {
	Thread string `json:"thread"`
	Side   string `json:"side"`
	Text   string `json:"text"`
}

type basicReport struct {
	LaneLabels  []laneLabel `json:"laneLabels"`
	CanvasLanes int         `json:"canvasLanes"`
	CanvasSteps int         `json:"canvasSteps"`
	ListCount   string      `json:"listCount"`
	RowsInDOM   int         `json:"rowsInDOM"`
	Header      string      `json:"header"`
	Telemetry   string      `json:"telemetry"`
	DetailTitle string      `json:"detailTitle"`
	Results     []struct {
		Name   string `json:"name"`
		Result string `json:"result"`
		Input  string `json:"input"`
	} `json:"results"`
	DetailText     string   `json:"detailText"`
	Hash           string   `json:"hash"`
	ChunkPlots     int      `json:"chunkPlots"`
	AfterJ         string   `json:"afterJ"`
	AfterK         string   `json:"afterK"`
	Linked         string   `json:"linked"`
	BarClicked     string   `json:"barClicked"`
	SearchStatus   string   `json:"searchStatus"`
	SearchRows     []string `json:"searchRows"`
	SearchCount    string   `json:"searchCount"`
	DarkBg         string   `json:"darkBg"`
	NarrowOverflow int      `json:"narrowOverflow"`
	Shots          []string `json:"shots"`
}

// The page made from a real Claude Code tape shows one lane per thread and one row per step,
// the subagent's lane linked to its Agent call; a clicked step shows its tool results as the
// tape has them; j and k step, a fragment opens its step, search finds a word of a result.
func TestBrowserRealTape(t *testing.T) {
	browserEnv(t)
	rec := readFile(t, realRecording)
	tp, err := tape.Unmarshal(rec)
	require.NoError(t, err)
	main := tp.Main()
	require.NotNil(t, main)
	sub := tp.Children(main)
	require.Len(t, sub, 1, "the tape has one subagent")
	// the step whose results the test reads: main's first, with two parallel calls
	step := main.Steps[0]
	require.Len(t, step.ToolResults, 2)

	var samples []telemetry.Sample
	for i := range 12 {
		samples = append(samples, telemetry.Sample{TMS: float64(i) * 250, CPUPercent: float64(i * 10), MemoryBytes: int64(i+1) << 20, MemoryLimitBytes: 2 << 30, Source: "cgroup"})
	}
	page := writePage(t, t.TempDir(), "claude-code", rec, nil, samples...)
	var r basicReport
	drive(t, "basic", map[string]any{
		"page": page, "thread": main.ID, "index": 0, "shots": t.ArtifactDir(),
		"linkTo": sub[0].ID + "/1", "search": "bg-done", "barThread": sub[0].ID, "barIndex": 2,
	}, &r)

	require.Len(t, r.LaneLabels, len(tp.Threads), "one lane per thread")
	for i, th := range tp.Threads {
		assert.Equal(t, th.ID, r.LaneLabels[i].Thread)
		assert.Contains(t, r.LaneLabels[i].Text, fmt.Sprintf("(%d)", len(th.Steps)), "the lane counts its steps")
	}
	assert.Contains(t, r.LaneLabels[1].Text, "← "+main.ID+" "+sub[0].Parent.ToolCallID, "the subagent's lane names the call that spawned it")
	assert.Equal(t, len(tp.Threads), r.CanvasLanes)
	assert.Equal(t, tp.Totals().Steps, r.CanvasSteps)
	assert.Equal(t, fmt.Sprintf("%d steps", tp.Totals().Steps), r.ListCount)
	assert.Equal(t, tp.Totals().Steps, r.RowsInDOM, "a short tape fits on screen: every row is built")
	assert.Contains(t, r.Header, tp.Meta.TapeID)
	assert.Contains(t, r.Header, "claude-code "+tp.Meta.HarnessVersion)
	assert.Contains(t, r.Header, "prices of ", "the cost names the price table's date")
	assert.Contains(t, r.Telemetry, "telemetry claude-code.telemetry.csv (12 samples, cgroup)")
	assert.Contains(t, r.Telemetry, "peak 12.0 MiB")

	assert.Equal(t, "thread main, step 0", r.DetailTitle)
	require.Len(t, r.Results, len(step.ToolCalls))
	for i, c := range step.ToolCalls {
		res, ok := step.ToolResult(c.ID)
		require.True(t, ok)
		assert.Equal(t, c.Name, r.Results[i].Name)
		assert.Equal(t, res.Text(), r.Results[i].Result, "the result as the tape has it")
	}
	assert.Contains(t, r.Results[1].Input, "\"command\": \"mkdir -p logs && echo ready\"", "inputs are formatted JSON")
	assert.Equal(t, 1, r.ChunkPlots, "a streamed step plots its chunks")
	assert.Contains(t, r.DetailText, "stop reason")
	assert.Contains(t, r.DetailText, "prices of ")

	assert.Equal(t, "#step=main/0", r.Hash)
	assert.Equal(t, "#step=main/1", r.AfterJ, "j: the next step in request order")
	assert.Equal(t, "#step=main/0", r.AfterK, "k: back")
	assert.Equal(t, "thread "+sub[0].ID+", step 1", r.Linked, "the fragment opens its step")
	assert.Equal(t, "thread "+sub[0].ID+", step 2", r.BarClicked, "a click on a bar of the timeline opens its step")

	// bg-done is printed by two Bash calls of main (the wait and the Read of the output file)
	var want []string
	for _, th := range tp.Threads {
		for i, s := range th.Steps {
			for _, res := range s.ToolResults {
				if strings.Contains(strings.ToLower(res.Text()), "bg-done") {
					want = append(want, fmt.Sprintf("%s/%d", th.ID, i))
					break
				}
			}
			for _, c := range s.ToolCalls {
				if strings.Contains(strings.ToLower(string(c.Input)), "bg-done") && (len(want) == 0 || want[len(want)-1] != fmt.Sprintf("%s/%d", th.ID, i)) {
					want = append(want, fmt.Sprintf("%s/%d", th.ID, i))
				}
			}
		}
	}
	require.NotEmpty(t, want)
	assert.ElementsMatch(t, want, r.SearchRows, "search keeps the steps whose inputs or results hold the word")
	assert.Equal(t, fmt.Sprintf("%d of %d steps match", len(want), tp.Totals().Steps), r.SearchCount)

	assert.Equal(t, "rgb(13, 17, 23)", r.DarkBg, "dark mode follows the system")
	assert.LessOrEqual(t, r.NarrowOverflow, 0, "a 480 px window does not scroll sideways")
	assert.Len(t, r.Shots, 3)
	t.Logf("screenshots: %v", r.Shots)
}

type diffReport struct {
	Verdict     string   `json:"verdict"`
	ComparePane string   `json:"comparePane"`
	DiffRows    []string `json:"diffRows"`
	LaneLabels  []string `json:"laneLabels"`
	Differing   []struct {
		Call     string   `json:"call"`
		Deleted  []string `json:"deleted"`
		Inserted []string `json:"inserted"`
		Results  []string `json:"results"`
	} `json:"differing"`
	DetailStep string   `json:"detailStep"`
	RepTitle   string   `json:"repTitle"`
	RepResults []string `json:"repResults"`
	RepHash    string   `json:"repHash"`
	EndState   []string `json:"endState"`
	Shots      []string `json:"shots"`
}

// A recording and its real replay with one planted difference in a tool result: the page
// flags that step and only it, and shows the difference as an inline diff; the same pair
// without the plant shows nothing.
func TestBrowserReplayDifference(t *testing.T) {
	browserEnv(t)
	rec := readFile(t, realRecording)
	rep := readFile(t, realReplay)
	const thread, stepIdx = "main", 5
	var callID, before string
	planted := edit(t, rep, func(tp *tape.Tape) {
		s := tp.Thread(thread).Steps[stepIdx]
		require.NotEmpty(t, s.ToolResults)
		r := &s.ToolResults[0]
		callID = r.ToolCallID
		before = r.Content[0].Text
		require.Equal(t, "bg-done", before, "the step the test plants in")
		r.Content[0].Text = "bg-failed"
		// and one file of the end state
		tp.Meta.Workspace.End[1].Size++
	})
	dir := t.TempDir()

	t.Run("planted", func(t *testing.T) {
		var r diffReport
		drive(t, "diff", map[string]any{"page": writePage(t, dir, "planted", rec, planted), "shots": t.ArtifactDir(), "repThread": thread, "repIndex": stepIdx}, &r)
		assert.Contains(t, r.Verdict, "differs")
		assert.Equal(t, []string{fmt.Sprintf("%s/%d", thread, stepIdx)}, r.DiffRows, "exactly the planted step is flagged")
		assert.Equal(t, []string{"rec:main", "rec:t1", "rep:main", "rep:t1"}, r.LaneLabels, "the replay's lanes beside the recording's")
		require.Len(t, r.Differing, 1, "one tool call differs")
		d := r.Differing[0]
		assert.Equal(t, callID, d.Call)
		assert.Equal(t, []string{"done"}, d.Deleted, "the inline diff removes the recorded word")
		assert.Equal(t, []string{"failed"}, d.Inserted, "and inserts the replayed one")
		assert.Equal(t, []string{"bg-done", "bg-failed"}, d.Results, "recorded and replayed results side by side")
		assert.Equal(t, fmt.Sprintf("%s/%d", thread, stepIdx), r.DetailStep)
		require.Len(t, r.EndState, 1, "the end-state difference is listed")
		assert.Contains(t, r.EndState[0], "logs/bg.txt: size differs")
		assert.Contains(t, r.ComparePane, "DIFFERS")
		assert.Equal(t, fmt.Sprintf("replay: thread %s, step %d  ≠ differs", thread, stepIdx), r.RepTitle, "a replay bar opens the replay's step")
		assert.Equal(t, []string{"bg-done", "bg-failed"}, r.RepResults, "recorded first, replayed beside it")
		assert.Equal(t, fmt.Sprintf("#step=replay/%s/%d", thread, stepIdx), r.RepHash)
	})
	t.Run("unplanted", func(t *testing.T) {
		var r diffReport
		drive(t, "diff", map[string]any{"page": writePage(t, dir, "same", rec, rep), "shots": t.ArtifactDir()}, &r)
		assert.Equal(t, "identical", r.Verdict)
		assert.Empty(t, r.DiffRows)
		assert.Empty(t, r.Differing)
		assert.Empty(t, r.EndState)
		assert.Contains(t, r.ComparePane, "IDENTICAL")
		assert.NotContains(t, r.ComparePane, "not run")
	})
	t.Run("not run", func(t *testing.T) {
		copied := edit(t, rep, func(tp *tape.Tape) {
			s := tp.Thread(thread).Steps[stepIdx]
			s.ToolResults[0].CopiedFromTape = true
		})
		var r diffReport
		drive(t, "diff", map[string]any{"page": writePage(t, dir, "copied", rec, copied), "shots": t.ArtifactDir()}, &r)
		assert.Regexp(t, `^identical, 1 of \d+ tool results not run$`, r.Verdict)
		assert.Contains(t, r.ComparePane, "Not run (their results were copied from the recording")
	})
}

type xssReport struct {
	Pwned            any      `json:"pwned"`
	Images           int      `json:"images"`
	Scripts          int      `json:"scripts"`
	Results          []string `json:"results"`
	DetailHTMLHasTag bool     `json:"detailHTMLHasTag"`
	Dialogs          []string `json:"dialogs"`
	Shots            []string `json:"shots"`
}

// Markup in a tape (tool results, inputs, response text, a message) is shown as text: no
// planted script or onerror handler runs, no element is made from it.
func TestBrowserNoMarkup(t *testing.T) {
	browserEnv(t)
	const (
		script = `<script>window.__pwned = "script"; alert("script")</script>`
		img    = `<img src=x onerror="window.__pwned='img'; alert('img')">`
		svg    = `<svg onload="window.__pwned='svg'"></svg>`
	)
	payload := script + img + svg
	rec := edit(t, readFile(t, realRecording), func(tp *tape.Tape) {
		s := tp.Main().Steps[0]
		for i := range s.ToolResults {
			s.ToolResults[i].Content = []tape.Block{{Type: tape.BlockText, Text: "before " + payload + " after"}}
		}
		s.ToolCalls[1].Input = []byte(fmt.Sprintf(`{"command":%q}`, payload))
		s.Response.Content = append(s.Response.Content, tape.Block{Type: tape.BlockText, Text: payload})
		s.Request.Messages[0].Content = append(s.Request.Messages[0].Content, tape.Block{Type: tape.BlockText, Text: payload})
		s.Request.System = payload
	})
	var r xssReport
	drive(t, "xss", map[string]any{"page": writePage(t, t.TempDir(), "xss", rec, nil), "thread": "main", "index": 0, "shots": t.ArtifactDir()}, &r)
	assert.Nil(t, r.Pwned, "no planted code ran")
	assert.Empty(t, r.Dialogs, "no planted alert opened")
	assert.Zero(t, r.Images, "no <img> was made from the tape")
	assert.Equal(t, 1, r.Scripts, "the page's own script only")
	assert.False(t, r.DetailHTMLHasTag, "the detail holds the payload as text, escaped")
	require.Len(t, r.Results, 2)
	for _, res := range r.Results {
		assert.Equal(t, "before "+payload+" after", res, "the payload shown verbatim")
	}
}

// A tape with no threads, or a thread with no steps (a recording cut before its first call),
// shows an empty page without an error; keys and search do nothing.
func TestBrowserEmptyTape(t *testing.T) {
	browserEnv(t)
	dir := t.TempDir()
	for _, tc := range []struct {
		name    string
		threads []*tape.Thread
	}{
		{"no-threads", []*tape.Thread{}},
		{"no-steps", []*tape.Thread{{ID: "main", Steps: []*tape.Step{}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := edit(t, readFile(t, realRecording), func(tp *tape.Tape) {
				tp.Threads = tc.threads
				tp.Meta.Workspace = nil
			})
			var r struct {
				ListCount string `json:"listCount"`
				Lanes     int    `json:"lanes"`
			}
			drive(t, "load", map[string]any{"page": writePage(t, dir, tc.name, rec, nil)}, &r)
			assert.Equal(t, len(tc.threads), r.Lanes)
			assert.Contains(t, r.ListCount, "0")
		})
	}
}

// A 2,000-step tape builds DOM for the rows on screen only, and the list scrolls to its end.
func TestBrowserVirtualList(t *testing.T) {
	browserEnv(t)
	tp := bigTape(2000, 4<<20, 10)
	rec, err := tape.Marshal(tp)
	require.NoError(t, err)
	var r struct {
		ListCount string `json:"listCount"`
		Lanes     int    `json:"lanes"`
		Rows      int    `json:"rows"`
		Nodes     int    `json:"nodes"`
		LastRow   string `json:"lastRow"`
		RowsAtEnd int    `json:"rowsAtEnd"`
	}
	drive(t, "load", map[string]any{"page": writePage(t, t.TempDir(), "many", rec, nil)}, &r)
	assert.Equal(t, len(tp.Threads), r.Lanes)
	assert.Regexp(t, `^\d+ of 2000 steps match$`, r.ListCount, "a search filters the 2,000 steps")
	assert.Less(t, r.RowsAtEnd, 60, "only the rows on screen are in the DOM")
	assert.Less(t, r.Nodes, 1500)
	assert.Equal(t, "#2000", r.LastRow, "the last row is reached by scrolling")
}

type pairReport struct {
	Verdict       string   `json:"verdict"`
	ComparePane   string   `json:"comparePane"`
	Header        string   `json:"header"`
	SearchStatus  string   `json:"searchStatus"`
	ListCount     string   `json:"listCount"`
	ReplayMatches []string `json:"replayMatches"`
	RepTitle      string   `json:"repTitle"`
}

// A recording beside a replay from which nothing was learned (no identifier changed: the
// report's identifiers are []) loads without an error; a fork beside its recording names
// the fork point (meta.forked_from), and a search finds a word only the fork's results hold,
// lists that step of the replay and opens it.
func TestBrowserNothingLearned(t *testing.T) {
	browserEnv(t)
	rec := readFile(t, realRecording)
	dir := t.TempDir()
	t.Run("replay", func(t *testing.T) {
		same := edit(t, rec, func(tp *tape.Tape) { tp.Meta.TapeID = "same-as-the-recording" })
		require.Empty(t, compareBytes(t, rec, same).Identifiers, "the pair learns nothing")
		var r pairReport
		drive(t, "pair", map[string]any{"page": writePage(t, dir, "same", rec, same)}, &r)
		assert.Equal(t, "identical", r.Verdict)
		assert.Contains(t, r.ComparePane, "IDENTICAL")
		assert.NotContains(t, r.Header, "forked from")
	})
	t.Run("fork", func(t *testing.T) {
		recTape, err := tape.Unmarshal(rec)
		require.NoError(t, err)
		const thread, stepIdx = "main", 5
		fork := edit(t, rec, func(tp *tape.Tape) {
			tp.Meta.TapeID = "the-fork"
			tp.Meta.ForkedFrom = &tape.ForkedFrom{TapeID: recTape.Meta.TapeID, Thread: thread, Step: 4,
				Served: map[string]int{"main": 4}, Overrides: map[string]string{"model": "cheap"}}
			tp.Thread(thread).Steps[stepIdx].ToolResults[0].Content[0].Text = "zebra-only-in-the-fork"
		})
		var r pairReport
		drive(t, "pair", map[string]any{"page": writePage(t, dir, "fork", rec, fork), "search": "zebra-only", "shots": t.ArtifactDir()}, &r)
		assert.Contains(t, r.Header, "a fork: "+recTape.Meta.TapeID+" at thread main step 4; 4 steps served from it; overrides: model=\"cheap\"")
		assert.Equal(t, "0 matches, 1 in the replay", r.SearchStatus)
		assert.Equal(t, []string{fmt.Sprintf("%s·%d", thread, stepIdx)}, r.ReplayMatches, "the replay's matching step is listed")
		assert.Equal(t, fmt.Sprintf("replay: thread %s, step %d  ≠ differs", thread, stepIdx), r.RepTitle, "and opens")
	})
}

// A tape whose model has no price says so in the header (cost unknown, no price for the
// model) and in each step's detail, naming the model and the table's date.
func TestBrowserUnpriced(t *testing.T) {
	browserEnv(t)
	rec := readFile(t, "../testdata/replay/codex.json")
	tp, err := tape.Unmarshal(rec)
	require.NoError(t, err)
	var r basicReport
	drive(t, "basic", map[string]any{"page": writePage(t, t.TempDir(), "codex", rec, nil), "thread": tp.Main().ID, "index": 0}, &r)
	assert.Contains(t, r.Header, "cost unknown (prices of ")
	assert.Contains(t, r.Header, "; no price for fake-model)")
	assert.Regexp(t, `costunknown: the price table of \d{4}-\d\d-\d\d has no price for fake-model`, r.DetailText)
}

// The pages made from real Gemini CLI 0.61.0 and OpenCode 1.18.33 tapes (test/e2e's cases,
// recorded through tapebox record) show them as a Claude Code tape is shown: one lane per
// thread (OpenCode's title request, its agent, and its task's subagent linked to the task
// call), the harness and its version in the header, and a clicked step's parallel calls
// with their results as the tape has them.
func TestBrowserMoreHarnesses(t *testing.T) {
	browserEnv(t)
	for _, tc := range []struct{ name, thread, search, model string }{
		{"gemini-cli", "main", "beta", "gemini-2.5-pro"},
		{"opencode", "t1", "beta", "claude-sonnet-4-5"}, // the agent's, not the title request's claude-haiku-4-5
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := readFile(t, "testdata/"+tc.name+".json")
			tp, err := tape.Unmarshal(rec)
			require.NoError(t, err)
			th := tp.Thread(tc.thread)
			require.NotNil(t, th)
			step := th.Steps[0]
			require.Len(t, step.ToolCalls, 2, "the first step makes two parallel calls")
			page := writePage(t, t.TempDir(), tc.name, rec, nil)
			var r basicReport
			drive(t, "basic", map[string]any{
				"page": page, "thread": th.ID, "index": 0, "shots": t.ArtifactDir(),
				"linkTo": th.ID + "/1", "search": tc.search, "barThread": th.ID, "barIndex": 2,
			}, &r)
			require.Len(t, r.LaneLabels, len(tp.Threads), "one lane per thread")
			for i, lt := range tp.Threads {
				assert.Equal(t, lt.ID, r.LaneLabels[i].Thread)
				assert.Contains(t, r.LaneLabels[i].Text, fmt.Sprintf("(%d)", len(lt.Steps)), "the lane counts its steps")
				if lt.Parent != nil {
					assert.Contains(t, r.LaneLabels[i].Text, "← "+lt.Parent.ThreadID+" "+lt.Parent.ToolCallID, "the subagent's lane names the call that spawned it")
				}
			}
			assert.Equal(t, tp.Totals().Steps, r.CanvasSteps)
			assert.Contains(t, r.Header, tc.name+" "+tp.Meta.HarnessVersion)
			tot := tp.Totals()
			for _, part := range []string{"model " + tc.model + " ", fmt.Sprintf("threads %d ", len(tp.Threads)), fmt.Sprintf("tool calls %d ", tot.ToolCalls),
				fmt.Sprintf("tokens %s in, %s out", thousands(tot.Usage.InputTokens), thousands(tot.Usage.OutputTokens))} {
				assert.Contains(t, r.Header, part)
			}
			assert.Equal(t, "thread "+th.ID+", step 0", r.DetailTitle)
			require.Len(t, r.Results, len(step.ToolCalls))
			for i, c := range step.ToolCalls {
				res, ok := step.ToolResult(c.ID)
				require.True(t, ok)
				assert.Equal(t, c.Name, r.Results[i].Name)
				assert.Equal(t, res.Text(), r.Results[i].Result, "the result as the tape has it")
			}
			assert.Contains(t, r.Results[1].Input, "\"command\": \"mkdir -p logs && echo ready\"", "inputs are formatted JSON")
			assert.Equal(t, "thread "+th.ID+", step 1", r.Linked)
			assert.NotEmpty(t, r.SearchRows, "search finds the steps that name beta")
		})
	}
}

// thousands writes n as the page's fmtInt does: digits grouped by threes with commas.
func thousands(n int64) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
