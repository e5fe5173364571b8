package codex

import (
	"strings"
	"time"

	"github.com/tapebox/tapebox/executor/action"
	"github.com/tapebox/tapebox/internal/jsonlex"
	"github.com/tapebox/tapebox/tape"
	"github.com/tapebox/tapebox/tape/harnesses"
)

// patchInput reads the patch text of an apply_patch call: a custom tool's text is stored
// as {"input": TEXT}; a bare JSON string is accepted too.
func patchInput(call tape.ToolCall) (string, bool) {
	var in struct {
		Input *string `json:"input"`
		Patch *string `json:"patch"`
	}
	if jsonlex.Unmarshal(call.Input, &in) == nil {
		if in.Input != nil {
			return *in.Input, true
		}
		if in.Patch != nil {
			return *in.Patch, true
		}
	}
	var s string
	if jsonlex.Unmarshal(call.Input, &s) == nil {
		return s, true
	}
	return "", false
}

// patch applies a patch and returns Codex's summary or its error text (ok false).
func (s *session) patch(workdir, text string) (out string, ok bool) {
	if hunks, err := action.ParsePatch(text); err == nil && len(hunks) == 0 {
		return "patch rejected: empty patch", false
	}
	opts := action.PatchOptions{LFOnly: !harnesses.Codex.Has(s.env.HarnessVersion, harnesses.CodexPatchKeepsLineEnds)}
	res, err := action.ApplyPatchWith(s.env.Path(workdir), text, opts)
	if err != nil {
		return "apply_patch verification failed: " + err.Error(), false
	}
	var b strings.Builder
	b.WriteString("Success. Updated the following files:\n")
	for _, p := range res.Added {
		b.WriteString("A " + p + "\n")
	}
	for _, p := range res.Modified {
		b.WriteString("M " + p + "\n")
	}
	for _, p := range res.Deleted {
		b.WriteString("D " + p + "\n")
	}
	return b.String(), true
}

func (s *session) applyPatch(call tape.ToolCall) tape.ToolResult {
	patchText, ok := patchInput(call)
	if !ok {
		return text(call, "apply_patch verification failed: invalid patch: input is not a patch text")
	}
	start := time.Now()
	out, ok := s.patch("", patchText)
	if !ok {
		return text(call, out)
	}
	return text(call, "Exit code: 0\nWall time: "+rustFloat(time.Since(start))+" seconds\nOutput:\n"+out)
}

// patchAsExec answers an exec_command whose script is an apply_patch heredoc.
func (s *session) patchAsExec(call tape.ToolCall, workdir, patchText string) tape.ToolResult {
	start := time.Now()
	out, ok := s.patch(workdir, patchText)
	if !ok {
		return text(call, out)
	}
	return text(call, "Exit code: 0\nWall time: "+rustFloat(time.Since(start))+" seconds\nOutput:\n"+out)
}

// patchAsShell answers a shell call that runs apply_patch, in the shell tool's format.
func (s *session) patchAsShell(call tape.ToolCall, workdir, patchText string, jsonForm bool) tape.ToolResult {
	start := time.Now()
	out, ok := s.patch(workdir, patchText)
	code := 0
	if !ok {
		code = 1
	}
	return text(call, shellOutput(out, code, time.Since(start), jsonForm))
}
