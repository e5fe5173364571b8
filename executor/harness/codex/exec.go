package codex

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/tapebox/tapebox/executor/action"
	"github.com/tapebox/tapebox/executor/harness"
	"github.com/tapebox/tapebox/internal/jsonlex"
	"github.com/tapebox/tapebox/tape"
)

const (
	defaultExecYieldMS  = 10000
	defaultWriteYieldMS = 250
	minYieldMS          = 250
	maxYieldMS          = 30000
	defaultMaxTokens    = 10000
	defaultShellTimeout = 10000
	timeoutExitCode     = 124

	// earlyExitGrace is how long Codex waits after starting a command for it to exit,
	// before the yield (and the wall time) starts: a quick command reports "Wall time:
	// 0.0000 seconds", and one still running is polled after up to 150 ms + yield.
	earlyExitGrace = 150 * time.Millisecond
	// inputSettle is how long Codex lets a process react to write_stdin's characters
	// before the yield starts.
	inputSettle = 100 * time.Millisecond
)

type execInput struct {
	Cmd             string `json:"cmd"`
	Workdir         string `json:"workdir"`
	Shell           string `json:"shell"`
	Login           *bool  `json:"login"`
	TTY             bool   `json:"tty"`
	YieldTimeMS     *int64 `json:"yield_time_ms"`
	MaxOutputTokens *int   `json:"max_output_tokens"`
}

func yield(v *int64, def int64) time.Duration {
	ms := def
	if v != nil {
		ms = *v
	}
	ms = max(minYieldMS, min(ms, maxYieldMS))
	return time.Duration(ms) * time.Millisecond
}

// maxTokens is max_output_tokens, at most the default: Codex 0.171 cuts an output of
// 10,002 tokens asked for with max_output_tokens 20000.
func maxTokens(v *int) int {
	if v != nil && *v > 0 {
		return min(*v, defaultMaxTokens)
	}
	return defaultMaxTokens
}

func taskID(session int) string { return "exec-" + strconv.Itoa(session) }

func newSessionID() int {
	var b [4]byte
	action.FillRandom(b[:])
	return int(binary.BigEndian.Uint32(b[:])%90000) + 10000
}

func (s *session) execCommand(ctx context.Context, call tape.ToolCall, rec *tape.ToolResult) tape.ToolResult {
	var in execInput
	if err := harness.Decode(call, &in); err != nil {
		return badInput(call, err)
	}
	if strings.TrimSpace(in.Cmd) == "" {
		return badInput(call, errors.New("missing field `cmd`"))
	}
	if patch, ok := heredocPatch(in.Cmd); ok {
		return s.patchAsExec(call, in.Workdir, patch)
	}
	env, login := s.env.Environ, in.Login == nil || *in.Login
	if login {
		if snap := s.loginEnv(ctx); snap != nil {
			env, login = snap, false
		}
	}
	dir := s.env.Path(in.Workdir)
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		if err == nil {
			err = syscall.ENOTDIR
		}
		if !in.TTY {
			return text(call, `exec_command failed: CreateProcess { message: "Rejected(\"Failed to create unified exec process: `+action.IOErrorText(err)+`\")" }`)
		}
		// A terminal's command starts in the home directory instead (portable-pty).
		dir = homeDir(s.env.Environ)
	}
	id := recordedSession(rec)
	if id == 0 {
		id = newSessionID()
	}
	for i := 0; i < 5; i++ {
		if _, err := s.env.Tasks.Status(taskID(id)); err != nil {
			break
		}
		id = newSessionID()
	}
	// Without tty, Codex gives the command no stdin (it reads end of file at once, and
	// write_stdin can only poll); with tty, a pseudo-terminal that write_stdin types into.
	_, err := s.env.Tasks.Start(ctx, action.TaskRequest{
		ID: taskID(id), Command: in.Cmd, Shell: shellPath(in.Shell), Login: login,
		Dir: dir, Env: env, TTY: in.TTY,
	})
	if err != nil {
		return text(call, "exec_command failed: "+err.Error())
	}
	if _, err := s.env.Tasks.Wait(ctx, taskID(id), earlyExitGrace); err != nil {
		return text(call, "exec_command failed: "+err.Error())
	}
	return s.collect(ctx, call, id, yield(in.YieldTimeMS, defaultExecYieldMS), maxTokens(in.MaxOutputTokens))
}

// homeDir is HOME in environ, or "/".
func homeDir(environ []string) string {
	home := "/"
	for _, kv := range environ {
		if v, ok := strings.CutPrefix(kv, "HOME="); ok && v != "" {
			home = v
		}
	}
	return home
}

