package fidelity

import (
	"context"
	"math/rand/v2"
	"strings"

	"github.com/tapebox/tapebox/internal/grammar"
	opencodegrammar "github.com/tapebox/tapebox/internal/grammar/opencode"
	"github.com/tapebox/tapebox/internal/testutil/realharness"
)

// OpenCode is the grammar of OpenCode's tools (internal/grammar/opencode): bash, read,
// write, edit (every matcher of its edit tool), glob, grep, todowrite, and tools the
// request does not offer. Its paths are absolute under the sequence's cwd, as opencode
// asks of a model, or now and then relative.
var OpenCode = Grammar{
	Harness: realharness.OpenCode,
	Generate: func(r *rand.Rand, cwd string) ([]File, []Call) {
		// 25 to 45 calls a sequence, not 10 to 30: opencode takes most of a minute to start
		// on a loaded machine, longer sequences spread it over more calls.
		return fromGrammar(func(r *rand.Rand, _ int) grammar.Sequence {
			return opencodegrammar.Generate(r, 25+r.IntN(21), cwd)
		})(r, cwd)
	},
	Simplify: SimplifyStrings("content", "newString"),
	Classes:  openCodeClasses,
}

// OpenCodeGPT is the grammar of OpenCode's tools as a GPT model gets them
// (opencodegrammar.GenerateGPT): apply_patch in place of edit and write. Its sequences are
// named "opencode-gpt" on the scoreboard, apart from the other model's; the recordings
// are opencode's (meta.harness "opencode").
var OpenCodeGPT = Grammar{
	Harness: "opencode-gpt",
	Generate: func(r *rand.Rand, cwd string) ([]File, []Call) {
		return fromGrammar(func(r *rand.Rand, _ int) grammar.Sequence {
			return opencodegrammar.GenerateGPT(r, 25+r.IntN(21), cwd)
		})(r, cwd)
	},
	Simplify: SimplifyStrings("content", "patchText"),
	Classes:  openCodeClasses,
}

// OpenCodeGPTModel is the model id of the GPT target: opencode 1.18's tool registry offers
// apply_patch, and neither edit nor write, to a model whose id has "gpt-" and neither
// "gpt-4" nor "oss", whatever the provider (its other GPT-only choices, a system prompt and
// reasoning options for gpt-5, do not change what a tool does). The provider stays the
// custom Anthropic one: the wire format does not reach the tools.
const OpenCodeGPTModel = "gpt-fake"

// OpenCodeGPTTargets is the pinned opencode with the model OpenCodeGPTModel.
func OpenCodeGPTTargets() []Target {
	return []Target{{Harness: realharness.OpenCode, Version: OpenCodeVersion, Run: withoutCaps(func(ctx context.Context, o realharness.Options) (realharness.Result, error) {
		o.Model = OpenCodeGPTModel
		return runOpenCode(ctx, o)
	})}}
}

// OpenCodeVersion is the opencode pinned in harnesses/package.json.
const OpenCodeVersion = "1.18.33"

// OpenCodeTargets is the pinned opencode, on a custom Anthropic provider whose model
// ("fake-model") is not a GPT: its request offers edit and write, not apply_patch.
func OpenCodeTargets() []Target {
	return []Target{{Harness: realharness.OpenCode, Version: OpenCodeVersion, Run: withoutCaps(runOpenCode)}}
}

// runOpenCode runs opencode as a user does, without --title: opencode then asks the model
// for a session title beside the agent's first turn, and the scripted model, which picks a
// thread by the marker the title request quotes, answers it with the agent's first call.
// Whichever of the two requests reaches the gateway first, the tape replays (tape.Main and
// compare count only calls whose request offered tools; the gateway continues the thread of
// a request's own conversation when two threads made a call of the same id).
func runOpenCode(ctx context.Context, o realharness.Options) (realharness.Result, error) {
	return realharness.RunOpenCode(ctx, o)
}

// openCodeClasses are the divergences of OpenCode the executor does not reproduce.
var openCodeClasses = []Class{
	{Name: "stdout/stderr interleaving", Tool: "bash", Field: "tool_result",
		Reason: "opencode reads a command's stdout and stderr from two pipes and appends each chunk as it arrives: writes to " +
			"both within the same instant (cat's error, then echo) interleave differently from run to run; the same bytes, in " +
			"another order",
		Match: sameBytes},
	backgroundRace,
	{Name: "ripgrep's order under the match limit", Tool: "grep", Field: "tool_result",
		Reason: "opencode's grep shows the first 100 matches in the order ripgrep's parallel walk finds the files, which " +
			"changes from run to run; the executor keeps the recording's order of the files both list, but past the limit " +
			"the files listed can differ",
		Match: func(d Divergence) bool {
			return strings.Contains(d.Recorded, "(more matches available)") || sameBytes(d)
		}},
	{Name: "opencode's window of a long output", Tool: "bash", Field: "tool_result",
		Reason: "of an output past 2 x 51200 bytes opencode keeps the chunks its pipe reads delivered within the last " +
			"102400 bytes, then their last 51200; where the reads fell decides the edge of what is shown (the same yes | head " +
			"-n 9000 recorded as the executor replays it in seeds 42010, 42030, 42050 and 42064, one byte shorter in 42048; " +
			"a cat of a file that long, in opencode-gpt seed 62037, the same way)",
		Match: func(d Divergence) bool {
			const cut = "...output truncated..."
			if !hasInput(d, "over-51200-bytes") && !hasInput(d, "long-line") && !hasInput(d, "many-lines") && !hasInput(d, "cat") {
				return false
			}
			body := func(s string) (string, bool) {
				parts := strings.SplitN(s, "\n\n", 3)
				// The ledger keeps the first 4000 bytes of each side, "..." after them.
				return strings.TrimSuffix(parts[len(parts)-1], "..."), strings.HasPrefix(s, cut) && len(parts) == 3
			}
			a, okA := body(d.Recorded)
			b, okB := body(d.Replayed)
			if !okA || !okB {
				return false
			}
			if strings.HasPrefix(a, b) || strings.HasPrefix(b, a) {
				return true
			}
			// The window's start fell in another line: past each side's first line, the
			// same lines (opencode-gpt seed 62047).
			_, a, _ = strings.Cut(a, "\n")
			_, b, _ = strings.Cut(b, "\n")
			return len(a) > 0 && len(b) > 0 && (strings.HasPrefix(a, b) || strings.HasPrefix(b, a))
		}},
}
