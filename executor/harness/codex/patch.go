package codex

import (
	"errors"
	"path/filepath"
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

// patchStatus is how a patch went: applied, rejected before anything was written
// (verification), or failed while its changes were written.
type patchStatus int

const (
	patchApplied patchStatus = iota
	patchRejected
	patchFailed
)

// patch applies a patch and returns Codex's summary, or its error text: the verification
// error, or what failed while writing (Codex shows the failed write alone, "Failed to write
// file PATH", as the output of a command that exited 1; the files before it are written).
func (s *session) patch(workdir, text string) (string, patchStatus) {
	cwd := s.env.Path(workdir)
	hunks, err := action.ParsePatch(text)
	if err == nil && len(hunks) == 0 {
		return "patch rejected: empty patch", patchRejected
	}
	// Codex verifies that no two of a patch's hunks name one file (fidelity seed 64001: an
	// add and two deletes of the same path).
	seen := map[string]bool{}
	for _, h := range hunks {
		p := h.Path
		if !filepath.IsAbs(p) {
			p = filepath.Join(cwd, p)
		}
		p = filepath.Clean(p)
		if seen[p] {
			return "apply_patch verification failed: invalid patch: multiple operations target " + p, patchRejected
		}
		seen[p] = true
	}
	opts := action.PatchOptions{LFOnly: !harnesses.Codex.Has(s.env.HarnessVersion, harnesses.CodexPatchKeepsLineEnds)}
	res, err := action.ApplyPatchWith(cwd, text, opts)
	if err != nil {
		var ae *action.PatchApplyError
		if errors.As(err, &ae) && ae.Writing {
			return ae.Context + "\n", patchFailed
		}
		return "apply_patch verification failed: " + err.Error(), patchRejected
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
	return b.String(), patchApplied
}

// patchText is the result of a patch of an apply_patch call or an exec_command heredoc:
// a rejection's text alone, else the output of a command that exited 0 or 1.
func patchText(out string, st patchStatus, took time.Duration) string {
	switch st {
	case patchRejected:
		return out
	case patchFailed:
		return "Exit code: 1\nWall time: " + rustFloat(took) + " seconds\nOutput:\n" + out
	}
	return "Exit code: 0\nWall time: " + rustFloat(took) + " seconds\nOutput:\n" + out
}

func (s *session) applyPatch(call tape.ToolCall) tape.ToolResult {
	text0, ok := patchInput(call)
	if !ok {
		return text(call, "apply_patch verification failed: invalid patch: input is not a patch text")
	}
	start := time.Now()
	out, st := s.patch("", text0)
	return text(call, patchText(out, st, time.Since(start)))
}

// patchAsExec answers an exec_command whose script is an apply_patch heredoc.
func (s *session) patchAsExec(call tape.ToolCall, workdir, patchText0 string) tape.ToolResult {
	start := time.Now()
	out, st := s.patch(workdir, patchText0)
	return text(call, patchText(out, st, time.Since(start)))
}

// patchAsShell answers a shell call that runs apply_patch, in the shell tool's format.
func (s *session) patchAsShell(call tape.ToolCall, workdir, patchText0 string, jsonForm bool) tape.ToolResult {
	start := time.Now()
	out, st := s.patch(workdir, patchText0)
	code := 0
	if st != patchApplied {
		code = 1
	}
	return text(call, shellOutput(out, code, time.Since(start), jsonForm))
}
