package claudecode

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/tapebox/tapebox/executor/action"
	"github.com/tapebox/tapebox/executor/harness"
	"github.com/tapebox/tapebox/internal/jsonlex"
	"github.com/tapebox/tapebox/tape"
)

const (
	defaultTimeoutMS = 120000
	maxTimeoutMS     = 600000
	defaultMaxOutput = 30000
	maxMaxOutput     = 150000
)

type bashInput struct {
	Command         string `json:"command"`
	Timeout         *int64 `json:"timeout"`
	Description     string `json:"description"`
	RunInBackground bool   `json:"run_in_background"`
}

func (s *session) bash(ctx context.Context, call tape.ToolCall, rec *tape.ToolResult) tape.ToolResult {
	var in bashInput
	if r, ok := decode(call, &in); !ok {
		return r
	}
	if strings.TrimSpace(in.Command) == "" {
		return missingParam(call, "command")
	}
	if in.RunInBackground {
		return s.bashBackground(ctx, call, in, rec)
	}
	timeout := int64(defaultTimeoutMS)
	if in.Timeout != nil && *in.Timeout > 0 {
		timeout = min(*in.Timeout, maxTimeoutMS)
	}
	cwdFile, err := os.CreateTemp("", "tapebox-cwd-*")
	if err != nil {
		return harness.Text(call, "tapebox-exec: "+err.Error(), true)
	}
	cwdFile.Close()
	defer os.Remove(cwdFile.Name())
	env := append(s.env.Environ[:len(s.env.Environ):len(s.env.Environ)], "TAPEBOX_CWD_FILE="+cwdFile.Name())
	errFile := ""
	if s.before("2.1") {
		// Claude Code 2.0 reads the command's stdout and stderr from two pipes and shows
		// stdout first: the command's stderr goes to a file of its own (see shellPrelude).
		f, err := os.CreateTemp("", "tapebox-stderr-*")
		if err != nil {
			return harness.Text(call, "tapebox-exec: "+err.Error(), true)
		}
		f.Close()
		defer os.Remove(f.Name())
		errFile = f.Name()
		env = append(env, "TAPEBOX_STDERR_FILE="+errFile)
	}
	script := s.shellPrelude() + in.Command + "\n__tapebox_status=$?\npwd -P >| \"$TAPEBOX_CWD_FILE\" 2>/dev/null\nexit $__tapebox_status"
	s.mu.Lock()
	dir := s.cwd
	s.mu.Unlock()
	// The command runs as a background task from the start, so that one which outlives
	// its timeout can be moved to the background, as Claude Code does, rather than killed.
	id := s.taskID(rec)
	tasks := s.env.Tasks
	if _, err := tasks.Start(ctx, action.TaskRequest{
		ID: id, Command: script, Dir: dir, ExitLine: true, Env: env,
	}); err != nil {
		return harness.Text(call, err.Error(), true)
	}
	st, err := tasks.Wait(ctx, id, time.Duration(timeout)*time.Millisecond)
	if err != nil {
		return harness.Text(call, err.Error(), true)
	}
	outBytes, _ := tasks.Output(id)
	out := string(outBytes)
	if st.Running && !s.before("2.1") && isSleep(in.Command) {
		// Claude Code 2.1 does not move a sleep to the background: it kills it.
		_, _ = tasks.Kill(id)
		_ = tasks.Remove(id)
		msg := "Command timed out after " + formatSeconds(timeout)
		stdout := strings.TrimRight(leadingBlank.ReplaceAllString(out, ""), " \t\r\n\v\f")
		return harness.Text(call, strings.Join(nonEmpty([]string{"Exit code 143", msg, stdout}), "\n"), true)
	}
	if st.Running && s.before("2.1") {
		// Claude Code 2.0 words a command moved to the background at its timeout as one
		// started there.
		stdout := strings.TrimRight(leadingBlank.ReplaceAllString(out, ""), " \t\r\n\v\f")
		msg := fmt.Sprintf("Command running in background with ID: %s. Output is being written to: %s", id, tasks.OutputPath(id))
		return harness.Text(call, strings.Join(nonEmpty([]string{stdout, msg}), "\n"), false)
	}
	if st.Running {
		stdout := strings.TrimRight(leadingBlank.ReplaceAllString(out, ""), " \t\r\n\v\f")
		msg := fmt.Sprintf("Command did not complete within its %ds timeout and was moved to the background (ID: %s). Output is being written to: %s.%s",
			max(1, (timeout+500)/1000), id, tasks.OutputPath(id), movedTail(rec))
		return harness.Text(call, strings.Join(nonEmpty([]string{stdout, msg}), "\n"), false)
	}
	_ = tasks.Remove(id)
	resetNote := s.updateCwd(cwdFile.Name())
	code := -1
	if st.ExitCode != nil {
		code = *st.ExitCode
	}
	if errFile != "" {
		stderr, _ := os.ReadFile(errFile)
		if code != 0 && !exitNotError(in.Command, code) {
			// Claude Code 2.0's error: the code, stderr, then stdout, cut in the middle
			// past 10000 characters; no note of a reset cwd.
			return harness.Text(call, cutMiddle20(strings.TrimSpace(strings.Join(nonEmpty([]string{"Exit code " + strconv.Itoa(code), string(stderr), out}), "\n"))), true)
		}
		out = strings.TrimRight(out, " \t\r\n\v\f") + "\n" + strings.TrimRight(string(stderr), " \t\r\n\v\f") + "\n"
		code = 0
	}
	if code != 0 {
		parts := []string{"Exit code " + strconv.Itoa(code), s.limitOutput(out, out)}
		if resetNote != "" {
			parts = append(parts, resetNote)
		}
		return harness.Text(call, strings.TrimSpace(strings.Join(nonEmpty(parts), "\n")), true)
	}
	stdout := leadingBlank.ReplaceAllString(out, "")
	stdout = strings.TrimRight(stdout, " \t\r\n\v\f")
	stdout = s.limitOutput(stdout, out)
	text := strings.Join(nonEmpty([]string{stdout, resetNote}), "\n")
	if strings.TrimSpace(text) == "" && !s.before("2.1") {
		text = "(Bash completed with no output)"
	}
	return harness.Text(call, text, false)
}

