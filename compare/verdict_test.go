package compare

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/internal/testutil/tapegen"
	"github.com/tapebox/tapebox/match"
	"github.com/tapebox/tapebox/schema"
	"github.com/tapebox/tapebox/tape"
	"github.com/tapebox/tapebox/workspace"
)

// TestCompareNeedsTheReplaysEnd: a replay tape that does not say how it ended (killed after
// its last step was written, before the writer finished it) did not reach the end, even with
// every step present and every result the same.
func TestCompareNeedsTheReplaysEnd(t *testing.T) {
	rec := tapegen.Pair("claude-code", "hello")
	rep := tapegen.ReplayOf(t, rec, "hello")
	require.True(t, Compare(rec, rep).Identical, "the planted replay is otherwise identical")
	rep.Meta.Ended = nil
	r := Compare(rec, rep)
	require.False(t, r.ReachedEnd)
	require.False(t, r.Identical)
	require.Equal(t, "running or cut short", r.Ended)
}

// TestCompareThreadsNoSpawnLeadsTo: a recording (tapes come from strangers) can put its tool
// calls in a thread that no spawning call leads to, after a main thread that does nothing.
// A replay plays only the main thread and its children, so those calls never run; compare
// used to skip such threads as side conversations and call the replay identical. A thread
// without tool calls (a title call) is still skipped.
func TestCompareThreadsNoSpawnLeadsTo(t *testing.T) {
	answer := func(at float64) *tape.Step {
		return &tape.Step{Response: tape.Response{Status: 200, StopReason: "end_turn"}, Timing: tape.Timing{RequestAt: at, FirstByteAt: at + 1, LastByteAt: at + 2}}
	}
	calling := func(s *tape.Step) *tape.Step {
		s.ToolCalls = []tape.ToolCall{{ID: "toolu_main", Name: "Bash", Input: []byte(`{"command":"true"}`), Kind: "function"}}
		return s
	}
	work := tapegen.Pair("claude-code", "all 40 tests pass").Threads[0]
	work.ID = "work"
	for _, tc := range []struct {
		name    string
		threads []*tape.Thread
	}{
		// (main makes a tool call: a first thread without one would be a side conversation,
		// and work the main thread; see tape.Main.)
		{"a second thread without a parent", []*tape.Thread{{ID: "main", Steps: []*tape.Step{calling(answer(0))}}, work}},
		// Every thread has a parent: there is no main thread at all.
		{"threads that are each other's parent", []*tape.Thread{
			{ID: "a", Parent: &tape.Parent{ThreadID: "work", ToolCallID: "toolu_00"}, Steps: []*tape.Step{answer(0)}},
			{ID: work.ID, Parent: &tape.Parent{ThreadID: "a", ToolCallID: "x"}, Steps: work.Steps}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := tapegen.Pair("claude-code", "x")
			rec.Threads = tc.threads
			// What a replay writes: every recorded thread, the main thread played.
			rep := tape.New(rec.Meta.Provider, time.Unix(0, 0))
			rep.Meta.Harness, rep.Meta.ReplayOf = rec.Meta.Harness, &rec.Meta.TapeID
			for _, th := range rec.Threads {
				rep.Threads = append(rep.Threads, &tape.Thread{ID: th.ID, Parent: th.Parent, Steps: []*tape.Step{}})
			}
			rep.Meta.Ended = &tape.Ended{Reason: tape.EndComplete}
			if main := rec.Main(); main != nil {
				rep.Threads[0].Steps = main.Steps
			}
			r := Compare(rec, rep)
			require.False(t, r.Identical)
			require.False(t, r.ReachedEnd)
			require.NotEmpty(t, r.Differences)
			require.Equal(t, "work", r.Differences[0].Thread)
			require.Contains(t, r.Differences[0].Replayed, "not reachable from the main thread")
		})
	}
	// A side conversation without tool calls is not played and not compared.
	rec := tapegen.Pair("claude-code", "ok")
	rec.Threads = append(rec.Threads, &tape.Thread{ID: "title", Steps: []*tape.Step{answer(1)}})
	rep := tapegen.ReplayOf(t, rec, "ok")
	rep.Threads[1].Steps = nil
	require.True(t, Compare(rec, rep).Identical)

	// Nor one whose model answered a request without tools with a call (a scripted model
	// answering OpenCode's title request with the agent's turn), written first or last;
	// the same thread whose request offered the tool is part of the run.
	for _, first := range []bool{true, false} {
		rec := tapegen.Pair("claude-code", "ok")
		for _, s := range rec.Threads[0].Steps {
			s.Request.Tools = []tape.Tool{{Name: "Bash"}}
		}
		title := &tape.Thread{ID: "title", Steps: []*tape.Step{calling(answer(1))}}
		if first {
			rec.Threads = append([]*tape.Thread{title}, rec.Threads...)
		} else {
			rec.Threads = append(rec.Threads, title)
		}
		require.NotSame(t, title, rec.Main())
		rep := tape.New(rec.Meta.Provider, time.Unix(0, 0))
		rep.Meta.Harness, rep.Meta.ReplayOf = rec.Meta.Harness, &rec.Meta.TapeID
		rep.Meta.Ended = &tape.Ended{Reason: tape.EndComplete}
		for _, th := range rec.Threads {
			played := &tape.Thread{ID: th.ID, Parent: th.Parent, Steps: []*tape.Step{}}
			if th == rec.Main() {
				played.Steps = th.Steps
			}
			rep.Threads = append(rep.Threads, played)
		}
		r := Compare(rec, rep)
		require.True(t, r.Identical, "title first: %v: %+v", first, r.Differences)

		title.Steps[0].Request.Tools = []tape.Tool{{Name: "Bash"}}
		r = Compare(rec, rep)
		require.False(t, r.Identical, "title first: %v", first)
		require.Equal(t, "title", r.Differences[0].Thread)
	}
}

