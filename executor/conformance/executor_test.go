package conformance

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tapebox/tapebox/executor/protocol"
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

// runExecutor runs `tapebox-exec call` for one call in cwd and returns its result.
func runExecutor(ctx context.Context, bin, harness, cwd string, call tape.ToolCall) (tape.ToolResult, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	var in bytes.Buffer
	if err := protocol.NewEncoder(&in).Encode(protocol.Call{Op: protocol.OpCall, ID: "1", Call: call}); err != nil {
		return tape.ToolResult{}, fmt.Errorf("encode call: %w", err)
	}
	cmd := exec.CommandContext(ctx, bin, "call", "--harness", harness, "--cwd", cwd)
	cmd.Dir = cwd
	cmd.Stdin = &in
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	// A background command the call starts may hold the pipes open: do not wait for it.
	cmd.WaitDelay = time.Second
	err := cmd.Run()
	if err != nil && !errors.Is(err, exec.ErrWaitDelay) {
		return tape.ToolResult{}, fmt.Errorf("tapebox-exec call: %w\nstdout: %s\nstderr: %s", err, clip(stdout.String(), 2000), clip(stderr.String(), 2000))
	}
	env, err := protocol.NewReplyDecoder(&stdout).Decode()
	if err != nil {
		return tape.ToolResult{}, fmt.Errorf("decode reply: %w\nstdout: %s\nstderr: %s", err, clip(stdout.String(), 2000), clip(stderr.String(), 2000))
	}
	switch {
	case env.Result != nil:
		return env.Result.Result, nil
	case env.Error != nil:
		return tape.ToolResult{}, fmt.Errorf("executor error: %s", env.Error.Message)
	}
	return tape.ToolResult{}, fmt.Errorf("unexpected reply %s", env.Raw)
}

// TestExecutorMatchesHarness gives tapebox-exec every call of the fixtures, in an identical
// fresh directory at the same absolute path, and checks that each result equals the
// harness's byte for byte (volatile fields aside: see volatiles and ignored) and that the
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
						got, err := runExecutor(t.Context(), bin, h.name, c.Cwd, call)
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
