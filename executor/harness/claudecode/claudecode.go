package claudecode

import (
	"context"
	"fmt"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tapebox/tapebox/executor/harness"
	"github.com/tapebox/tapebox/tape"
	"github.com/tapebox/tapebox/tape/harnesses"
)

// New returns the Claude Code module: its name and policy are harnesses.ClaudeCode's.
func New() harness.Module {
	return harness.Module{Spec: &harnesses.ClaudeCode, Start: func(env *harness.Env) harness.Session {
		return &session{env: env, cwd: env.Cwd}
	}}
}

type session struct {
	env *harness.Env

	mu  sync.Mutex
	cwd string // the Bash tool's working directory, which persists between calls
	// projectCRLF is Claude Code 2.0's judgement of the project's line ends, made once.
	projectCRLF *bool
}

// tools are the tools this module performs in the sandbox, and the spawning tools; every
// other tool is a Noop (TodoWrite, WebFetch, WebSearch, Skill, ToolSearch, ExitPlanMode,
// ListAgents, ReportFindings, ScheduleWakeup, Workflow, Monitor, MCP tools ...).
var tools harness.Tools[*session]

func init() {
	tools = harness.Tools[*session]{
		"Bash":         (*session).bash,
		"BashOutput":   (*session).bashOutput,
		"TaskOutput":   (*session).taskOutput,
		"KillShell":    (*session).killShell,
		"KillBash":     (*session).killShell,
		"TaskStop":     (*session).taskStop,
		"Read":         (*session).read,
		"Write":        (*session).write,
		"Edit":         (*session).edit,
		"MultiEdit":    (*session).multiEdit,
		"NotebookEdit": (*session).notebookEdit,
		"Glob":         (*session).glob,
		"Grep":         (*session).grep,
	}
	// A spawning tool's call should never reach the executor; one that does gets an error.
	for _, name := range harnesses.ClaudeCode.SpawningTools {
		tools[name] = spawning
	}
}

func (s *session) Run(ctx context.Context, call tape.ToolCall, rec *tape.ToolResult) tape.ToolResult {
	r := tools.Run(s, ctx, call, rec)
	if s.before("2.1") {
		r = s.sessionReminders(r, rec)
	}
	return r
}

// sessionNotes lead the <system-reminder> notes Claude Code 2.0 appends to a tool result
// from its session's state, not from the tool's effect: a nudge to use TodoWrite after some
// turns without it, and news of a background command's output.
var sessionNotes = []string{"\n\n<system-reminder>\nThe TodoWrite tool hasn't been used recently.", "\n\n<system-reminder>\nBackground bash "}

// sessionReminders appends to r the session notes that end the recorded result: the
// replay has no session to draw them from, so it follows the recording, as it does for a
// background task's id. The text before them is still the executor's own, and a note's
// output file is the replay's task's.
func (s *session) sessionReminders(r tape.ToolResult, rec *tape.ToolResult) tape.ToolResult {
	rt := harness.RecordedText(rec)
	if strings.HasPrefix(rt, "<system-reminder>") {
		rt = "\n\n" + rt // notes alone, after an empty result
	}
	at := -1
	for _, n := range sessionNotes {
		if i := strings.Index(rt, n); i >= 0 && (at < 0 || i < at) {
			at = i
		}
	}
	if at < 0 || len(r.Content) != 1 || r.Content[0].Type != tape.BlockText {
		return r
	}
	notes := bgNote.ReplaceAllStringFunc(rt[at:], func(m string) string {
		sm := bgNote.FindStringSubmatch(m)
		if _, err := s.env.Tasks.Status(sm[1]); err != nil {
			return m
		}
		s.awaitLines(sm[1], m)
		return strings.Replace(m, "Read "+sm[2]+" to see", "Read "+s.env.Tasks.OutputPath(sm[1])+" to see", 1)
	})
	text := r.Content[0].Text
	if strings.HasSuffix(text, notes) {
		return r
	}
	// A result replayed from the recording (a refusal) holds the recorded notes already.
	text = strings.TrimSuffix(text, rt[at:])
	// With notes, Claude Code trims the text at both ends (a Read's "     1→" loses its
	// padding, its malware reminder its last newline) and puts the notes after it.
	text = strings.TrimSpace(text)
	if text == "" {
		notes = strings.TrimLeft(notes, "\n") // nothing to set them apart from (seed 8100)
	}
	r.Content = []tape.Block{{Type: tape.BlockText, Text: text + notes}}
	return r
}

// bgNote is Claude Code 2.0's news of a background command's output.
var bgNote = regexp.MustCompile(`Background bash (\S+) has new output: [^\n]*?\. Read (\S+) to see output\.`)

// bgLines are the counts of lines in a bgNote.
var bgLines = regexp.MustCompile(`([0-9]+) lines? of std(?:out|err)`)

// maxNoteWait bounds awaitLines.
const maxNoteWait = 5 * time.Second

