package fidelity

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/tapebox/tapebox/tape"
)

func TestNewSequenceIsReproducible(t *testing.T) {
	a := NewSequence(Claude, 7, "/w")
	b := NewSequence(Claude, 7, "/w")
	if mustJSON(t, a) != mustJSON(t, b) {
		t.Fatalf("seed 7 drew two different sequences")
	}
	c := NewSequence(Claude, 8, "/w")
	if mustJSON(t, a.Calls) == mustJSON(t, c.Calls) {
		t.Fatalf("seeds 7 and 8 drew the same calls")
	}
	for _, s := range []*Sequence{a, c} {
		if len(s.Calls) == 0 {
			t.Fatalf("%s: no calls", s.Name())
		}
		for i, call := range s.Calls {
			if call.Class == "" || call.Tool == "" {
				t.Errorf("%s call %d: no class or tool: %+v", s.Name(), i, call)
			}
		}
	}
}

// TestGrammarCoversClasses draws many sequences and checks that every input class the
// issue lists comes up.
func TestGrammarCoversClasses(t *testing.T) {
	seen := map[string]bool{}
	for seed := range uint64(300) {
		for _, c := range NewSequence(Claude, seed+1, "/w").Calls {
			seen[c.Class] = true
		}
	}
	for _, want := range []string{"read:empty", "read:binary", "read:non-utf8", "read:crlf", "read:long-lines", "read:offset-past-end",
		"read:missing", "read:directory", "read:symlink", "read:unicode-name", "write:deep-new-dir", "write:existing-read-only",
		"edit:not-unique", "bash:exit-code", "bash:stderr", "bash:no-trailing-newline", "bash:long-output", "bash:timeout",
		"bash:background", "glob", "grep", "tool-not-offered"} {
		if !seen[want] {
			t.Errorf("300 sequences never drew a %s call", want)
		}
	}
}

func TestShrink(t *testing.T) {
	seq := &Sequence{Harness: "h", Seed: 5, Cwd: "/w",
		Files: []File{{Path: "a"}, {Path: "needed"}, {Path: "b"}},
		Calls: []Call{
			NewCall("c", "Bash", map[string]any{"command": "x"}),
			NewCall("c", "Write", map[string]any{"content": "a long content that can be cut"}),
			NewCall("c", "Bash", map[string]any{"command": "y"}),
		}}
	// Diverges while a Write with non-empty content and the file "needed" are there.
	diverges := func(s *Sequence) bool {
		hasFile := false
		for _, f := range s.Files {
			hasFile = hasFile || f.Path == "needed"
		}
		for _, c := range s.Calls {
			if c.Tool == "Write" && strings.Contains(string(c.Input), `"content":"`) && !strings.Contains(string(c.Input), `"content":""`) {
				return hasFile
			}
		}
		return false
	}
	g := Grammar{Harness: "h", Simplify: SimplifyStrings("content")}
	small := Shrink(context.Background(), g, seq, diverges)
	if len(small.Calls) != 1 || small.Calls[0].Tool != "Write" {
		t.Fatalf("shrunk to %+v, want the Write alone", small.Calls)
	}
	if len(small.Files) != 1 || small.Files[0].Path != "needed" {
		t.Fatalf("shrunk files to %+v, want needed alone", small.Files)
	}
	if got := string(small.Calls[0].Input); len(got) != len(`{"content":"x"}`) {
		t.Errorf("content simplified to %s, want one character", got)
	}
	if small.Seed != 0 || small.Origin != 5 {
		t.Errorf("seed %d origin %d, want 0 and 5", small.Seed, small.Origin)
	}
	if len(seq.Calls) != 3 {
		t.Errorf("Shrink changed its input")
	}
}

func TestClassify(t *testing.T) {
	classes := []Class{
		{Name: "timing", Tool: "Bash", Field: "tool_result", Text: regexp.MustCompile(`timed out`)},
		{Name: "any-glob", Tool: "Glob", Version: "2.0."},
	}
	for _, c := range []struct {
		d    Divergence
		want string
	}{
		{Divergence{Tool: "Bash", Field: "tool_result", Recorded: "Command timed out"}, "timing"},
		{Divergence{Tool: "Bash", Field: "tool_result", Replayed: "it timed out"}, "timing"},
		{Divergence{Tool: "Bash", Field: "tool_result.is_error", Recorded: "timed out"}, ""},
		{Divergence{Tool: "Bash", Field: "tool_result", Recorded: "ok"}, ""},
		{Divergence{Tool: "Glob", Field: "end_state"}, "any-glob"},
	} {
		if got := Classify(classes, "2.0.77", c.d); got != c.want {
			t.Errorf("Classify(%+v) = %q, want %q", c.d, got, c.want)
		}
	}
	if got := Classify(classes, "2.1.332", Divergence{Tool: "Glob"}); got != "" {
		t.Errorf("a class of 2.0 matched on 2.1.332: %q", got)
	}
}

