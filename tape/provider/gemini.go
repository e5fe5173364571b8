package provider

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"maps"
	"slices"
	"strings"

	"github.com/tapebox/tapebox/tape"
)

// gemini is the Gemini API (POST /v1beta/models/MODEL:generateContent, and
// :streamGenerateContent?alt=sse for a stream), read with encoding/json.
//
// The model and whether the call streams are in the path, not the body: Normalize reads
// them from the step's request path (GeminiPath), so Params has no "model" unless the body
// carries one.
var gemini = format{request: geminiRequest, body: geminiBody, stream: geminiStream}

// The methods of the Gemini API whose calls are model calls, as they end a path
// (/v1beta/models/gemini-2.5-pro:streamGenerateContent).
const (
	geminiMethodGenerate = ":generateContent"
	geminiMethodStream   = ":streamGenerateContent"
)

// GeminiPath splits the path of a Gemini API model call, with or without its query and
// any prefix before the API version: /v1beta/models/MODEL:METHOD (v1 and v1alpha too, and
// tunedModels). It returns the model, whether the method streams, and ok=false for a path
// that is not a generateContent or streamGenerateContent call.
func GeminiPath(path string) (model string, stream, ok bool) {
	if i := strings.IndexAny(path, "?#"); i >= 0 {
		path = path[:i]
	}
	var rest string
	switch {
	case strings.HasSuffix(path, geminiMethodStream):
		rest, stream = strings.TrimSuffix(path, geminiMethodStream), true
	case strings.HasSuffix(path, geminiMethodGenerate):
		rest = strings.TrimSuffix(path, geminiMethodGenerate)
	default:
		return "", false, false
	}
	for _, v := range []string{"/v1beta/", "/v1/", "/v1alpha/"} {
		i := strings.LastIndex(rest, v)
		if i < 0 {
			continue
		}
		name := rest[i+len(v):]
		for _, coll := range []string{"models/", "tunedModels/"} {
			if m, ok := strings.CutPrefix(name, coll); ok && m != "" && !strings.ContainsAny(m, "/:") {
				return m, stream, true
			}
		}
	}
	return "", false, false
}

// geminiFromPath completes a normalized Gemini request from its path: the call streams
// when its method is streamGenerateContent, and its model, which the body does not name,
// becomes Params["model"]. A request whose path is not a Gemini model call's (a tape
// written by another tool may hold none) keeps what its body says.
func geminiFromPath(s *tape.Step) {
	model, stream, ok := GeminiPath(s.Request.Path)
	if !ok {
		return
	}
	s.Request.Stream = stream
	if _, named := s.Request.Params["model"]; !named && s.Request.Params != nil {
		s.Request.Params["model"] = marshal(model)
	}
}

type geminiContent struct {
	Role  string            `json:"role"`
	Parts []json.RawMessage `json:"parts"`
}

type geminiPart struct {
	Text             *string          `json:"text"`
	Thought          bool             `json:"thought"`
	FunctionCall     *geminiCall      `json:"functionCall"`
	FunctionResponse *geminiResult    `json:"functionResponse"`
	InlineData       *json.RawMessage `json:"inlineData"`
}

type geminiCall struct {
	ID   string          `json:"id"`
	Name string          `json:"name"`
	Args json.RawMessage `json:"args"`
}

type geminiResult struct {
	ID       string            `json:"id"`
	Name     string            `json:"name"`
	Response json.RawMessage   `json:"response"`
	Parts    []json.RawMessage `json:"parts"`
}

