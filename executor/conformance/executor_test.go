package conformance

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
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
	tools  []string // the tools the request offered; nil: unknown, every call runs
}

// startSession starts the executor and says hello for harness in cwd.
func startSession(ctx context.Context, bin, harness, version, cwd, home string, tools []string) (*session, error) {
	s := &session{tools: tools}
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
	vars := map[string]string{}
	if home != "" {
		vars["HOME"] = home
	}
	if err := s.enc.Encode(protocol.Hello{Op: protocol.OpHello, Harness: harness, Cwd: cwd, Env: vars, HarnessVersion: version}); err != nil {
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
func (s *session) call(c tape.ToolCall) (tape.ToolResult, error) { return s.callRecorded(c, nil) }

// callRecorded runs one tool call with the recording's result beside it, as a replay
// sends it.
func (s *session) callRecorded(c tape.ToolCall, recorded *tape.ToolResult) (tape.ToolResult, error) {
	s.next++
	id := fmt.Sprint(s.next)
	if err := s.enc.Encode(protocol.Call{Op: protocol.OpCall, ID: id, Call: c, Recorded: recorded, NotOffered: s.tools != nil && !slices.Contains(s.tools, c.Name)}); err != nil {
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
					o := replay(t, bin, h.name, fx.Version, c, false)
					for i, s := range o.Steps {
						switch {
						case c.Steps[i].Spawn:
							spawns++
						case s.Diff == "":
							steps++
							matched++
						default:
							steps++
							t.Errorf("step %d (%s): %s", i, c.Steps[i].Call.Name, s.Diff)
							mismatches = append(mismatches, fmt.Sprintf("%s[%d] %s: %s", c.Name, i, c.Steps[i].Call.Name, firstLine(s.Diff)))
						}
					}
					ends++
					if o.EndDiff != "" {
						t.Errorf("end state differs from the harness's:\n%s", o.EndDiff)
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

// outcome is how the executor did on one case: per step, "" or how its result differs
// from the harness's; and how the end state differs.
type outcome struct {
	Steps   []stepOutcome
	EndDiff string
}

type stepOutcome struct {
	Got  tape.ToolResult
	Diff string
}

// replay runs a case's calls through one "serve" session of tapebox-exec in a fresh
// directory laid out as the case's Before, at the case's absolute path, and compares each
// result and the end state with the harness's. A spawning call is not run (its Diff is "").
//
// With recorded, each call carries the harness's result as a replay's does (the executor
// keeps ripgrep's order from it, and the session ids Codex gave); a result the executor
// copied from it instead of running the call differs ("not run").
func replay(t *testing.T, bin, harness, version string, c FixtureCase, recorded bool) outcome {
	t.Helper()
	layout(t, c.Cwd, c.Before)
	if c.Home != "" {
		if err := os.MkdirAll(c.Home, 0o755); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = os.RemoveAll(c.Home) })
	}
	sess, err := startSession(t.Context(), bin, harness, version, c.Cwd, c.Home, c.Tools)
	if err != nil {
		t.Fatal(err)
	}
	var o outcome
	var results []tape.ToolResult // the executor's, for identifier substitution
	for _, s := range c.Steps {
		if s.Spawn {
			results = append(results, s.Result)
			o.Steps = append(o.Steps, stepOutcome{Got: s.Result})
			continue
		}
		call := s.Call
		if s.Template != nil {
			input, err := substitute(s.Template, harvest(harness, results))
			if err != nil {
				results = append(results, tape.ToolResult{})
				o.Steps = append(o.Steps, stepOutcome{Diff: err.Error()})
				continue
			}
			call.Input = input
		}
		var rec *tape.ToolResult
		if recorded {
			r := s.Result
			rec = &r
		}
		got, err := sess.callRecorded(call, rec)
		results = append(results, got)
		if err != nil {
			o.Steps = append(o.Steps, stepOutcome{Diff: err.Error()})
			continue
		}
		if got.CopiedFromTape {
			o.Steps = append(o.Steps, stepOutcome{Got: got, Diff: "not run: the executor copied the recorded result"})
			continue
		}
		d := diffResults(harness, s.Call, s.Result, got)
		if d != "" {
			d = fmt.Sprintf("result differs from %s %s:\n%s", harness, version, d)
		}
		o.Steps = append(o.Steps, stepOutcome{Got: got, Diff: d})
	}
	sess.close()
	o.EndDiff = diffFiles(c.After, snapshot(t, c.Cwd))
	return o
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
