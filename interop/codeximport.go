package interop

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/tapebox/tapebox/internal/jsonlex"
	"github.com/tapebox/tapebox/tape"
	"github.com/tapebox/tapebox/tape/provider"
)

// cxReadLine is what the import reads of a rollout line.
type cxReadLine struct {
	Timestamp string          `json:"timestamp"`
	Type      string          `json:"type"`
	Payload   json.RawMessage `json:"payload"`
}

// cxRollout is one rollout file read: a Codex thread.
type cxRollout struct {
	path      string
	id        string
	session   string
	parent    string
	cwd       string
	version   string
	model     string
	provider  string // session_meta.model_provider
	base      string
	first     time.Time
	last      time.Time
	th        *tape.Thread
	threadIdx int
	lost      losses
	// clock holds each step's wall times from the rollout's timestamps.
	clock map[*tape.Step]*stepClock
}

// isOutputItem says whether a response item is the model's (part of a response) rather
// than the harness's input.
func isOutputItem(typ, role string) bool {
	switch {
	case typ == "message":
		return role == "assistant"
	case typ == "reasoning", typ == "function_call", typ == "custom_tool_call", typ == "local_shell_call":
		return true
	case strings.HasSuffix(typ, "_output"):
		return false
	case strings.HasSuffix(typ, "_call"):
		return true // web_search_call, tool_search_call, ...
	}
	return false
}

// cxPending is one model answer of a rollout as it is read: its output items, its usage,
// how many input items came before it, and when the item before it (req) and its own first
// and last items were written (zero when the lines have no timestamp).
type cxPending struct {
	output           []json.RawMessage
	usage            map[string]int64
	inLen            int
	req, first, last time.Time
}

// cxReader reads a rollout's lines into r: every item in order (input), and the answers
// among them (steps).
type cxReader struct {
	r         *cxRollout
	input     []json.RawMessage
	steps     []*cxPending
	cur       *cxPending // the answer being read, nil after an input item
	lastInput time.Time
	messages  int // the message items read
}

// readRollout reads one rollout file into a thread. Its steps are normalized by the
// Responses adapter from request and response bodies rebuilt from the items, so that an
// imported step holds what a recorded one would; the bodies are then dropped.
func readRollout(p string) (*cxRollout, error) {
	c := &cxReader{r: &cxRollout{path: p, th: &tape.Thread{Steps: []*tape.Step{}}, lost: losses{}}}
	if err := readLines(p, func(_ int, b []byte) error { return c.line(b) }); err != nil {
		return nil, err
	}
	r := c.r
	if r.id == "" {
		return nil, fmt.Errorf("%s: no session_meta line: not a Codex rollout", p)
	}
	if len(c.steps) == 0 && c.messages == 0 {
		// A rollout whose model call failed has no output but has the messages sent; one
		// with neither is another tool's file that only looks like a rollout.
		return nil, fmt.Errorf("%s: no message item (a response_item of type message) and no model output: nothing recognized as a Codex rollout", p)
	}
	if err := r.buildSteps(c.input, c.steps); err != nil {
		return nil, err
	}
	return r, nil
}