func geminiRequest(raw []byte) (request, error) {
	m, r, err := requestObject(raw, "contents", "systemInstruction", "system_instruction", "tools")
	if err != nil {
		return request{}, err
	}
	sys := m["systemInstruction"]
	if sys == nil {
		sys = m["system_instruction"]
	}
	if r.system, err = geminiSystem(sys); err != nil {
		return request{}, fmt.Errorf("systemInstruction: %w", err)
	}
	if r.messages, err = requestMessages(m, "contents", geminiContent.normalize); err != nil {
		return request{}, err
	}
	var tools []map[string]json.RawMessage
	if err := field(m, "tools", &tools); err != nil {
		return request{}, err
	}
	for i, t := range tools {
		for _, k := range slices.Sorted(maps.Keys(t)) {
			if k != "functionDeclarations" && k != "function_declarations" {
				// A built-in tool (googleSearch, codeExecution, urlContext ...), named by its key.
				r.tools = append(r.tools, tape.Tool{Name: k, Kind: k})
				continue
			}
			var decls []struct {
				Name                 string          `json:"name"`
				Description          string          `json:"description"`
				Parameters           json.RawMessage `json:"parameters"`
				ParametersJSONSchema json.RawMessage `json:"parametersJsonSchema"`
			}
			if err := json.Unmarshal(t[k], &decls); err != nil {
				return request{}, fmt.Errorf("tools[%d].%s: %w", i, k, err)
			}
			for _, d := range decls {
				schema := d.ParametersJSONSchema
				if isNull(schema) {
					schema = d.Parameters
				}
				r.tools = append(r.tools, tape.Tool{Name: d.Name, Description: d.Description, Kind: "function", InputSchema: schema})
			}
		}
	}
	return r, nil
}

// geminiSystem is the text of a systemInstruction: a Content (its text parts joined with
// "\n") or, as some clients send it, a string.
func geminiSystem(raw json.RawMessage) (string, error) {
	if isNull(raw) {
		return "", nil
	}
	if s, ok := jsonString(raw); ok {
		return s, nil
	}
	var c geminiContent
	if err := json.Unmarshal(raw, &c); err != nil {
		return "", err
	}
	var texts []string
	for i, p := range c.Parts {
		var t struct {
			Text *string `json:"text"`
		}
		if err := json.Unmarshal(p, &t); err != nil {
			return "", fmt.Errorf("parts[%d]: %w", i, err)
		}
		if t.Text != nil {
			texts = append(texts, *t.Text)
		}
	}
	return strings.Join(texts, "\n"), nil
}

// normalize turns a Content into a message: role "model" is "assistant", "function" (the
// role older clients give function responses) is "tool", a missing role is "user".
func (c geminiContent) normalize() (tape.Message, error) {
	blocks, err := each("parts", c.Parts, geminiBlock)
	if err != nil {
		return tape.Message{}, err
	}
	r := c.Role
	switch r {
	case "model":
		r = "assistant"
	case "function":
		r = "tool"
	case "":
		r = "user"
	}
	return tape.Message{Role: r, Content: blocks}, nil
}

// geminiBlock normalizes one part: text (thinking when thought is true), functionCall
// (tool_use), functionResponse (tool_result), inlineData (image when its MIME type is an
// image's, else other), anything else other.
func geminiBlock(raw json.RawMessage) (tape.Block, error) {
	var p geminiPart
	if err := json.Unmarshal(raw, &p); err != nil {
		return tape.Block{}, err
	}
	switch {
	case p.FunctionCall != nil:
		return tape.Block{Type: tape.BlockToolUse, ID: p.FunctionCall.ID, Name: p.FunctionCall.Name, Input: objectInput(p.FunctionCall.Args)}, nil
	case p.FunctionResponse != nil:
		return geminiResultBlock(p.FunctionResponse)
	case p.Text != nil && p.Thought:
		return tape.Block{Type: tape.BlockThinking, Text: *p.Text}, nil
	case p.Text != nil:
		return textBlock(*p.Text), nil
	case p.InlineData != nil:
		var d struct {
			MimeType string `json:"mimeType"`
		}
		if json.Unmarshal(*p.InlineData, &d) == nil && strings.HasPrefix(d.MimeType, "image/") {
			return rawBlock(tape.BlockImage, raw), nil
		}
	}
	return rawBlock(tape.BlockOther, raw), nil
}

// geminiResultBlock normalizes a functionResponse. Its response object holds the result:
// {"output": TEXT} (Gemini CLI's form of a result) is that text, {"error": TEXT} that text
// marked as an error, any other value its compact JSON; parts sent beside the response
// (images a tool read) follow as blocks of their own.
func geminiResultBlock(r *geminiResult) (tape.Block, error) {
	b := tape.Block{Type: tape.BlockToolResult, ToolCallID: r.ID, Content: []tape.Block{}}
	var fields map[string]json.RawMessage
	if json.Unmarshal(r.Response, &fields) == nil && len(fields) == 1 {
		for k, v := range fields {
			if s, ok := jsonString(v); ok && (k == "output" || k == "error") {
				b.Content = append(b.Content, textBlock(s))
				b.IsError = k == "error"
			}
		}
	}
	if len(b.Content) == 0 && !isNull(r.Response) {
		in, ok := compactObject(trimJSON(r.Response))
		if !ok {
			in = json.RawMessage(trimJSON(r.Response))
		}
		b.Content = append(b.Content, textBlock(string(in)))
	}
	for i, p := range r.Parts {
		pb, err := geminiBlock(p)
		if err != nil {
			return tape.Block{}, fmt.Errorf("functionResponse.parts[%d]: %w", i, err)
		}
		b.Content = append(b.Content, pb)
	}
	return b, nil
}

