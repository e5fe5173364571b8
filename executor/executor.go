package executor

import (
	"context"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/tapebox/tapebox/executor/harness"
	"github.com/tapebox/tapebox/executor/harness/claudecode"
	"github.com/tapebox/tapebox/executor/harness/codex"
	"github.com/tapebox/tapebox/executor/harness/gemini"
	"github.com/tapebox/tapebox/executor/harness/opencode"
	"github.com/tapebox/tapebox/executor/harness/pi"
	"github.com/tapebox/tapebox/executor/protocol"
	"github.com/tapebox/tapebox/tape"
)

// Version is the executor's version, reported in the hello reply.
const Version = "0.1.0"

// Harnesses returns the registry of the built-in harness modules.
func Harnesses() *harness.Registry {
	return harness.NewRegistry(claudecode.New(), codex.New(), pi.New(), gemini.New(), opencode.New())
}

// Platform describes the machine as "linux-<kernel release>-<machine>", such as
// "linux-6.8.0-x86_64".
func Platform() string {
	release := "unknown"
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		release = strings.TrimSpace(string(b))
	}
	machine := runtime.GOARCH
	switch machine {
	case "amd64":
		machine = "x86_64"
	case "arm64":
		machine = "aarch64"
	}
	return runtime.GOOS + "-" + release + "-" + machine
}

// Serve runs one executor session: it reads requests from r and writes replies to w, one
// JSON object per line, until bye or the end of r; logs go to logw. Calls run
// concurrently and their results are written in completion order. A bad request gets an
// error message and the session goes on; Serve returns an error only when w fails.
// Cancelling ctx cancels the calls in flight.
func Serve(ctx context.Context, r io.Reader, w io.Writer, logw io.Writer) error {
	reserveOnce.Do(func() { reserveThreads(threadsToReserve(pidsDirs)) })
	s := &server{reg: Harnesses(), enc: protocol.NewEncoder(w), log: logw, inflight: map[string]bool{}}
	return s.serve(ctx, protocol.NewRequestDecoder(r))
}

// reserveOnce reserves the threads once a process: a process serving sessions one after
// another (tests) keeps the threads its first session started.
var reserveOnce sync.Once

type server struct {
	reg  *harness.Registry
	enc  *protocol.Encoder
	log  io.Writer
	sess harness.Session

	mu       sync.Mutex
	inflight map[string]bool
	wg       sync.WaitGroup
	werr     error
}

func (s *server) logf(format string, args ...any) {
	if s.log != nil {
		fmt.Fprintf(s.log, "tapebox-exec: "+format+"\n", args...)
	}
}

func (s *server) send(msg any) {
	if err := s.enc.Encode(msg); err != nil {
		s.mu.Lock()
		if s.werr == nil {
			s.werr = fmt.Errorf("write reply: %w", err)
		}
		s.mu.Unlock()
	}
}

func (s *server) sendError(id *string, msg string) {
	s.logf("error: %s", msg)
	s.send(protocol.Error{Op: protocol.OpError, ID: id, Message: msg})
}

func (s *server) failed() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.werr
}

func (s *server) serve(ctx context.Context, dec *protocol.Decoder) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer func() {
		if s.sess != nil {
			_ = s.sess.Close()
		}
	}()
	for {
		if err := s.failed(); err != nil {
			cancel()
			s.wg.Wait()
			return err
		}
		env, err := dec.Decode()
		if err != nil {
			if le, ok := err.(*protocol.LineError); ok {
				s.sendError(le.ID, le.Error())
				continue
			}
			if err != io.EOF {
				s.logf("read requests: %v", err)
			}
			s.wg.Wait()
			return s.failed()
		}
		switch env.Op {
		case protocol.OpHello:
			s.hello(env.Hello)
		case protocol.OpCall:
			s.call(ctx, env.Call)
		case protocol.OpBye:
			s.wg.Wait()
			s.send(protocol.Bye{Op: protocol.OpBye, OK: true})
			return s.failed()
		}
	}
}

