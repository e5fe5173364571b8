package conformance

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tapebox/tapebox/executor/protocol"
	"github.com/tapebox/tapebox/internal/testutil/realharness"
	"github.com/tapebox/tapebox/tape"
)

// EnvExec names a prebuilt tapebox-exec to test instead of building ./cmd/tapebox-exec.
const EnvExec = "TAPEBOX_EXEC"

// executorBinary builds tapebox-exec from this checkout (or takes $TAPEBOX_EXEC). The test
// skips, saying why, only when the binary cannot be built.
func executorBinary(t *testing.T) string {
	t.Helper()
	if p := os.Getenv(EnvExec); p != "" {
		return p
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if m, _ := filepath.Glob(filepath.Join(root, "cmd", "tapebox-exec", "*.go")); len(m) == 0 {
		t.Skip("tapebox-exec cannot be built: cmd/tapebox-exec has no Go files yet")
	}
	bin := filepath.Join(t.TempDir(), "tapebox-exec")
	cmd := exec.CommandContext(t.Context(), "go", "build", "-o", bin, "./cmd/tapebox-exec")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Skipf("tapebox-exec cannot be built: go build ./cmd/tapebox-exec: %v\n%s", err, out)
	}
	return bin
}

// session is one "tapebox-exec serve" process: the way a replay drives the executor, so
// background commands and sessions started by one call are there for the next.
type session struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	enc    *protocol.Encoder
	dec    *protocol.Decoder
	stderr bytes.Buffer
	next   int
}

// startSession starts the executor and says hello for harness in cwd.
func startSession(ctx context.Context, bin, harness, cwd string) (*session, error) {
	s := &session{}
	s.cmd = exec.CommandContext(ctx, bin, "serve")
	s.cmd.Dir = cwd
	s.cmd.Stderr = &s.stderr
	// A background command may hold the pipes open after bye: do not wait for it.
	s.cmd.WaitDelay = time.Second
	var err error
	if s.stdin, err = s.cmd.StdinPipe(); err != nil {
		return nil, err
	}
	stdout, err := s.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := s.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start tapebox-exec serve: %w", err)
	}
	s.enc, s.dec = protocol.NewEncoder(s.stdin), protocol.NewReplyDecoder(stdout)
	if err := s.enc.Encode(protocol.Hello{Op: protocol.OpHello, Harness: harness, Cwd: cwd, Env: map[string]string{}}); err != nil {
		s.close()
		return nil, fmt.Errorf("send hello: %w", err)
	}
	env, err := s.dec.Decode()
	if err != nil || env.HelloReply == nil || !env.HelloReply.OK {
		s.close()
		return nil, fmt.Errorf("hello: %v %s\nstderr: %s", err, envRaw(env), realharness.Excerpt(s.stderr.String(), 2000))
	}
	return s, nil
}

func envRaw(env *protocol.Envelope) string {
	if env == nil {
		return ""
	}
	return string(env.Raw)
}

// call runs one tool call and returns its result.
func (s *session) call(c tape.ToolCall) (tape.ToolResult, error) {
	s.next++
	id := fmt.Sprint(s.next)
	if err := s.enc.Encode(protocol.Call{Op: protocol.OpCall, ID: id, Call: c}); err != nil {
		return tape.ToolResult{}, fmt.Errorf("send call: %w", err)
	}
	env, err := s.dec.Decode()
	switch {
	case err != nil:
		return tape.ToolResult{}, fmt.Errorf("read reply: %w\nstderr: %s", err, realharness.Excerpt(s.stderr.String(), 2000))
	case env.Result != nil && env.Result.ID == id:
		return env.Result.Result, nil
	case env.Error != nil:
		return tape.ToolResult{}, fmt.Errorf("executor error: %s", env.Error.Message)
	}
	return tape.ToolResult{}, fmt.Errorf("unexpected reply %s", env.Raw)
}

// close says bye and waits for the executor to exit.
func (s *session) close() {
	if s.enc != nil {
		_ = s.enc.Encode(protocol.Bye{Op: protocol.OpBye})
		if s.dec != nil {
			_, _ = s.dec.Decode()
		}
	}
	_ = s.stdin.Close()
	_ = s.cmd.Wait()
}

// TestExecutorMatchesHarness gives tapebox-exec every call of the fixtures, one "serve"
// session per case in an identical fresh directory at the same absolute path, and checks that each result equals the
// harness's byte for byte (volatile and identifier fields aside: see normalize and ignored) and that the
// directory ends in the same state.
func TestExecutorMatchesHarness(t *testing.T) {
	bin := executorBinary(t)
	for _, h := range harnesses {
		t.Run(h.name, func(t *testing.T) {
			fx := loadFixture(t, h.name)
			var steps, matched, spawns, ends, endsMatched int
			var mismatches []string
			for _, c := range fx.Cases {
				t.Run(c.Name, func(t *testing.T) {
					layout(t, c.Cwd, c.Before)
					sess, err := startSession(t.Context(), bin, h.name, c.Cwd)
					if err != nil {
						t.Fatal(err)
					}
					var results []tape.ToolResult // the executor's, for identifier substitution
					for i, s := range c.Steps {
						if s.Spawn {
							spawns++
							t.Logf("step %d (%s): spawns a subagent, played by the controller: not an executor call", i, s.Call.Name)
							results = append(results, s.Result)
							continue
						}
						steps++
						call := s.Call
						if s.Template != nil {
							input, err := substitute(s.Template, harvest(h.name, results))
							if err != nil {
								t.Errorf("step %d (%s): %v", i, s.Call.Name, err)
								mismatches = append(mismatches, fmt.Sprintf("%s[%d] %s: %v", c.Name, i, s.Call.Name, err))
								results = append(results, tape.ToolResult{})
								continue
							}
							call.Input = input
						}
						got, err := sess.call(call)
						results = append(results, got)
						if err != nil {
							t.Errorf("step %d (%s): %v", i, s.Call.Name, err)
							mismatches = append(mismatches, fmt.Sprintf("%s[%d] %s: %v", c.Name, i, s.Call.Name, firstLine(err.Error())))
							continue
						}
						if diff := diffResults(h.name, s.Call, s.Result, got); diff != "" {
							t.Errorf("step %d (%s): result differs from %s %s:\n%s", i, s.Call.Name, h.name, fx.Version, diff)
							mismatches = append(mismatches, fmt.Sprintf("%s[%d] %s", c.Name, i, s.Call.Name))
							continue
						}
						matched++
					}
					sess.close()
					ends++
					if diff := diffFiles(c.After, snapshot(t, c.Cwd)); diff != "" {
						t.Errorf("end state differs from the harness's:\n%s", diff)
						mismatches = append(mismatches, c.Name+" end state")
						return
					}
					endsMatched++
				})
			}
			t.Logf("%s %s: %d cases; %d of %d executor calls match the harness (%d spawning calls not applicable); %d of %d end states match",
				h.name, fx.Version, len(fx.Cases), matched, steps, spawns, endsMatched, ends)
			if len(mismatches) > 0 {
				t.Logf("mismatches:\n\t%s", strings.Join(mismatches, "\n\t"))
			}
		})
	}
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