type geminiUsage struct {
	PromptTokenCount        int64 `json:"promptTokenCount"`
	CandidatesTokenCount    int64 `json:"candidatesTokenCount"`
	CachedContentTokenCount int64 `json:"cachedContentTokenCount"`
	ThoughtsTokenCount      int64 `json:"thoughtsTokenCount"`
	ToolUsePromptTokenCount int64 `json:"toolUsePromptTokenCount"`
}

// tape counts the prompt (promptTokenCount, plus toolUsePromptTokenCount) less the cached
// tokens as input, and the candidates' and thoughts' tokens as output.
func (u *geminiUsage) tape() tape.Usage {
	if u == nil {
		return tape.Usage{}
	}
	us := openAIUsage(u.PromptTokenCount+u.ToolUsePromptTokenCount, u.CachedContentTokenCount, u.CandidatesTokenCount+u.ThoughtsTokenCount, u.ThoughtsTokenCount)
	return us
}

// geminiChunk is a response body, and each event of a stream.
type geminiChunk struct {
	Candidates []struct {
		Content      *geminiContent `json:"content"`
		FinishReason string         `json:"finishReason"`
		Index        int            `json:"index"`
	} `json:"candidates"`
	PromptFeedback *struct {
		BlockReason string `json:"blockReason"`
	} `json:"promptFeedback"`
	UsageMetadata *geminiUsage `json:"usageMetadata"`
}

// first is the chunk's first candidate (index 0: the one a harness continues with), nil
// when it has none.
func (c *geminiChunk) first() (parts []json.RawMessage, finish string, ok bool) {
	for _, cand := range c.Candidates {
		if cand.Index == 0 {
			if cand.Content != nil {
				parts = cand.Content.Parts
			}
			return parts, cand.FinishReason, true
		}
	}
	return nil, "", false
}

// geminiFold builds a reply from the parts of one answer in order; adjacent text parts of
// the same kind (text, thought) are one block, as a stream sends a text in pieces. idSeed
// makes up the ids of calls the provider sent without one (see geminiCallID).
type geminiFold struct {
	content []tape.Block
	stop    string
	usage   *geminiUsage
}

func (f *geminiFold) add(parts []json.RawMessage) error {
	for i, raw := range parts {
		b, err := geminiBlock(raw)
		if err != nil {
			return fmt.Errorf("parts[%d]: %w", i, err)
		}
		if n := len(f.content); n > 0 && (b.Type == tape.BlockText || b.Type == tape.BlockThinking) && f.content[n-1].Type == b.Type {
			f.content[n-1].Text += b.Text
			continue
		}
		f.content = append(f.content, b)
	}
	return nil
}

func (f *geminiFold) chunk(c *geminiChunk) error {
	if c.UsageMetadata != nil {
		f.usage = c.UsageMetadata
	}
	parts, finish, ok := c.first()
	if !ok {
		if c.PromptFeedback != nil && c.PromptFeedback.BlockReason != "" {
			f.stop = c.PromptFeedback.BlockReason
		}
		return nil
	}
	if finish != "" {
		f.stop = finish
	}
	return f.add(parts)
}

// reply names the calls that came without an id (the Gemini API sends none; a harness
// makes its own up) by geminiCallID of seed, the response's bytes.
func (f *geminiFold) reply(seed []byte) reply {
	rep := reply{content: f.content, stop: f.stop, usage: f.usage.tape()}
	n := 0
	for i := range rep.content {
		b := &rep.content[i]
		if b.Type != tape.BlockToolUse {
			continue
		}
		if b.ID == "" {
			b.ID = geminiCallID(seed, n)
		}
		n++
		rep.calls = append(rep.calls, toolCall(*b, "function"))
	}
	return rep
}