// awaitLines waits until the background task id has written as many lines as note, the
// recording's news of its output, counts, or has ended (maxNoteWait at most). The news
// shows how far the command had got in the recording when the harness answered; a
// replay answers in milliseconds, and a command that had written its file in the
// recording by then would not have yet, nor by the end state (internal/fidelity, seed
// 21121).
func (s *session) awaitLines(id, note string) {
	want := 0
	for _, m := range bgLines.FindAllStringSubmatch(note, -1) {
		n, _ := strconv.Atoi(m[1])
		want += n
	}
	deadline := time.Now().Add(maxNoteWait)
	for {
		st, err := s.env.Tasks.Status(id)
		out, _ := s.env.Tasks.Output(id)
		lines := 0
		for _, l := range strings.Split(string(out), "\n") {
			if l != "" {
				lines++
			}
		}
		if err != nil || !st.Running || lines >= want || time.Now().After(deadline) {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

var _ harness.Unoffered = (*session)(nil)

// deferred are the tools Claude Code 2.1 loads on demand (through ToolSearch): a request
// need not list them for the model to call them, and a call runs.
var deferred = map[string]bool{"NotebookEdit": true, "TaskOutput": true, "TaskStop": true, "KillShell": true}

// NotOffered answers a call to a tool the recorded request did not offer as Claude Code
// does (captured from 2.1.332 and 2.0.77 by internal/fidelity): "No such tool available",
// with a pointer to Bash for Glob and Grep. A tool this module does not perform replays its
// recorded result, and a tool loaded on demand runs, as with any call.
func (s *session) NotOffered(ctx context.Context, call tape.ToolCall, rec *tape.ToolResult) tape.ToolResult {
	if _, performed := tools[call.Name]; !performed || deferred[call.Name] {
		return s.Run(ctx, call, rec)
	}
	msg := "Error: No such tool available: " + call.Name
	switch call.Name {
	case "Glob":
		msg += ". Glob is not available in this session \u2014 find files with `find` via the Bash tool instead."
	case "Grep":
		msg += ". Grep is not available in this session \u2014 search file contents with `grep` via the Bash tool instead."
	}
	r := toolUseError(call, msg)
	if s.before("2.1") {
		// Claude Code 2.0 appends its session notes to this answer too (seed 21069).
		r = s.sessionReminders(r, rec)
	}
	return r
}

// Immediate says a call is a Noop: it replays its recorded result at once.
func (s *session) Immediate(call tape.ToolCall) bool { return tools.Immediate(call) }

func (s *session) Close() error { return s.env.Tasks.Close() }

func spawning(_ *session, _ context.Context, call tape.ToolCall, _ *tape.ToolResult) tape.ToolResult {
	return harness.Spawning(call)
}

// toolUseError wraps a validation message as Claude Code does.
func toolUseError(call tape.ToolCall, msg string) tape.ToolResult {
	return harness.Text(call, "<tool_use_error>"+msg+"</tool_use_error>", true)
}

// inputError words a bad input as Claude Code's schema check does.
func inputError(call tape.ToolCall, err error) tape.ToolResult {
	var b strings.Builder
	fmt.Fprintf(&b, "InputValidationError: %s failed due to the following issue:\n", call.Name)
	if ie, ok := err.(*harness.InputError); ok && ie.Field != "" && ie.Want != "" {
		fmt.Fprintf(&b, "The parameter `%s` type is expected as `%s` but provided as `%s`", ie.Field, ie.Want, ie.Got)
	} else {
		b.WriteString(err.Error())
	}
	return toolUseError(call, b.String())
}

// decode reads call's input into in, a pointer to the tool's input struct, and checks that
// the parameters named in required (by their JSON names) are given: a string not empty, a
// pointer not nil, a list not empty. When the input is unusable it returns Claude Code's
// answer and false.
func decode(call tape.ToolCall, in any, required ...string) (tape.ToolResult, bool) {
	if err := harness.Decode(call, in); err != nil {
		return inputError(call, err), false
	}
	v := reflect.ValueOf(in).Elem()
	for _, name := range required {
		if f := param(v, name); f.IsZero() || (f.Kind() == reflect.Slice && f.Len() == 0) {
			return missingParam(call, name), false
		}
	}
	return tape.ToolResult{}, true
}

// param returns the field of the struct v whose JSON name is name.
func param(v reflect.Value, name string) reflect.Value {
	t := v.Type()
	for i := range t.NumField() {
		if tag, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ","); tag == name {
			return v.Field(i)
		}
	}
	panic("claudecode: no input parameter " + name + " in " + t.String())
}

func missingParam(call tape.ToolCall, name string) tape.ToolResult {
	return toolUseError(call, missingParamText(call, name))
}

func missingParamText(call tape.ToolCall, name string) string {
	return fmt.Sprintf("InputValidationError: %s failed due to the following issue:\nThe required parameter `%s` is missing", call.Name, name)
}

// asRecorded wraps or unwraps an error text in <tool_use_error> to match the recording,
// where versions differ on it.
func asRecorded(r tape.ToolResult, rec *tape.ToolResult) tape.ToolResult {
	if rec == nil || !r.IsError || len(r.Content) != 1 {
		return r
	}
	rt := rec.Text()
	t := r.Content[0].Text
	wrapped := strings.HasPrefix(t, "<tool_use_error>")
	switch {
	case strings.HasPrefix(rt, "<tool_use_error>") && !wrapped:
		r.Content[0].Text = "<tool_use_error>" + t + "</tool_use_error>"
	case !strings.HasPrefix(rt, "<tool_use_error>") && wrapped:
		r.Content[0].Text = strings.TrimSuffix(strings.TrimPrefix(t, "<tool_use_error>"), "</tool_use_error>")
	}
	return r
}

// since says the recording names its harness version and it is version v or later
// ("2.1" covers 2.1.0 on). A recording without a version gets false: the module then
// words results as it did before hello carried versions, picking between wordings from
// the recorded result where it can.
func (s *session) since(v string) bool {
	return s.env.HarnessVersion != "" && harnesses.CompareVersions(s.env.HarnessVersion, v) >= 0
}

// before says the recording names its harness version and it is older than v.
func (s *session) before(v string) bool {
	return s.env.HarnessVersion != "" && harnesses.CompareVersions(s.env.HarnessVersion, v) < 0
}

func pluralize(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}
