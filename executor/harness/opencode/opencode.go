package opencode

import (
	"context"
	"os"
	"path/filepath"

	"github.com/tapebox/tapebox/executor/harness"
	"github.com/tapebox/tapebox/tape"
	"github.com/tapebox/tapebox/tape/harnesses"
)

// tools are the tools this module performs in the sandbox, and the spawning tools; every
// other tool replays its recorded result.
var tools = harness.Tools[*session]{
	"bash":      (*session).bash,
	"read":      (*session).read,
	"write":     (*session).write,
	"edit":      (*session).edit,
	"glob":      (*session).glob,
	"grep":      (*session).grep,
	"todowrite": (*session).todowrite,
	// apply_patch is offered to a GPT model in place of edit and write.
	"apply_patch": (*session).applyPatch,
}

// A spawning tool's call (task) should never reach the executor: the controller plays the
// subagent's thread. One that does gets an error, as in the other modules.
func init() {
	for _, name := range harnesses.OpenCode.SpawningTools {
		tools[name] = func(_ *session, _ context.Context, call tape.ToolCall, _ *tape.ToolResult) tape.ToolResult {
			return harness.Spawning(call)
		}
	}
}

// New returns the OpenCode module: its name and policy are harnesses.OpenCode's.
func New() harness.Module {
	return harness.Module{Spec: &harnesses.OpenCode, Start: func(env *harness.Env) harness.Session { return &session{env: env} }}
}

// session keeps nothing between calls: each bash call starts a new shell in the session's
// directory.
type session struct{ env *harness.Env }

func (s *session) Run(ctx context.Context, call tape.ToolCall, rec *tape.ToolResult) tape.ToolResult {
	return tools.Run(s, ctx, call, rec)
}

var _ harness.Unoffered = (*session)(nil)

// NotOffered answers a call of a tool the recorded request did not offer (edit or write
// asked of a GPT model, which gets apply_patch instead; apply_patch asked of any other):
// opencode answers "The arguments provided to the tool are invalid: Model tried to call
// unavailable tool 'NAME'. Available tools: ..." with the tools it has, which the executor
// does not know, so the recorded answer is replayed.
func (s *session) NotOffered(_ context.Context, call tape.ToolCall, rec *tape.ToolResult) tape.ToolResult {
	return harness.Replay(call, rec)
}

// Immediate says a call replays at once (a tool not performed here).
func (s *session) Immediate(call tape.ToolCall) bool { return tools.Immediate(call) }

func (s *session) Close() error { return nil }

// fail is a tool that threw: opencode sends the error's message as the result, is_error
// set.
func fail(call tape.ToolCall, msg string) tape.ToolResult { return harness.Text(call, msg, true) }

func ok(call tape.ToolCall, text string) tape.ToolResult { return harness.Text(call, text, false) }

// path resolves a tool's path as opencode does: an absolute path as it is, else joined to
// the working directory (path.join, which cleans).
func (s *session) path(p string) string {
	if filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(s.env.Cwd, p)
}

// exists says whether p exists (opencode's existsSafe).
func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