// TestBoard plants outcomes and checks the counts and the page: identical ones count as
// identical, differing ones do not, and each class is listed with its seed and reason.
func TestBoard(t *testing.T) {
	classes := []Class{{Name: "known", Reason: "the harness's clock"}}
	var b Board
	b.Add("1.0", &Outcome{Seq: &Sequence{Harness: "h", Seed: 1}, EndIdentical: true,
		Calls: []CallOutcome{{Tool: "Read", Identical: true}, {Tool: "Bash", Identical: true}}}, classes)
	b.Add("1.0", &Outcome{Seq: &Sequence{Harness: "h", Seed: 2}, EndIdentical: false,
		Calls:       []CallOutcome{{Tool: "Bash", Identical: false}},
		Divergences: []Divergence{{Field: "tool_result", Call: 0, Tool: "Bash", Recorded: "a|b", Replayed: "c\nd", Class: "known"}, {Field: "end_state", Call: -1}}}, classes)
	b.Add("1.0", &Outcome{Seq: &Sequence{Harness: "h", Seed: 3}, Err: os.ErrNotExist}, classes)
	b.Add("2.0", &Outcome{Seq: &Sequence{Harness: "h", Seed: 1}, EndIdentical: true}, classes)

	tot := b.Total("h", "1.0")
	if want := (Row{Harness: "h", Version: "1.0", Tool: "all", Calls: 3, Identical: 2, Sequences: 2, EndIdentical: 1}); tot != want {
		t.Errorf("total %+v, want %+v", tot, want)
	}
	rows := b.Rows()
	if len(rows) != 4 || rows[0].Tool != "Bash" || rows[0].Calls != 2 || rows[0].Identical != 1 || rows[2].Tool != "all" || rows[3].Version != "2.0" {
		t.Errorf("rows %+v", rows)
	}
	md := b.Markdown("header")
	for _, want := range []string{
		"| h | 1.0 | `Bash` | 2 | 1 | 50.00 | 2 | 1 | 50.00 |",
		"| h | 1.0 | **all** | 3 | 2 | 66.67 | 2 | 1 | 50.00 |",
		"| h | 1.0 | known | 1 | h seed 2 | the harness's clock |",
		"| h | 1.0 | unclassified | 1 | h seed 2 |",
		"a\\|b",
		"## Sequences that did not run (1)",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("the page lacks %q:\n%s", want, md)
		}
	}
	var empty Board
	if md := empty.Markdown("x"); !strings.Contains(md, "None: every call") {
		t.Errorf("an empty board says:\n%s", md)
	}
}

func TestSaveLoadLayout(t *testing.T) {
	dir := t.TempDir()
	seq := NewSequence(Claude, 3, filepath.Join(dir, "ws"))
	file := filepath.Join(dir, "case.json")
	if err := seq.Save(file); err != nil {
		t.Fatal(err)
	}
	got, err := Load(file)
	if err != nil {
		t.Fatal(err)
	}
	if a, b := mustJSON(t, got), mustJSON(t, seq); a != b {
		t.Fatalf("loaded a different sequence than was saved:\n%s", clip(a, 500))
	}
	if err := got.Layout(got.Cwd); err != nil {
		t.Fatal(err)
	}
	for _, f := range got.Files {
		st, err := os.Lstat(filepath.Join(got.Cwd, f.Path))
		if err != nil {
			t.Errorf("%s: %v", f.Path, err)
			continue
		}
		if f.Link != "" && st.Mode()&os.ModeSymlink == 0 {
			t.Errorf("%s is not a symlink", f.Path)
		}
	}
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte(`{"harness":"","cwd":"rel","files":[{"path":"../x"}],"calls":[{"tool":"","input":"{"}]}`), 0o644)
	if _, err := Load(bad); err == nil {
		t.Fatal("a bad case loaded")
	} else {
		for _, want := range []string{"/harness", "/cwd", "/files/0/path", "/calls/0/tool"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("the error does not name %s: %v", want, err)
			}
		}
	}
}

