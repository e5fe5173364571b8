package fidelity

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tapebox/tapebox/tape"
)

// TestCodexPiSequences draws many Codex and Pi sequences: a seed names one sequence, every
// call has a tool and a class, apply_patch is a custom call, and a placeholder refers only
// to an earlier call of the same sequence.
func TestCodexPiSequences(t *testing.T) {
	for _, g := range []Grammar{Codex, Pi} {
		if a, b := mustJSON(t, NewSequence(g, 7, "/w")), mustJSON(t, NewSequence(g, 7, "/w")); a != b {
			t.Fatalf("%s: seed 7 drew two different sequences", g.Harness)
		}
		custom, refs := 0, 0
		for seed := range uint64(200) {
			s := NewSequence(g, seed+1, "/w")
			if len(s.Calls) < 10 || len(s.Calls) > 30 {
				t.Errorf("%s: %d calls", s.Name(), len(s.Calls))
			}
			for i, c := range s.Calls {
				if c.Tool == "" || c.Class == "" || !json.Valid(c.Input) {
					t.Errorf("%s call %d: %+v", s.Name(), i, c)
				}
				if c.Tool == "apply_patch" && g.Harness == "codex" {
					if c.Kind != "custom" || c.ToolCall().Kind != "custom" {
						t.Errorf("%s call %d: apply_patch of kind %q", s.Name(), i, c.Kind)
					}
					custom++
				}
				for _, r := range Refs(c.Input) {
					refs++
					if r.Step >= i || r.Field != "exec session id" {
						t.Errorf("%s call %d refers to %+v", s.Name(), i, r)
					}
				}
			}
		}
		if g.Harness == "codex" && (custom == 0 || refs == 0) {
			t.Errorf("200 Codex sequences drew %d apply_patch calls and %d session placeholders", custom, refs)
		}
	}
}

// TestDropCall drops a call that a later one refers to: both go, and the placeholders of the
// calls after them are renumbered.
func TestDropCall(t *testing.T) {
	call := func(in string) Call { return Call{Tool: "t", Input: json.RawMessage(in), Class: "c"} }
	s := &Sequence{Harness: "codex", Calls: []Call{
		call(`{"cmd":"a"}`),
		call(`{"cmd":"b"}`),
		call(`{"session_id":"<<exec session id:1>>"}`),
		call(`{"cmd":"c"}`),
		call(`{"session_id":"<<exec session id:3>>","chars":"x <<exec session id:0>>"}`),
	}}
	got := dropCall(s, 1)
	var ins []string
	for _, c := range got.Calls {
		ins = append(ins, string(c.Input))
	}
	want := []string{`{"cmd":"a"}`, `{"cmd":"c"}`, `{"session_id":"<<exec session id:1>>","chars":"x <<exec session id:0>>"}`}
	if strings.Join(ins, "\n") != strings.Join(want, "\n") {
		t.Errorf("after dropping call 1:\n%s\nwant\n%s", strings.Join(ins, "\n"), strings.Join(want, "\n"))
	}
	if len(s.Calls) != 5 || string(s.Calls[4].Input) != `{"session_id":"<<exec session id:3>>","chars":"x <<exec session id:0>>"}` {
		t.Errorf("dropCall changed its input")
	}
}

// TestSubstitute fills placeholders from the harness's results: a whole-string numeric id
// becomes a number, one inside a string stays in it, and a missing one is an error.
func TestSubstitute(t *testing.T) {
	res := func(s string) tape.ToolResult {
		return tape.ToolResult{Content: []tape.Block{{Type: tape.BlockText, Text: s}}}
	}
	ids := harvest("codex", map[int]tape.ToolResult{
		0: res("Chunk ID: ab12\nWall time: 0.25 seconds\nProcess running with session ID 4242\nOutput:\n"),
		1: res("Process exited with code 0\n"),
	})
	if ids["exec session id:0"] != "4242" || len(ids) != 1 {
		t.Fatalf("harvested %v", ids)
	}
	got, err := substitute(json.RawMessage(`{"session_id":"<<exec session id:0>>","chars":"id <<exec session id:0>>"}`), ids)
	if err != nil || string(got) != `{"session_id":4242,"chars":"id 4242"}` {
		t.Errorf("substitute = %s, %v", got, err)
	}
	if _, err := substitute(json.RawMessage(`{"session_id":"<<exec session id:1>>"}`), ids); err == nil || !strings.Contains(err.Error(), "exec session id:1") {
		t.Errorf("a missing id: %v", err)
	}
	bad := filepath.Join(t.TempDir(), "fwd.json")
	os.WriteFile(bad, []byte(`{"harness":"codex","cwd":"/w","files":[],"calls":[{"tool":"write_stdin","input":{"session_id":"<<exec session id:0>>"}}]}`), 0o644)
	if _, err := Load(bad); err == nil || !strings.Contains(err.Error(), "/calls/0/input refers to step 0") {
		t.Errorf("a placeholder of a later step loaded: %v", err)
	}
}