// TestCompareEmptyEndState: a run that ends with an empty workspace (it removed every file)
// has an end manifest with no entries. Written to a tape and read back, it must stay one, or
// compare takes the recording for one without an end manifest and calls a replay that leaves
// files behind identical.
func TestCompareEmptyEndState(t *testing.T) {
	left := []tape.FileEntry{{Path: "secret.txt", Type: "file", Mode: "0644", Size: 3, SHA256: strings.Repeat("a", 64)}}
	roundTrip := func(tp *tape.Tape) *tape.Tape {
		b, err := tape.Marshal(tp)
		require.NoError(t, err)
		require.NoError(t, schema.Validate(b))
		out, err := tape.Unmarshal(b)
		require.NoError(t, err)
		sum, err := tape.StripBodies(bytes.NewReader(b))
		require.NoError(t, err)
		stripped, err := tape.Unmarshal(sum)
		require.NoError(t, err)
		require.Equal(t, out.Meta.Workspace, stripped.Meta.Workspace, "compare's reading (without bodies) is the same")
		return out
	}
	rec := tapegen.Pair("claude-code", "ok")
	rec.Meta.Workspace = &tape.Workspace{End: []tape.FileEntry{}}
	rec = roundTrip(rec)
	require.NotNil(t, rec.Meta.Workspace.End, "an empty end manifest is still an end manifest")
	rep := tapegen.ReplayOf(t, rec, "ok")
	rep.Meta.Workspace = &tape.Workspace{End: left}
	r := Compare(rec, roundTrip(rep))
	require.False(t, r.Identical)
	require.True(t, r.EndState.Compared)
	require.Equal(t, []workspace.Change{{Path: "secret.txt", Kind: workspace.Extra, Replayed: "file 0644, 3 bytes"}}, r.EndState.Changes)

	// The other way round: the replay ended empty.
	rec.Meta.Workspace.End = left
	rep.Meta.Workspace.End = []tape.FileEntry{}
	r = Compare(rec, roundTrip(rep))
	require.True(t, r.EndState.Compared, r.EndState.Note)
	require.Equal(t, workspace.Missing, r.EndState.Changes[0].Kind)

	// A tape without an end manifest still reads as one without.
	rep.Meta.Workspace.End = nil
	require.Nil(t, roundTrip(rep).Meta.Workspace.End)
}