// ugrepShadow is Claude Code 2.1's grep as its shell snapshot defines it: its embedded
// ugrep with -G --ignore-files --hidden -I --encoding=UTF-8 and the version-control
// directories left out. The executor has no ugrep; this function, on the command's first
// line (so that error messages keep their line numbers), runs the system grep with the
// options that match (-I, --exclude-dir) and drops a lone "." operand of a recursive
// search, so that the names come out as ugrep writes them ("notes.txt", not
// "./notes.txt"). The ugrep options GNU grep lacks (.gitignore files, the encoding) are
// not followed.
const ugrepShadow = `grep() { __tb_r= __tb_p= __tb_i=0; for __tb_a do __tb_i=$((__tb_i+1)); case $__tb_a in --recursive|--dereference-recursive) __tb_r=1 ;; --*) ;; -*[rR]*) __tb_r=1 ;; -*) ;; *) [ "$__tb_i" -lt $# ] && __tb_p=1 ;; esac; done; eval "__tb_a=\${$#}"; if [ -n "${BASH_VERSION-}" ] && [ -n "$__tb_r" ] && [ -n "$__tb_p" ] && [ "$__tb_a" = . ]; then __tb_i=$#; eval 'set -- "${@:1:$((__tb_i-1))}"'; fi; unset __tb_r __tb_p __tb_i __tb_a; command grep -I --exclude-dir=.git --exclude-dir=.svn --exclude-dir=.hg --exclude-dir=.bzr --exclude-dir=.jj --exclude-dir=.sl "$@"; }; `

// stderrApart sends the rest of the script's stderr to the file $TAPEBOX_STDERR_FILE.
const stderrApart = `exec 2>"$TAPEBOX_STDERR_FILE"; `

// shellPrelude is what precedes a Bash command on its line: the shell snapshot's grep
// for a recording of Claude Code 2.1 or later; for 2.0, which reads stdout and stderr
// apart, stderr sent to a file of its own.
func (s *session) shellPrelude() string {
	if s.before("2.1") {
		return stderrApart
	}
	return ugrepShadow
}

// exitNotError says Claude Code 2.0 takes the exit code of command as no error: 1 from
// grep, rg, find, diff, test or [ as the command's last (a match not found, files that
// differ, a false condition), which it shows as a success.
func exitNotError(command string, code int) bool {
	if code != 1 {
		return false
	}
	last := command
	if i := strings.LastIndexAny(command, "|;&\n"); i >= 0 {
		last = command[i+1:]
	}
	f := strings.Fields(last)
	if len(f) == 0 {
		return false
	}
	switch f[0] {
	case "grep", "rg", "find", "diff", "test", "[":
		return true
	}
	return false
}

