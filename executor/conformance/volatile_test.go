package conformance

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"github.com/tapebox/tapebox/internal/testutil/realharness"
	"github.com/tapebox/tapebox/match"
	"github.com/tapebox/tapebox/tape"
)

// The comparison masks, on both sides, the parts of a result that a harness makes
// different on every run: the volatile fields and the identifier fields of the harness table
// (package tape/harnesses, read through match.Mask and match.MaskIdentifiers), the
// same table a replay's compare reads. What it ignores besides is in ignored.

// ignored names what is compared not at all, and why.
var ignored = []struct{ harness, what, why string }{
	{realharness.Codex, "is_error", "the Responses wire carries no error flag: the harness's side is always false"},
	{"", "calls of spawning tools (the harness table's SpawningTools: Claude Code's Agent and Task)", "they start a subagent the controller plays; their calls never reach the executor"},
}

// isErrorCompared says whether the harness's wire format carries is_error.
func isErrorCompared(harness string) bool { return harness != realharness.Codex }

// normalize replaces the volatile and identifier fields of a harness's result text.
func normalize(harness, text string) string {
	return match.MaskIdentifiers(harness, match.Mask(harness, text))
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
		wt, gt := normalize(harness, w.Text), normalize(harness, g.Text)
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
		case f.Link != o.Link:
			out = append(out, fmt.Sprintf("  %s: link %q, got %q", f.Path, f.Link, o.Link))
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

// A case's call refers to an identifier that the harness made up in an earlier result, and
// that the model passes back, as "<<field:step>>" in its input, field being the name of an
// identifier field of the harness table ("<<exec session id:0>>"): the capture fills in the
// harness's id, the comparison the executor's (the identifier substitution a replay does).
var placeholder = regexp.MustCompile(`"?<<([a-z ]+:[0-9]+)>>"?`)

// hasPlaceholder says whether a call input refers to an identifier.
func hasPlaceholder(input []byte) bool { return placeholder.Match(input) }

// harvest collects the identifiers of earlier results, keyed "field:step".
func harvest(harness string, results []tape.ToolResult) map[string]string {
	ids := map[string]string{}
	for step, r := range results {
		for _, f := range match.IdentifierFields {
			if f.Harness != harness {
				continue
			}
			if v, ok := f.Value(text(r)); ok {
				ids[fmt.Sprintf("%s:%d", f.Name, step)] = v
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