// line reads one line of the rollout.
func (c *cxReader) line(b []byte) error {
	var l cxReadLine
	if err := json.Unmarshal(b, &l); err != nil {
		return fmt.Errorf("not a Codex rollout line: %w", err)
	}
	at, timed := parseTime(l.Timestamp)
	if timed {
		if c.r.first.IsZero() {
			c.r.first = at
		}
		c.r.last = at
	}
	switch l.Type {
	case "session_meta":
		var m struct {
			ID               string `json:"id"`
			SessionID        string `json:"session_id"`
			ParentThreadID   string `json:"parent_thread_id"`
			Cwd              string `json:"cwd"`
			CLIVersion       string `json:"cli_version"`
			ModelProvider    string `json:"model_provider"`
			BaseInstructions *struct {
				Text string `json:"text"`
			} `json:"base_instructions"`
		}
		if err := json.Unmarshal(l.Payload, &m); err != nil {
			return fmt.Errorf("session_meta: %w", err)
		}
		c.r.id, c.r.session, c.r.parent, c.r.cwd, c.r.version = m.ID, cmp.Or(m.SessionID, m.ID), m.ParentThreadID, m.Cwd, m.CLIVersion
		c.r.provider = m.ModelProvider
		if m.BaseInstructions != nil {
			c.r.base = m.BaseInstructions.Text
		}
	case "turn_context":
		var m struct {
			Model string `json:"model"`
		}
		if err := json.Unmarshal(l.Payload, &m); err != nil {
			return fmt.Errorf("turn_context: %w", err)
		}
		c.r.model = cmp.Or(m.Model, c.r.model)
	case "event_msg":
		var m struct {
			Type string `json:"type"`
			Info *struct {
				Last map[string]int64 `json:"last_token_usage"`
			} `json:"info"`
		}
		if err := json.Unmarshal(l.Payload, &m); err != nil {
			return fmt.Errorf("event_msg: %w", err)
		}
		if m.Type == "token_count" && m.Info != nil && len(c.steps) > 0 {
			c.steps[len(c.steps)-1].usage = m.Info.Last
		}
	case "response_item":
		var it struct {
			Type             string          `json:"type"`
			Role             string          `json:"role"`
			EncryptedContent string          `json:"encrypted_content"`
			Tools            json.RawMessage `json:"tools"`
			Content          json.RawMessage `json:"content"`
		}
		if err := json.Unmarshal(l.Payload, &it); err != nil {
			return fmt.Errorf("response_item: %w", err)
		}
		if it.Type == "message" && (len(it.Content) == 0 || it.Content[0] != '[') {
			if len(it.Content) == 0 || string(it.Content) == "null" {
				return errors.New("/payload/content: missing: a Codex message item holds its content there")
			}
			return fmt.Errorf("/payload/content: %s, not a list of content parts", jsonKind(it.Content))
		}
		if it.Type == "message" {
			c.messages++
		}
		switch {
		case it.Type == "reasoning" && it.EncryptedContent != "":
			c.r.lost.add(LostEncryptedReasoning, 1)
		case it.Type == "tool_search_output" && len(it.Tools) > 0 && string(it.Tools) != "null" && string(it.Tools) != "[]":
			c.r.lost.add(LostToolSearchTools, 1)
		}
		if isOutputItem(it.Type, it.Role) {
			if c.cur == nil {
				c.cur = &cxPending{inLen: len(c.input)}
				if timed {
					c.cur.req, c.cur.first = cmpTime(c.lastInput, at), at
				}
				c.steps = append(c.steps, c.cur)
			}
			if timed {
				c.cur.last = at
			}
			c.cur.output = append(c.cur.output, l.Payload)
		} else {
			c.cur = nil
			if timed {
				c.lastInput = at
			}
		}
		c.input = append(c.input, l.Payload)
	}
	return nil
}

// buildSteps makes r's steps from the rollout's items and the answers among them.
func (r *cxRollout) buildSteps(input []json.RawMessage, steps []*cxPending) error {
	p := r.path
	// The whole conversation is normalized once, as the request that holds every item; a
	// step's request is a prefix of it (one message per item, after the base instructions),
	// so that an import is linear in the session, not quadratic.
	items := input
	offset := 0
	if r.base != "" {
		// As Codex sends them: the base instructions first, as a developer message.
		b, err := jsonlex.Marshal(map[string]any{"type": "message", "role": "developer", "content": []any{map[string]any{"type": "input_text", "text": r.base}}})
		if err != nil {
			return err
		}
		items = append([]json.RawMessage{b}, input...)
		offset = 1
	}
	all := newStep(tape.ProviderOpenAIResponses, r.model, nil)
	var err error
	if all.Request.Raw, err = jsonlex.Marshal(map[string]any{"model": r.model, "input": items, "stream": true}); err != nil {
		return err
	}
	all.Response.Raw = json.RawMessage(`{"status":"completed","output":[]}`)
	if err := provider.Normalize(tape.ProviderOpenAIResponses, all); err != nil {
		return fmt.Errorf("%s: %w", p, err)
	}
	msgs := all.Request.Messages
	if len(msgs) != len(items) {
		return fmt.Errorf("%s: %d items normalized into %d messages", p, len(items), len(msgs))
	}
	for i, ps := range steps {
		in := ps.usage["input_tokens"]
		cached := ps.usage["cached_input_tokens"]
		out := ps.usage["output_tokens"]
		respBody := map[string]any{"status": "completed", "output": ps.output, "model": r.model,
			"usage": map[string]any{"input_tokens": in, "output_tokens": out, "input_tokens_details": map[string]any{"cached_tokens": cached},
				"output_tokens_details": map[string]any{"reasoning_tokens": ps.usage["reasoning_output_tokens"]}}}
		st := newStep(tape.ProviderOpenAIResponses, r.model, nil)
		st.Request.Raw = json.RawMessage(`{"input":[]}`)
		var err error
		if st.Response.Raw, err = jsonlex.Marshal(respBody); err != nil {
			return err
		}
		if err := provider.Normalize(tape.ProviderOpenAIResponses, st); err != nil {
			return fmt.Errorf("%s: model call %d: %w", p, i, err)
		}
		st.Request.System, st.Request.Params, st.Request.Tools = all.Request.System, all.Request.Params, all.Request.Tools
		st.Request.Messages = msgs[: offset+ps.inLen : offset+ps.inLen]
		// The results: the outputs after this step's items, up to the next step.
		next := len(input)
		if i+1 < len(steps) {
			next = steps[i+1].inLen
		}
		st.ToolResults = tape.ResultsFor(msgs[offset+ps.inLen:offset+next], st.ToolCalls)
		if st.ToolResults == nil {
			st.ToolResults = []tape.ToolResult{}
		}
		st.Request.Raw, st.Response.Raw = json.RawMessage("null"), json.RawMessage("null")
		st.Request.Headers = tape.Headers{"session-id": r.session, "thread-id": r.id}
		r.th.Steps = append(r.th.Steps, st)
		if !ps.first.IsZero() {
			if r.clock == nil {
				r.clock = map[*tape.Step]*stepClock{}
			}
			r.clock[st] = &stepClock{req: ps.req, first: ps.first, last: ps.last}
		}
	}
	return nil
}