// geminiCallID is the id a tape gives the n-th call of a Gemini answer that came without
// one: "gemini-" and the 16 hex digits of the answer's 64-bit FNV-1a hash, then "-n". It is
// derived from the raw response alone, so that normalizing the same response again gives the
// same ids. (FNV, not SHA-256: the executor links this package, and crypto is over its budget;
// the id needs to be stable, not unforgeable.)
func geminiCallID(seed []byte, n int) string {
	h := fnv.New64a()
	h.Write(seed)
	return fmt.Sprintf("gemini-%016x-%d", h.Sum64(), n)
}

func geminiBody(raw []byte) (reply, error) {
	var c geminiChunk
	if err := json.Unmarshal(raw, &c); err != nil {
		return reply{}, err
	}
	var f geminiFold
	if err := f.chunk(&c); err != nil {
		return reply{}, fmt.Errorf("candidates[0].content.%w", err)
	}
	return f.reply(raw), nil
}

func geminiStream(events []event) (reply, error) {
	var f geminiFold
	var seed []byte
	for i, ev := range events {
		var c geminiChunk
		if ok, err := decodeEvent(ev, &c); !ok {
			if err != nil {
				return reply{}, err
			}
			continue
		}
		seed = append(seed, ev.data...)
		seed = append(seed, '\n')
		if err := f.chunk(&c); err != nil {
			return reply{}, fmt.Errorf("event %d: candidates[0].content.%w", i, err)
		}
	}
	return f.reply(seed), nil
}

// geminiResults finds the results of a Gemini answer's calls in the thread's next request.
// A call with the provider's own id is answered under that id. A call without one was
// named by the harness (Gemini CLI: NAME_MILLISECONDS_INDEX), which sends the calls back
// under its names in the model turn before the results: that turn is the last assistant
// message whose tool_use blocks are the calls (same names, in order), and each result
// answers the id the turn gave its call, or, with no ids on the results, the call at its
// position.
func geminiResults(messages []tape.Message, calls []tape.ToolCall) []tape.ToolResult {
	if len(calls) == 0 {
		return nil
	}
	if direct := tape.ResultsFor(messages, calls); len(direct) == len(calls) {
		return direct
	}
	for i := len(messages) - 1; i >= 0; i-- {
		if messages[i].Role != "assistant" {
			continue
		}
		var uses []tape.Block
		for _, b := range messages[i].Content {
			if b.Type == tape.BlockToolUse {
				uses = append(uses, b)
			}
		}
		if !sameCalls(uses, calls) {
			continue
		}
		var results []tape.Block
		for _, m := range messages[i+1:] {
			if m.Role == "assistant" {
				break
			}
			for _, b := range m.Content {
				if b.Type == tape.BlockToolResult {
					results = append(results, b)
				}
			}
		}
		var out []tape.ToolResult
		for k, c := range calls {
			b, ok := resultFor(results, uses[k].ID, k)
			if !ok {
				continue
			}
			content := b.Content
			if content == nil {
				content = []tape.Block{}
			}
			out = append(out, tape.ToolResult{ToolCallID: c.ID, Content: content, IsError: b.IsError})
		}
		return out
	}
	return tape.ResultsFor(messages, calls)
}

// sameCalls says whether a model turn's tool_use blocks are the calls: as many, the same
// names in the same order.
func sameCalls(uses []tape.Block, calls []tape.ToolCall) bool {
	if len(uses) != len(calls) {
		return false
	}
	for k := range uses {
		if uses[k].Name != calls[k].Name {
			return false
		}
	}
	return true
}

// resultFor is the last result answering id, or without an id, the k-th result when it has
// none either.
func resultFor(results []tape.Block, id string, k int) (tape.Block, bool) {
	if id != "" {
		for j := len(results) - 1; j >= 0; j-- {
			if results[j].ToolCallID == id {
				return results[j], true
			}
		}
	}
	if k < len(results) && (id == "" || results[k].ToolCallID == "") {
		return results[k], true
	}
	return tape.Block{}, false
}

