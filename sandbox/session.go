package sandbox

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
)

// errSessionClosed is what Stdout returns after Close cut the session off.
var errSessionClosed = errors.New("session closed")

// stderrTailSize is how much of a session's stderr is kept for error messages.
const stderrTailSize = 64 << 10

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

	stderr *tailBuffer
	execID string        // the Docker exec's ID, for an exec session
	done   chan struct{} // closed once err is set
	err    error
	// stop ends the session for Close: close stdin, give the command a grace period, then cut
	// it off.
	stop      func() error
	closeOnce sync.Once
	closeErr  error
}

// Stderr returns the end of what the command wrote to its standard error so far.
func (s *Session) Stderr() string { return s.stderr.String() }

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

// finish records how the command ended; only the first call counts.
func (s *Session) finish(err error) {
	select {
	case <-s.done:
	default:
		s.err = err
		close(s.done)
	}
}

// closeResult is what Close reports for a command that ended by itself with err: an exit
// status is not a failure to close, a broken session is.
func closeResult(err error) error {
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
	if s := strings.TrimSpace(e.Stderr); s != "" {
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

// tailBuffer keeps the last max bytes written to it. It is safe for concurrent use.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func newTailBuffer(max int) *tailBuffer { return &tailBuffer{max: max} }

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := len(p)
	if len(p) >= t.max {
		t.buf = append(t.buf[:0], p[len(p)-t.max:]...)
		return n, nil
	}
	if over := len(t.buf) + len(p) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	t.buf = append(t.buf, p...)
	return n, nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}
