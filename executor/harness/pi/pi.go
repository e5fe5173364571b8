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

// tools are the tools this module performs in the sandbox; every other tool (find, which
// runs fd; an extension's tools) replays its recorded result.
var tools = harness.Tools[*session]{
	"grep":  (*session).grep,
	"read":  (*session).read,
	"bash":  (*session).bash,
	"edit":  (*session).edit,
	"write": (*session).write,
	"ls":    (*session).ls,
}

// New returns the Pi module: its name and policy are harnesses.Pi's.
func New() harness.Module {
	return harness.Module{Spec: &harnesses.Pi, Start: func(env *harness.Env) harness.Session { return &session{env} }}
}

// session keeps nothing between calls: Pi's tools are stateless (bash starts a new shell
// in the session's directory every time).
type session struct{ env *harness.Env }

func (s *session) Run(ctx context.Context, call tape.ToolCall, rec *tape.ToolResult) tape.ToolResult {
	return tools.Run(s, ctx, call, rec)
}

// NotOffered answers a call of a tool the recorded request did not offer: NotFound.
func (s *session) NotOffered(_ context.Context, call tape.ToolCall, _ *tape.ToolResult) tape.ToolResult {
	return NotFound(call)
}

// NotFound is Pi's answer to a call of a tool its request did not offer (pi-agent-core's
// "Tool NAME not found", an error); nothing runs.
func NotFound(call tape.ToolCall) tape.ToolResult { return fail(call, "Tool "+call.Name+" not found") }

// Immediate says a call runs on the executor's reading goroutine: a Noop, which replays
// its recorded result at once, and edit and write. Pi queues the changes to one file in the
// order of the calls (withFileMutationQueue), so that two edits of a file in one answer
// apply one after the other; run as they arrive, they do here too, and they take no longer
// than a file's read and write.
func (s *session) Immediate(call tape.ToolCall) bool {
	return tools.Immediate(call) || call.Name == "edit" || call.Name == "write"
}

func (s *session) Close() error { return nil }

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

// errnos are libuv's codes and descriptions of the errors a file tool meets.
var errnos = []struct {
	no         syscall.Errno
	code, desc string
}{
	{syscall.ENOENT, "ENOENT", "no such file or directory"},
	{syscall.EACCES, "EACCES", "permission denied"},
	{syscall.EISDIR, "EISDIR", "illegal operation on a directory"},
	{syscall.ENOTDIR, "ENOTDIR", "not a directory"},
	{syscall.EEXIST, "EEXIST", "file already exists"},
	{syscall.EPERM, "EPERM", "operation not permitted"},
	{syscall.EROFS, "EROFS", "read-only file system"},
	{syscall.ENOSPC, "ENOSPC", "no space left on device"},
	{syscall.ELOOP, "ELOOP", "too many symbolic links encountered"},
	{syscall.ENAMETOOLONG, "ENAMETOOLONG", "name too long"},
}

// errnoName returns libuv's code and description of err's errno.
func errnoName(err error) (code, desc string) {
	var en syscall.Errno
	if !errors.As(err, &en) {
		return "UNKNOWN", err.Error()
	}
	for _, e := range errnos {
		if e.no == en {
			return e.code, e.desc
		}
	}
	return "E" + strings.ToUpper(strings.ReplaceAll(en.Error(), " ", "_")), en.Error()
}
