package conformance

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/tapebox/tapebox/internal/realharness"
	"github.com/tapebox/tapebox/tape"
)

// volatile is one part of a harness's tool result that changes on every run, so the
// comparison replaces it with a placeholder on both sides. This table is the complete list
// of what the comparison does not check byte for byte.
type volatile struct {
	harness string
	tools   []string
	what    string
	re      *regexp.Regexp
	repl    string
}

var volatiles = []volatile{
	{realharness.Codex, []string{"exec_command", "write_stdin"}, "chunk id (random per output chunk)",
		regexp.MustCompile(`(?m)^Chunk ID: [0-9a-f]+$`), "Chunk ID: <chunk-id>"},
	{realharness.Codex, []string{"exec_command", "write_stdin", "apply_patch"}, "wall time",
		regexp.MustCompile(`(?m)^Wall time: [0-9]+(\.[0-9]+)? seconds$`), "Wall time: <seconds> seconds"},
	{realharness.Codex, []string{"exec_command", "write_stdin"}, "session id of a command still running",
		regexp.MustCompile(`(?m)^Process running with session ID [0-9]+$`), "Process running with session ID <session-id>"},
	{realharness.Claude, []string{"Bash"}, "background task id and output file (the harness's /tmp/claude-<uid>/<cwd-slug>/<session>/tasks/<id>.output; the executor's own path), for run_in_background and for a command moved to the background at its timeout",
		regexp.MustCompile(`(in background with ID: |moved to the background \(ID: )[A-Za-z0-9_-]+(\)?)\. Output is being written to: \S+\. `),
		"${1}<task-id>${2}. Output is being written to: <task-output>. "},
	{realharness.Claude, []string{"Bash"}, "file holding output past the limit (<HOME>/.claude/projects/<cwd-slug>/<session>/tool-results/<id>.txt)",
		regexp.MustCompile(`Full output saved to: \S+\.txt\n`), "Full output saved to: <output-file>\n"},
	{realharness.Pi, []string{"bash"}, "file holding the whole output past the limit (Pi's /tmp/pi-bash-<16 hex>.log; the executor's state directory)",
		regexp.MustCompile(`Full output: \S+\.log\]`), "Full output: <output-file>]"},
	{realharness.Claude, []string{"Agent"}, "subagent id",
		regexp.MustCompile(`\ba[0-9a-f]{16}\b`), "<agent-id>"},
	{realharness.Claude, []string{"Agent"}, "subagent duration",
		regexp.MustCompile(`(?m)^duration_ms: [0-9]+`), "duration_ms: <ms>"},
}

// ignored names what is compared not at all, and why.
var ignored = []struct{ harness, what, why string }{
	{realharness.Codex, "is_error", "the Responses wire carries no error flag: the harness's side is always false"},
	{realharness.Claude, "Agent and Task calls", "spawning tools start a subagent the controller plays; their calls never reach the executor"},
}

// isErrorCompared says whether the harness's wire format carries is_error.
func isErrorCompared(harness string) bool { return harness != realharness.Codex }

// normalize replaces the volatile parts of a result's text.
func normalize(harness, tool, text string) string {
	for _, v := range volatiles {
		if v.harness == harness && slices.Contains(v.tools, tool) {
			text = v.re.ReplaceAllString(text, v.repl)
		}
	}
	return text
}

// diffResults returns "" when got matches want for a call, else a description of the
// first differences: block count and types, each text block (after normalize), is_error.
func diffResults(harness string, call tape.ToolCall, want, got tape.ToolResult) string {
	var out []string
	if isErrorCompared(harness) && want.IsError != got.IsError {
		out = append(out, fmt.Sprintf("is_error: harness %v, got %v", want.IsError, got.IsError))
	}
	if len(want.Content) != len(got.Content) {
		out = append(out, fmt.Sprintf("content blocks: harness %d, got %d\n  harness: %q\n  got:     %q", len(want.Content), len(got.Content), realharness.Excerpt(text(want), 600), realharness.Excerpt(text(got), 600)))
		return strings.Join(out, "\n")
	}
	for i := range want.Content {
		w, g := want.Content[i], got.Content[i]
		if w.Type != g.Type {
			out = append(out, fmt.Sprintf("block %d type: harness %q, got %q", i, w.Type, g.Type))
			continue
		}
		if w.Type != tape.BlockText {
			if string(w.Raw) != string(g.Raw) {
				out = append(out, fmt.Sprintf("block %d (%s) differs", i, w.Type))
			}
			continue
		}
		wt, gt := normalize(harness, call.Name, w.Text), normalize(harness, call.Name, g.Text)
		if wt != gt {
			out = append(out, fmt.Sprintf("block %d text:\n%s", i, textDiff(wt, gt)))
		}
	}
	return strings.Join(out, "\n")
}

