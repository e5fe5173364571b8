package gemini

import (
	"context"
	"os"
	"path/filepath"
	"strings"

	"github.com/tapebox/tapebox/executor/harness"
	"github.com/tapebox/tapebox/internal/jsonlex"
	"github.com/tapebox/tapebox/tape"
	"github.com/tapebox/tapebox/tape/harnesses"
)

// tools are the tools this module performs in the sandbox; every other tool replays its
// recorded result.
var tools = harness.Tools[*session]{
	"run_shell_command": (*session).shell,
	"read_file":         (*session).readFile,
	"write_file":        (*session).writeFile,
	"replace":           (*session).replace,
	"list_directory":    (*session).listDirectory,
	"glob":              (*session).glob,
	"grep_search":       (*session).grepSearch,
	"write_todos":       (*session).writeTodos,
}

// New returns the Gemini CLI module: its name and policy are harnesses.Gemini's.
func New() harness.Module {
	return harness.Module{Spec: &harnesses.Gemini, Start: func(env *harness.Env) harness.Session { return &session{env} }}
}

// session keeps nothing between calls: each shell command starts a new bash in the
// session's directory.
type session struct{ env *harness.Env }

func (s *session) Run(ctx context.Context, call tape.ToolCall, rec *tape.ToolResult) tape.ToolResult {
	for _, sp := range harnesses.Gemini.SpawningTools {
		if call.Name == sp {
			return harness.Spawning(call)
		}
	}
	return tools.Run(s, ctx, call, rec)
}

// NotOffered answers a call of a tool the recorded request did not offer as the CLI's
// scheduler does: "Tool "NAME" not found." with the tools it has (which the executor does
// not know), so the recorded answer is replayed.
func (s *session) NotOffered(_ context.Context, call tape.ToolCall, rec *tape.ToolResult) tape.ToolResult {
	return harness.Replay(call, rec)
}

// Immediate: the Noops, and the edit tools, which the CLI runs one after the other in call
// order (its scheduler does not run them in parallel).
func (s *session) Immediate(call tape.ToolCall) bool {
	return tools.Immediate(call) || call.Name == "write_file" || call.Name == "replace"
}

func (s *session) Close() error { return nil }

// ok is a functionResponse {"output": text}.
func ok(call tape.ToolCall, text string) tape.ToolResult { return harness.Text(call, text, false) }

// fail is a functionResponse {"error": msg}.
func fail(call tape.ToolCall, msg string) tape.ToolResult { return harness.Text(call, msg, true) }

// args decodes a call's input; a bad input replays the recorded result (the CLI refuses
// it with a schema message of its own before the tool runs).
func args(call tape.ToolCall, v any) bool {
	in := []byte(call.Input)
	if len(in) == 0 {
		in = []byte(`{}`)
	}
	return jsonlex.Unmarshal(in, v) == nil
}

// resolve is the absolute path the CLI works on for p (path.resolve against the working
// directory), and whether it lies inside the working directory.
func (s *session) resolve(p string) (string, bool) {
	abs := p
	if !filepath.IsAbs(abs) {
		abs = filepath.Join(s.env.Cwd, abs)
	}
	abs = filepath.Clean(abs)
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		abs = real
	} else {
		if dir, err := filepath.EvalSymlinks(filepath.Dir(abs)); err == nil {
			abs = filepath.Join(dir, filepath.Base(abs))
		}
		// A dangling link names its target (the CLI's resolveToRealPath follows it).
		if target, err := os.Readlink(abs); err == nil {
			if !filepath.IsAbs(target) {
				target = filepath.Join(filepath.Dir(abs), target)
			}
			abs = filepath.Clean(target)
		}
	}
	cwd := s.env.Cwd
	if real, err := filepath.EvalSymlinks(cwd); err == nil {
		cwd = real
	}
	inside := abs == cwd || strings.HasPrefix(abs, strings.TrimSuffix(cwd, "/")+"/")
	if inside && blockedSegment(strings.TrimPrefix(abs, cwd)) {
		// The CLI's workspace holds no path through .git, .env or node_modules: it answers
		// "Path not in workspace", naming its own temporary directory, as for a path outside.
		inside = false
	}
	return abs, inside
}

// blockedSegment is the CLI's hasBlockedPathSegment (packages/core/src/utils/paths.ts) of a
// path relative to the workspace: a segment that is .git, .env or node_modules, or a
// gha-creds-*.json file, once cut at a colon, trimmed of trailing spaces and dots and
// lower-cased, or a Windows short name of one of them (GIT~1, NODE_M~1).
func blockedSegment(rel string) bool {
	for _, seg := range strings.FieldsFunc(rel, func(r rune) bool { return r == '/' || r == '\\' }) {
		seg, _, _ = strings.Cut(seg, ":")
		seg = strings.ToLower(strings.TrimRight(seg, " ."))
		switch {
		case seg == ".git", seg == ".env", seg == "node_modules",
			strings.HasPrefix(seg, "gha-creds-") && strings.HasSuffix(seg, ".json"),
			shortName(seg, "git", "gi", ""), shortName(seg, "env", "en", ""), shortName(seg, "node_m", "no", ""),
			shortName(seg, "gha-cr", "gh", ".json"), shortName(seg, "gha-cr", "gh", ".jso"):
			return true
		}
	}
	return false
}

// shortName matches the CLI's short-name patterns: ^(long|short[0-9a-f]{4})~\d+ext$.
func shortName(seg, long, short, ext string) bool {
	seg, ok := strings.CutSuffix(seg, ext)
	if !ok {
		return false
	}
	head, num, ok := strings.Cut(seg, "~")
	if !ok || num == "" || strings.Trim(num, "0123456789") != "" {
		return false
	}
	if head == long {
		return true
	}
	h, ok := strings.CutPrefix(head, short)
	return ok && len(h) == 4 && strings.Trim(h, "0123456789abcdef") == ""
}
