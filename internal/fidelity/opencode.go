package fidelity

import (
	"context"
	"math/rand/v2"

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

// OpenCodeVersion is the opencode pinned in harnesses/package.json.
const OpenCodeVersion = "1.18.33"

// OpenCodeTargets is the pinned opencode, on a custom Anthropic provider whose model
// ("fake-model") is not a GPT: its request offers edit and write, not apply_patch.
func OpenCodeTargets() []Target {
	return []Target{{Harness: realharness.OpenCode, Version: OpenCodeVersion, Run: withoutCaps(runOpenCode)}}
}

// runOpenCode runs opencode with a session title of its own (--title): without one,
// opencode asks the model for a title beside the agent's first turn, and when that request
// reaches the gateway first the gateway takes it for the main thread, and the agent's
// thread for a side one (the replay then plays neither). That is the gateway's to fix; the
// generator measures the executor.
func runOpenCode(ctx context.Context, o realharness.Options) (realharness.Result, error) {
	o.Args = append(o.Args, "--title", "fidelity")
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
}