// TestCodexPiClasses: the interleaving class takes the same bytes in another order of a
// command without a tty, and nothing else.
func TestCodexPiClasses(t *testing.T) {
	swapped := Divergence{Field: "tool_result", Tool: "exec_command", Input: "binary-dump", Call: 3,
		Recorded: "head: 0000000\nerror reading 'x': Is a directory\n", Replayed: "head: error reading 'x': Is a directory\n0000000\n"}
	for _, c := range []struct {
		d    Divergence
		want string
	}{
		{swapped, "stdout/stderr interleaving"},
		{Divergence{Field: "tool_result", Tool: "exec_command", Input: "rm max_output_tokens",
			Recorded: "Original token count: 18\nOutput:\nTotal output lines: 2\n\nrm=1\nrm: cannot remo…8 tokens truncated…h file or directory\n",
			Replayed: "Original token count: 18\nOutput:\nTotal output lines: 2\n\nrm: cannot remove 'm…8 tokens truncated…e or directory\nrm=1\n"}, "stdout/stderr interleaving"},
		{Divergence{Field: "tool_result", Tool: "exec_command", Input: "rm max_output_tokens",
			Recorded: "Original token count: 18\nOutput:\nTotal output lines: 2\n\nrm=1\nrm: cannot remo…8 tokens truncated…h file or directory\n",
			Replayed: "Original token count: 18\nOutput:\nTotal output lines: 2\n\nrm: cannot remove 'm…9 tokens truncated…e or directory\nrm=\n"}, ""},
		{func() Divergence { d := swapped; d.Input = "binary-dump tty"; return d }(), ""},
		{func() Divergence {
			d := swapped
			d.Replayed = strings.Replace(d.Replayed, "0000000", "0000001", 1)
			return d
		}(), ""},
		{Divergence{Field: "tool_result", Tool: "exec_command", Input: "session tty odd-workdir", Recorded: "a", Replayed: "b"}, "terminal in the harness's home"},
		{Divergence{Field: "tool_result", Tool: "apply_patch", Input: "update-text", Recorded: "a", Replayed: "b"}, ""},
	} {
		if got := Classify(Codex.Classes, CodexVersion, c.d); got != c.want {
			t.Errorf("Classify(%+v) = %q, want %q", c.d, got, c.want)
		}
	}
	limit := Divergence{Field: "tool_result", Tool: "grep", Input: "pattern+limit", Recorded: "a.txt:1: x", Replayed: "b.txt:1: x"}
	if got := Classify(Pi.Classes, PiVersion, limit); got != "ripgrep's order" {
		t.Errorf("a grep under a limit: %q", got)
	}
	limit.Input = "pattern"
	if got := Classify(Pi.Classes, PiVersion, limit); got != "" {
		t.Errorf("a grep without a limit whose lines differ: %q", got)
	}
	limit.Recorded += "\n\n[100 matches limit reached. Use limit=200 for more, or refine pattern]"
	if got := Classify(Pi.Classes, PiVersion, limit); got != "ripgrep's order" {
		t.Errorf("a grep at the default limit: %q", got)
	}
}

