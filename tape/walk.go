package tape

import (
	"iter"
	"slices"
)

// Thread returns the thread with the given id, or nil.
func (t *Tape) Thread(id string) *Thread {
	for _, th := range t.Threads {
		if th.ID == id {
			return th
		}
	}
	return nil
}

// Main returns the main thread: the first one without a parent that makes tool calls
// (ToolCallers), else the first one without a parent; nil for an empty tape. A side
// conversation that a harness starts before its agent's first answer is in (OpenCode asks
// its small model for the session's title beside that call) is not the main thread, even
// when it was written first, and even when its model answered with a call to a tool its
// request did not offer.
func (t *Tape) Main() *Thread {
	var first *Thread
	offered := t.offersTools()
	for _, th := range t.Threads {
		if th.Parent != nil {
			continue
		}
		if first == nil {
			first = th
		}
		if th.makesToolCalls(offered) {
			return th
		}
	}
	return first
}

// ToolCallers holds the threads of t some step of which asks for a tool call the harness
// could run: one whose request offered tools. A call in answer to a request without tools
// (a title or summary request that a scripted model answered with the agent's turn) does
// not count, unless no request of the tape lists its tools (a tape imported from a session
// file that does not keep them).
func (t *Tape) ToolCallers() map[*Thread]bool {
	offered := t.offersTools()
	out := map[*Thread]bool{}
	for _, th := range t.Threads {
		if th.makesToolCalls(offered) {
			out[th] = true
		}
	}
	return out
}

func (th *Thread) makesToolCalls(offered bool) bool {
	for _, s := range th.Steps {
		if len(s.ToolCalls) > 0 && (!offered || len(s.Request.Tools) > 0) {
			return true
		}
	}
	return false
}

// offersTools says whether some request of t lists the tools it offered.
func (t *Tape) offersTools() bool {
	for _, th := range t.Threads {
		for _, s := range th.Steps {
			if len(s.Request.Tools) > 0 {
				return true
			}
		}
	}
	return false
}

// Children returns the threads spawned by tool calls of th, in tape order.
func (t *Tape) Children(th *Thread) []*Thread {
	var out []*Thread
	for _, c := range t.Threads {
		if c.Parent != nil && c.Parent.ThreadID == th.ID {
			out = append(out, c)
		}
	}
	return out
}

// ChildOf returns the thread spawned by tool call callID of thread th, or nil.
func (t *Tape) ChildOf(threadID, callID string) *Thread {
	for _, c := range t.Threads {
		if c.Parent != nil && c.Parent.ThreadID == threadID && c.Parent.ToolCallID == callID {
			return c
		}
	}
	return nil
}

// StepRef locates a step in a tape.
type StepRef struct {
	Thread *Thread
	Index  int // the step's index in its thread
	Step   *Step
}

// ParentCall returns the step and tool call that spawned th; ok is false for the main
// thread or when the tape does not hold the parent call. When several steps made a call of
// that id (a retried step answered alike, Thread.Superseded), it is the first one the
// thread went on from: a superseded step's calls were never run.
func (t *Tape) ParentCall(th *Thread) (ref StepRef, call ToolCall, ok bool) {
	if th.Parent == nil {
		return StepRef{}, ToolCall{}, false
	}
	p := t.Thread(th.Parent.ThreadID)
	if p == nil {
		return StepRef{}, ToolCall{}, false
	}
	for i, s := range p.Steps {
		for _, c := range s.ToolCalls {
			if c.ID != th.Parent.ToolCallID {
				continue
			}
			if !ok || ref.Thread.Superseded(ref.Index) {
				ref, call, ok = StepRef{Thread: p, Index: i, Step: s}, c, true
			}
			if !p.Superseded(i) {
				return ref, call, ok
			}
		}
	}
	return ref, call, ok
}

// Steps yields every step of every thread in recorded order: by request time, ties kept in
// tape order (threads in order, steps in order).
func (t *Tape) Steps() iter.Seq[StepRef] {
	var refs []StepRef
	for _, th := range t.Threads {
		for i, s := range th.Steps {
			refs = append(refs, StepRef{Thread: th, Index: i, Step: s})
		}
	}
	slices.SortStableFunc(refs, func(a, b StepRef) int {
		switch {
		case a.Step.Timing.RequestAt < b.Step.Timing.RequestAt:
			return -1
		case a.Step.Timing.RequestAt > b.Step.Timing.RequestAt:
			return 1
		}
		return 0
	})
	return slices.Values(refs)
}

