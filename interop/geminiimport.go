package interop

import (
	"cmp"
	"encoding/json"
	"fmt"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/tapebox/tapebox/internal/jsonlex"
	"github.com/tapebox/tapebox/tape"
	"github.com/tapebox/tapebox/tape/provider"
)

// geminiRecord is a line of a Gemini CLI session file (0.61: chats/session-*.jsonl, one
// JSON record a line, as its ChatRecordingService appends them): the session's metadata
// (sessionId and projectHash), a message (an id: a later line with the same id replaces
// the message in place), a metadata update ($set, whose messages replace them all) or a
// rewind ($rewindTo: the message named and every later one are dropped).
type geminiRecord struct {
	// Metadata.
	SessionID   string   `json:"sessionId"`
	ProjectHash string   `json:"projectHash"`
	StartTime   string   `json:"startTime"`
	LastUpdated string   `json:"lastUpdated"`
	Kind        string   `json:"kind"`
	Directories []string `json:"directories"`
	// A message.
	ID        *string         `json:"id"`
	Timestamp string          `json:"timestamp"`
	Type      string          `json:"type"`
	Content   json.RawMessage `json:"content"`
	Thoughts  []geminiThought `json:"thoughts"`
	Tokens    *geminiTokens   `json:"tokens"`
	Model     string          `json:"model"`
	ToolCalls []geminiToolRun `json:"toolCalls"`
	// Updates.
	Set      *geminiSet `json:"$set"`
	RewindTo *string    `json:"$rewindTo"`

	line int
	at   string // the message's JSON pointer on its line: "" for a line of its own
}

type geminiSet struct {
	Messages    *[]geminiRecord `json:"messages"`
	LastUpdated string          `json:"lastUpdated"`
}

// geminiThought is a thought the CLI showed while the model thought (a subject and a
// description), as the session file keeps it.
type geminiThought struct {
	Subject     string `json:"subject"`
	Description string `json:"description"`
	Timestamp   string `json:"timestamp,omitempty"`
}

// geminiTokens is a model call's usage as the session file keeps it.
type geminiTokens struct {
	Input    int64 `json:"input"`
	Output   int64 `json:"output"`
	Cached   int64 `json:"cached"`
	Thoughts int64 `json:"thoughts"`
	Tool     int64 `json:"tool"`
	Total    int64 `json:"total"`
}

// geminiToolRun is a tool call of a model message and what it gave: result is the parts
// the CLI sent back (functionResponse, and any parts beside it), or a string.
type geminiToolRun struct {
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Args      json.RawMessage `json:"args"`
	Result    json.RawMessage `json:"result,omitempty"`
	Status    string          `json:"status,omitempty"`
	Timestamp string          `json:"timestamp,omitempty"`
	// AgentID, on an invoke_agent call, is the session id of the subagent it ran: its
	// file is chats/<main session>/<agentId>.jsonl.
	AgentID string `json:"agentId,omitempty"`
}

// What a Gemini CLI import can lose, as LabelLost names it.
const (
	// LostGeminiNotices: info, warning and error messages of a Gemini CLI session, which
	// the CLI shows the user and never sends the model.
	LostGeminiNotices = "info, warning and error messages"
	// LostGeminiRewound: messages a rewind ($rewindTo) dropped.
	LostGeminiRewound = "rewound messages"
)

// ImportGeminiCLI reads Gemini CLI session files ($GEMINI_CLI_HOME/.gemini/tmp/<project>/
// chats/session-*.jsonl, and a subagent's chats/<main session>/<agent id>.jsonl): a file or
// a directory holding them. Each session is one tape, as the CLI resumes it: every model
// message a step, whose request is the conversation before it (the system prompt and
// tools, which the file does not keep, left out) and whose results are its tool calls'
// results. A subagent's file read with its main session's is a thread of that tape,
// linked to the invoke_agent call that names it (agentId, or else the call whose prompt
// its first message holds); read alone, it is a tape of its own. Ids, timestamps and token
// counts are the files'.
func ImportGeminiCLI(path string) ([]*tape.Tape, error) { return importPath(GeminiCLI, path) }

func importGeminiFiles(files []string) ([]*tape.Tape, error) {
	var all []*geminiImport
	for _, f := range files {
		g, err := importGeminiSession(f)
		if err != nil {
			return nil, fmt.Errorf("import %s: %w", GeminiCLI, err)
		}
		all = append(all, g)
	}
	linkGeminiSubagents(all)
	var out []*tape.Tape
	for _, g := range all {
		if g.parent == nil {
			out = append(out, g.finish())
		}
	}
	return out, nil
}

