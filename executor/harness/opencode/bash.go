package opencode

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/tapebox/tapebox/executor/action"
	"github.com/tapebox/tapebox/executor/harness"
	"github.com/tapebox/tapebox/tape"
)

// The limits of a tool's output (Truncate.limits: 2000 lines, 51200 bytes).
const (
	maxLines = 2000
	maxBytes = 51200
)

// defaultTimeout is bash's timeout when the call names none (120000 ms).
const defaultTimeout = 120000

type bashInput struct {
	Command string   `json:"command"`
	Timeout *float64 `json:"timeout"`
	Workdir string   `json:"workdir"`
}

// shell is the shell opencode runs commands with: $SHELL when it is an acceptable shell
// (not fish or nu), else /bin/bash, else sh.
func (s *session) shell() string {
	if sh := s.env.Getenv("SHELL"); sh != "" && filepath.IsAbs(sh) {
		switch filepath.Base(sh) {
		case "fish", "nu":
		default:
			if _, err := os.Stat(sh); err == nil {
				return sh
			}
		}
	}
	if _, err := os.Stat("/bin/bash"); err == nil {
		return "/bin/bash"
	}
	return action.FindShell()
}

// bash is opencode's ShellTool: the command runs with `SHELL -c` in workdir (else the
// working directory), stdout and stderr together; the result is the output's last 2000
// lines or 51200 bytes (past that, a note naming a file with more of it), "(no output)"
// when empty, and a <shell_metadata> note when the timeout (milliseconds) ended it. The
// exit code is not reported.
func (s *session) bash(ctx context.Context, call tape.ToolCall, _ *tape.ToolResult) tape.ToolResult {
	var in bashInput
	if err := harness.Decode(call, &in); err != nil {
		return fail(call, err.Error())
	}
	dir := s.env.Cwd
	if in.Workdir != "" {
		dir = s.path(in.Workdir)
	}
	// The spawner checks the directory first (FileSystem.access).
	if _, err := os.Stat(dir); err != nil {
		return fail(call, fsError("access", dir, err))
	}
	timeout := float64(defaultTimeout)
	if in.Timeout != nil {
		if *in.Timeout < 0 {
			return fail(call, "Invalid timeout value: "+jsNumber(*in.Timeout)+". Timeout must be a positive number.")
		}
		timeout = *in.Timeout
	}
	res, err := action.Shell(ctx, action.ShellRequest{
		Command: in.Command, Shell: s.shell(), Dir: dir, Env: s.env.Environ,
		Timeout: time.Duration((timeout + 100) * float64(time.Millisecond)),
	})
	if err != nil {
		return fail(call, err.Error())
	}
	full := action.LossyUTF8(res.Output)
	// The harness keeps the chunks of the last 2 x 51200 bytes.
	truncated := res.Dropped > 0
	kept := full
	if len(kept) > 2*maxBytes {
		kept, truncated = kept[len(kept)-2*maxBytes:], true
	}
	out, cut := tail(kept, maxLines, maxBytes)
	if cut {
		truncated = true
	}
	saved := ""
	if truncated {
		saved = s.saveOutput(kept)
	}
	if out == "" {
		out = "(no output)"
	}
	if truncated && saved != "" {
		out = "...output truncated...\n\nFull output saved to: " + saved + "\n\n" + out
	}
	if res.TimedOut {
		out += "\n\n<shell_metadata>\nshell tool terminated command after exceeding timeout " + jsNumber(timeout) +
			" ms. If this command is expected to take longer and is not waiting for interactive input, retry with a larger timeout value in milliseconds.\n</shell_metadata>"
	}
	return ok(call, out)
}

// tail keeps the last maxLines lines of text within maxBytes bytes (opencode's tail
// truncation): a last line longer than the limit keeps its end.
func tail(text string, lines, bytes int) (string, bool) {
	all := strings.Split(text, "\n")
	if len(all) <= lines && len(text) <= bytes {
		return text, false
	}
	var kept []string
	n := 0
	for i := len(all) - 1; i >= 0 && len(kept) < lines; i-- {
		u := len(all[i])
		if len(kept) > 0 {
			u++
		}
		if n+u > bytes {
			if len(kept) == 0 {
				b := all[i]
				start := max(len(b)-bytes, 0)
				for start < len(b) && !utf8.RuneStart(b[start]) {
					start++
				}
				kept = append(kept, b[start:])
			}
			break
		}
		kept = append(kept, all[i])
		n += u
	}
	for i, j := 0, len(kept)-1; i < j; i, j = i+1, j-1 {
		kept[i], kept[j] = kept[j], kept[i]
	}
	return strings.Join(kept, "\n"), true
}

// saveOutput keeps a long output in the state directory, as opencode keeps it under its
// data directory (tool-output/tool_ID), and returns the file's path ("" when it cannot).
func (s *session) saveOutput(text string) string {
	dir, err := s.env.State.Make("tool-output")
	if err != nil {
		return ""
	}
	f, err := os.CreateTemp(dir, "tool_")
	if err != nil {
		return ""
	}
	defer f.Close()
	if _, err := f.WriteString(text); err != nil {
		return ""
	}
	return f.Name()
}

// jsNumber formats n as JavaScript's String(n) does for the numbers a tool input holds.
func jsNumber(n float64) string {
	if n == float64(int64(n)) {
		return strconv.FormatInt(int64(n), 10)
	}
	return fmt.Sprint(n)
}