// textDiff shows where two texts part: the common prefix length and the rest of each.
func textDiff(want, got string) string {
	p := 0
	for p < len(want) && p < len(got) && want[p] == got[p] {
		p++
	}
	start := max(0, p-40)
	return fmt.Sprintf("  lengths: harness %d, got %d; first difference at byte %d\n  harness: %q\n  got:     %q",
		len(want), len(got), p, realharness.Excerpt(want[start:], 400), realharness.Excerpt(got[start:], 400))
}

// diffFiles compares two directory snapshots.
func diffFiles(want, got []File) string {
	index := func(fs []File) map[string]File {
		m := map[string]File{}
		for _, f := range fs {
			m[f.Path] = f
		}
		return m
	}
	w, g := index(want), index(got)
	var out []string
	for _, f := range want {
		o, ok := g[f.Path]
		switch {
		case !ok:
			out = append(out, "  missing: "+f.Path)
		case f.Dir != o.Dir:
			out = append(out, fmt.Sprintf("  %s: dir %v, got dir %v", f.Path, f.Dir, o.Dir))
		case f.Mode != o.Mode:
			out = append(out, fmt.Sprintf("  %s: mode %s, got %s", f.Path, f.Mode, o.Mode))
		case f.Content != o.Content:
			out = append(out, fmt.Sprintf("  %s: content %q, got %q", f.Path, realharness.Excerpt(f.Content, 200), realharness.Excerpt(o.Content, 200)))
		}
	}
	for _, f := range got {
		if _, ok := w[f.Path]; !ok {
			out = append(out, "  unexpected: "+f.Path)
		}
	}
	return strings.Join(out, "\n")
}

// identifiers are the volatile ids a harness makes up in a result that the model then
// passes back in a later call. A case's call refers to one as "<<name:step>>" in its input;
// the capture fills in the harness's id, the comparison the executor's (the identifier
// substitution a replay does).
var identifiers = []struct {
	harness, name string
	re            *regexp.Regexp
}{
	{realharness.Codex, "session", regexp.MustCompile(`session ID ([0-9]+)`)},
	{realharness.Claude, "task", regexp.MustCompile(`(?:in background with ID: |moved to the background \(ID: )([A-Za-z0-9_-]+)`)},
	{realharness.Claude, "taskpath", regexp.MustCompile(`Output is being written to: (\S+)\. `)},
}

var placeholder = regexp.MustCompile(`"?<<([a-z]+:[0-9]+)>>"?`)

// hasPlaceholder says whether a call input refers to an identifier.
func hasPlaceholder(input []byte) bool { return placeholder.Match(input) }

// harvest collects the identifiers of earlier results, keyed "name:step".
func harvest(harness string, results []tape.ToolResult) map[string]string {
	ids := map[string]string{}
	for step, r := range results {
		for _, id := range identifiers {
			if id.harness != harness {
				continue
			}
			if m := id.re.FindStringSubmatch(text(r)); m != nil {
				ids[fmt.Sprintf("%s:%d", id.name, step)] = m[1]
			}
		}
	}
	return ids
}

// substitute fills the placeholders of a call input with ids: a placeholder that is a whole
// JSON string becomes a number when the id is one, else the id goes into the string.
func substitute(input json.RawMessage, ids map[string]string) (json.RawMessage, error) {
	var missing []string
	out := placeholder.ReplaceAllStringFunc(string(input), func(m string) string {
		key := placeholder.FindStringSubmatch(m)[1]
		v, ok := ids[key]
		if !ok {
			missing = append(missing, key)
			return m
		}
		quoted := strings.HasPrefix(m, `"`) && strings.HasSuffix(m, `"`)
		if quoted && strings.Trim(v, "0123456789") == "" && v != "" {
			return v
		}
		b, _ := json.Marshal(v)
		s := string(b[1 : len(b)-1])
		if strings.HasPrefix(m, `"`) {
			s = `"` + s
		}
		if strings.HasSuffix(m, `"`) {
			s += `"`
		}
		return s
	})
	if len(missing) > 0 {
		return nil, fmt.Errorf("no id for %s in the earlier results", strings.Join(missing, ", "))
	}
	if !json.Valid([]byte(out)) {
		return nil, fmt.Errorf("input after substitution is not JSON: %s", out)
	}
	return json.RawMessage(out), nil
}