// geminiImport is one session file made a thread, with what tying it to others.
type geminiImport struct {
	path  string
	s     *geminiSession
	tp    *tape.Tape // the tape of the file alone (its thread "main")
	th    *tape.Thread
	clock map[*tape.Step]*stepClock
	// calls are the thread's invoke_agent calls: their id, agentId and prompt.
	calls []geminiSpawn
	// parent is the import holding the call that ran this subagent, call that call's id;
	// children are the subagents this one ran, in the order of their calls.
	parent   *geminiImport
	call     string
	children []*geminiImport
}

// geminiSpawn is an invoke_agent call of a session.
type geminiSpawn struct{ id, agent, prompt string }

// geminiSpawnTool is Gemini CLI's tool that runs a subagent (tape/harnesses' Gemini entry).
const geminiSpawnTool = "invoke_agent"

// geminiEndTool is the tool a Gemini CLI subagent ends with: the CLI takes its input as the
// subagent's answer and sends the model no result of that answer's calls (tape/harnesses'
// Gemini EndingTools), though the session file records them.
const geminiEndTool = "complete_task"

// linkGeminiSubagents makes each subagent file (kind "subagent", in a folder named by its
// main session's id) a child of the session among all whose invoke_agent call ran it: the
// call naming it by agentId, or else the first call, not yet claimed, whose prompt its
// first user message holds. One no call claims stays a tape of its own.
func linkGeminiSubagents(all []*geminiImport) {
	session := map[string]bool{}
	for _, g := range all {
		session[g.s.meta.SessionID] = true
	}
	claimed := map[*geminiImport]map[string]bool{}
	for _, g := range all {
		if g.s.meta.Kind != "subagent" || !session[filepath.Base(filepath.Dir(g.path))] {
			continue
		}
		first := provider.OpeningUserText(&g.th.Steps[0].Request)
		var byPrompt *geminiImport
		promptCall := ""
	search:
		for _, p := range all {
			if p == g || p.s.meta.SessionID == g.s.meta.SessionID {
				continue
			}
			for _, c := range p.calls {
				if c.agent == g.s.meta.SessionID {
					g.parent, g.call = p, c.id
					break search
				}
				if byPrompt == nil && c.agent == "" && c.prompt != "" && strings.Contains(first, c.prompt) && !claimed[p][c.id] {
					byPrompt, promptCall = p, c.id
				}
			}
		}
		if g.parent == nil && byPrompt != nil {
			g.parent, g.call = byPrompt, promptCall
		}
		if g.parent == nil || g.parent.descends(g) {
			g.parent, g.call = nil, ""
			continue
		}
		if claimed[g.parent] == nil {
			claimed[g.parent] = map[string]bool{}
		}
		claimed[g.parent][g.call] = true
		g.parent.children = append(g.parent.children, g)
	}
	for _, g := range all {
		order := map[string]int{}
		for i, c := range g.calls {
			order[c.id] = i
		}
		slices.SortStableFunc(g.children, func(a, b *geminiImport) int { return order[a.call] - order[b.call] })
	}
}

// descends says whether g is o or below o (a loop of files naming each other).
func (g *geminiImport) descends(o *geminiImport) bool {
	for p := g; p != nil; p = p.parent {
		if p == o {
			return true
		}
	}
	return false
}

// finish makes g's tape: its thread "main" and the threads of its subagents (t1, t2, …,
// each under the thread of its call), timed from the main session's start, ended when the
// last file was written.
func (g *geminiImport) finish() *tape.Tape {
	tp := g.tp
	lost := losses{}
	last := g.s.last
	timed := true
	var add func(x *geminiImport)
	add = func(x *geminiImport) {
		for what, n := range x.s.lost {
			lost.add(what, n)
		}
		if x.s.last.After(last) {
			last = x.s.last
		}
		timed = applyClock(tp, x.th, x.clock) && timed
		for _, c := range x.children {
			c.th.ID = fmt.Sprintf("t%d", len(tp.Threads))
			c.th.Parent = &tape.Parent{ThreadID: x.th.ID, ToolCallID: c.call}
			tp.Threads = append(tp.Threads, c.th)
			add(c)
		}
	}
	tp.Threads = append(tp.Threads, g.th)
	add(g)
	if timed {
		tp.Meta.Labels[LabelTiming] = TimingEntries
	}
	tp.Meta.Ended = &tape.Ended{Reason: tape.EndComplete, At: cmpTime(last, tp.Meta.StartedAt), Detail: "imported from a Gemini CLI session file, which does not say how the run ended"}
	lost.label(tp)
	return tp
}

