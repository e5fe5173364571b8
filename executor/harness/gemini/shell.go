package gemini

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf16"

	"github.com/tapebox/tapebox/executor/action"
	"github.com/tapebox/tapebox/executor/harness"
	"github.com/tapebox/tapebox/tape"
)

// ansi is strip-ansi's expression (ansi-regex 6): OSC strings, then CSI and other escapes.
var ansi = regexp.MustCompile(`(?:\x1b\][\s\S]*?(?:\x07|\x1b\\|\x{9c}))|[\x1b\x{9b}][[\]()#;?]*(?:\d{1,4}(?:[;:]\d{0,4})*)?[\dA-PR-TZcf-nq-uy=><~]`)

// wrap is the CLI's wrapCommandForBackgroundPIDs: the command in a subshell whose EXIT trap
// writes the pids of its background jobs to file.
func wrap(command, file string) string {
	c := strings.TrimSpace(command)
	if c == "" {
		return ""
	}
	if strings.HasSuffix(c, `\`) {
		c += " "
	}
	return "_bgpids_file=" + shellQuote(file) + "\n(\n  trap 'jobs -p > \"$_bgpids_file\"' EXIT\n" + c + "\n)\n__code=$?\nexit $__code"
}

// shellQuote quotes s for bash as the CLI's escapeShellArg does (shell-quote): bare when
// it is made of safe characters, else in single quotes.
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("_-./:=@%+,", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

type shellArgs struct {
	Command      string `json:"command"`
	DirPath      string `json:"dir_path"`
	IsBackground bool   `json:"is_background"`
}

func (s *session) shell(ctx context.Context, call tape.ToolCall, rec *tape.ToolResult) tape.ToolResult {
	var a shellArgs
	if !args(call, &a) || a.IsBackground || strings.TrimSpace(a.Command) == "" {
		// A background command's pid and its output at the moment the CLI looked, and the
		// CLI's refusals, are not for a sandbox to reproduce.
		return replay(call, rec)
	}
	if shellWrapper.MatchString(a.Command) {
		return replay(call, rec) // the CLI unwraps bash -c "..." with shell-quote's parser
	}
	if substitution(a.Command) {
		return ok(call, blocked)
	}
	dir := s.env.Cwd
	if a.DirPath != "" {
		d, inside := s.resolve(a.DirPath)
		if !inside {
			return replay(call, rec)
		}
		dir = d
	}
	tmp, err := os.MkdirTemp("", "gemini-shell-")
	if err != nil {
		return fail(call, err.Error())
	}
	defer os.RemoveAll(tmp)
	pids := filepath.Join(tmp, "bgpids.tmp")
	res, err := action.Shell(ctx, action.ShellRequest{Command: wrap(a.Command, pids), Shell: s.bash(), Dir: dir, Env: s.env.Environ})
	if err != nil {
		return fail(call, err.Error())
	}
	raw := res.Output
	if bytes.IndexByte(raw[:min(len(raw), 512)], 0) >= 0 {
		raw = nil // the CLI's isBinary sniff: it stops collecting a binary output
	}
	out := strings.TrimSpace(ansi.ReplaceAllString(action.LossyUTF8(raw), ""))
	if out == "" {
		out = "(empty)"
	}
	parts := []string{"Output: " + out}
	if res.Signal == "" && res.ExitCode != 0 {
		parts = append(parts, "Exit Code: "+strconv.Itoa(res.ExitCode))
	}
	if res.Signal != "" {
		parts = append(parts, "Signal: "+strconv.Itoa(res.ExitCode-128))
	}
	if bg := backgroundPIDs(pids, res.Pid); bg != "" {
		parts = append(parts, "Background PIDs: "+bg)
	}
	if res.Pid != 0 {
		parts = append(parts, fmt.Sprintf("Process Group PGID: %d", res.Pid))
	}
	result := untrusted(strings.Join(parts, "\n"))
	// The CLI cuts a long result counting its process group id's digits: cut where it cut,
	// with the recording's id (a volatile field) in place of the sandbox's, then put the
	// sandbox's back.
	own := fmt.Sprintf("Process Group PGID: %d", res.Pid)
	recorded := ""
	if rec != nil && res.Pid != 0 {
		recorded = pgidLine.FindString(rec.Text())
	}
	i := strings.LastIndex(result, own)
	if recorded == "" || i < 0 {
		return ok(call, s.truncated(call, result, result))
	}
	shown := s.truncated(call, result[:i]+recorded+result[i+len(own):], result)
	if j := strings.LastIndex(shown, recorded); j >= 0 {
		shown = shown[:j] + own + shown[j+len(recorded):]
	}
	return ok(call, shown)
}

// pgidLine is the line that names the process group a command ran in.
var pgidLine = regexp.MustCompile(`Process Group PGID: [0-9]+`)

// truncateThreshold is the CLI's truncateToolOutputThreshold: a shell result longer (in
// UTF-16 code units) keeps its first fifth and its last four fifths of this, and the whole
// is saved in a file the result names.
const truncateThreshold = 40000

// truncated is the CLI's formatTruncatedToolOutput of a shell result (text) over the
// threshold, whole the result as the file keeps it;
// the whole result goes to a file in the state directory, whose path (an identifier field
// of the harness table) stands for the CLI's under its project's temporary directory.
func (s *session) truncated(call tape.ToolCall, text, whole string) string {
	u := utf16.Encode([]rune(text))
	if len(u) <= truncateThreshold {
		return text
	}
	head, tail := truncateThreshold/5, truncateThreshold-truncateThreshold/5
	dir, err := s.env.State.Make("tool-outputs")
	if err != nil {
		dir = filepath.Join(s.env.State.Path, "tool-outputs")
	}
	file := filepath.Join(dir, action.NewTaskID("run_shell_command_", 12)+".txt")
	_ = os.WriteFile(file, []byte(whole), 0o600)
	return fmt.Sprintf("Output too large. Showing first %s and last %s characters. For full output see: %s\n%s\n\n... [%s characters omitted] ...\n\n%s",
		commas(head), commas(tail), file, string(utf16.Decode(u[:head])), commas(len(u)-head-tail), string(utf16.Decode(u[len(u)-tail:])))
}

// commas writes n as toLocaleString does in English: 32,000.
func commas(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// blocked is the CLI's answer to a command with a substitution in it; nothing runs.
const blocked = "Command injection detected: command substitution syntax ($(), backticks, <() or >()) found in command arguments. On PowerShell, @() array subexpressions and $() subexpressions are also blocked. This is a security risk and the command was blocked."

// shellWrapper is the CLI's stripShellWrapper pattern: a command given as bash -c "...".
var shellWrapper = regexp.MustCompile(`(?i)^\s*(?:(?:(?:\S+/)?(?:sh|bash|zsh))\s+-c|cmd\.exe\s+/c|powershell(?:\.exe)?\s+(?:-NoProfile\s+)?-Command|pwsh(?:\.exe)?\s+(?:-NoProfile\s+)?-Command)\s+`)

// substitution is the CLI's detectBashSubstitution: $( or a backtick outside single
// quotes, <( or >( outside quotes, escapes skipped as bash reads them.
func substitution(cmd string) bool {
	u := utf16.Encode([]rune(cmd))
	single, double := false, false
	for i := 0; i < len(u); i++ {
		c := u[i]
		next := uint16(0)
		if i+1 < len(u) {
			next = u[i+1]
		}
		switch {
		case c == '\'' && !double:
			single = !single
			continue
		case c == '"' && !single:
			double = !double
			continue
		case single:
			continue
		case c == '\\' && i+1 < len(u):
			if !double || next == '$' || next == '`' || next == '"' || next == '\\' || next == '\n' {
				i++
				continue
			}
		}
		if (c == '$' && next == '(') || (!double && (c == '<' || c == '>') && next == '(') || c == '`' {
			return true
		}
	}
	return false
}