func (s *server) hello(h *protocol.Hello) {
	if s.sess != nil {
		s.sendError(nil, "hello: the session is already open")
		return
	}
	mod, ok := s.reg.Lookup(h.Harness)
	if !ok {
		s.sendError(nil, fmt.Sprintf("hello: unknown harness %q (this executor has %s)", h.Harness, strings.Join(s.reg.Names(), ", ")))
		return
	}
	env, err := harness.NewEnv(h.Cwd, h.StateDir, h.Env)
	if err != nil {
		s.sendError(nil, "hello: "+err.Error())
		return
	}
	env.HarnessVersion = h.HarnessVersion
	s.sess = mod.NewSession(env)
	s.logf("session open: harness %s, cwd %s, state %s", mod.Name(), env.Cwd, env.State.Path)
	s.send(protocol.HelloReply{
		Op: protocol.OpHello, OK: true, Version: Version, Protocol: protocol.Version,
		Harness: mod.Name(), Cwd: env.Cwd, Policy: mod.Policy(), Platform: Platform(),
	})
}

func (s *server) call(ctx context.Context, c *protocol.Call) {
	id := c.ID
	if s.sess == nil {
		s.sendError(&id, fmt.Sprintf("call %q before hello", id))
		return
	}
	s.mu.Lock()
	dup := s.inflight[id]
	if !dup {
		s.inflight[id] = true
	}
	s.mu.Unlock()
	if dup {
		s.sendError(&id, fmt.Sprintf("call id %q is already in flight", id))
		return
	}
	s.wg.Add(1)
	run := func() {
		defer s.wg.Done()
		var res tape.ToolResult
		if u, ok := s.sess.(harness.Unoffered); ok && c.NotOffered {
			res = Run(ctx, notOffered{u}, c.Call, c.Recorded)
		} else {
			res = Run(ctx, s.sess, c.Call, c.Recorded)
		}
		s.mu.Lock()
		delete(s.inflight, id)
		s.mu.Unlock()
		s.send(protocol.Result{Op: protocol.OpResult, ID: id, Result: res})
	}
	if im, ok := s.sess.(harness.Immediate); ok && im.Immediate(c.Call) {
		run() // finishes at once: no hand-off to another goroutine
		return
	}
	go run()
}

// Run performs one call in a session and times it. A module that panics yields an error
// result rather than a dead session.
func Run(ctx context.Context, sess harness.Session, call tape.ToolCall, recorded *tape.ToolResult) (res tape.ToolResult) {
	start := time.Now()
	defer func() {
		if p := recover(); p != nil {
			res = harness.Text(call, fmt.Sprintf("tapebox-exec: %s call failed: %v", call.Name, p), true)
		}
		if res.ToolCallID == "" {
			res.ToolCallID = call.ID
		}
		if res.Content == nil {
			res.Content = []tape.Block{}
		}
		ms := tape.RoundMS(time.Since(start))
		res.DurationMS = &ms
	}()
	return sess.Run(ctx, call, recorded)
}

// notOffered runs every call as a call to a tool the recording did not offer.
type notOffered struct{ u harness.Unoffered }

func (n notOffered) Run(ctx context.Context, call tape.ToolCall, rec *tape.ToolResult) tape.ToolResult {
	return n.u.NotOffered(ctx, call, rec)
}

func (n notOffered) Close() error { return nil }

// Call runs a single call request without a session (tapebox-exec call): harness and cwd
// stand in for hello, and the state directory is stateDir or, when nil, the one a session on
// cwd has (harness.DefaultStateDir).
func Call(ctx context.Context, harnessName, cwd string, stateDir *string, req protocol.Call) (protocol.Result, error) {
	mod, ok := Harnesses().Lookup(harnessName)
	if !ok {
		return protocol.Result{}, fmt.Errorf("call: unknown harness %q (this executor has %s)", harnessName, strings.Join(Harnesses().Names(), ", "))
	}
	env, err := harness.NewEnv(cwd, stateDir, nil)
	if err != nil {
		return protocol.Result{}, fmt.Errorf("call: %w", err)
	}
	sess := mod.NewSession(env)
	defer sess.Close()
	return protocol.Result{Op: protocol.OpResult, ID: req.ID, Result: Run(ctx, sess, req.Call, req.Recorded)}, nil
}
