package sandbox

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/tapebox/tapebox/internal/term"
	"github.com/tapebox/tapebox/sandbox/internal/kit"
)

// ErrSessionClosed is how a session that Close cut off ends (Wait's error).
var ErrSessionClosed = errors.New("session closed")

// SessionGrace is how long Session.Close waits for the command to exit after closing stdin,
// before a backend cuts it off.
const SessionGrace = 2 * time.Second

// Session is a command running in a sandbox with its stdio attached: the executor's
// "tapebox-exec serve", or any command from StartCommand.
//
// Write requests to Stdin and read replies from Stdout; Stdout returns io.EOF once the command
// has exited and its output is drained. As with os/exec, read Stdout to the end before relying
// on Wait: unread output holds the command (and Wait) up. Stderr is kept (its last 64 KiB)
// for error messages. Call Close when done, even after the command has exited; Close does not
// need Stdout to be drained.
type Session struct {
	// Stdin is the command's standard input; closing it sends end-of-file.
	Stdin io.WriteCloser
	// Stdout is the command's standard output.
	Stdout io.Reader

	stderr *kit.Tail
	done   chan struct{} // closed once err is set
	err    error
	// stop ends the session for Close: close stdin, give the command a grace period, then cut
	// it off.
	stop      func() error
	kill      func()
	closeOnce sync.Once
	closeErr  error
}

// NewSession is for backends: a session of a command whose standard input and output are
// stdin and stdout. The backend writes the command's standard error to StderrSink, calls
// Finish once the command has ended, and sets with SetStop how Close ends it.
func NewSession(stdin io.WriteCloser, stdout io.Reader) *Session {
	return &Session{Stdin: stdin, Stdout: stdout, stderr: kit.NewTail(kit.TailSize), done: make(chan struct{})}
}

// SetKill is for backends: kill ends the command at once, for Sandbox.Kill (a backend whose
// Close ends its commands at once needs none).
func (s *Session) SetKill(kill func()) { s.kill = kill }

// StderrSink is where a backend writes the command's standard error; Stderr returns its end.
func (s *Session) StderrSink() io.Writer { return s.stderr }

// ShareStderr is for backends: s's Stderr is from's from now on, for a command whose stderr
// travels in another session (the exec beside a socket).
func (s *Session) ShareStderr(from *Session) { s.stderr = from.stderr }

// SetStop is for backends: stop is what Close runs, once: close stdin, give the command
// SessionGrace to exit, then cut it off, and return CloseResult of how it ended.
func (s *Session) SetStop(stop func() error) { s.stop = stop }

// Stderr returns the end of what the command wrote to its standard error so far, its
// control characters (but newline and tab) escaped as term.Printable does: it goes into error
// messages that reach a terminal, and whatever runs in the sandbox can write to it (a
// process of the tape opens its executor's /proc/PID/fd/2).
func (s *Session) Stderr() string { return term.Printable(s.stderr.String()) }

// Done is closed when the command has exited (or the session was cut off).
func (s *Session) Done() <-chan struct{} { return s.done }

// Wait waits for the command to exit. It returns nil for exit status 0, an *ExitError for
// another status, or the error that cut the session off (the container was killed, the engine
// connection broke, Close was called).
func (s *Session) Wait() error {
	<-s.done
	return s.err
}

// Close ends the session: it closes stdin (the executor exits at end-of-file), waits up to 2 s
// for the command to exit, then cuts the stream (Docker) or kills the process (local). It
// returns an error only when the session had broken (not for an exit status, which Wait
// reports). Closing twice is harmless.
func (s *Session) Close() error {
	s.closeOnce.Do(func() { s.closeErr = s.stop() })
	return s.closeErr
}

// Finish is for backends: it records how the command ended (nil, an *ExitError, or what cut
// the session off) and closes Done; only the first call counts.
func (s *Session) Finish(err error) {
	select {
	case <-s.done:
	default:
		s.err = err
		close(s.done)
	}
}

// CloseResult is what Close reports for a command that ended by itself with err: an exit
// status is not a failure to close, a broken session is.
func CloseResult(err error) error {
	var ee *ExitError
	if err == nil || errors.As(err, &ee) {
		return nil
	}
	return err
}

// ExitError is a session's or Exec's command that exited with a non-zero status.
type ExitError struct {
	// Command is the command's argv[0].
	Command string
	// Code is the exit status.
	Code int
	// Stderr is the end of the command's standard error.
	Stderr string
	// Hint says what to do, when the cause is recognizable.
	Hint string
}

func (e *ExitError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s exited with status %d", e.Command, e.Code)
	if s := strings.TrimSpace(term.Printable(e.Stderr)); s != "" {
		if len(s) > 2000 {
			s = "..." + s[len(s)-2000:]
		}
		fmt.Fprintf(&b, "; stderr: %s", s)
	}
	if e.Hint != "" {
		fmt.Fprintf(&b, "; %s", e.Hint)
	}
	return b.String()
}

// NewExitError is the error of command exiting with status code, with the end of its stderr
// and a hint when the cause is recognizable.
func NewExitError(command string, code int, stderr string) *ExitError {
	return &ExitError{Command: command, Code: code, Stderr: stderr, Hint: exitHint(command, code, stderr)}
}

// exitHint recognizes a command that could not be run at all from its status and stderr.
func exitHint(command string, code int, stderr string) string {
	low := strings.ToLower(stderr)
	isExecutor := strings.Contains(command, "tapebox-exec")
	switch {
	case strings.Contains(low, "exec format error"):
		return "the binary is built for another architecture: install the one for the sandbox's architecture (tapebox exec-binary --arch ARCH; Options.InstallExecutor picks it)"
	case (code == 126 || code == 127) && isExecutor &&
		(strings.Contains(low, "not found") || strings.Contains(low, "no such file")):
		return "tapebox-exec is not in the sandbox: copy it in with --install-executor (Options.InstallExecutor), or by hand: docker cp \"$(tapebox exec-binary --arch ARCH)\" CONTAINER:/usr/local/bin/tapebox-exec"
	case code == 126 || code == 127:
		return "the command could not be run in the sandbox (not found or not executable)"
	case code == 137:
		return "the command was killed (SIGKILL): out of memory (Options.Memory) or the container was stopped"
	}
	return ""
}