// geminiSession is a session file read: its metadata and its messages, in the order the
// CLI keeps them.
type geminiSession struct {
	meta     geminiRecord
	messages []*geminiRecord
	lost     losses
	last     time.Time
}

func readGeminiSession(path string) (*geminiSession, error) {
	s := &geminiSession{lost: losses{}}
	headed := false
	index := map[string]int{}
	put := func(m *geminiRecord) {
		if i, ok := index[*m.ID]; ok {
			s.messages[i] = m
			return
		}
		index[*m.ID] = len(s.messages)
		s.messages = append(s.messages, m)
	}
	err := readLines(path, func(n int, b []byte) error {
		r := &geminiRecord{line: n}
		if err := json.Unmarshal(b, r); err != nil {
			return fmt.Errorf("not a Gemini CLI session record: %w", err)
		}
		stamp := cmp.Or(r.Timestamp, r.LastUpdated)
		if r.Set != nil {
			stamp = cmp.Or(stamp, r.Set.LastUpdated)
		}
		if t, ok := parseTime(stamp); ok && t.After(s.last) {
			s.last = t
		}
		switch {
		case r.RewindTo != nil:
			i, ok := index[*r.RewindTo]
			if !ok {
				s.lost.add(LostGeminiRewound, len(s.messages))
				s.messages, index = nil, map[string]int{}
				return nil
			}
			s.lost.add(LostGeminiRewound, len(s.messages)-i)
			for _, m := range s.messages[i:] {
				delete(index, *m.ID)
			}
			s.messages = s.messages[:i]
		case r.ID != nil:
			if !headed {
				return fmt.Errorf("a message before the session's metadata (want {\"sessionId\",\"projectHash\",…} first)")
			}
			if *r.ID == "" {
				return fmt.Errorf("a message with an empty id")
			}
			put(r)
		case r.Set != nil:
			if r.Set.Messages != nil {
				s.messages, index = nil, map[string]int{}
				for i := range *r.Set.Messages {
					m := &(*r.Set.Messages)[i]
					if m.ID == nil || *m.ID == "" {
						return fmt.Errorf("$set.messages[%d]: a message without an id", i)
					}
					m.line, m.at = n, fmt.Sprintf("/$set/messages/%d", i)
					put(m)
				}
			}
		case r.SessionID != "" && r.ProjectHash != "":
			if !headed {
				s.meta, headed = *r, true
			}
		default:
			return fmt.Errorf("not a Gemini CLI session record (none of metadata, message, $set, $rewindTo)")
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if !headed {
		return nil, fmt.Errorf("%s: no session metadata ({\"sessionId\",\"projectHash\",…}): not a Gemini CLI session file", path)
	}
	return s, nil
}

// geminiContent is a Content of the Gemini API, as the import builds the requests.
type geminiContent struct {
	Role  string            `json:"role"`
	Parts []json.RawMessage `json:"parts"`
}

// importGeminiSession reads one session file as one thread.
func importGeminiSession(path string) (*geminiImport, error) {
	s, err := readGeminiSession(path)
	if err != nil {
		return nil, err
	}
	g := &geminiImport{path: path, s: s}
	th := &tape.Thread{ID: "main", Steps: []*tape.Step{}}
	tp := newImported(GeminiCLI, "gemini-cli", path)
	tp.Meta.Provider = tape.ProviderGemini
	tp.Meta.TapeID = hexFrom(32, string(GeminiCLI), s.meta.SessionID)
	tp.Meta.Task = map[string]string{"session_id": s.meta.SessionID}
	if s.meta.Kind != "" && s.meta.Kind != "main" {
		tp.Meta.Task["kind"] = s.meta.Kind
	}
	if t, ok := parseTime(s.meta.StartTime); ok {
		tp.Meta.StartedAt = t
	}
	var contents []geminiContent
	add := func(role string, parts []json.RawMessage) {
		if len(parts) == 0 {
			return
		}
		// The CLI sends consecutive turns of one role as one Content (its session context
		// and the prompt, two messages of the file, are one user turn on the wire).
		if n := len(contents); n > 0 && contents[n-1].Role == role {
			contents[n-1].Parts = append(append([]json.RawMessage(nil), contents[n-1].Parts...), parts...)
			return
		}
		contents = append(contents, geminiContent{Role: role, Parts: parts})
	}
	clock := map[*tape.Step]*stepClock{}
	prevAt := tp.Meta.StartedAt
	answered := map[string]bool{} // the calls whose results were sent
	for _, m := range s.messages {
		when, timed := parseTime(m.Timestamp)
		if noContent := len(m.Content) == 0 || string(m.Content) == "null"; noContent && (m.Type == "user" || m.Type == "gemini" && len(m.ToolCalls) == 0 && len(m.Thoughts) == 0) {
			return nil, fmt.Errorf("%s:%d: message %s: %s/content: missing: a Gemini CLI %s message holds its text there", path, m.line, *m.ID, m.at, m.Type)
		}
		switch m.Type {
		case "user":
			parts, err := geminiParts(m.Content)
			if err != nil {
				return nil, fmt.Errorf("%s:%d: message %s: content: %w", path, m.line, *m.ID, err)
			}
			// The CLI records the results it sends as a user message too, after the
			// model message whose calls hold them: sent once.
			kept := parts[:0:0]
			for _, p := range parts {
				if id := geminiResponseID(p); id == "" || !answered[id] {
					kept = append(kept, p)
				}
			}
			add("user", kept)
		case "gemini":
			st, model, results, err := geminiStep(contents, m)
			if err != nil {
				return nil, fmt.Errorf("%s:%d: message %s: %w", path, m.line, *m.ID, err)
			}
			add("model", model)
			add("user", results)
			for _, p := range results {
				if id := geminiResponseID(p); id != "" {
					answered[id] = true
				}
			}
			// The results are read from the conversation the next request carries, as a
			// recording takes them.
			next := &tape.Step{Request: tape.Request{Raw: mustJSON(map[string]any{"contents": contents})}}
			if err := provider.Normalize(tape.ProviderGemini, next); err != nil && len(next.Request.Messages) == 0 {
				return nil, fmt.Errorf("%s:%d: message %s: tool results: %w", path, m.line, *m.ID, err)
			}
			st.ToolResults = provider.RequestResults(tape.ProviderGemini, &next.Request, st.ToolCalls)
			for _, run := range m.ToolCalls {
				if run.Name == geminiSpawnTool {
					var in struct {
						Prompt string `json:"prompt"`
					}
					_ = json.Unmarshal(run.Args, &in)
					g.calls = append(g.calls, geminiSpawn{id: run.ID, agent: run.AgentID, prompt: in.Prompt})
				}
				if run.Name == geminiEndTool && (run.Status == "" || run.Status == "success") {
					st.ToolResults = nil // the subagent ended: none of these results was sent
				}
			}
			for i := range st.ToolResults {
				for _, run := range m.ToolCalls {
					if run.ID == st.ToolResults[i].ToolCallID && run.Status != "" && run.Status != "success" {
						st.ToolResults[i].IsError = true
					}
				}
			}
			if st.ToolResults == nil {
				st.ToolResults = []tape.ToolResult{}
			}
			if timed {
				clock[st] = &stepClock{req: prevAt, first: when, last: when}
			}
			tp.Meta.Model = cmp.Or(tp.Meta.Model, m.Model)
			th.Steps = append(th.Steps, st)
		default:
			s.lost.add(LostGeminiNotices, 1)
		}
		if timed {
			prevAt = when
		}
	}
	if len(th.Steps) == 0 {
		return nil, fmt.Errorf("%s: no model message (type gemini): not a Gemini CLI session with model calls", path)
	}
	if !anyAnswer(th.Steps) {
		return nil, fmt.Errorf("%s: no model message has content, thoughts or tool calls (/content, /thoughts, /toolCalls): nothing recognized as Gemini CLI's model calls", path)
	}
	tp.Meta.Cwd = provider.Cwd(&th.Steps[0].Request)
	if tp.Meta.Cwd == "" && len(s.meta.Directories) > 0 {
		tp.Meta.Cwd = s.meta.Directories[0]
	}
	g.tp, g.th, g.clock = tp, th, clock
	return g, nil
}

// geminiStep is the model call a model message stands for: its request the conversation
// so far, its answer the message's thoughts, text and function calls (each with the
// CLI's id). It returns the answer's parts and the parts of the results the CLI sent
// back, to go on with the conversation.
func geminiStep(contents []geminiContent, m *geminiRecord) (st *tape.Step, model, results []json.RawMessage, err error) {
	// The message's content is its text (or, in other versions, its parts); the CLI
	// sends thoughts first, as parts marked thought, then the text, then the calls.
	text, err := geminiParts(m.Content)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("content: %w", err)
	}
	for _, t := range m.Thoughts {
		s := t.Description
		if t.Subject != "" {
			s = "**" + t.Subject + "** " + t.Description
		}
		model = append(model, mustJSON(map[string]any{"text": s, "thought": true}))
	}
	model = append(model, text...)
	for i, c := range m.ToolCalls {
		if c.ID == "" || c.Name == "" {
			return nil, nil, nil, fmt.Errorf("toolCalls[%d]: a call without id or name", i)
		}
		model = append(model, mustJSON(map[string]any{"functionCall": map[string]any{"id": c.ID, "name": c.Name, "args": input(c.Args)}}))
		parts, err := geminiResultParts(c)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("toolCalls[%d].result: %w", i, err)
		}
		results = append(results, parts...)
	}
	candidate := map[string]any{"content": map[string]any{"role": "model", "parts": model}, "finishReason": "STOP"}
	resp := map[string]any{"candidates": []any{candidate}}
	if m.Model != "" {
		resp["modelVersion"] = m.Model
	}
	if t := m.Tokens; t != nil {
		resp["usageMetadata"] = map[string]any{"promptTokenCount": t.Input, "candidatesTokenCount": t.Output,
			"cachedContentTokenCount": t.Cached, "thoughtsTokenCount": t.Thoughts, "totalTokenCount": t.Total}
	}
	st = &tape.Step{
		Request:  tape.Request{Path: "/v1beta/models/" + url.PathEscape(cmp.Or(m.Model, "unknown")) + ":streamGenerateContent", Headers: tape.Headers{}, Raw: mustJSON(map[string]any{"contents": contents})},
		Response: tape.Response{Status: 200, Headers: tape.Headers{}, Raw: mustJSON(resp), Chunks: []tape.Chunk{}},
	}
	if err := provider.Normalize(tape.ProviderGemini, st); err != nil {
		return nil, nil, nil, err
	}
	// An imported tape keeps normalized fields only (LabelForm).
	st.Request.Raw, st.Response.Raw = json.RawMessage("null"), json.RawMessage("null")
	if st.Request.Tools == nil {
		st.Request.Tools = []tape.Tool{}
	}
	if st.ToolCalls == nil {
		st.ToolCalls = []tape.ToolCall{}
	}
	return st, model, results, nil
}

// geminiParts reads a message's content: a string (one text part) or a list of parts.
func geminiParts(raw json.RawMessage) ([]json.RawMessage, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		if s == "" {
			return nil, nil
		}
		return []json.RawMessage{mustJSON(map[string]any{"text": s})}, nil
	}
	var parts []json.RawMessage
	if err := json.Unmarshal(raw, &parts); err != nil {
		return nil, fmt.Errorf("want a string or a list of parts: %w", err)
	}
	for i, p := range parts {
		var o map[string]json.RawMessage
		if json.Unmarshal(p, &o) != nil {
			return nil, fmt.Errorf("[%d]: not a part (an object)", i)
		}
	}
	return parts, nil
}

