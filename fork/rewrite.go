package fork

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"

	"github.com/tapebox/tapebox/internal/jsonlex"
	"github.com/tapebox/tapebox/tape"
)

// Overrides are what a fork changes in every live request.
type Overrides struct {
	// Model, when set, replaces the request's model field.
	Model string
	// SystemAppend, when set, is appended to the system prompt (Anthropic system, OpenAI
	// Responses instructions, the first system or developer message of Chat Completions),
	// after a blank line; to a Gemini API request's systemInstruction as a part of its own.
	SystemAppend string
}

// Map is the overrides as meta.forked_from.overrides holds them.
func (o Overrides) Map() map[string]string {
	m := map[string]string{}
	if o.Model != "" {
		m["model"] = o.Model
	}
	if o.SystemAppend != "" {
		m["system_append"] = o.SystemAppend
	}
	return m
}

// Apply returns body with the overrides applied. Everything else is kept byte for byte, so
// that the provider sees the prefix the harness sent (prompt caches keep working). A Gemini
// API request names its model in its path, not its body: Path changes that.
func (o Overrides) Apply(p tape.Provider, body []byte) ([]byte, error) {
	var err error
	if o.Model != "" && p != tape.ProviderGemini {
		if body, err = setMember(body, "model", quote(o.Model)); err != nil {
			return nil, fmt.Errorf("override the model: %w", err)
		}
	}
	if o.SystemAppend != "" {
		if body, err = appendSystem(p, body, o.SystemAppend); err != nil {
			return nil, fmt.Errorf("append to the system prompt: %w", err)
		}
	}
	return body, nil
}

// span is where a top-level member's value lies in a JSON object.
type span struct{ start, end int }

// members finds the values of a JSON object's top-level members.
func members(body []byte) (map[string]span, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	tok, err := dec.Token()
	if err != nil {
		return nil, fmt.Errorf("the body is not JSON: %w", err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, errors.New("the body is not a JSON object")
	}
	out := map[string]span{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("the body is not JSON: %w", err)
		}
		key, _ := tok.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, fmt.Errorf("the body is not JSON: %w", err)
		}
		end := int(dec.InputOffset())
		out[key] = span{end - len(v), end}
	}
	return out, nil
}

// setMember replaces the value of a top-level member, or adds the member first.
func setMember(body []byte, key string, value []byte) ([]byte, error) {
	ms, err := members(body)
	if err != nil {
		return nil, err
	}
	if sp, ok := ms[key]; ok {
		return splice(body, sp.start, sp.end, value), nil
	}
	open := bytes.IndexByte(body, '{') + 1
	ins := append(append(quote(key), ':'), value...)
	if len(ms) > 0 {
		ins = append(ins, ',')
	}
	return splice(body, open, open, ins), nil
}

func splice(b []byte, start, end int, with []byte) []byte {
	out := make([]byte, 0, len(b)-(end-start)+len(with))
	out = append(out, b[:start]...)
	out = append(out, with...)
	return append(out, b[end:]...)
}

// quote encodes s as a JSON string, without HTML escaping.
func quote(s string) []byte {
	return jsonlex.AppendString(nil, s, false)
}

func appendSystem(p tape.Provider, body []byte, text string) ([]byte, error) {
	ms, err := members(body)
	if err != nil {
		return nil, err
	}
	switch p {
	case tape.ProviderAnthropic:
		return appendText(body, ms, "system", text)
	case tape.ProviderOpenAIResponses:
		return appendText(body, ms, "instructions", text)
	case tape.ProviderOpenAIChat:
		return appendChatSystem(body, ms, text)
	case tape.ProviderGemini:
		return appendGeminiSystem(body, ms, text)
	}
	return nil, fmt.Errorf("provider %q: unknown wire format", p)
}

// appendText appends text to a member that is a string or an array of content blocks
// (adding a text block), or adds the member.
func appendText(body []byte, ms map[string]span, key, text string) ([]byte, error) {
	sp, ok := ms[key]
	if !ok || string(body[sp.start:sp.end]) == "null" {
		return setMember(body, key, quote(text))
	}
	v := body[sp.start:sp.end]
	switch v[0] {
	case '"':
		var s string
		if err := json.Unmarshal(v, &s); err != nil {
			return nil, fmt.Errorf("%s: %w", key, err)
		}
		return splice(body, sp.start, sp.end, quote(s+"\n\n"+text)), nil
	case '[':
		block := append(append([]byte(`{"type":"text","text":`), quote(text)...), '}')
		closing := bytes.LastIndexByte(v, ']')
		var elems []json.RawMessage
		if err := json.Unmarshal(v, &elems); err != nil {
			return nil, fmt.Errorf("%s: %w", key, err)
		}
		if len(elems) > 0 {
			block = append([]byte{','}, block...)
		}
		at := sp.start + closing
		return splice(body, at, at, block), nil
	}
	return nil, fmt.Errorf("%s is neither a string nor an array", key)
}

