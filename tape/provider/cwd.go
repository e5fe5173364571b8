package provider

import (
	"slices"
	"strings"

	"github.com/tapebox/tapebox/tape"
	"github.com/tapebox/tapebox/tape/harnesses"
)

// Cwd returns the working directory a harness names in a normalized request, or "" when it
// names none. The harnesses say where they run:
//
//   - Claude Code, in its environment block: a line "Primary working directory: DIR" (2.1,
//     in a role:system entry of the conversation, "# Environment ... - Primary working
//     directory: DIR") or "Working directory: DIR" (older versions, inside <env> in the
//     system prompt). Only instructions are read for these (the system prompt and
//     role:system messages), so that a user's prompt quoting such a line does not count.
//   - Pi, on the last line of its system prompt: "Current working directory: DIR".
//   - Codex, in the environment context it sends as a user (or developer) message:
//     "<environment_context>\n  <cwd>DIR</cwd> ...".
//   - Gemini CLI, in the session context of its first user message: the first item of
//     the list "- **Workspace Directories:**\n  - DIR".
//
// The first directory named, in the order of the request (system prompt, then messages),
// wins. Tool results are never read.
func Cwd(req *tape.Request) string {
	if dir := lineCwd(req.System); dir != "" {
		return dir
	}
	for _, m := range req.Messages {
		if m.Role != "system" && m.Role != "user" {
			continue
		}
		for _, b := range m.Content {
			if b.Type != tape.BlockText {
				continue
			}
			if m.Role == "system" {
				if dir := lineCwd(b.Text); dir != "" {
					return dir
				}
			}
			if dir := codexCwd(b.Text); dir != "" {
				return dir
			}
			if dir := listCwd(b.Text); dir != "" {
				return dir
			}
		}
	}
	return ""
}

// cwdLabels are the labels of a line of instructions that names the working directory:
// each harness's CwdLines, in table order.
var cwdLabels = func() []string {
	var out []string
	for _, h := range harnesses.All {
		out = append(out, h.CwdLines...)
	}
	return out
}()

// codexCwdOpen and codexCwdClose delimit the working directory in a Codex
// <environment_context>.
var codexCwdOpen, codexCwdClose = "<" + harnesses.Codex.CwdElement + ">", "</" + harnesses.Codex.CwdElement + ">"

// lineCwd reads the working directory line of a harness's instructions (cwdLabels).
func lineCwd(text string) string {
	if !slices.ContainsFunc(cwdLabels, func(l string) bool { return strings.Contains(text, l) }) {
		return ""
	}
	for line := range strings.Lines(text) {
		line = strings.TrimLeft(strings.TrimSpace(line), "-* ")
		for _, label := range cwdLabels {
			if rest, ok := strings.CutPrefix(line, label); ok {
				if dir := strings.TrimSpace(rest); dir != "" && !strings.ContainsRune(dir, '\r') {
					return dir
				}
			}
		}
	}
	return ""
}

// codexCwd reads the <cwd> element of a Codex <environment_context>.
func codexCwd(text string) string {
	_, ctx, ok := strings.Cut(text, "<environment_context>")
	if !ok {
		return ""
	}
	ctx, _, _ = strings.Cut(ctx, "</environment_context>")
	_, rest, ok := strings.Cut(ctx, codexCwdOpen)
	if !ok {
		return ""
	}
	dir, _, ok := strings.Cut(rest, codexCwdClose)
	if !ok || strings.ContainsAny(dir, "\r\n") {
		return ""
	}
	return strings.TrimSpace(dir)
}

// listCwd reads the first item of a harness's list of workspace directories (CwdList).
func listCwd(text string) string {
	label := harnesses.Gemini.CwdList
	_, rest, ok := strings.Cut(text, label)
	if !ok {
		return ""
	}
	rest = strings.TrimLeft(rest, " \t")
	rest, ok = strings.CutPrefix(rest, "\n")
	if !ok {
		return ""
	}
	line, _, _ := strings.Cut(rest, "\n")
	dir, ok := strings.CutPrefix(strings.TrimSpace(line), "- ")
	if !ok || strings.ContainsRune(dir, '\r') {
		return ""
	}
	return strings.TrimSpace(dir)
}
