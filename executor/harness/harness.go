package harness

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/tapebox/tapebox/executor/action"
	"github.com/tapebox/tapebox/executor/protocol"
	"github.com/tapebox/tapebox/internal/jsonlex"
	"github.com/tapebox/tapebox/tape"
	"github.com/tapebox/tapebox/tape/harnesses"
)

// Harness is one agent harness's module.
type Harness interface {
	// Name is the harness's name in hello ("claude-code", "codex").
	Name() string
	// Policy is what the controller needs to know: parallel tool calls, spawning tools.
	Policy() protocol.Policy
	// NewSession starts a session in env. Sessions keep the state a harness keeps between
	// tool calls (a shell's working directory, running command sessions).
	NewSession(env *Env) Session
}

// Session runs the tool calls of one executor session. Run is safe for concurrent use.
type Session interface {
	// Run performs a call and returns its result, formatted as the harness does. It never
	// fails: a tool that fails, a bad input, an unknown tool are all results (with
	// is_error set where the harness sets it). recorded is the tape's result, or nil.
	Run(ctx context.Context, call tape.ToolCall, recorded *tape.ToolResult) tape.ToolResult
	// Close releases what the session holds; background tasks keep running.
	Close() error
}

// Module is a harness module built on the harness's entry in tape/harnesses: its name and
// policy are the table's, so the executor's hello reports what the gateway and the
// controller read there; Start begins its sessions.
type Module struct {
	// Spec is the harness's entry in the table.
	Spec *harnesses.Harness
	// Start starts a session in env (see Harness.NewSession).
	Start func(env *Env) Session
}

var _ Harness = Module{}

// Name implements Harness: the table's name.
func (m Module) Name() string { return m.Spec.Name }

// Policy implements Harness: from the table, whether the harness runs one answer's tool
// calls in parallel, and its spawning tools.
func (m Module) Policy() protocol.Policy {
	return protocol.Policy{ParallelToolCalls: m.Spec.ParallelToolCalls, SpawningTools: m.Spec.SpawningTools}
}

// NewSession implements Harness.
func (m Module) NewSession(env *Env) Session { return m.Start(env) }

// Immediate is implemented by sessions that can tell calls which finish at once (a Noop
// replaying its recorded result): the executor runs those on its reading goroutine, which
// saves a goroutine hand-off on the round trip, and every other call concurrently.
type Immediate interface {
	Immediate(call tape.ToolCall) bool
}

// Unoffered is implemented by sessions that know how their harness answers a call to a
// tool the recorded request did not offer (protocol.Call.NotOffered). NotOffered returns
// that answer, or, for a tool the harness may still run unlisted (one it loads on demand),
// the same as Run. A session without it runs every call as usual.
type Unoffered interface {
	NotOffered(ctx context.Context, call tape.ToolCall, recorded *tape.ToolResult) tape.ToolResult
}

// Tools is a module's table of the tools it performs, each a function on its session S;
// every tool not in it is a Noop, which replays its recorded result.
type Tools[S any] map[string]func(s S, ctx context.Context, call tape.ToolCall, recorded *tape.ToolResult) tape.ToolResult

// Run performs call with its tool's function, or replays recorded for a tool not in t.
func (t Tools[S]) Run(s S, ctx context.Context, call tape.ToolCall, recorded *tape.ToolResult) tape.ToolResult {
	if f, ok := t[call.Name]; ok {
		return f(s, ctx, call, recorded)
	}
	return Replay(call, recorded)
}

// Immediate says whether call is a Noop, which replays at once (see the Immediate
// interface).
func (t Tools[S]) Immediate(call tape.ToolCall) bool {
	_, performed := t[call.Name]
	return !performed
}

// Env is where a session's tool calls run.
type Env struct {
	// Cwd is the absolute working directory.
	Cwd string
	// State holds executor state: background tasks under tasks/, saved outputs.
	State *action.StateDir
	// Environ is the environment of commands: the executor's, plus hello's env.
	Environ []string
	// Tasks runs background commands in State.
	Tasks *action.Tasks
	// HarnessVersion is the recording's harness version (hello's harness_version), or "":
	// a module words results the way that version does where versions differ.
	HarnessVersion string
}

// NewEnv returns the Env for a hello: cwd made absolute, stateDir defaulting to
// DefaultStateDir(cwd), env added to the executor's own environment. It creates nothing.
func NewEnv(cwd string, stateDir *string, env map[string]string) (*Env, error) {
	if cwd == "" {
		wd, err := os.Getwd()
		if err != nil {
			return nil, fmt.Errorf("session cwd: %w", err)
		}
		cwd = wd
	}
	abs, err := filepath.Abs(cwd)
	if err != nil {
		return nil, fmt.Errorf("session cwd %q: %w", cwd, err)
	}
	st, err := os.Stat(abs)
	if err != nil {
		return nil, fmt.Errorf("session cwd %q: %w", cwd, err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("session cwd %q: not a directory", cwd)
	}
	state := &action.StateDir{Path: DefaultStateDir(abs), Shared: true}
	if stateDir != nil && *stateDir != "" {
		state = &action.StateDir{Path: *stateDir}
		if !filepath.IsAbs(state.Path) {
			state.Path = filepath.Join(abs, state.Path)
		}
	}
	environ := os.Environ()
	keys := make([]string, 0, len(env))
	for k := range env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		environ = append(environ, k+"="+env[k])
	}
	return &Env{Cwd: abs, State: state, Environ: environ, Tasks: &action.Tasks{State: state}}, nil
}