// TestCompareCallInputNumbers: tool call inputs compare as JSON values, with numbers exact:
// two integers beyond float64's precision differ, the same number spelled two ways does not.
func TestCompareCallInputNumbers(t *testing.T) {
	rec := tapegen.Pair("claude-code", "ok", `{"seed":9007199254740993,"ratio":1.5}`)
	for _, tc := range []struct {
		input     string
		identical bool
	}{
		{`{"seed":9007199254740992,"ratio":1.5}`, false},
		{`{"seed":9007199254740993,"ratio":1.50000000000000000001}`, false},
		{`{"seed":9007199254740993,"ratio":1.5}`, true},
		{` { "ratio" : 15e-1, "seed" : 9007199254740993 } `, true},
		{`{"seed":9007199254740993,"ratio":1.5} {}`, false},
	} {
		r := Compare(rec, tapegen.ReplayOf(t, rec, "ok", tc.input))
		require.Equal(t, tc.identical, r.Identical, "%s: %+v", tc.input, r.Differences)
	}
}

// TestCompareIdentifiersOneToOne: compare learns each identifier once. A replay whose
// background shell changes under one recorded id, or that gives two recorded shells one id,
// is not the recording with other names: it differs. (Step 1 waits on the shell step 0
// started, which is the evidence for its id; step 1's result is then compared.)
func TestCompareIdentifiersOneToOne(t *testing.T) {
	bg := func(id string) string { return "Command running in background with ID: " + id + ". ok" }
	wait := func(id string) string { return `{"task_id":"` + id + `"}` }
	for _, tc := range []struct {
		name       string
		rec0, rec1 string // the recorded results of steps 0 and 1
		rep0, rep1 string // the replayed ones
		recID      string // the recorded shell step 1 waits on
		repID      string // the same in the replay
		identical  bool
	}{
		{"one shell, renamed alike", bg("bsfryt1j0"), "bsfryt1j0 exited 0", bg("k2p9xq4ma"), "k2p9xq4ma exited 0", "bsfryt1j0", "k2p9xq4ma", true},
		{"one recorded shell, two replayed", bg("bsfryt1j0"), bg("bsfryt1j0"), bg("k2p9xq4ma"), bg("zzzzzz999"), "bsfryt1j0", "k2p9xq4ma", false},
		{"two recorded shells, one replayed", bg("aaaa1111a"), bg("bbbb2222b"), bg("cccc3333c"), bg("cccc3333c"), "aaaa1111a", "cccc3333c", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := tapegen.Pair("claude-code", tc.rec0, wait(tc.recID))
			rec.Threads[0].Steps[1].ToolResults[0].Content[0].Text = tc.rec1
			rep := tapegen.ReplayOf(t, rec, tc.rep0, wait(tc.repID))
			rep.Threads[0].Steps[1].ToolResults[0].Content[0].Text = tc.rep1
			r := Compare(rec, rep)
			require.Equal(t, tc.identical, r.Identical, "%+v; learned %+v", r.Differences, r.Identifiers)
			if !tc.identical {
				require.Len(t, r.Differences, 1)
				require.Equal(t, "tool_result", r.Differences[0].Field)
				require.Equal(t, 1, r.Differences[0].Step)
			}
		})
	}
}

