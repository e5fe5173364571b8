package gateway

import (
	"bytes"
	"encoding/json"
	"strings"
	"unicode/utf8"

	"github.com/tapebox/tapebox/match"
	"github.com/tapebox/tapebox/tape"
	"github.com/tapebox/tapebox/tape/provider"
)

// substituteStream returns the data of a recorded stream's chunks with identifiers
// substituted. A provider streams a tool call's arguments (and text) as small deltas, so an
// identifier is rarely whole in one chunk: the deltas of each content block are joined,
// substituted, and split again at the same offsets (the last delta takes any difference in
// length). Chunks that carry whole values (a block's start, Responses' response.completed)
// are substituted as they are. Which deltas belong together is p's wire's (wire.deltas).
func substituteStream(p tape.Provider, ids *match.Identifiers, chunks []tape.Chunk) []string {
	out := make([]string, len(chunks))
	if ids.Len() == 0 {
		for i, c := range chunks {
			out[i] = c.Data
		}
		return out
	}
	w, ok := wireOf(p)
	if !ok { // no deltas known: each event is substituted as it is
		w.deltas = func(map[string]any, func(string, map[string]any, string)) {}
	}
	type piece struct {
		chunk int
		get   func() string
		set   func(string)
	}
	var order []string
	groups := map[string][]piece{}
	events := make([]map[string]any, len(chunks))
	names := make([]string, len(chunks))
	for i, c := range chunks {
		name, data := provider.ParseEvent(c.Data)
		if !strings.Contains(data, "delta") {
			continue
		}
		var m map[string]any
		if json.Unmarshal([]byte(data), &m) != nil {
			continue
		}
		add := func(key string, obj map[string]any, field string) {
			if _, ok := obj[field].(string); !ok {
				return
			}
			if _, seen := groups[key]; !seen {
				order = append(order, key)
			}
			groups[key] = append(groups[key], piece{chunk: i,
				get: func() string { return obj[field].(string) },
				set: func(s string) { obj[field] = s }})
			events[i], names[i] = m, name
		}
		w.deltas(m, add)
	}
	dirty := make([]bool, len(chunks))
	for _, key := range order {
		ps := groups[key]
		orig := make([]string, len(ps))
		var joined strings.Builder
		for k, p := range ps {
			orig[k] = p.get()
			joined.WriteString(orig[k])
		}
		sub := ids.ApplyText(joined.String())
		if sub == joined.String() {
			continue
		}
		for k, s := range redistribute(orig, sub) {
			ps[k].set(s)
			dirty[ps[k].chunk] = true
		}
	}
	for i, c := range chunks {
		if !dirty[i] {
			out[i] = applySSE(ids, c.Data)
			continue
		}
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(events[i]); err != nil {
			out[i] = applySSE(ids, c.Data)
			continue
		}
		data := strings.TrimSuffix(b.String(), "\n")
		if names[i] != "" {
			out[i] = "event: " + names[i] + "\ndata: " + data + "\n\n"
		} else {
			out[i] = "data: " + data + "\n\n"
		}
	}
	return out
}

// redistribute splits s into len(orig) pieces at the offsets orig had (moved back to a rune
// boundary); the last piece takes the rest.
func redistribute(orig []string, s string) []string {
	out := make([]string, len(orig))
	off := 0
	for i := range orig {
		if i == len(orig)-1 {
			out[i] = s[off:]
			break
		}
		end := min(off+len(orig[i]), len(s))
		for end > off && end < len(s) && !utf8.RuneStart(s[end]) {
			end--
		}
		out[i] = s[off:end]
		off = end
	}
	return out
}

// applySSE rewrites the identifiers in the JSON data lines of one SSE event, JSON-aware;
// other lines are kept as they are.
func applySSE(ids *match.Identifiers, event string) string {
	lines := strings.SplitAfter(event, "\n")
	changed := false
	for i, l := range lines {
		body, ok := strings.CutPrefix(l, "data:")
		if !ok {
			continue
		}
		nl := ""
		if strings.HasSuffix(body, "\n") {
			body, nl = body[:len(body)-1], "\n"
		}
		sp := ""
		if strings.HasPrefix(body, " ") {
			body, sp = body[1:], " "
		}
		if sub := ids.ApplyText(body); sub != body {
			lines[i] = "data:" + sp + sub + nl
			changed = true
		}
	}
	if !changed {
		return event
	}
	return strings.Join(lines, "")
}