func TestCallIndex(t *testing.T) {
	for id, want := range map[string]int{"toolu_fake_main_12_0": 12, "call_fake_main_0_1": 0, "toolu_x": -1, "toolu_fake_main_x_0": -1} {
		if got := callIndex(id); got != want {
			t.Errorf("callIndex(%q) = %d, want %d", id, got, want)
		}
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestCallIndexesHarnessIDs: a harness that names its calls itself (Gemini CLI) has its
// calls found by place and tool, so that a divergent call is not counted identical.
func TestCallIndexesHarnessIDs(t *testing.T) {
	rec := &tape.Tape{Threads: []*tape.Thread{{ID: "main", Steps: []*tape.Step{
		{ToolCalls: []tape.ToolCall{{ID: "read_file_1796668717557_0", Name: "read_file"}}},
		{ToolCalls: []tape.ToolCall{{ID: "run_shell_command_1796668717600_0", Name: "run_shell_command"}}},
		{ToolCalls: []tape.ToolCall{{ID: "glob_1796668717700_0", Name: "glob"}}},
	}}}}
	seq := &Sequence{Calls: []Call{{Tool: "read_file"}, {Tool: "run_shell_command"}, {Tool: "replace"}}}
	index := callIndexes(rec, seq)
	for id, want := range map[string]int{
		"read_file_1796668717557_0":         0,
		"run_shell_command_1796668717600_0": 1,
		"glob_1796668717700_0":              -1, // the sequence asked for another tool there
		"toolu_fake_main_2_0":               2,
		"unknown":                           -1,
	} {
		if got := index(id); got != want {
			t.Errorf("index(%q) = %d, want %d", id, got, want)
		}
	}
}

// TestGeminiGrammarCoversClasses: the Gemini grammar draws the inputs the fidelity issue
// lists for Gemini CLI's tools.
func TestGeminiGrammarCoversClasses(t *testing.T) {
	seen := map[string]bool{}
	for seed := range uint64(300) {
		for _, c := range NewSequence(Gemini, seed+1, "/w").Calls {
			for _, part := range strings.FieldsFunc(c.Class, func(r rune) bool { return r == ' ' || r == '+' }) {
				seen[c.Tool+":"+part] = true
			}
		}
	}
	for _, want := range []string{"read_file:empty", "read_file:binary", "read_file:latin1", "read_file:crlf", "read_file:huge",
		"read_file:missing", "read_file:dir", "read_file:symlink", "read_file:start", "write_file:deep-new-dir",
		"write_file:directory", "write_file:parent-is-file", "replace:maybe-not-unique", "replace:indented", "replace:spacing",
		"replace:typo", "replace:allow_multiple", "replace:not-found", "run_shell_command:non-zero-exit", "run_shell_command:stderr",
		"run_shell_command:no-trailing-newline", "run_shell_command:past-truncation", "run_shell_command:background-job",
		"run_shell_command:is_background", "glob:glob", "grep_search:grep", "read_many_files:not-offered",
		"save_memory:not-offered", "write_todos:todos"} {
		if !seen[want] {
			t.Errorf("300 sequences never drew a %s call", want)
		}
	}
}

// TestGeminiFullOutputClass: the full output's file class takes a result that differs only
// in that file's path, and not one whose shown output differs too.
func TestGeminiFullOutputClass(t *testing.T) {
	head := "Output too large. Showing first 8,000 and last 32,000 characters. For full output see: "
	d := Divergence{Field: "tool_result", Tool: "run_shell_command", Call: 3,
		Recorded: head + "/tmp/x/home/.gemini/tmp/w0/tool-outputs/session-c9/run_shell_command_17_0.txt\n<untrusted_context>\nOutput: 1\n",
		Replayed: head + "/tmp/tapebox-exec-state-0/tool-outputs/run_shell_command_5g.txt\n<untrusted_context>\nOutput: 1\n"}
	if got := Classify(geminiClasses, GeminiVersion, d); got != "the full output's file" {
		t.Errorf("a path-only difference: class %q", got)
	}
	d.Replayed = strings.Replace(d.Replayed, "Output: 1", "Output: 2", 1)
	if got := Classify(geminiClasses, GeminiVersion, d); got != "" {
		t.Errorf("a difference in the output shown: class %q", got)
	}
	// The cut of the tail moves with the process group id's digits.
	d.Recorded = head + "/a.txt\n<untrusted_context>\nOutput: 1\n2\n\n... [188,968 characters omitted] ...\n\n675\n34676\nProcess Group PGID: 17772\n</untrusted_context>"
	d.Replayed = head + "/b.txt\n<untrusted_context>\nOutput: 1\n2\n\n... [188,965 characters omitted] ...\n\n\n34675\n34676\nProcess Group PGID: 36\n</untrusted_context>"
	if got := Classify(geminiClasses, GeminiVersion, d); got != "the full output's file" {
		t.Errorf("a tail cut apart: class %q", got)
	}
	d.Replayed = strings.Replace(d.Replayed, "34676", "34677", 1)
	if got := Classify(geminiClasses, GeminiVersion, d); got != "" {
		t.Errorf("a tail that differs: class %q", got)
	}
}

// TestGeminiRaceClass: the racing class takes the same lines in another order, not other
// lines.
func TestGeminiRaceClass(t *testing.T) {
	d := Divergence{Field: "tool_result", Tool: "run_shell_command", Call: 1,
		Recorded: "<untrusted_context>\nOutput: 0000000\nhead: cannot open 'm' for reading\n</untrusted_context>",
		Replayed: "<untrusted_context>\nOutput: head: cannot open 'm' for reading\n0000000\n</untrusted_context>"}
	if got := Classify(geminiClasses, GeminiVersion, d); got != "processes racing to one output" {
		t.Errorf("lines in another order: class %q", got)
	}
	d.Replayed = strings.Replace(d.Replayed, "0000000", "0000001", 1)
	if got := Classify(geminiClasses, GeminiVersion, d); got != "" {
		t.Errorf("another line: class %q", got)
	}
}