// TestLedger writes outcomes to a ledger and counts them back: the board of the ledger is
// the board of the outcomes, a divergence left unclassified takes a class added since, and
// a bad line is an error naming the file and the line.
func TestLedger(t *testing.T) {
	file := filepath.Join(t.TempDir(), "h-1.0.jsonl")
	outcomes := []*Outcome{
		{Seq: &Sequence{Harness: "h", Seed: 1}, EndIdentical: true, Calls: []CallOutcome{{Tool: "a", Identical: true}}},
		{Seq: &Sequence{Harness: "h", Seed: 2}, Calls: []CallOutcome{{Tool: "a"}, {Tool: "b", Identical: true}},
			Divergences: []Divergence{{Field: "tool_result", Call: 0, Tool: "a", Recorded: strings.Repeat("x", 9000), Replayed: "y"}}},
		{Seq: &Sequence{Harness: "h", Seed: 3}, Err: os.ErrPermission},
	}
	var direct Board
	for _, o := range outcomes {
		direct.Add("1.0", o, nil)
		if err := AppendEntry(file, o.Entry("1.0")); err != nil {
			t.Fatal(err)
		}
	}
	es, err := ReadLedger(file)
	if err != nil || len(es) != 3 {
		t.Fatalf("read %d entries: %v", len(es), err)
	}
	if n := len(es[1].Divergences[0].Recorded); n > ledgerText+3 {
		t.Errorf("a divergence kept %d bytes", n)
	}
	var counted Board
	later := []Class{{Name: "added later", Tool: "a", Reason: "r"}}
	for _, e := range es {
		e.Reclassify(later)
		counted.AddEntry(e, later)
	}
	if a, b := counted.Total("h", "1.0"), direct.Total("h", "1.0"); a != b {
		t.Errorf("ledger total %+v, direct %+v", a, b)
	}
	if cls := counted.Classes(); len(cls) != 1 || cls[0].Name != "added later" || cls[0].Reason != "r" {
		t.Errorf("classes %+v", cls)
	}
	if len(counted.Errors()) != 1 {
		t.Errorf("errors %v", counted.Errors())
	}
	f, _ := os.OpenFile(file, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString("{\"harness\":\"h\"\n")
	f.Close()
	if _, err := ReadLedger(file); err == nil || !strings.Contains(err.Error(), file+" line 4") {
		t.Errorf("a bad line: %v", err)
	}
}

// TestSessionYieldClass: a session whose command ended on one side only when the yield ran
// out (codex 0.161.0 seed 1103, at a load of 25) is the yield class, and so are the
// write_stdin calls to it that find it gone on one side only, in a run and in a ledger
// alike; a session that differs otherwise, or a write_stdin without such a session
// before it, is not.
func TestSessionYieldClass(t *testing.T) {
	const name = "a session's end against its yield on a loaded machine"
	seed1103 := func() []Divergence {
		return []Divergence{
			{Field: "tool_result", Call: 15, Tool: "exec_command", Input: "session no-tty",
				Recorded: "Chunk ID: <chunk>\nWall time: <t> seconds\nProcess running with session ID 23425\nOriginal token count: 0\nOutput:\n",
				Replayed: "Chunk ID: <chunk>\nWall time: <t> seconds\nProcess exited with code 0\nOriginal token count: 2\nOutput:\nclosed\n"},
			{Field: "tool_result", Call: 16, Tool: "write_stdin", Input: "type no-tty",
				Recorded: "write_stdin failed: stdin is closed for this session; rerun exec_command with tty=true to keep stdin open",
				Replayed: "write_stdin failed: Unknown process id 23425"},
			{Field: "tool_result", Call: 17, Tool: "write_stdin", Input: "poll no-tty",
				Recorded: "Chunk ID: <chunk>\nWall time: <t> seconds\nProcess exited with code 0\nOriginal token count: 2\nOutput:\nclosed\n",
				Replayed: "write_stdin failed: Unknown process id 23425"},
		}
	}
	for _, version := range []string{CodexVersion, CodexOldVersion} {
		divs := seed1103()
		for i := range divs {
			divs[i].Class = Classify(Codex.Classes, version, divs[i])
		}
		follow(Codex.Classes, divs)
		for _, d := range divs {
			if d.Class != name {
				t.Errorf("%s: %s", version, d)
			}
		}
		// The same from a ledger written before the class existed.
		e := Entry{Harness: "codex", Version: version, Divergences: seed1103()}
		e.Reclassify(Codex.Classes)
		for _, d := range e.Divergences {
			if d.Class != name {
				t.Errorf("%s, ledger: %s", version, d)
			}
		}
	}
	// The other way round: the replay's command still ran.
	d := seed1103()[0]
	d.Recorded, d.Replayed = d.Replayed, d.Recorded
	if got := Classify(Codex.Classes, CodexVersion, d); got != name {
		t.Errorf("running in the replay only: %q", got)
	}
	for _, planted := range []func(*Divergence){
		func(d *Divergence) {
			d.Replayed = strings.Replace(d.Replayed, "closed", "opened", 1)
			d.Recorded = d.Replayed + "x"
		}, // both exited, output differs
		func(d *Divergence) { d.Replayed = strings.Replace(d.Recorded, "23425", "23426", 1) }, // both running
		func(d *Divergence) { d.Input = "short" },                                             // no session
	} {
		d := seed1103()[0]
		planted(&d)
		if got := Classify(Codex.Classes, CodexVersion, d); got == name {
			t.Errorf("planted %+v: %q", d, got)
		}
	}
	// A write_stdin that finds no session, with no diverging session before it, stays
	// unclassified; so does one whose session's call came after it.
	divs := seed1103()[1:]
	follow(Codex.Classes, divs)
	if divs[0].Class != "" || divs[1].Class != "" {
		t.Errorf("write_stdin without its session's divergence: %v", divs)
	}
	divs = seed1103()
	divs[0].Class = Classify(Codex.Classes, CodexVersion, divs[0])
	divs[1].Call, divs[2].Call = 3, 4
	follow(Codex.Classes, divs)
	if divs[1].Class != "" || divs[2].Class != "" {
		t.Errorf("write_stdin before the session's call: %v", divs)
	}
}