// collect waits up to wait for the session's command, then reports the output since the
// last poll in unified exec's format. The wall time is that wait: none for a command
// that had already ended.
func (s *session) collect(ctx context.Context, call tape.ToolCall, id int, wait time.Duration, tokens int) tape.ToolResult {
	tid := taskID(id)
	start := time.Now()
	st, err := s.env.Tasks.Status(tid)
	var wall time.Duration
	if err == nil && st.Running {
		st, err = s.env.Tasks.Wait(ctx, tid, wait)
		wall = time.Since(start)
	}
	if err != nil {
		return text(call, "exec_command failed: "+err.Error())
	}
	s.mu.Lock()
	out, err := s.env.Tasks.Poll(tid)
	s.mu.Unlock()
	if err != nil {
		return text(call, "exec_command failed: "+err.Error())
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Chunk ID: %s\nWall time: %.4f seconds\n", chunkID(), wall.Seconds())
	if st.Running {
		fmt.Fprintf(&b, "Process running with session ID %d\n", id)
	} else {
		code := -1
		if st.ExitCode != nil {
			code = *st.ExitCode
		}
		fmt.Fprintf(&b, "Process exited with code %d\n", code)
		// Codex ends what the command left in its process group (background jobs).
		_ = s.env.Tasks.KillGroup(tid)
		_ = s.env.Tasks.Remove(tid)
	}
	// Codex reads the output as UTF-8 the way Rust's from_utf8_lossy does, one U+FFFD for
	// each invalid sequence. Its header counts the tokens of the bytes, the truncation
	// warning those of that text (Codex 0.171: \xe9 bytes count 3 bytes each there).
	utf := action.LossyUTF8(out)
	shown := TruncateTokens(utf, tokens)
	fmt.Fprintf(&b, "Original token count: %d\nOutput:\n", ApproxTokens(len(out)))
	if shown != utf {
		fmt.Fprintf(&b, "Warning: truncated output (original token count: %d)\n", ApproxTokens(len(utf)))
	}
	b.WriteString(shown)
	return text(call, b.String())
}

type writeInput struct {
	SessionID       json.RawMessage `json:"session_id"`
	Chars           string          `json:"chars"`
	YieldTimeMS     *int64          `json:"yield_time_ms"`
	MaxOutputTokens *int            `json:"max_output_tokens"`
}

func (s *session) writeStdin(ctx context.Context, call tape.ToolCall, rec *tape.ToolResult) tape.ToolResult {
	var in writeInput
	if err := harness.Decode(call, &in); err != nil {
		return badInput(call, err)
	}
	raw := strings.Trim(string(in.SessionID), `"`)
	id, err := strconv.Atoi(raw)
	if err != nil {
		return badInput(call, fmt.Errorf("invalid session_id %s", in.SessionID))
	}
	if _, err := s.env.Tasks.Status(taskID(id)); err != nil {
		return text(call, fmt.Sprintf("write_stdin failed: Unknown process id %d", id))
	}
	if in.Chars != "" {
		err := s.env.Tasks.Write(taskID(id), []byte(in.Chars))
		if errors.Is(err, action.ErrNoStdin) {
			return text(call, "write_stdin failed: stdin is closed for this session; rerun exec_command with tty=true to keep stdin open")
		}
		if err != nil {
			return text(call, "write_stdin failed: "+err.Error())
		}
		select {
		case <-time.After(inputSettle):
		case <-ctx.Done():
		}
	}
	return s.collect(ctx, call, id, yield(in.YieldTimeMS, defaultWriteYieldMS), maxTokens(in.MaxOutputTokens))
}

type shellInput struct {
	Command   json.RawMessage `json:"command"`
	Workdir   string          `json:"workdir"`
	TimeoutMS *int64          `json:"timeout_ms"`
	Login     *bool           `json:"login"`
	// local_shell wraps its parameters in an action.
	Action *struct {
		Command          []string          `json:"command"`
		WorkingDirectory string            `json:"working_directory"`
		TimeoutMS        *int64            `json:"timeout_ms"`
		Env              map[string]string `json:"env"`
	} `json:"action"`
}

// shell runs the argv of the shell, container.exec and local_shell tools.
func (s *session) shell(ctx context.Context, call tape.ToolCall, rec *tape.ToolResult) tape.ToolResult {
	var in shellInput
	if err := harness.Decode(call, &in); err != nil {
		return badInput(call, err)
	}
	var argv []string
	workdir, timeout := in.Workdir, in.TimeoutMS
	env := s.env.Environ
	if in.Action != nil {
		argv, workdir, timeout = in.Action.Command, in.Action.WorkingDirectory, in.Action.TimeoutMS
		for k, v := range in.Action.Env {
			env = append(env[:len(env):len(env)], k+"="+v)
		}
	} else if len(in.Command) > 0 {
		if err := jsonlex.Unmarshal(in.Command, &argv); err != nil {
			return badInput(call, fmt.Errorf("invalid type for `command`: expected a sequence: %w", err))
		}
	}
	if len(argv) == 0 {
		return badInput(call, errors.New("missing field `command`"))
	}
	jsonForm := !strings.HasPrefix(harness.RecordedText(rec), "Exit code:")
	if patch, ok := argvPatch(argv); ok {
		return s.patchAsShell(call, workdir, patch, jsonForm)
	}
	return s.runShell(ctx, call, action.ShellRequest{Argv: argv, Dir: s.env.Path(workdir), Env: env}, timeout, jsonForm)
}

func (s *session) shellCommand(ctx context.Context, call tape.ToolCall, rec *tape.ToolResult) tape.ToolResult {
	var in shellInput
	if err := harness.Decode(call, &in); err != nil {
		return badInput(call, err)
	}
	var script string
	if err := jsonlex.Unmarshal(in.Command, &script); err != nil || script == "" {
		return badInput(call, errors.New("missing field `command`"))
	}
	jsonForm := strings.HasPrefix(harness.RecordedText(rec), "{")
	if patch, ok := heredocPatch(script); ok {
		return s.patchAsShell(call, in.Workdir, patch, jsonForm)
	}
	login := in.Login == nil || *in.Login
	return s.runShell(ctx, call, action.ShellRequest{Command: script, Login: login, Dir: s.env.Path(in.Workdir), Env: s.env.Environ}, in.TimeoutMS, jsonForm)
}

func (s *session) runShell(ctx context.Context, call tape.ToolCall, req action.ShellRequest, timeoutMS *int64, jsonForm bool) tape.ToolResult {
	ms := int64(defaultShellTimeout)
	if timeoutMS != nil && *timeoutMS > 0 {
		ms = *timeoutMS
	}
	req.Timeout = time.Duration(ms) * time.Millisecond
	res, err := action.Shell(ctx, req)
	if err != nil {
		return text(call, "execution error: "+err.Error())
	}
	out := string(res.Output)
	code := res.ExitCode
	if res.TimedOut {
		code = timeoutExitCode
		out = fmt.Sprintf("command timed out after %d milliseconds\n%s", res.Duration.Milliseconds(), out)
	}
	return text(call, shellOutput(out, code, res.Duration, jsonForm))
}

// shellOutput words a finished command as the shell tools do.
func shellOutput(out string, code int, d time.Duration, jsonForm bool) string {
	shown := TruncateTokens(out, defaultMaxTokens)
	if jsonForm {
		return fmt.Sprintf(`{"output":%s,"metadata":{"exit_code":%d,"duration_seconds":%s}}`, jsonString(shown), code, serdeFloat(d))
	}
	return fmt.Sprintf("Exit code: %d\nWall time: %s seconds\nOutput:\n%s", code, rustFloat(d), shown)
}

// jsonString quotes s as serde_json does: only quotes, backslashes and control
// characters are escaped.
func jsonString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"':
			b.WriteString(`\"`)
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\b':
			b.WriteString(`\b`)
		case r == '\f':
			b.WriteString(`\f`)
		case r < 0x20:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// argvPatch recognizes apply_patch invoked through a shell tool.
func argvPatch(argv []string) (string, bool) {
	if len(argv) == 2 && (argv[0] == "apply_patch" || argv[0] == "applypatch") {
		return argv[1], true
	}
	if len(argv) == 3 && (argv[1] == "-lc" || argv[1] == "-c") {
		return heredocPatch(argv[2])
	}
	return "", false
}

var heredoc = regexp.MustCompile(`(?s)^\s*(?:apply_patch|applypatch)\s+<<\s*['"]?(\w+)['"]?\s*\n(.*?)\n(\w+)\s*$`)

// heredocPatch recognizes `apply_patch <<'EOF' ... EOF` in a script.
func heredocPatch(script string) (string, bool) {
	m := heredoc.FindStringSubmatch(script)
	if m == nil || m[1] != m[3] {
		return "", false
	}
	return m[2], true
}

var recordedSessionID = regexp.MustCompile(`Process running with session ID (\d+)`)

// recordedSession returns the session id of the recording, so that the replay's later
// write_stdin calls, which name it, reach the same session; 0 when there is none.
func recordedSession(rec *tape.ToolResult) int {
	m := recordedSessionID.FindStringSubmatch(harness.RecordedText(rec))
	if m == nil {
		return 0
	}
	n, err := strconv.Atoi(m[1])
	if err != nil || n <= 0 {
		return 0
	}
	return n
}