// geminiResultParts is what the CLI sends back for a call, as its resume does: the result
// parts as they are, a string as {"output": TEXT}; a call without a result sends none.
func geminiResultParts(c geminiToolRun) ([]json.RawMessage, error) {
	if len(c.Result) == 0 || string(c.Result) == "null" {
		return nil, nil
	}
	var s string
	if json.Unmarshal(c.Result, &s) == nil {
		return []json.RawMessage{mustJSON(map[string]any{"functionResponse": map[string]any{"id": c.ID, "name": c.Name, "response": map[string]any{"output": s}}})}, nil
	}
	if c.Result[0] == '[' {
		return geminiParts(c.Result)
	}
	if c.Result[0] == '{' {
		return []json.RawMessage{c.Result}, nil
	}
	return nil, fmt.Errorf("want a list of parts, a part or a string")
}

// geminiResponseID is the call id of a functionResponse part, "" for any other part.
func geminiResponseID(part json.RawMessage) string {
	var p struct {
		FunctionResponse *struct {
			ID string `json:"id"`
		} `json:"functionResponse"`
	}
	if json.Unmarshal(part, &p) != nil || p.FunctionResponse == nil {
		return ""
	}
	return p.FunctionResponse.ID
}

// mustJSON encodes a value built of maps, slices, strings, numbers and raw JSON, without
// HTML escaping; such a value always encodes.
func mustJSON(v any) json.RawMessage {
	b, err := jsonlex.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("interop: encode %T: %v", v, err))
	}
	return b
}