// ImportCodex reads Codex rollout files: a rollout-*.jsonl file or a directory holding them
// (~/.codex/sessions). A sub-agent's rollout (its session_meta names a parent thread)
// becomes a thread of its parent's tape, linked to the spawn call whose result names it.
func ImportCodex(path string) ([]*tape.Tape, error) { return importPath(Codex, path) }

func importCodexFiles(files []string) ([]*tape.Tape, error) {
	var rolls []*cxRollout
	byID := map[string]*cxRollout{}
	for _, f := range files {
		r, err := readRollout(f)
		if err != nil {
			return nil, fmt.Errorf("import codex: %w", err)
		}
		rolls = append(rolls, r)
		byID[r.id] = r
	}
	var tapes []*tape.Tape
	tapeOf := map[string]*tape.Tape{}
	var root func(r *cxRollout) *cxRollout
	root = func(r *cxRollout) *cxRollout {
		if p, ok := byID[r.parent]; ok && r.parent != "" && p != r {
			return root(p)
		}
		return r
	}
	for _, r := range rolls {
		if root(r) != r {
			continue
		}
		tp := newImported(Codex, "codex", r.path)
		tp.Meta.Provider = tape.ProviderOpenAIResponses
		tp.Meta.TapeID = hexFrom(32, "codex", r.id)
		tp.Meta.HarnessVersion, tp.Meta.Model, tp.Meta.Cwd = r.version, r.model, r.cwd
		tp.Meta.Task = map[string]string{"session_id": r.id}
		if validProviderID(r.provider) {
			tp.Meta.Labels[LabelCodexModelProvider] = r.provider
		}
		if !r.first.IsZero() {
			tp.Meta.StartedAt = r.first
		}
		r.th.ID = "main"
		tp.Threads = append(tp.Threads, r.th)
		tp.Meta.Ended = &tape.Ended{Reason: tape.EndComplete, At: cmpTime(r.last, tp.Meta.StartedAt), Detail: "imported from a Codex rollout file, which does not say how the run ended"}
		tapes = append(tapes, tp)
		tapeOf[r.id] = tp
	}
	for _, r := range rolls {
		top := root(r)
		if top == r {
			continue
		}
		tp := tapeOf[top.id]
		r.th.ID = fmt.Sprintf("t%d", len(tp.Threads))
		parent := byID[r.parent]
		call := spawnCall(parent.th, r.id)
		if call == "" {
			return nil, fmt.Errorf("import codex: %s: no spawn call in its parent thread %s (%s) returned the sub-agent id %s", r.path, r.parent, parent.path, r.id)
		}
		r.th.Parent = &tape.Parent{ThreadID: parent.th.ID, ToolCallID: call}
		tp.Threads = append(tp.Threads, r.th)
		if r.last.After(tp.Meta.Ended.At) {
			tp.Meta.Ended.At = r.last
		}
	}
	for _, tp := range tapes {
		lost := losses{}
		timed := true
		for _, r := range rolls {
			if tapeOf[root(r).id] == tp {
				for what, n := range r.lost {
					lost.add(what, n)
				}
				timed = applyClock(tp, r.th, r.clock) && timed
			}
		}
		if timed {
			tp.Meta.Labels[LabelTiming] = TimingEntries
		}
		lost.label(tp)
	}
	return tapes, nil
}

// spawnCall is the id of the call of th whose result names the sub-agent id.
func spawnCall(th *tape.Thread, id string) string {
	for _, s := range th.Steps {
		for _, res := range s.ToolResults {
			if strings.Contains(resultText(res), id) {
				return res.ToolCallID
			}
		}
	}
	return ""
}
