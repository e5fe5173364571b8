package controller

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tapebox/tapebox/executor/protocol"
	"github.com/tapebox/tapebox/internal/term"
	"github.com/tapebox/tapebox/tape"
)

// Sandbox is where tool calls run. The controller needs only one thing of it: a fresh
// "tapebox-exec serve" session, whose stdout it reads and whose stdin it writes. Package
// sandbox implements it for local directories and Docker containers.
type Sandbox interface {
	// StartExecutor starts "tapebox-exec serve" in the sandbox. Reading the returned stream
	// reads the executor's stdout, writing writes its stdin, Close ends the session.
	StartExecutor(ctx context.Context) (io.ReadWriteCloser, error)
}

// errNoHello: the executor's session ended before it answered hello (the process died or
// could not start: a busy machine sometimes fails a sandbox's process start).
var errNoHello = errors.New("no hello reply")

// startSessionRetrying is startSession, tried up to three times when the executor dies
// before answering hello; any other error is returned at once.
func startSessionRetrying(ctx context.Context, sb Sandbox, h protocol.Hello, logf func(string, ...any)) (*session, error) {
	var err error
	for attempt := 1; attempt <= 3; attempt++ {
		var s *session
		if s, err = startSession(ctx, sb, h, logf); err == nil || !errors.Is(err, errNoHello) || ctx.Err() != nil {
			return s, err
		}
		logf("executor session %d of 3 did not start: %v; trying again", attempt, err)
		time.Sleep(time.Duration(attempt) * 100 * time.Millisecond)
	}
	return nil, err
}

// errSessionDied is returned for calls whose session ended before they were answered.
var errSessionDied = errors.New("executor session ended")

// maxExecutorWords is how much of an executor's error message reaches an error or a log: the
// executor runs beside the tape's commands, which may have taken it over, and a message may
// be 16 MiB.
const maxExecutorWords = 2000

// ExecutorError is an "error" message the executor sent for a call.
type ExecutorError struct {
	CallID  string
	Message string
}

func (e *ExecutorError) Error() string {
	return fmt.Sprintf("executor error for call %s: %s", e.CallID, term.Excerpt(e.Message, maxExecutorWords))
}

type reply struct {
	result tape.ToolResult
	err    error
}

// session is one executor session: hello done, any number of calls in flight.
type session struct {
	conn   io.ReadWriteCloser
	enc    *protocol.Encoder
	hello  protocol.HelloReply
	nextID atomic.Uint64
	logf   func(string, ...any)

	mu      sync.Mutex
	pending map[string]chan reply
	err     error // set once the session is dead
	done    chan struct{}
}

// startSession starts the executor and says hello.
func startSession(ctx context.Context, sb Sandbox, h protocol.Hello, logf func(string, ...any)) (*session, error) {
	conn, err := sb.StartExecutor(ctx)
	if err != nil {
		return nil, fmt.Errorf("start executor: %w", err)
	}
	s := &session{
		conn:    conn,
		enc:     protocol.NewEncoder(conn),
		pending: map[string]chan reply{},
		done:    make(chan struct{}),
		logf:    logf,
	}
	dec := protocol.NewReplyDecoder(conn)
	h.Op = protocol.OpHello
	if err := s.enc.Encode(h); err != nil {
		conn.Close()
		return nil, fmt.Errorf("send hello to executor: %w", err)
	}
	helloc := make(chan error, 1)
	go func() {
		for {
			env, err := dec.Decode()
			if err != nil {
				var le *protocol.LineError
				if errors.As(err, &le) {
					logf("executor sent a bad line: %v", err)
					continue
				}
				helloc <- fmt.Errorf("executor closed the session before answering hello: %w (%w)", err, errNoHello)
				return
			}
			switch env.Op {
			case protocol.OpHello:
				s.hello = *env.HelloReply
				helloc <- nil
				s.readLoop(dec)
				return
			case protocol.OpError:
				helloc <- fmt.Errorf("executor refused hello: %s", term.Excerpt(env.Error.Message, maxExecutorWords))
				return
			default:
				logf("executor sent %q before its hello reply", env.Op)
			}
		}
	}()
	select {
	case err := <-helloc:
		if err != nil {
			conn.Close()
			if se, ok := conn.(interface{ Stderr() string }); ok {
				if tail := strings.TrimSpace(se.Stderr()); tail != "" {
					err = fmt.Errorf("%w; the executor's stderr ends with: %s", err, lastLines(tail, 5))
				}
			}
			return nil, err
		}
	case <-ctx.Done():
		conn.Close()
		return nil, ctx.Err()
	}
	if !s.hello.OK || s.hello.Protocol != protocol.Version {
		conn.Close()
		return nil, fmt.Errorf("executor speaks protocol %d (ok=%v), this controller speaks %d", s.hello.Protocol, s.hello.OK, protocol.Version)
	}
	return s, nil
}