// TestCompareTruncatedResponse: a response over the recorder's limit is kept as a marker,
// and its tool calls are lost: the replay plays an answer without them, so it cannot be
// identical to the run, whatever the other steps say.
func TestCompareTruncatedResponse(t *testing.T) {
	rec := tapegen.Pair("claude-code", "ok", `{"command":"echo next"}`)
	st := rec.Threads[0].Steps[0]
	st.Response.Raw = tape.Truncation{Bytes: 40 << 20, Limit: 32 << 20}.Raw()
	st.Response.StopReason, st.ToolCalls, st.ToolResults = "", []tape.ToolCall{}, []tape.ToolResult{}
	b, err := tape.Marshal(rec)
	require.NoError(t, err)
	rep, err := tape.Unmarshal(b)
	require.NoError(t, err)
	rep.Threads[0].Steps[0].Response.Raw = json.RawMessage(`{}`) // what the replay wrote for it
	r := Compare(rec, rep)
	require.False(t, r.Identical)
	require.Len(t, r.Differences, 1)
	require.Equal(t, "response", r.Differences[0].Field)
	require.Contains(t, r.Differences[0].Recorded, "41943040 bytes, over the recording limit of 33554432")
}

// TestCompareCallsOfOneID: a recording can give two calls of a step one id. Each call's
// result is compared with its own (the n-th result of the id), not the first one twice,
// which left the second call's result unread.
func TestCompareCallsOfOneID(t *testing.T) {
	rec := tapegen.Pair("claude-code", "ok")
	st := rec.Threads[0].Steps[0]
	id := st.ToolCalls[0].ID
	st.ToolCalls = append(st.ToolCalls, tape.ToolCall{ID: id, Name: "Bash", Input: json.RawMessage(`{"command":"make test"}`)})
	st.ToolResults = append(st.ToolResults, tape.ToolResult{ToolCallID: id, Content: []tape.Block{{Type: tape.BlockText, Text: "all 40 tests pass"}}})
	rep := tapegen.ReplayOf(t, rec, "ok")
	require.True(t, Compare(rec, rep).Identical)
	rep.Threads[0].Steps[0].ToolResults[1].Content[0].Text = "FAIL: 3 of 40 tests"
	r := Compare(rec, rep)
	require.False(t, r.Identical)
	require.Len(t, r.Differences, 1)
	require.Equal(t, "FAIL: 3 of 40 tests", r.Differences[0].Replayed)
	// A second call with no result of its own in the recording is a difference too (the
	// replay answers every call).
	rep.Threads[0].Steps[0].ToolResults[1].Content[0].Text = "all 40 tests pass"
	st.ToolResults = st.ToolResults[:1]
	r = Compare(rec, rep)
	require.False(t, r.Identical)
	require.Equal(t, "missing", r.Differences[0].Recorded)
}

// TestCompareNumbersNeedAUseThatSubstitutes: a number the recording mentions again is an
// identifier only where a replay's substitution replaces it (a whole string, a path
// segment, a number in a harness's identifier field), not in free text: a count the model
// repeats in a commit message, or a pid in a shell command the replay sends unchanged.
func TestCompareNumbersNeedAUseThatSubstitutes(t *testing.T) {
	for _, tc := range []struct {
		name, rec, rep, later string
		identical             bool
	}{
		{"a test count repeated in a commit message", "ran 120 tests, all passed", "ran 118 tests, all passed", `{"command":"git commit -m 'all 120 tests pass'"}`, false},
		{"a pid in a shell command", "[1] 12345", "[1] 23456", `{"command":"kill 12345"}`, false},
		{"a pid as a path segment", "[1] 12345", "[1] 23456", `{"command":"cat /proc/12345/status"}`, true},
		{"a pid as a whole string", "[1] 12345", "[1] 23456", `{"pid":"12345"}`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := tapegen.Pair("claude-code", tc.rec, tc.later)
			rep := tapegen.ReplayOf(t, rec, tc.rep, string(learnedFrom(t, rec, tc.rec, tc.rep).ApplyJSON(json.RawMessage(tc.later))))
			r := Compare(rec, rep)
			require.Equal(t, tc.identical, r.Identical, "%+v; learned %+v", r.Differences, r.Identifiers)
		})
	}
}

