package fidelity

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/tapebox/tapebox/match"
	"github.com/tapebox/tapebox/tape"
)

// A call may refer to an identifier the harness made up in the result of an earlier call
// and that the model passes back (Codex's exec session id, which write_stdin takes): its
// input holds "<<field:step>>", field being the name of an identifier field of the harness
// table (match.IdentifierFields: "exec session id") and step the index of the earlier call
// in the sequence. The scripted provider fills it in while the harness runs, from the
// results the harness has sent; the replay then maps the harness's id to the executor's as
// it does for any tape.
var placeholder = regexp.MustCompile(`"?<<([a-z ]+):([0-9]+)>>"?`)

// Ref is one placeholder of a call input.
type Ref struct {
	Field string
	Step  int
}

// Refs lists the placeholders of a call input, in order.
func Refs(input []byte) []Ref {
	var out []Ref
	for _, m := range placeholder.FindAllSubmatch(input, -1) {
		n, err := strconv.Atoi(string(m[2]))
		if err != nil {
			continue
		}
		out = append(out, Ref{Field: string(m[1]), Step: n})
	}
	return out
}

// HasRefs says whether a call input holds a placeholder.
func HasRefs(input []byte) bool { return placeholder.Match(input) }

// renumber rewrites the placeholders of input through step: a placeholder of step i
// becomes one of step(i); ok is false when step returns -1 for one of them (the call it
// refers to is gone).
func renumber(input json.RawMessage, step func(int) int) (json.RawMessage, bool) {
	ok := true
	out := placeholder.ReplaceAllStringFunc(string(input), func(m string) string {
		sm := placeholder.FindStringSubmatch(m)
		n, _ := strconv.Atoi(sm[2])
		to := step(n)
		if to < 0 {
			ok = false
			return m
		}
		return strings.Replace(m, "<<"+sm[1]+":"+sm[2]+">>", fmt.Sprintf("<<%s:%d>>", sm[1], to), 1)
	})
	return json.RawMessage(out), ok
}

// harvest collects the identifiers the harness's results hold, keyed "field:step".
func harvest(harness string, results map[int]tape.ToolResult) map[string]string {
	ids := map[string]string{}
	for step, r := range results {
		var text strings.Builder
		for _, b := range r.Content {
			if b.Type == tape.BlockText {
				text.WriteString(b.Text)
			}
		}
		for _, f := range match.IdentifierFields {
			if f.Harness != harness {
				continue
			}
			if v, ok := f.Value(text.String()); ok {
				ids[fmt.Sprintf("%s:%d", f.Name, step)] = v
			}
		}
	}
	return ids
}

// substitute fills the placeholders of a call input with ids: a placeholder that is a
// whole JSON string becomes a number when the id is one, else the id goes into the string.
func substitute(input json.RawMessage, ids map[string]string) (json.RawMessage, error) {
	var missing []string
	out := placeholder.ReplaceAllStringFunc(string(input), func(m string) string {
		sm := placeholder.FindStringSubmatch(m)
		key := sm[1] + ":" + sm[2]
		v, ok := ids[key]
		if !ok {
			missing = append(missing, key)
			return m
		}
		quoted := strings.HasPrefix(m, `"`) && strings.HasSuffix(m, `"`)
		if quoted && v != "" && strings.Trim(v, "0123456789") == "" {
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
		return nil, fmt.Errorf("input after substitution is not JSON: %s", clip(out, 300))
	}
	return json.RawMessage(out), nil
}
