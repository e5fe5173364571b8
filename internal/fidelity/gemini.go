package fidelity

import (
	"encoding/json"
	"regexp"
	"strings"

	geminigrammar "github.com/tapebox/tapebox/internal/grammar/gemini"
	"github.com/tapebox/tapebox/internal/testutil/realharness"
	"github.com/tapebox/tapebox/testkit/fakeprovider"
)

// Gemini is the grammar of Gemini CLI's tools (internal/grammar/gemini): read_file,
// run_shell_command, write_file, replace, list_directory, glob, grep_search and write_todos,
// which the executor runs in the sandbox (copying what it cannot reproduce, see
// executor/harness/gemini); and tools the request does not offer.
var Gemini = Grammar{
	Harness:  realharness.Gemini,
	Generate: fromGrammar(geminigrammar.Generate),
	Simplify: SimplifyStrings("content", "new_string"),
	Classes:  geminiClasses,
}

// fullOutput is the line that names the file holding a truncated result whole.
var fullOutput = regexp.MustCompile(`^Output too large\. Showing first [0-9,]+ and last [0-9,]+ characters\. For full output see: [^\n]*\n`)

// pgid is the volatile process group id the CLI puts at the end of a shell result.
var pgid = regexp.MustCompile(`Process Group PGID: [0-9]+`)

// omitted is the marker between the head and the tail of a truncated result.
var omitted = regexp.MustCompile(`\n\n\.\.\. \[[0-9,]+ characters omitted\] \.\.\.\n\n`)

// geminiSameTruncated says that two truncated shell results show the same output but for where
// the tail's cut falls: the same head, and one tail the end of the other.
func geminiSameTruncated(rec, rep string) bool {
	r, p := fullOutput.FindString(rec), fullOutput.FindString(rep)
	if r == "" || p == "" {
		return false
	}
	norm := func(s string) []string {
		return omitted.Split(pgid.ReplaceAllString(s, "Process Group PGID: <pgid>"), 2)
	}
	a, b := norm(strings.TrimPrefix(rec, r)), norm(strings.TrimPrefix(rep, p))
	if len(a) != len(b) || a[0] != b[0] {
		return false
	}
	return len(a) == 1 || strings.HasSuffix(a[1], b[1]) || strings.HasSuffix(b[1], a[1])
}

// geminiClasses are the divergences of Gemini CLI the executor does not reproduce.
var geminiClasses = []Class{
	{Name: "the full output's file", Tool: "run_shell_command", Field: "tool_result",
		Reason: "a result past 40,000 characters names the file the whole output was saved to: the CLI's is in its own home " +
			"(~/.gemini/tmp/PROJECT/tool-outputs/session-UUID/, named by its session id and the call's millisecond id), the " +
			"executor's in its state directory. The last 32,000 characters shown are counted with the process group id (a " +
			"volatile field) in them, which has another number of digits in the sandbox, so the tail's cut can fall a few " +
			"characters apart; the head and the tail shown must otherwise be the same",
		Match: func(d Divergence) bool { return geminiSameTruncated(d.Recorded, d.Replayed) }},
	{Name: "processes racing to one output", Tool: "run_shell_command", Field: "tool_result",
		Reason: "the CLI reads a command's stdout and stderr as one stream; where two processes write to it at once (head's " +
			"error and od's first line in `head -c 300 missing | od -c`, both started by the pipeline), which comes first " +
			"changes from run to run: the same lines in another order",
		Match: sameBytes},
}

// GeminiVersion is the Gemini CLI pinned in harnesses/package.json.
const GeminiVersion = "0.61.0"

// GeminiTargets is the pinned Gemini CLI; its calls come without ids, as the Gemini API
// sends them, and the CLI names them itself.
func GeminiTargets() []Target {
	return []Target{{Harness: realharness.Gemini, Version: GeminiVersion, Run: withoutCaps(realharness.RunGemini)}}
}

// sideAnswer is the scripted model's answer to a side request (one without the marker): the
// JSON a Gemini CLI check asks for (geminiSideJSON), else a plain "none".
func sideAnswer(r *fakeprovider.Request) fakeprovider.Turn {
	if r.Endpoint == fakeprovider.EndpointGemini {
		if text := geminiSideJSON(r.Body); text != "" {
			return fakeprovider.Turn{Text: text}
		}
	}
	return fakeprovider.Turn{Text: "none"}
}

// geminiSideJSON answers the checks Gemini CLI 0.61.0 asks for JSON by the schema its
// request names (generationConfig.responseJsonSchema, BaseLlmClient.generateJson), or "":
//   - loop detection (LoopDetectionService.checkForLoopWithLLM, once a prompt has run 30
//     turns, then every 5 to 15): no loop, confidence 0, so that the run goes on and the
//     next check waits the longest. Unanswered, the CLI retried and the sequence did not
//     record; answered "none", which is no JSON, it asks again up to its retry limit.
//   - the next speaker (checkNextSpeaker, off by default): the user, so that the CLI
//     does not prompt the model again.
//
// Other side requests (the edit corrector's) keep the plain answer the rows were made with.
func geminiSideJSON(body []byte) string {
	var req struct {
		GenerationConfig struct {
			ResponseJSONSchema struct {
				Properties map[string]json.RawMessage `json:"properties"`
			} `json:"responseJsonSchema"`
		} `json:"generationConfig"`
	}
	if json.Unmarshal(body, &req) != nil {
		return ""
	}
	props := req.GenerationConfig.ResponseJSONSchema.Properties
	switch {
	case props["unproductive_state_confidence"] != nil:
		return `{"unproductive_state_analysis":"Each call is a new one the user asked for: no loop.","unproductive_state_confidence":0}`
	case props["next_speaker"] != nil:
		return `{"reasoning":"The model finished its turn.","next_speaker":"user"}`
	}
	return ""
}
