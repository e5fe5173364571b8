package codex

import (
	"context"
	"encoding/hex"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tapebox/tapebox/executor/action"
	"github.com/tapebox/tapebox/executor/harness"
	"github.com/tapebox/tapebox/tape"
	"github.com/tapebox/tapebox/tape/harnesses"
)

// New returns the Codex module: its name and policy are harnesses.Codex's.
func New() harness.Module {
	return harness.Module{Spec: &harnesses.Codex, Start: func(env *harness.Env) harness.Session {
		return &session{env: env}
	}}
}

type session struct {
	env *harness.Env
	mu  sync.Mutex // serializes polls of one exec session

	snapOnce sync.Once
	snapEnv  []string // see loginEnv
}

// Tools lists the tools this module performs in the sandbox; every other tool is a Noop.
func Tools() []string {
	return []string{"exec_command", "write_stdin", "apply_patch", "shell", "container.exec", "shell_command", "local_shell"}
}

// Immediate says a call is a Noop: it replays its recorded result (or a fixed text) at once.
func (s *session) Immediate(call tape.ToolCall) bool {
	return !slices.Contains(Tools(), call.Name)
}

// Unsupported is Codex's answer to a call of a tool its request did not offer (Codex
// 0.171: "unsupported call: shell"); nothing runs.
func Unsupported(call tape.ToolCall) tape.ToolResult {
	return text(call, "unsupported call: "+call.Name)
}

// NotOffered answers a call of a tool the recorded request did not offer: Unsupported.
func (s *session) NotOffered(_ context.Context, call tape.ToolCall, _ *tape.ToolResult) tape.ToolResult {
	return Unsupported(call)
}

func (s *session) Run(ctx context.Context, call tape.ToolCall, rec *tape.ToolResult) tape.ToolResult {
	switch call.Name {
	case "exec_command":
		return s.execCommand(ctx, call, rec)
	case "write_stdin":
		return s.writeStdin(ctx, call, rec)
	case "apply_patch":
		return s.applyPatch(call)
	case "shell", "container.exec", "local_shell":
		return s.shell(ctx, call, rec)
	case "shell_command":
		return s.shellCommand(ctx, call, rec)
	case "update_plan":
		if rec == nil {
			return text(call, "Plan updated")
		}
	}
	// A spawning tool's call should never reach the executor; one that does gets an error.
	if slices.Contains(harnesses.Codex.SpawningTools, call.Name) {
		return harness.Spawning(call)
	}
	return harness.Replay(call, rec)
}

func (s *session) Close() error { return s.env.Tasks.Close() }

func text(call tape.ToolCall, t string) tape.ToolResult { return harness.Text(call, t, false) }

// badInput words a bad input as Codex does for function arguments it cannot parse.
func badInput(call tape.ToolCall, err error) tape.ToolResult {
	return text(call, "failed to parse function arguments: "+err.Error())
}

// ApproxTokens is Codex's token estimate for n bytes of text: ceil(n/4).
func ApproxTokens(n int) int { return (n + 3) / 4 }

// TruncateTokens cuts text to about maxTokens tokens as Codex does (its
// formatted_truncate_text with a token policy): the head and tail kept, the middle
// replaced by "…N tokens truncated…", a "Total output lines: N" line first.
func TruncateTokens(s string, maxTokens int) string {
	budget := maxTokens * 4
	if len(s) <= budget {
		return s
	}
	lines := strings.Count(s, "\n")
	if !strings.HasSuffix(s, "\n") {
		lines++
	}
	left := budget / 2
	right := budget - left
	head := s[:charFloor(s, left)]
	tail := s[charCeil(s, len(s)-right):]
	// Codex counts the bytes past the budget as removed, not the bytes it dropped: a head
	// or tail cut back to a character boundary keeps fewer bytes than the count says.
	removed := len(s) - budget
	return fmt.Sprintf("Total output lines: %d\n\n%s…%d tokens truncated…%s", lines, head, ApproxTokens(removed), tail)
}

// charFloor returns the largest rune boundary <= i.
func charFloor(s string, i int) int {
	for i > 0 && i < len(s) && s[i]&0xC0 == 0x80 {
		i--
	}
	return i
}

// charCeil returns the smallest rune boundary >= i.
func charCeil(s string, i int) int {
	for i < len(s) && s[i]&0xC0 == 0x80 {
		i++
	}
	return i
}

func chunkID() string {
	b := make([]byte, 3)
	action.FillRandom(b)
	return hex.EncodeToString(b)
}

// rustFloat prints f as Rust's Display does for an f32 rounded to one decimal: "0",
// "0.1", "12".
func rustFloat(d time.Duration) string {
	v := math.Round(d.Seconds()*10) / 10
	return strconv.FormatFloat(v, 'f', -1, 32)
}

// serdeFloat prints a duration rounded to one decimal as serde_json prints an f32:
// always with a fractional part ("0.0", "1.2").
func serdeFloat(d time.Duration) string {
	v := math.Round(d.Seconds()*10) / 10
	s := strconv.FormatFloat(v, 'f', -1, 32)
	if !strings.ContainsAny(s, ".e") {
		s += ".0"
	}
	return s
}
