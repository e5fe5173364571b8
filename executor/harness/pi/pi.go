package pi

import (
	"context"
	"errors"
	"strings"
	"syscall"

	"github.com/tapebox/tapebox/executor/harness"
	"github.com/tapebox/tapebox/tape"
	"github.com/tapebox/tapebox/tape/harnesses"
)

// New returns the Pi module: its name and policy are harnesses.Pi's.
func New() harness.Module {
	return harness.Module{Spec: &harnesses.Pi, Start: func(env *harness.Env) harness.Session {
		return &session{env: env}
	}}
}

type session struct {
	env *harness.Env
}

type toolFunc func(s *session, ctx context.Context, call tape.ToolCall, rec *tape.ToolResult) tape.ToolResult

// tools are the tools this module performs in the sandbox; every other tool (grep and find,
// which run ripgrep and fd; an extension's tools) replays its recorded result.
var tools map[string]toolFunc

func init() {
	tools = map[string]toolFunc{
		"read":  (*session).read,
		"bash":  (*session).bash,
		"edit":  (*session).edit,
		"write": (*session).write,
		"ls":    (*session).ls,
	}
}

func (s *session) Run(ctx context.Context, call tape.ToolCall, rec *tape.ToolResult) tape.ToolResult {
	f, ok := tools[call.Name]
	if !ok {
		return harness.Replay(call, rec)
	}
	return f(s, ctx, call, rec)
}

// Immediate says a call is a Noop: it replays its recorded result at once.
func (s *session) Immediate(call tape.ToolCall) bool {
	_, performed := tools[call.Name]
	return !performed
}

func (s *session) Close() error { return s.env.Tasks.Close() }

// fail is a tool that threw: Pi sends the error's message as the result, is_error set.
func fail(call tape.ToolCall, msg string) tape.ToolResult { return harness.Text(call, msg, true) }

func ok(call tape.ToolCall, text string) tape.ToolResult { return harness.Text(call, text, false) }

// nodeError words a failed file system call as Node's fs does:
// "ENOENT: no such file or directory, open '/app/x'" (no path for a read of an open
// descriptor: "EISDIR: illegal operation on a directory, read").
func nodeError(err error, syscallName, path string) string {
	code, desc := errnoName(err)
	msg := code + ": " + desc + ", " + syscallName
	if path != "" {
		msg += " '" + path + "'"
	}
	return msg
}

// errnoCode is the code of Node's error ("ENOENT"), as edit words a file it cannot open
// ("Error code: ENOENT").
func errnoCode(err error) string {
	code, _ := errnoName(err)
	return code
}

// errnoName returns libuv's code and description of err's errno.
func errnoName(err error) (code, desc string) {
	var en syscall.Errno
	if !errors.As(err, &en) {
		return "UNKNOWN", err.Error()
	}
	switch en {
	case syscall.ENOENT:
		return "ENOENT", "no such file or directory"
	case syscall.EACCES:
		return "EACCES", "permission denied"
	case syscall.EISDIR:
		return "EISDIR", "illegal operation on a directory"
	case syscall.ENOTDIR:
		return "ENOTDIR", "not a directory"
	case syscall.EEXIST:
		return "EEXIST", "file already exists"
	case syscall.EPERM:
		return "EPERM", "operation not permitted"
	case syscall.EROFS:
		return "EROFS", "read-only file system"
	case syscall.ENOSPC:
		return "ENOSPC", "no space left on device"
	case syscall.ELOOP:
		return "ELOOP", "too many symbolic links encountered"
	case syscall.ENAMETOOLONG:
		return "ENAMETOOLONG", "name too long"
	}
	return "E" + strings.ToUpper(strings.ReplaceAll(en.Error(), " ", "_")), en.Error()
}