// appendChatSystem appends text to the first message when it is a system or developer
// message with string content, else puts a system message first.
func appendChatSystem(body []byte, ms map[string]span, text string) ([]byte, error) {
	sp, ok := ms["messages"]
	if !ok {
		return nil, errors.New("the request has no messages")
	}
	v := body[sp.start:sp.end]
	var elems []json.RawMessage
	if err := json.Unmarshal(v, &elems); err != nil || len(v) == 0 || v[0] != '[' {
		return nil, errors.New("messages is not an array")
	}
	open := sp.start + bytes.IndexByte(v, '[') + 1
	if len(elems) > 0 {
		var first struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		}
		if json.Unmarshal(elems[0], &first) == nil && (first.Role == "system" || first.Role == "developer") {
			fm, err := members(elems[0])
			if err == nil {
				if edited, err := appendText(elems[0], fm, "content", text); err == nil {
					start := bytes.Index(body[open:], elems[0])
					if start >= 0 {
						return splice(body, open+start, open+start+len(elems[0]), edited), nil
					}
				}
			}
		}
	}
	msg := append(append([]byte(`{"role":"system","content":`), quote(text)...), '}')
	if len(elems) > 0 {
		msg = append(msg, ',')
	}
	return splice(body, open, open, msg), nil
}

// geminiModel matches the model segment of a Gemini API call's path
// (/v1beta/models/MODEL:METHOD), and geminiModelName a name that may stand there.
var (
	geminiModel     = regexp.MustCompile(`^(/v1(?:beta|alpha)?/(?:models|tunedModels)/)([^/:]+)(:[A-Za-z]+)$`)
	geminiModelName = regexp.MustCompile(`^[A-Za-z0-9_-][A-Za-z0-9._-]*$`)
)

// Path returns a model call's path with the overrides applied: for the Gemini API, whose
// path names the model, the model replaced; every other path as it is.
func (o Overrides) Path(p tape.Provider, path string) (string, error) {
	if o.Model == "" || p != tape.ProviderGemini {
		return path, nil
	}
	if !geminiModelName.MatchString(o.Model) || o.Model == ".." {
		return "", fmt.Errorf("override the model: %q cannot name a Gemini API model in a path (letters, digits, '.', '_', '-')", o.Model)
	}
	m := geminiModel.FindStringSubmatch(path)
	if m == nil {
		return "", fmt.Errorf("override the model: %q is not a Gemini API model call's path (/v1beta/models/MODEL:METHOD)", path)
	}
	return m[1] + o.Model + m[3], nil
}

// appendGeminiSystem adds text as a part of its own to a Gemini API request's
// systemInstruction (or system_instruction), or adds a systemInstruction.
func appendGeminiSystem(body []byte, ms map[string]span, text string) ([]byte, error) {
	key := "systemInstruction"
	sp, ok := ms[key]
	if !ok {
		key = "system_instruction"
		sp, ok = ms[key]
	}
	part := append(append([]byte(`{"text":`), quote(text)...), '}')
	if !ok || string(body[sp.start:sp.end]) == "null" {
		return setMember(body, "systemInstruction", append(append([]byte(`{"parts":[`), part...), ']', '}'))
	}
	v := body[sp.start:sp.end]
	if v[0] != '{' {
		return nil, fmt.Errorf("%s is not an object", key)
	}
	sm, err := members(v)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", key, err)
	}
	pp, ok := sm["parts"]
	if !ok || string(v[pp.start:pp.end]) == "null" {
		edited, err := setMember(v, "parts", append(append([]byte{'['}, part...), ']'))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", key, err)
		}
		return splice(body, sp.start, sp.end, edited), nil
	}
	pv := v[pp.start:pp.end]
	var elems []json.RawMessage
	if pv[0] != '[' || json.Unmarshal(pv, &elems) != nil {
		return nil, fmt.Errorf("%s.parts is not an array", key)
	}
	if len(elems) > 0 {
		part = append([]byte{','}, part...)
	}
	at := sp.start + pp.start + bytes.LastIndexByte(pv, ']')
	return splice(body, at, at, part), nil
}
