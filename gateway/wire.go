package gateway

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/tapebox/tapebox/tape"
	"github.com/tapebox/tapebox/tape/provider"
)

// wire is what the endpoint knows of one provider's wire format beyond package
// tape/provider, which parses and emits it (Path, Normalize, Body and Stream,
// ErrorBody). Adding a provider to the endpoint is one entry in wires, once tape/provider
// knows its format; every mode (live, tape, fork) serves the providers wires lists.
type wire struct {
	p tape.Provider
	// upstream is the provider's public API host (DefaultUpstreams).
	upstream string
	// modelPath, when set, says whether a request path is one of p's model calls, for a
	// format whose paths are not one fixed path (the Gemini API's name the model); nil means
	// exactly provider.Path(p).
	modelPath func(path string) bool
	// loosePath, when set, is endsInModelPath's test of a decoded, normalized, lower-case
	// path for such a format; nil means modelPath.
	loosePath func(v string) bool
	// terminal says whether a stream event (as sent, "event: ...\ndata: ...\n\n") is the
	// last one of an answer: the live mode records the step before forwarding it.
	terminal func(ev string) bool
	// deltas calls add for each text that a stream event ev (its data decoded) delivers in
	// pieces: a tool call's arguments, a text, a thinking block, under a key naming the
	// block it belongs to, with the object and field that hold it. The tape mode joins the
	// pieces of each block to substitute learned identifiers (substituteStream).
	deltas func(ev map[string]any, add func(key string, obj map[string]any, field string))
}

// wires are the wire formats of the model endpoint, in the order routes try them.
var wires = []wire{
	{p: tape.ProviderAnthropic, upstream: "https://api.anthropic.com",
		terminal: func(ev string) bool {
			name := eventName(ev)
			return name == "message_stop" || name == "error"
		},
		deltas: func(m map[string]any, add func(string, map[string]any, string)) {
			if m["type"] != "content_block_delta" {
				return
			}
			if d, ok := m["delta"].(map[string]any); ok {
				for _, f := range []string{"partial_json", "text", "thinking"} {
					add(fmt.Sprintf("a%v.%s", m["index"], f), d, f)
				}
			}
		}},
	{p: tape.ProviderOpenAIChat, upstream: "https://api.openai.com",
		terminal: func(ev string) bool {
			_, data := provider.ParseEvent(ev)
			return strings.TrimSpace(data) == "[DONE]"
		},
		deltas: func(m map[string]any, add func(string, map[string]any, string)) {
			choices, _ := m["choices"].([]any)
			for ci, c := range choices {
				cm, _ := c.(map[string]any)
				d, _ := cm["delta"].(map[string]any)
				if d == nil {
					continue
				}
				add(fmt.Sprintf("c%d.content", ci), d, "content")
				tcs, _ := d["tool_calls"].([]any)
				for _, tc := range tcs {
					tcm, _ := tc.(map[string]any)
					if fn, _ := tcm["function"].(map[string]any); fn != nil {
						add(fmt.Sprintf("c%d.tc%v", ci, tcm["index"]), fn, "arguments")
					}
				}
			}
		}},
	{p: tape.ProviderOpenAIResponses, upstream: "https://api.openai.com",
		terminal: func(ev string) bool {
			switch eventName(ev) {
			case "response.completed", "response.incomplete", "response.failed", "error":
				return true
			}
			return false
		},
		deltas: func(m map[string]any, add func(string, map[string]any, string)) {
			if typ, _ := m["type"].(string); strings.HasSuffix(typ, ".delta") {
				add(fmt.Sprintf("r%v.%v.%s", m["output_index"], m["content_index"], typ), m, "delta")
			}
		}},
	{p: tape.ProviderGemini, upstream: "https://generativelanguage.googleapis.com",
		modelPath: geminiCall.MatchString,
		loosePath: func(v string) bool {
			return strings.HasSuffix(v, ":generatecontent") || strings.HasSuffix(v, ":streamgeneratecontent")
		},
		// A Gemini stream has no final event of its own: its last chunk is the one whose
		// candidate says why it finished (and a stream without one ends with its body:
		// relayStream).
		terminal: func(ev string) bool {
			_, data := provider.ParseEvent(ev)
			if !strings.Contains(data, `"finishReason"`) {
				return eventName(ev) == "error"
			}
			var c struct {
				Candidates []struct {
					FinishReason string `json:"finishReason"`
				} `json:"candidates"`
			}
			return json.Unmarshal([]byte(data), &c) == nil && len(c.Candidates) > 0 && c.Candidates[0].FinishReason != ""
		},
		deltas: func(m map[string]any, add func(string, map[string]any, string)) {
			cands, _ := m["candidates"].([]any)
			for ci, c := range cands {
				cm, _ := c.(map[string]any)
				content, _ := cm["content"].(map[string]any)
				parts, _ := content["parts"].([]any)
				for _, p := range parts {
					pm, _ := p.(map[string]any)
					if _, ok := pm["text"].(string); ok {
						kind := "text"
						if pm["thought"] == true {
							kind = "thought"
						}
						add(fmt.Sprintf("g%d.%s", ci, kind), pm, "text")
					}
				}
			}
		}},
}

// wireOf returns p's entry in wires (ok false for a provider the endpoint does not serve).
func wireOf(p tape.Provider) (wire, bool) {
	for _, w := range wires {
		if w.p == p {
			return w, true
		}
	}
	return wire{}, false
}

// isModelPath says whether fwd, a path as sent (escaped, without its /r/LABEL prefix), is
// one of w's model calls.
func (w wire) isModelPath(fwd string) bool {
	if w.modelPath != nil {
		return w.modelPath(fwd)
	}
	return fwd == provider.Path(w.p)
}

// endsInModelPath says whether v, a path decoded and normalized, ends in one of w's model
// call paths (route's ambiguous paths).
func (w wire) endsInModelPath(v string) bool {
	if w.loosePath != nil {
		return w.loosePath(v)
	}
	if w.modelPath != nil {
		return w.modelPath(v)
	}
	path := provider.Path(w.p)
	return path != "" && strings.HasSuffix(v, path)
}

// isTerminal says whether a stream event is the last one of an answer in p's format.
func isTerminal(p tape.Provider, ev string) bool {
	w, ok := wireOf(p)
	if !ok {
		return false
	}
	return w.terminal(ev)
}

// eventName is a stream event's name: its event line's, else its data's "type".
func eventName(ev string) string {
	name, data := provider.ParseEvent(ev)
	if name == "" && strings.HasPrefix(data, "{") {
		name = jsonField(json.RawMessage(data), "type")
	}
	return name
}
