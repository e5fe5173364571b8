package fidelity

import (
	geminigrammar "github.com/tapebox/tapebox/internal/grammar/gemini"
	"github.com/tapebox/tapebox/internal/testutil/realharness"
)

// Gemini is the grammar of Gemini CLI's tools that the executor runs in the sandbox:
// read_file, run_shell_command, write_file, replace and list_directory
// (internal/grammar/gemini).
var Gemini = Grammar{
	Harness:  realharness.Gemini,
	Generate: fromGrammar(geminigrammar.Generate),
	Simplify: SimplifyStrings("content", "new_string"),
}

// GeminiVersion is the Gemini CLI pinned in harnesses/package.json.
const GeminiVersion = "0.61.0"

// GeminiTargets is the pinned Gemini CLI; its calls come without ids, as the Gemini API
// sends them, and the CLI names them itself.
func GeminiTargets() []Target {
	return []Target{{Harness: realharness.Gemini, Version: GeminiVersion, Run: withoutCaps(realharness.RunGemini)}}
}
