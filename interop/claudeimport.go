package interop

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/tapebox/tapebox/tape"
)

// ccLine is what the import reads of a Claude Code session file line.
type ccLine struct {
	Type        string          `json:"type"`
	UUID        string          `json:"uuid"`
	ParentUUID  string          `json:"parentUuid"`
	IsSidechain bool            `json:"isSidechain"`
	IsMeta      bool            `json:"isMeta"`
	Message     json.RawMessage `json:"message"`
	Timestamp   string          `json:"timestamp"`
	Cwd         string          `json:"cwd"`
	SessionID   string          `json:"sessionId"`
	Version     string          `json:"version"`
	AgentID     string          `json:"agentId"`
}

type ccReadMessage struct {
	ID         string          `json:"id"`
	Role       string          `json:"role"`
	Model      string          `json:"model"`
	Content    json.RawMessage `json:"content"`
	StopReason *string         `json:"stop_reason"`
	Usage      *struct {
		InputTokens              int64 `json:"input_tokens"`
		OutputTokens             int64 `json:"output_tokens"`
		CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
		CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
	} `json:"usage"`
}

type ccBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	Thinking  string          `json:"thinking"`
	Signature string          `json:"signature"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
	IsError   bool            `json:"is_error"`
}

// ccBlocks normalizes Anthropic content: a string, or a list of blocks; lost counts what
// the normalized blocks have no place for.
func ccBlocks(raw json.RawMessage, lost losses) ([]tape.Block, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return []tape.Block{{Type: tape.BlockText, Text: s}}, nil
	}
	var list []json.RawMessage
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, fmt.Errorf("message content: want a string or a list of blocks: %w", err)
	}
	out := make([]tape.Block, 0, len(list))
	for i, r := range list {
		var b ccBlock
		if err := json.Unmarshal(r, &b); err != nil {
			return nil, fmt.Errorf("content[%d]: %w", i, err)
		}
		switch b.Type {
		case "text":
			out = append(out, tape.Block{Type: tape.BlockText, Text: b.Text})
		case "thinking":
			out = append(out, tape.Block{Type: tape.BlockThinking, Text: b.Thinking})
			if b.Signature != "" {
				lost.add(LostThinkingSignature, 1)
			}
		case "redacted_thinking":
			out = append(out, tape.Block{Type: tape.BlockOther, Raw: r})
		case "tool_use":
			if b.ID == "" || b.Name == "" {
				return nil, fmt.Errorf("content[%d]: tool_use without id or name", i)
			}
			out = append(out, tape.Block{Type: tape.BlockToolUse, ID: b.ID, Name: b.Name, Input: input(b.Input)})
		case "tool_result":
			inner, err := ccBlocks(b.Content, lost)
			if err != nil {
				return nil, fmt.Errorf("content[%d]: %w", i, err)
			}
			if inner == nil {
				inner = []tape.Block{}
			}
			out = append(out, tape.Block{Type: tape.BlockToolResult, ToolCallID: b.ToolUseID, Content: inner, IsError: b.IsError})
		case "image":
			out = append(out, tape.Block{Type: tape.BlockImage, Raw: r})
		default:
			out = append(out, tape.Block{Type: tape.BlockOther, Raw: r})
		}
	}
	return out, nil
}

// ccThreadReader builds one thread from a session file's entries in order.
type ccThreadReader struct {
	th      *tape.Thread
	history []tape.Message
	cur     *tape.Step
	curID   string
	calls   map[string]*tape.Step
	first   time.Time
	last    time.Time
	model   string
	cwd     string
	version string
	session string
	lost    losses
	// clock holds the wall times of each step's entries: the user entry before it (the
	// request) and its first and last assistant entries; lastUser is the latest user entry's.
	clock    map[*tape.Step]*stepClock
	lastUser time.Time
}

func (r *ccThreadReader) entry(e ccLine) error {
	if (e.Type != "user" && e.Type != "assistant") || e.IsMeta || len(e.Message) == 0 || string(e.Message) == "null" {
		return nil
	}
	at, timed := parseTime(e.Timestamp)
	if timed {
		if r.first.IsZero() {
			r.first = at
		}
		r.last = at
	}
	r.cwd = cmp.Or(r.cwd, e.Cwd)
	r.version = cmp.Or(r.version, e.Version)
	r.session = cmp.Or(r.session, e.SessionID)
	if err := checkCCMessage(e.Message); err != nil {
		return err
	}
	var m ccReadMessage
	if err := json.Unmarshal(e.Message, &m); err != nil {
		return fmt.Errorf("message: %w", err)
	}
	blocks, err := ccBlocks(m.Content, r.lost)
	if err != nil {
		return err
	}
	if e.Type == "assistant" {
		if r.cur == nil || m.ID == "" || m.ID != r.curID {
			r.cur = newStep(tape.ProviderAnthropic, m.Model, r.history)
			r.curID = m.ID
			r.th.Steps = append(r.th.Steps, r.cur)
			if timed {
				r.clock[r.cur] = &stepClock{req: cmpTime(r.lastUser, at), first: at}
			}
		}
		if c := r.clock[r.cur]; c != nil && timed {
			c.last = at
		}
		r.model = cmp.Or(r.model, m.Model)
		for _, b := range blocks {
			r.cur.Response.Content = append(r.cur.Response.Content, b)
			if b.Type == tape.BlockToolUse {
				r.cur.ToolCalls = append(r.cur.ToolCalls, tape.ToolCall{ID: b.ID, Name: b.Name, Input: b.Input, Kind: "function"})
				r.calls[b.ID] = r.cur
			}
		}
		if m.StopReason != nil {
			r.cur.Response.StopReason = *m.StopReason
		}
		if u := m.Usage; u != nil {
			r.cur.Response.Usage = tape.Usage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens, CacheReadInputTokens: u.CacheReadInputTokens, CacheCreationInputTokens: u.CacheCreationInputTokens}
		}
		r.history = appendMessage(r.history, "assistant", blocks)
		return nil
	}
	for _, b := range blocks {
		if b.Type != tape.BlockToolResult {
			continue
		}
		st, ok := r.calls[b.ToolCallID]
		if !ok {
			return fmt.Errorf("tool_result for %q, which no earlier tool_use of this thread asked for", b.ToolCallID)
		}
		st.ToolResults = append(st.ToolResults, tape.ToolResult{ToolCallID: b.ToolCallID, Content: b.Content, IsError: b.IsError})
	}
	r.history = appendMessage(r.history, "user", blocks)
	r.cur = nil
	if timed {
		r.lastUser = at
	}
	return nil
}

func newCCReader(id string, lost losses) *ccThreadReader {
	return &ccThreadReader{th: &tape.Thread{ID: id, Steps: []*tape.Step{}}, calls: map[string]*tape.Step{}, lost: lost, clock: map[*tape.Step]*stepClock{}}
}

// read reads a session file's entries into r. With inline (for a session file), its
// sidechain entries (isSidechain: a subagent's, kept in the session file by older Claude
// Code versions) go to a reader of their own per chain instead, added to inline: an entry
// whose parentUuid is a sidechain entry's goes on that chain, any other opens one. A file
// whose first message is a sidechain's is a subagent's file, read whole into r.
func (r *ccThreadReader) read(path string, inline *[]*ccThreadReader) error {
	chain := map[string]*ccThreadReader{} // a sidechain entry's uuid: its chain
	first := true
	return readLines(path, func(_ int, b []byte) error {
		var e ccLine
		if err := json.Unmarshal(b, &e); err != nil {
			return fmt.Errorf("not a Claude Code session entry: %w", err)
		}
		if first && (e.Type == "user" || e.Type == "assistant") {
			if first = false; e.IsSidechain {
				inline = nil
			}
		}
		if inline == nil || !e.IsSidechain {
			return r.entry(e)
		}
		side := chain[e.ParentUUID]
		if side == nil {
			side = newCCReader("", r.lost)
			*inline = append(*inline, side)
		}
		if e.UUID != "" {
			chain[e.UUID] = side
		}
		return side.entry(e)
	})
}

// ImportClaudeCode reads Claude Code session files: a <session>.jsonl file or a directory
// holding them (a project folder, or ~/.claude/projects), each with its subagents'
// sidechains wherever the harness's version kept them:
//   - in <session>/subagents/agent-*.jsonl, linked to the spawning call by the .meta.json
//     beside each;
//   - before Claude Code 2.1.2, in agent-*.jsonl files beside the session file that carry
//     its sessionId;
//   - in older versions, as sidechain entries of the session file itself.
//
// A sidechain without a .meta.json is linked to the call whose prompt opens it.
func ImportClaudeCode(path string) ([]*tape.Tape, error) { return importPath(ClaudeCode, path) }

func importClaudeFiles(files []string) ([]*tape.Tape, error) {
	var out []*tape.Tape
	claimed := map[string]bool{}
	agents := agentIndex{}
	// Sessions first: a sidechain beside its session is read with it. One that no session
	// of the import claims is a session of its own, as when it is imported alone.
	for _, sidechains := range []bool{false, true} {
		for _, f := range files {
			if isAgentFile(f) != sidechains || claimed[f] {
				continue
			}
			tp, subs, err := importClaudeSession(f, agents)
			if err != nil {
				return nil, fmt.Errorf("import claude-code: %w", err)
			}
			for _, sf := range subs {
				claimed[sf] = true
			}
			out = append(out, tp)
		}
	}
	return out, nil
}

// isAgentFile says whether path is named as a subagent's sidechain: agent-<id>.jsonl.
func isAgentFile(path string) bool { return strings.HasPrefix(filepath.Base(path), "agent-") }

// agentIndex finds the sidechains Claude Code before 2.1.2 kept beside a session file: per
// folder, its agent-*.jsonl files by the session id their entries carry. A folder's files
// are read once however many sessions it holds.
type agentIndex map[string]map[string][]string

// siblings lists the sidechains beside session file path of session id session.
func (ix agentIndex) siblings(path, session string) ([]string, error) {
	if session == "" || isAgentFile(path) {
		return nil, nil
	}
	dir := filepath.Dir(path)
	bySession, ok := ix[dir]
	if !ok {
		candidates, err := filepath.Glob(filepath.Join(dir, "agent-*.jsonl"))
		if err != nil {
			return nil, err
		}
		bySession = map[string][]string{}
		for _, c := range candidates {
			var id string
			err := readLines(c, func(_ int, b []byte) error {
				var e ccLine
				if json.Unmarshal(b, &e) == nil && e.SessionID != "" {
					id = e.SessionID
					return errFirstLine
				}
				return nil
			})
			if err != nil && !errors.Is(err, errFirstLine) {
				return nil, err
			}
			bySession[id] = append(bySession[id], c)
		}
		ix[dir] = bySession
	}
	return bySession[session], nil
}

// importClaudeSession reads one session file and its subagents' sidechains (those beside
// it found with agents), and returns the tape with the sidechain files it read.
func importClaudeSession(path string, agents agentIndex) (*tape.Tape, []string, error) {
	tp := newImported(ClaudeCode, "claude-code", path)
	tp.Meta.Provider = tape.ProviderAnthropic
	lost := losses{}
	main := newCCReader("main", lost)
	var inline []*ccThreadReader
	if err := main.read(path, &inline); err != nil {
		return nil, nil, err
	}
	if len(main.th.Steps) == 0 {
		return nil, nil, fmt.Errorf("%s: no assistant message: not a Claude Code session with model calls", path)
	}
	if !anyAnswer(main.th.Steps) {
		return nil, nil, fmt.Errorf("%s: no assistant message has content (/message/content): nothing recognized as Claude Code's model calls", path)
	}
	tp.Threads = append(tp.Threads, main.th)
	readers := []*ccThreadReader{main}
	first, last := main.first, main.last
	dir := filepath.Join(strings.TrimSuffix(path, ".jsonl"), "subagents")
	subs, err := filepath.Glob(filepath.Join(dir, "agent-*.jsonl"))
	if err != nil {
		return nil, nil, err
	}
	siblings, err := agents.siblings(path, main.session)
	if err != nil {
		return nil, nil, err
	}
	subs = append(subs, siblings...)
	// The sidechains: those kept in the session file, then one a file.
	type sidechain struct {
		r    *ccThreadReader
		file string // "" for one in the session file
	}
	var sides []sidechain
	for _, r := range inline {
		if len(r.th.Steps) > 0 {
			sides = append(sides, sidechain{r: r})
		}
	}
	for _, sf := range subs {
		sub := newCCReader("", lost)
		if err := sub.read(sf, nil); err != nil {
			return nil, nil, err
		}
		sides = append(sides, sidechain{r: sub, file: sf})
	}
	for i, sc := range sides {
		sub := sc.r
		sub.th.ID = fmt.Sprintf("t%d", i+1)
		var meta ccAgentMeta
		metaPath := strings.TrimSuffix(sc.file, ".jsonl") + ".meta.json"
		if sc.file != "" {
			if b, err := os.ReadFile(metaPath); err == nil {
				if err := json.Unmarshal(b, &meta); err != nil {
					return nil, nil, fmt.Errorf("%s: %w", metaPath, err)
				}
			} else if !errors.Is(err, fs.ErrNotExist) {
				return nil, nil, err
			}
		}
		if meta.ToolUseID == "" {
			// Without its .meta.json (older versions, copies that left it out): the call
			// whose prompt opened the sidechain.
			meta.ToolUseID = spawnByPrompt(tp.Threads, prompt(sub.th))
		}
		if meta.ToolUseID == "" {
			if sc.file == "" {
				return nil, nil, fmt.Errorf("%s: a sidechain in the session file opens with a prompt no Agent call has: the subagent cannot be linked to the call that spawned it", path)
			}
			return nil, nil, fmt.Errorf("%s: no toolUseId in %s and no Agent call whose prompt opens it: the subagent cannot be linked to the call that spawned it", sc.file, filepath.Base(metaPath))
		}
		sub.th.Parent = &tape.Parent{ThreadID: "main", ToolCallID: meta.ToolUseID}
		if !sub.first.IsZero() && sub.first.Before(first) {
			first = sub.first
		}
		if sub.last.After(last) {
			last = sub.last
		}
		tp.Threads = append(tp.Threads, sub.th)
		readers = append(readers, sub)
	}
	// A subagent's spawning call is in the main thread or, nested, in another subagent's.
	for _, th := range tp.Threads[1:] {
		for _, other := range tp.Threads {
			if other == th {
				continue
			}
			for _, s := range other.Steps {
				for _, c := range s.ToolCalls {
					if c.ID == th.Parent.ToolCallID {
						th.Parent.ThreadID = other.ID
					}
				}
			}
		}
	}
	tp.Meta.TapeID = hexFrom(32, "claude-code", cmp.Or(main.session, path))
	tp.Meta.HarnessVersion, tp.Meta.Model, tp.Meta.Cwd = main.version, main.model, main.cwd
	if !first.IsZero() {
		tp.Meta.StartedAt = first
	}
	end := cmpTime(last, tp.Meta.StartedAt)
	tp.Meta.Ended = &tape.Ended{Reason: tape.EndComplete, At: end, Detail: "imported from a Claude Code session file, which does not say how the run ended"}
	timed := true
	for _, r := range readers {
		timed = applyClock(tp, r.th, r.clock) && timed
	}
	if timed {
		tp.Meta.Labels[LabelTiming] = TimingEntries
	}
	if main.session != "" {
		tp.Meta.Task = map[string]string{"session_id": main.session}
	}
	lost.label(tp)
	return tp, subs, nil
}

// spawnByPrompt is the id of the tool call whose input's prompt is p, or "".
func spawnByPrompt(threads []*tape.Thread, p string) string {
	if p == "" {
		return ""
	}
	for _, th := range threads {
		for _, s := range th.Steps {
			for _, c := range s.ToolCalls {
				var in struct {
					Prompt string `json:"prompt"`
				}
				if json.Unmarshal(c.Input, &in) == nil && in.Prompt == p {
					return c.ID
				}
			}
		}
	}
	return ""
}

func cmpTime(t, def time.Time) time.Time {
	if t.IsZero() {
		return def
	}
	return t
}