// lastLines returns the last n lines of s.
func lastLines(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}

// readLoop delivers replies until the stream ends, then fails every pending call.
func (s *session) readLoop(dec *protocol.Decoder) {
	var err error
	for {
		var env *protocol.Envelope
		env, err = dec.Decode()
		if err != nil {
			var le *protocol.LineError
			if errors.As(err, &le) {
				s.logf("executor sent a bad line: %v", err)
				continue
			}
			break
		}
		switch env.Op {
		case protocol.OpResult:
			s.deliver(env.Result.ID, reply{result: env.Result.Result})
		case protocol.OpError:
			if env.Error.ID == nil {
				s.logf("executor error: %s", term.Excerpt(env.Error.Message, maxExecutorWords))
				continue
			}
			s.deliver(*env.Error.ID, reply{err: &ExecutorError{CallID: *env.Error.ID, Message: env.Error.Message}})
		case protocol.OpBye:
		default:
			s.logf("executor sent unexpected %q", env.Op)
		}
	}
	if err == io.EOF {
		err = errSessionDied
	} else {
		err = fmt.Errorf("%w: %v", errSessionDied, err)
	}
	s.mu.Lock()
	s.err = err
	for id, ch := range s.pending {
		ch <- reply{err: err}
		delete(s.pending, id)
	}
	s.mu.Unlock()
	close(s.done)
}

func (s *session) deliver(id string, r reply) {
	s.mu.Lock()
	ch, ok := s.pending[id]
	delete(s.pending, id)
	s.mu.Unlock()
	if !ok {
		s.logf("executor answered unknown call %s", id)
		return
	}
	ch <- r
}

// call runs one tool call. It returns errSessionDied (wrapped) when the session ended first.
func (s *session) call(ctx context.Context, c tape.ToolCall, recorded *tape.ToolResult, notOffered bool) (tape.ToolResult, error) {
	id := strconv.FormatUint(s.nextID.Add(1), 10)
	ch := make(chan reply, 1)
	s.mu.Lock()
	if s.err != nil {
		s.mu.Unlock()
		return tape.ToolResult{}, s.err
	}
	s.pending[id] = ch
	s.mu.Unlock()
	if err := s.enc.Encode(protocol.Call{Op: protocol.OpCall, ID: id, Call: c, Recorded: recorded, NotOffered: notOffered}); err != nil {
		s.mu.Lock()
		delete(s.pending, id)
		s.mu.Unlock()
		return tape.ToolResult{}, fmt.Errorf("%w: send call: %v", errSessionDied, err)
	}
	select {
	case r := <-ch:
		return r.result, r.err
	case <-ctx.Done():
		s.mu.Lock()
		delete(s.pending, id)
		s.mu.Unlock()
		return tape.ToolResult{}, ctx.Err()
	}
}

// close says bye and ends the session.
func (s *session) close(ctx context.Context) error {
	s.mu.Lock()
	dead := s.err != nil
	s.mu.Unlock()
	if !dead {
		if err := s.enc.Encode(protocol.Bye{Op: protocol.OpBye}); err == nil {
			select {
			case <-s.done:
			case <-ctx.Done():
			}
		}
	}
	return s.conn.Close()
}