// cutMiddle20 cuts an error text past 10000 UTF-16 units as Claude Code 2.0 does: its
// first and last 5000, with the count of the characters left out between them.
func cutMiddle20(s string) string {
	n := utf16Len(s)
	if n <= 10000 {
		return s
	}
	return fmt.Sprintf("%s\n\n... [%d characters truncated] ...\n\n%s", s[:unitIndex(s, 5000)], n-10000, s[unitIndex(s, n-5000):])
}

// unitIndex is the byte index in s after its first n UTF-16 units (before a character
// that would pass n).
func unitIndex(s string, n int) int {
	u := 0
	for i, r := range s {
		w := 1
		if r > 0xFFFF {
			w = 2
		}
		if u+w > n {
			return i
		}
		u += w
	}
	return len(s)
}

// isSleep says a command starts with sleep, which Claude Code 2.1 kills at its timeout
// instead of moving it to the background (found by internal/fidelity).
func isSleep(command string) bool {
	f := strings.Fields(command)
	return len(f) > 0 && strings.TrimSuffix(f[0], ";") == "sleep"
}

// formatSeconds words a timeout in milliseconds as Claude Code does for whole seconds
// ("1s"), minutes and seconds above a minute ("2m 30s").
func formatSeconds(ms int64) string {
	sec := max(1, (ms+500)/1000)
	if sec < 60 {
		return strconv.FormatInt(sec, 10) + "s"
	}
	if sec%60 == 0 {
		return strconv.FormatInt(sec/60, 10) + "m"
	}
	return strconv.FormatInt(sec/60, 10) + "m " + strconv.FormatInt(sec%60, 10) + "s"
}

const movedDefaultTail = " You will be notified when it completes. If it is still running after 10m in the background, it will be stopped and you will be notified. It is running now: do not start a second copy while it runs. If it is no longer needed, stop it with TaskStop. To check interim output, use Read on that file path."

var movedRecorded = regexp.MustCompile(`(?s)was moved to the background \(ID: \S+?\)\. Output is being written to: .+?\.output\.(.*)$`)

// movedTail is the advice after a timed-out command's output path: the recording's,
// which depends on the harness's state, or 2.1.332's default.
func movedTail(rec *tape.ToolResult) string {
	if m := movedRecorded.FindStringSubmatch(harness.RecordedText(rec)); m != nil {
		return m[1]
	}
	return movedDefaultTail
}

// limitOutput applies Claude Code's output limit to out. Claude Code 2.1 saves a longer
// output to a file and shows a 2 KB preview; the size it names is full's, the output as
// the command wrote it (its trailing newline counts: found by internal/fidelity, seed
// 9021). The older "... [N lines truncated] ..." cut is in truncate.
func (s *session) limitOutput(out, full string) string {
	limit := s.maxOutput()
	if utf8.RuneCountInString(out) <= limit {
		return out
	}
	if s.before("2.1") {
		return truncate20(out, limit)
	}
	path := filepath.Join(s.env.State.Path, "tool-results", action.NewTaskID("b", 8)+".txt")
	if _, err := s.env.State.Make("tool-results"); err == nil {
		_ = os.WriteFile(path, []byte(out), 0o644)
	}
	preview := out
	if len(preview) > 2000 {
		cut := 2000
		for cut > 0 && !utf8.RuneStart(out[cut]) {
			cut--
		}
		preview = out[:cut]
	}
	if !strings.HasSuffix(preview, "\n") {
		preview += "\n"
	}
	return fmt.Sprintf("<persisted-output>\nOutput too large (%s). Full output saved to: %s\n\nPreview (first 2KB):\n%s...\n</persisted-output>", fileSize(utf16Len(full)), path, preview)
}

// utf16Len is the length of s as JavaScript counts it (UTF-16 code units), which Claude
// Code's sizes are.
func utf16Len(s string) int {
	n := 0
	for _, r := range s {
		n++
		if r > 0xFFFF {
			n++
		}
	}
	return n
}

// fileSize words a size as Claude Code does: "512 bytes", "29.3KB", "48KB", "1.2MB" (one
// decimal, rounded half up as JavaScript's toFixed, and none when it is 0).
func fileSize(n int) string {
	if n < 1024 {
		return strconv.Itoa(n) + " bytes"
	}
	div := 1024
	for _, unit := range []string{"KB", "MB"} {
		if n < div*1024 {
			return tenths(n, div) + unit
		}
		div *= 1024
	}
	return tenths(n, div) + "GB"
}