// learnedFrom is the replay's map after step 0 of rec gave replayed for recorded:
// what the replay's later calls are rewritten with.
func learnedFrom(t *testing.T, rec *tape.Tape, recorded, replayed string) *match.Identifiers {
	t.Helper()
	ids := match.NewIdentifiers(rec)
	ids.Learn(match.Site{Thread: "main", Step: 0}, recorded, replayed)
	return ids
}

// TestCompareSpawningCallWithoutChild: a spawning call (Claude Code's Agent) with no child
// thread in the recording has nothing to play: the replay copies its recorded result, so a
// recording could claim any result there. Compare reports it instead of comparing the copy
// with itself. With its child thread, the call compares as before.
func TestCompareSpawningCallWithoutChild(t *testing.T) {
	rec := tapegen.Pair("claude-code", "all 40 tests pass")
	rec.Threads[0].Steps[0].ToolCalls[0].Name = "Agent"
	rep := tapegen.ReplayOf(t, rec, "all 40 tests pass")
	r := Compare(rec, rep)
	require.False(t, r.Identical)
	require.Len(t, r.Differences, 1)
	require.Contains(t, r.Differences[0].Replayed, "copied from the recording")

	child := &tape.Thread{ID: "sub", Parent: &tape.Parent{ThreadID: "main", ToolCallID: "toolu_00"},
		Steps: []*tape.Step{{Response: tape.Response{Status: 200, StopReason: "end_turn"}, Timing: tape.Timing{RequestAt: 1, FirstByteAt: 2, LastByteAt: 3}}}}
	rec.Threads = append(rec.Threads, child)
	rep = tapegen.ReplayOf(t, rec, "all 40 tests pass")
	r = Compare(rec, rep)
	require.True(t, r.Identical, "%+v", r.Differences)
}

// TestReportShowsWhereLongResultsPart: two long results that agree for their first 300
// bytes used to print the same two excerpts under "differs"; the report now shows them from
// a little before the first byte where they part.
func TestReportShowsWhereLongResultsPart(t *testing.T) {
	head := strings.Repeat("ok test_case\n", 60)
	rec := tapegen.Pair("claude-code", head+"FAIL: none")
	r := Compare(rec, tapegen.ReplayOf(t, rec, head+"FAIL: test_parse"))
	require.False(t, r.Identical)
	var b strings.Builder
	r.WriteText(&b)
	require.Contains(t, b.String(), `\nFAIL: none`)
	require.Contains(t, b.String(), `\nFAIL: test_parse`)
	// Short texts, and texts that part early, print from their start.
	x, y := diffExcerpts("abc", "abd", 300)
	require.Equal(t, []string{"abc", "abd"}, []string{x, y})
	x, y = diffExcerpts(strings.Repeat("é", 400), strings.Repeat("é", 399)+"e", 300)
	require.True(t, strings.HasPrefix(x, "…") && utf8.ValidString(x) && utf8.ValidString(y), "%q", x)
}

// TestCanonicalNumber: one spelling per value, exact, from the digits alone (a huge
// exponent is cheap, not a megabyte integer).
func TestCanonicalNumber(t *testing.T) {
	for _, same := range [][]string{
		{"1.5", "15e-1", "1.50", "0.15e1", "150E-2"},
		{"0", "-0", "0.0", "0e5", "-0.000e-3"},
		{"100", "1e2", "1E+2", "100.0", "0.001e5"},
		{"-2.5", "-25e-1", "-0.25e1"},
		{"1e999999", "10e999998", "0.1e1000000"},
	} {
		for _, lit := range same {
			require.Equal(t, canonicalNumber(same[0]), canonicalNumber(lit), "%s and %s", same[0], lit)
		}
	}
	for _, pair := range [][2]string{{"9007199254740993", "9007199254740992"}, {"1.5", "-1.5"}, {"1e2", "1e3"}, {"12", "1.2"}} {
		require.NotEqual(t, canonicalNumber(pair[0]), canonicalNumber(pair[1]), "%s and %s", pair[0], pair[1])
	}
	require.Equal(t, "1e99999999999999999999", canonicalNumber("1e99999999999999999999"), "an exponent past int stays as written")
}