// geminiStatus maps the error types ErrorBody is given to the Gemini API's google.rpc
// status and its HTTP code.
var geminiStatus = map[string]struct {
	code   int
	status string
}{
	"invalid_request_error": {400, "INVALID_ARGUMENT"},
	"authentication_error":  {401, "UNAUTHENTICATED"},
	"permission_error":      {403, "PERMISSION_DENIED"},
	"not_found_error":       {404, "NOT_FOUND"},
	"rate_limit_error":      {429, "RESOURCE_EXHAUSTED"},
	"api_error":             {500, "INTERNAL"},
	"overloaded_error":      {503, "UNAVAILABLE"},
}

// ---- emitting (see emit.go) ----

// geminiFinish is the answer's finishReason: its StopReason, else STOP (the API finishes a
// turn that calls tools with STOP too).
func (a *Answer) geminiFinish() string {
	if a.StopReason != "" {
		return a.StopReason
	}
	return "STOP"
}

// geminiUsage is the answer's usageMetadata: the prompt counts the cached tokens, the
// candidates do not count the thoughts.
func (a *Answer) geminiUsage() map[string]any {
	u := a.Usage
	prompt := u.InputTokens + u.CacheReadInputTokens + u.CacheCreationInputTokens
	out := map[string]any{
		"promptTokenCount":     prompt,
		"candidatesTokenCount": max(u.OutputTokens-u.ReasoningTokens, 0),
		"totalTokenCount":      prompt + u.OutputTokens,
	}
	if u.CacheReadInputTokens > 0 {
		out["cachedContentTokenCount"] = u.CacheReadInputTokens
	}
	if u.ReasoningTokens > 0 {
		out["thoughtsTokenCount"] = u.ReasoningTokens
	}
	return out
}

// geminiPart is one item as a part: {"text"}, {"text","thought":true} or
// {"functionCall":{"id","name","args"}} (no id when the call has none, as the API sends
// them). A raw item is refused.
func geminiPartOf(i int, it Item, text string) (map[string]any, error) {
	switch {
	case it.Raw != nil:
		return nil, fmt.Errorf("emit: item %d: a Gemini answer has no raw output items", i)
	case it.Call != nil:
		fc := map[string]any{"name": it.Call.Name, "args": json.RawMessage(CompactInput(*it.Call))}
		if it.Call.ID != "" {
			fc["id"] = it.Call.ID
		}
		return map[string]any{"functionCall": fc}, nil
	case it.Thinking:
		return map[string]any{"text": text, "thought": true}, nil
	}
	return map[string]any{"text": text}, nil
}

// geminiChunkOf is a response (a body, or one event of a stream) holding parts; finish
// and usage go on the last one.
func (a *Answer) geminiChunkOf(parts []any, last bool) map[string]any {
	cand := map[string]any{"content": map[string]any{"role": "model", "parts": parts}, "index": 0}
	out := map[string]any{"candidates": []any{cand}, "modelVersion": a.Model, "responseId": a.ID}
	if last {
		cand["finishReason"] = a.geminiFinish()
		out["usageMetadata"] = a.geminiUsage()
	}
	return out
}

func (a *Answer) geminiJSON() (map[string]any, error) {
	parts := []any{}
	for i, it := range a.Items {
		if it.Call == nil && it.Raw == nil && it.Text == "" {
			continue
		}
		p, err := geminiPartOf(i, it, it.Text)
		if err != nil {
			return nil, err
		}
		parts = append(parts, p)
	}
	return a.geminiChunkOf(parts, true), nil
}

// streamGemini sends each piece of text, and each call whole (the API never splits a call),
// as an event of its own; the last event carries the finishReason and the usage. An answer
// with nothing to say sends one empty text part, as the API does.
func (a *Answer) streamGemini(e *emitter) error {
	var parts []map[string]any
	for i, it := range a.Items {
		if it.Call != nil || it.Raw != nil {
			p, err := geminiPartOf(i, it, "")
			if err != nil {
				return err
			}
			parts = append(parts, p)
			continue
		}
		for _, piece := range e.pieces(it.Text) {
			p, _ := geminiPartOf(i, it, piece)
			parts = append(parts, p)
		}
	}
	if len(parts) == 0 {
		parts = append(parts, map[string]any{"text": ""})
	}
	for i, p := range parts {
		e.event("", a.geminiChunkOf([]any{p}, i == len(parts)-1))
	}
	return nil
}