// tenths is n/div to one decimal, half up, without a trailing ".0".
func tenths(n, div int) string {
	t := (n*10 + div/2) / div
	if t%10 == 0 {
		return strconv.Itoa(t / 10)
	}
	return strconv.Itoa(t/10) + "." + strconv.Itoa(t%10)
}

var leadingBlank = regexp.MustCompile(`^(\s*\n)+`)

func nonEmpty(ss []string) []string {
	out := ss[:0:0]
	for _, s := range ss {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}

// updateCwd takes the directory the command ended in as the next command's; a directory
// outside the project is reset, with Claude Code's note.
func (s *session) updateCwd(file string) string {
	b, err := os.ReadFile(file)
	if err != nil {
		return ""
	}
	dir := strings.TrimSpace(string(b))
	if dir == "" {
		return ""
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	root := s.env.Cwd
	if real, err := filepath.EvalSymlinks(root); err == nil {
		root = real
	}
	if dir != root && !strings.HasPrefix(dir, root+"/") {
		s.cwd = s.env.Cwd
		return "Shell cwd was reset to " + s.env.Cwd
	}
	s.cwd = dir
	return ""
}

func (s *session) maxOutput() int {
	if v, err := strconv.Atoi(s.env.Getenv("BASH_MAX_OUTPUT_LENGTH")); err == nil && v > 0 {
		return min(v, maxMaxOutput)
	}
	return defaultMaxOutput
}

// truncate cuts s after limit characters and counts the lines left out, as Claude Code
// does: "<head>\n... [N lines truncated] ...".
func truncate(s string, limit int) string {
	if utf8.RuneCountInString(s) <= limit {
		return s
	}
	cut := 0
	for i := range s {
		if limit == 0 {
			cut = i
			break
		}
		limit--
	}
	n := strings.Count(s[cut:], "\n") + 1
	return fmt.Sprintf("%s\n... [%d lines truncated] ...", s[:cut], n)
}

// truncate20 is Claude Code 2.0's cut of a long output: the first limit characters of the
// output (its end trimmed), a blank line, and the count of the lines left out.
func truncate20(s string, limit int) string {
	s = strings.TrimRight(s, " \t\r\n\v\f")
	cut := len(s)
	for i := range s {
		if limit == 0 {
			cut = i
			break
		}
		limit--
	}
	if cut == len(s) {
		return s
	}
	return fmt.Sprintf("%s\n\n... [%d lines truncated] ...", s[:cut], strings.Count(s[cut:], "\n")+1)
}

var bgRecorded = regexp.MustCompile(`(?s)^Command running in background with ID: (\S+?)\. Output is being written to: (.+?\.output)(?:\.(.*))?$`)

const bgDefaultTail = " You will be notified when it completes. To check interim output, use Read on that file path."

func (s *session) bashBackground(ctx context.Context, call tape.ToolCall, in bashInput, rec *tape.ToolResult) tape.ToolResult {
	s.mu.Lock()
	dir := s.cwd
	s.mu.Unlock()
	st, err := s.env.Tasks.Start(ctx, action.TaskRequest{
		ID:       s.taskID(rec),
		Command:  in.Command,
		Dir:      dir,
		Env:      s.env.Environ,
		ExitLine: true, // Claude Code's task file ends "\n[exited with code N]\n"
	})
	if err != nil {
		return harness.Text(call, err.Error(), true)
	}
	rt := harness.RecordedText(rec)
	if strings.HasPrefix(rt, "Command running in background with ID: ") && !strings.Contains(rt, "Output is being written to") {
		return harness.Text(call, "Command running in background with ID: "+st.ID, false)
	}
	tail := "." + bgDefaultTail
	if m := bgRecorded.FindStringSubmatchIndex(rt); m != nil {
		// Claude Code 2.0 ends at the path; 2.1 goes on with advice.
		tail = ""
		if m[6] >= 0 {
			tail = "." + rt[m[6]:m[7]]
		}
	} else if s.before("2.1") {
		tail = ""
	}
	return harness.Text(call, fmt.Sprintf("Command running in background with ID: %s. Output is being written to: %s%s",
		st.ID, s.env.Tasks.OutputPath(st.ID), tail), false)
}

type bashOutputInput struct {
	BashID string `json:"bash_id"`
	Filter string `json:"filter"`
}

func (s *session) bashOutput(_ context.Context, call tape.ToolCall, rec *tape.ToolResult) tape.ToolResult {
	var in bashOutputInput
	st, r, ok := s.decodeTask(call, rec, &in, "shell", &in.BashID)
	if !ok {
		return r
	}
	out, err := s.env.Tasks.Poll(in.BashID)
	if err != nil {
		return harness.Text(call, err.Error(), true)
	}
	text := string(out)
	if in.Filter != "" {
		re, err := regexp.Compile(in.Filter)
		if err != nil {
			return harness.Text(call, "Invalid regex pattern \""+in.Filter+"\": "+err.Error(), true)
		}
		var keep []string
		for _, l := range strings.Split(text, "\n") {
			if re.MatchString(l) {
				keep = append(keep, l)
			}
		}
		text = strings.Join(keep, "\n")
	}
	parts := s.report(nil, st, text, "stdout")
	parts = append(parts, "<timestamp>"+isoMillis(time.Now())+"</timestamp>")
	return harness.Text(call, strings.Join(parts, "\n\n"), false)
}

type taskOutputInput struct {
	TaskID  string `json:"task_id"`
	ShellID string `json:"shell_id"`
	Block   *bool  `json:"block"`
	Timeout *int64 `json:"timeout"`
}

func (s *session) taskOutput(ctx context.Context, call tape.ToolCall, rec *tape.ToolResult) tape.ToolResult {
	var in taskOutputInput
	id, st, r, ok := s.decodeTaskRef(call, rec, &in, &in.TaskID, &in.ShellID, missingParamText(call, "task_id"))
	if !ok {
		return r
	}
	block := in.Block == nil || *in.Block
	timeout := int64(30000)
	if in.Timeout != nil && *in.Timeout >= 0 {
		timeout = min(*in.Timeout, maxTimeoutMS)
	}
	status := "success"
	if block && st.Running {
		var err error
		st, err = s.env.Tasks.Wait(ctx, id, time.Duration(timeout)*time.Millisecond)
		if err != nil {
			return harness.Text(call, err.Error(), true)
		}
		if st.Running {
			status = "timeout"
		}
	} else if st.Running {
		status = "not_ready"
	}
	out, err := s.env.Tasks.Output(id)
	if err != nil {
		return harness.Text(call, err.Error(), true)
	}
	parts := s.report([]string{
		"<retrieval_status>" + status + "</retrieval_status>",
		"<task_id>" + id + "</task_id>",
		"<task_type>local_bash</task_type>",
	}, st, string(out), "output")
	return harness.Text(call, strings.Join(parts, "\n\n"), false)
}

type killInput struct {
	ShellID string `json:"shell_id"`
	TaskID  string `json:"task_id"`
}

func (s *session) killShell(ctx context.Context, call tape.ToolCall, rec *tape.ToolResult) tape.ToolResult {
	if s.since("2.1") {
		// Claude Code 2.1 keeps KillShell as another name of TaskStop ("No task found").
		return s.taskStop(ctx, call, rec)
	}
	var in killInput
	st, r, ok := s.decodeTask(call, rec, &in, "shell", &in.ShellID)
	if !ok {
		return r
	}
	if r, ok := s.kill(call, rec, st, in.ShellID, fmt.Sprintf("Shell %s is not running, so cannot be killed (status: %s)", in.ShellID, st.State())); !ok {
		return r
	}
	return harness.Text(call, jsonStrings("message", fmt.Sprintf("Successfully killed shell: %s (%s)", in.ShellID, st.Command), "shell_id", in.ShellID), false)
}

func (s *session) taskStop(_ context.Context, call tape.ToolCall, rec *tape.ToolResult) tape.ToolResult {
	var in killInput
	id, st, r, ok := s.decodeTaskRef(call, rec, &in, &in.TaskID, &in.ShellID, "Missing required parameter: task_id")
	if !ok {
		return r
	}
	if r, ok := s.kill(call, rec, st, id, fmt.Sprintf("Task %s is not running (status: %s)", id, st.State())); !ok {
		return r
	}
	return harness.Text(call, jsonStrings("message", fmt.Sprintf("Successfully stopped task: %s (%s)", id, st.Command), "task_id", id,
		"task_type", "local_bash", "command", st.Command), false)
}

// decodeTask is decode for the tools that name a background task by one parameter, id (a
// field of in), and finds that task (see find).
func (s *session) decodeTask(call tape.ToolCall, rec *tape.ToolResult, in any, noun string, id *string) (action.TaskStatus, tape.ToolResult, bool) {
	if r, ok := decode(call, in); !ok {
		return action.TaskStatus{}, r, false
	}
	return s.find(call, rec, noun, *id)
}

// decodeTaskRef is decodeTask for the tools that name a task by task_id or, as older
// versions did, shell_id (fields of in); missing is Claude Code's message when the input
// names neither. It returns the id given.
func (s *session) decodeTaskRef(call tape.ToolCall, rec *tape.ToolResult, in any, taskID, shellID *string, missing string) (string, action.TaskStatus, tape.ToolResult, bool) {
	if r, ok := decode(call, in); !ok {
		return "", action.TaskStatus{}, r, false
	}
	id := cmp.Or(*taskID, *shellID)
	if id == "" {
		return "", action.TaskStatus{}, toolUseError(call, missing), false
	}
	st, r, ok := s.find(call, rec, "task", id)
	return id, st, r, ok
}

// find returns the task named id (the recording's, after the controller's substitution),
// or Claude Code's answer when there is none: "No shell found ..." or "No task found ...",
// after noun.
func (s *session) find(call tape.ToolCall, rec *tape.ToolResult, noun, id string) (action.TaskStatus, tape.ToolResult, bool) {
	st, err := s.env.Tasks.Status(id)
	if err != nil {
		return st, asRecorded(harness.Text(call, "No "+noun+" found with ID: "+id, true), rec), false
	}
	return st, tape.ToolResult{}, true
}

// kill stops the task st named id; notRunning is the answer when it has already ended.
func (s *session) kill(call tape.ToolCall, rec *tape.ToolResult, st action.TaskStatus, id, notRunning string) (tape.ToolResult, bool) {
	if !st.Running {
		return asRecorded(harness.Text(call, notRunning, true), rec), false
	}
	if _, err := s.env.Tasks.Kill(id); err != nil {
		return harness.Text(call, err.Error(), true), false
	}
	return tape.ToolResult{}, true
}

// report adds a task's status, its exit code once it has one, and its output (under tag,
// unless blank) to parts.
func (s *session) report(parts []string, st action.TaskStatus, out, tag string) []string {
	parts = append(parts, "<status>"+st.State()+"</status>")
	if st.ExitCode != nil {
		parts = append(parts, fmt.Sprintf("<exit_code>%d</exit_code>", *st.ExitCode))
	}
	if strings.TrimSpace(out) != "" {
		parts = append(parts, "<"+tag+">\n"+strings.TrimRight(truncate(out, s.maxOutput()), " \t\r\n")+"\n</"+tag+">")
	}
	return parts
}

// jsonText encodes v, a tree jsonlex.AppendValue takes, as JavaScript's JSON.stringify
// does (no HTML escaping), but with map keys sorted.
func jsonText(v any) string {
	b, _ := jsonlex.AppendValue(nil, v, "") // the callers' trees hold strings only
	return string(b)
}

// jsonStrings encodes an object of strings, keys and values alternating in kv, with the
// keys in that order, as jsonText does.
func jsonStrings(kv ...string) string {
	b := []byte{'{'}
	for i := 0; i+1 < len(kv); i += 2 {
		if i > 0 {
			b = append(b, ',')
		}
		b = jsonlex.AppendString(b, kv[i], false)
		b = jsonlex.AppendString(append(b, ':'), kv[i+1], false)
	}
	return string(append(b, '}'))
}

// isoMillis formats t as JavaScript's Date.toISOString does.
func isoMillis(t time.Time) string {
	t = t.UTC()
	y, mo, d := t.Date()
	h, mi, sec := t.Clock()
	return fmt.Sprintf("%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", y, int(mo), d, h, mi, sec, t.Nanosecond()/1e6)
}

var recordedTaskID = regexp.MustCompile(`(?:with ID: |\(ID: )([A-Za-z0-9_-]+)`)

// taskID names a new background task: the recording's id when it has one that is free,
// so that later calls naming it (TaskOutput, KillShell, a Read of its output file) reach
// this task without any substitution; else a fresh id in Claude Code's style.
func (s *session) taskID(rec *tape.ToolResult) string {
	if m := recordedTaskID.FindStringSubmatch(harness.RecordedText(rec)); m != nil {
		if _, err := s.env.Tasks.Status(m[1]); err != nil {
			return m[1]
		}
	}
	return action.NewTaskID("b", 8)
}
