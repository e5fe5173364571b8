package pi

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/tapebox/tapebox/executor/action"
	"github.com/tapebox/tapebox/tape"
	"github.com/tapebox/tapebox/tape/harnesses"
)

// shell is the shell Pi runs commands with (getShellConfig): /bin/bash, else bash on the
// PATH, else sh.
func shell() string {
	if _, err := os.Stat("/bin/bash"); err == nil {
		return "/bin/bash"
	}
	return action.FindShell()
}

func (s *session) bash(ctx context.Context, call tape.ToolCall, _ *tape.ToolResult) tape.ToolResult {
	a := parseArgs(call)
	command, _ := a.str("command", true)
	timeout, hasTimeout := a.num("timeout")
	if r, bad := a.failed(call); bad {
		return r
	}
	if _, err := os.Stat(s.env.Cwd); err != nil {
		return fail(call, "Working directory does not exist: "+s.env.Cwd+"\nCannot execute bash commands.")
	}
	req := action.ShellRequest{Command: command, Shell: shell(), Dir: s.env.Cwd, Env: s.env.Environ}
	if hasTimeout && timeout > 0 {
		req.Timeout = time.Duration(timeout * float64(time.Second))
	}
	res, err := action.Shell(ctx, req)
	if err != nil {
		return fail(call, err.Error())
	}
	if res.TimedOut {
		return fail(call, appendStatus(s.bashOutput(res, ""), "Command timed out after "+jsNumber(timeout)+" seconds"))
	}
	out := s.bashOutput(res, "(no output)")
	// A command killed by a signal has no exit code in Node: Pi reports its output alone.
	if res.ExitCode != 0 && res.Signal == "" {
		return fail(call, appendStatus(out, fmt.Sprintf("Command exited with code %d", res.ExitCode)))
	}
	return ok(call, out)
}

func appendStatus(text, status string) string {
	if text == "" {
		return status
	}
	return text + "\n\n" + status
}

// bashOutput is Pi's formatOutput: the output's last 2000 lines or 50 KB, and past that
// a note naming the file that holds all of it.
func (s *session) bashOutput(res action.ShellResult, empty string) string {
	raw := res.Output
	if !harnesses.Pi.Has(s.env.HarnessVersion, harnesses.PiBashWholeOutput) {
		raw = rollingTail(raw)
	}
	text := action.LossyUTF8(raw)
	t := truncateTail(text, maxLines, maxBytes)
	if !t.truncated {
		if text == "" {
			return empty
		}
		return text
	}
	full := s.saveOutput(res.Output)
	out := t.content
	if out == "" {
		out = empty
	}
	last := t.totalLines
	first := last - t.outputLines + 1
	switch {
	case t.lastLinePartial:
		lastLine := text[strings.LastIndexByte(text, '\n')+1:]
		return fmt.Sprintf("%s\n\n[Showing last %s of line %d (line is %s). Full output: %s]", out, formatSize(t.outputBytes), last, formatSize(len(lastLine)), full)
	case t.byLines:
		return fmt.Sprintf("%s\n\n[Showing lines %d-%d of %d. Full output: %s]", out, first, last, t.totalLines, full)
	}
	return fmt.Sprintf("%s\n\n[Showing lines %d-%d of %d (%s limit). Full output: %s]", out, first, last, t.totalLines, formatSize(maxBytes), full)
}

// rollingTail is what Pi before 0.73 kept of a command's output to format it: the last
// of the chunks it read (64 KiB each from a fast writer's pipe), dropping the oldest while
// they held more than 100 KB and more than one was left.
func rollingTail(out []byte) []byte {
	const chunk, keep = 64 << 10, 2 * maxBytes
	start, n := 0, len(out)
	for n > keep && len(out)-start > chunk {
		start += chunk
		n = len(out) - start
	}
	return out[start:]
}

// saveOutput keeps a truncated command's whole output in the state directory, as Pi keeps
// it in a temporary file (pi-bash-<id>.log), and returns the file's path.
func (s *session) saveOutput(out []byte) string {
	dir, err := s.env.State.Make("tool-results")
	if err != nil {
		dir = filepath.Join(s.env.State.Path, "tool-results")
	}
	path := filepath.Join(dir, action.NewTaskID("pi-bash-", 16)+".log")
	_ = os.WriteFile(path, out, 0o600)
	return path
}