// DefaultStateDir is where a session on the absolute directory cwd keeps its state when
// hello names no state_dir: in the system's temporary directory, for the harnesses keep
// theirs outside the workspace and a replayed workspace must end as the recorded one did.
// The name is the same for every session of a user on cwd, so a restarted executor finds
// the background tasks of the one before.
func DefaultStateDir(cwd string) string {
	// FNV-1a, 64 bits, written out: hash/fnv cost 4 KB of the executor's size budget.
	h := uint64(14695981039346656037)
	for i := 0; i < len(cwd); i++ {
		h = (h ^ uint64(cwd[i])) * 1099511628211
	}
	return filepath.Join(os.TempDir(), fmt.Sprintf("tapebox-exec-state-%d-%016x", os.Getuid(), h))
}

// Getenv returns a variable of the session's environment (the last one wins).
func (e *Env) Getenv(key string) string {
	for i := len(e.Environ) - 1; i >= 0; i-- {
		if k, v, ok := strings.Cut(e.Environ[i], "="); ok && k == key {
			return v
		}
	}
	return ""
}

// Path resolves p against the session's working directory.
func (e *Env) Path(p string) string {
	if p == "" {
		return e.Cwd
	}
	if filepath.IsAbs(p) {
		return filepath.Clean(p)
	}
	return filepath.Join(e.Cwd, p)
}

// Registry finds harness modules by name.
type Registry struct {
	byName map[string]Harness
}

// NewRegistry returns a registry of the given modules.
func NewRegistry(hs ...Harness) *Registry {
	r := &Registry{byName: map[string]Harness{}}
	for _, h := range hs {
		r.byName[h.Name()] = h
	}
	return r
}

// Lookup returns the module named name.
func (r *Registry) Lookup(name string) (Harness, bool) {
	h, ok := r.byName[name]
	return h, ok
}

// Names lists the registered modules, sorted.
func (r *Registry) Names() []string {
	ns := make([]string, 0, len(r.byName))
	for n := range r.byName {
		ns = append(ns, n)
	}
	sort.Strings(ns)
	return ns
}

// Text returns a result holding one text block.
func Text(call tape.ToolCall, text string, isError bool) tape.ToolResult {
	return tape.ToolResult{
		ToolCallID: call.ID,
		Content:    []tape.Block{{Type: tape.BlockText, Text: text}},
		IsError:    isError,
	}
}

// Spawning is the answer to a call of a spawning tool (harnesses.Harness.SpawningTools),
// which should never reach the executor: the controller plays the subagent's thread.
func Spawning(call tape.ToolCall) tape.ToolResult {
	return Text(call, "tapebox-exec: "+call.Name+" spawns a subagent; the controller plays it, the executor does not", true)
}

// Replay returns the recorded result for call (the Noop action): its content verbatim,
// under the call's id, marked CopiedFromTape so that compare reports the call as not run.
// Without a recording it returns an error result naming the tool.
func Replay(call tape.ToolCall, recorded *tape.ToolResult) tape.ToolResult {
	if recorded == nil {
		return Text(call, fmt.Sprintf("tapebox-exec: tool %q has no effect in the sandbox and the call has no recorded result to replay", call.Name), true)
	}
	r := *recorded
	r.ToolCallID = call.ID
	r.DurationMS = nil
	r.CopiedFromTape = true
	if r.Content == nil {
		r.Content = []tape.Block{}
	}
	return r
}

// RecordedText returns the recorded result's text, "" without one.
func RecordedText(recorded *tape.ToolResult) string {
	if recorded == nil {
		return ""
	}
	return recorded.Text()
}

// InputError describes a tool input that does not decode into the tool's parameters.
type InputError struct {
	Tool string
	// Field is the parameter at fault ("" when the input is not an object at all).
	Field string
	// Want and Got are the expected and given JSON types, when known.
	Want, Got string
	Err       error
}

func (e *InputError) Error() string {
	if e.Field != "" && e.Want != "" {
		return fmt.Sprintf("%s: parameter %q must be %s, got %s", e.Tool, e.Field, e.Want, e.Got)
	}
	return fmt.Sprintf("%s: bad input: %v", e.Tool, e.Err)
}

func (e *InputError) Unwrap() error { return e.Err }

// Decode decodes a tool call's input into v, describing type mismatches as *InputError.
func Decode(call tape.ToolCall, v any) error {
	in := call.Input
	if len(in) == 0 || string(in) == "null" {
		in = []byte("{}")
	}
	err := jsonlex.Unmarshal(in, v)
	if err == nil {
		return nil
	}
	ie := &InputError{Tool: call.Name, Err: err}
	var te *jsonlex.TypeError
	if errors.As(err, &te) {
		ie.Field = te.Field
		ie.Got = te.Value
		ie.Want = jsonType(te.Type.Kind().String())
	}
	return ie
}

func jsonType(kind string) string {
	switch kind {
	case "string":
		return "string"
	case "bool":
		return "boolean"
	case "slice", "array":
		return "array"
	case "map", "struct":
		return "object"
	case "int", "int64", "int32", "uint", "uint64", "float64", "float32":
		return "number"
	}
	return kind
}