// untrusted is the CLI's wrapUntrusted.
func untrusted(text string) string {
	return "<untrusted_context>\n" + strings.ReplaceAll(text, "</untrusted_context>", "&lt;/untrusted_context&gt;") + "\n</untrusted_context>"
}

// bash is the shell the CLI runs commands with: the first bash on the PATH, by its full
// path (resolveExecutable), which bash's own messages show ("/usr/bin/bash: line 4: ...").
func (s *session) bash() string {
	for _, dir := range filepath.SplitList(s.env.Getenv("PATH")) {
		if dir == "" {
			continue
		}
		p := filepath.Join(dir, "bash")
		if st, err := os.Stat(p); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
			return p
		}
	}
	return action.FindShell()
}

// backgroundJobs reads the pids the EXIT trap wrote, but the command's own.
func backgroundJobs(file string, self int) []int {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil
	}
	var out []int
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if n, err := strconv.Atoi(line); err == nil && n != self {
			out = append(out, n)
		}
	}
	return out
}

func backgroundPIDs(file string, self int) string {
	var s []string
	for _, p := range backgroundJobs(file, self) {
		s = append(s, strconv.Itoa(p))
	}
	return strings.Join(s, ", ")
}

// replay is the recorded result, copied.
func replay(call tape.ToolCall, rec *tape.ToolResult) tape.ToolResult {
	return harness.Replay(call, rec)
}