// ToolResult returns the result recorded for the tool call with the given id in step s.
func (s *Step) ToolResult(callID string) (ToolResult, bool) {
	for _, r := range s.ToolResults {
		if r.ToolCallID == callID {
			return r, true
		}
	}
	return ToolResult{}, false
}

// Text returns the text of the response (thinking excluded).
func (r *Response) Text() string { return BlocksText(r.Content) }

// Totals sums a tape.
type Totals struct {
	Threads   int
	Steps     int
	ToolCalls int
	Usage     Usage
	// DurationMS is from the tape's start to the last byte of its last response (or to the
	// end time when the tape says how it ended and that is later).
	DurationMS float64
	// ToolNames lists the distinct tool names called, sorted.
	ToolNames []string
}

// Totals computes the tape's totals.
func (t *Tape) Totals() Totals {
	tot := Totals{Threads: len(t.Threads)}
	names := map[string]bool{}
	for _, th := range t.Threads {
		for _, s := range th.Steps {
			tot.Steps++
			tot.ToolCalls += len(s.ToolCalls)
			tot.Usage = tot.Usage.Add(s.Response.Usage)
			for _, c := range s.ToolCalls {
				names[c.Name] = true
			}
			tot.DurationMS = max(tot.DurationMS, s.Timing.LastByteAt)
		}
	}
	if e := t.Meta.Ended; e != nil && !e.At.IsZero() {
		tot.DurationMS = max(tot.DurationMS, t.MS(e.At))
	}
	for n := range names {
		tot.ToolNames = append(tot.ToolNames, n)
	}
	slices.Sort(tot.ToolNames)
	return tot
}

// ResultsFor returns the results that messages (a thread's next request) carry for calls:
// its tool_result blocks answering those call ids, in call order. Calls with no answer are
// left out; when an id is answered twice, the last answer counts.
func ResultsFor(messages []Message, calls []ToolCall) []ToolResult {
	if len(calls) == 0 {
		return nil
	}
	answers := map[string]Block{}
	for _, m := range messages {
		for _, b := range m.Content {
			if b.Type == BlockToolResult {
				answers[b.ToolCallID] = b
			}
		}
	}
	var out []ToolResult
	for _, c := range calls {
		b, ok := answers[c.ID]
		if !ok {
			continue
		}
		content := b.Content
		if content == nil {
			content = []Block{}
		}
		out = append(out, ToolResult{ToolCallID: c.ID, Content: content, IsError: b.IsError})
	}
	return out
}

// ThreadsByID maps each thread id of t to its first thread of that id, as Thread finds it,
// without a scan per lookup.
func (t *Tape) ThreadsByID() map[string]*Thread {
	out := make(map[string]*Thread, len(t.Threads))
	for _, th := range t.Threads {
		if _, ok := out[th.ID]; !ok {
			out[th.ID] = th
		}
	}
	return out
}

// Reachable holds the threads of t that are the main thread or descend from it, a parent
// being the first thread of its id (as Thread finds it); a thread whose parents go round in
// a circle or end at a missing thread does not. These are the threads a replay plays. Each
// thread is walked once, so that a long chain of subagents (a tape is anyone's) costs its
// length, not its cube.
func (t *Tape) Reachable() map[*Thread]bool {
	byID := t.ThreadsByID()
	main := t.Main()
	const walking = 2
	state := make(map[*Thread]int8, len(t.Threads)) // 1 reachable, 0 not, walking
	var path []*Thread
	for _, th := range t.Threads {
		path = path[:0]
		reach := false
		for cur := th; ; {
			if v, ok := state[cur]; ok {
				reach = v == 1
				break
			}
			if cur == main {
				reach = true
				path = append(path, cur)
				break
			}
			state[cur] = walking
			path = append(path, cur)
			if cur.Parent == nil {
				break
			}
			if cur = byID[cur.Parent.ThreadID]; cur == nil {
				break
			}
		}
		v := int8(0)
		if reach {
			v = 1
		}
		for _, p := range path {
			state[p] = v
		}
	}
	out := make(map[*Thread]bool, len(state))
	for th, v := range state {
		if v == 1 {
			out[th] = true
		}
	}
	return out
}
