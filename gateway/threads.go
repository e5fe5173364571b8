package gateway

import (
	"fmt"
	"hash/maphash"
	"slices"
	"strings"

	"github.com/tapebox/tapebox/match"
	"github.com/tapebox/tapebox/tape"
	"github.com/tapebox/tapebox/tape/harnesses"
	"github.com/tapebox/tapebox/tape/provider"
)

// SpawningTools are the tools known to start a subagent (the harness table's, package
// tape/harnesses): Claude Code's Agent and Task, Codex's multi-agent spawn tools.
var SpawningTools = harnesses.SpawningTools()

// thread is one conversation as the endpoint's matcher knows it: a live thread, which the
// matcher opened for a request that started a conversation, or a recorded thread of the
// tape it serves, known before any request.
type thread struct {
	id     string
	parent *tape.Parent
	sig    threadSig
	// turns is the turn a live thread expects next: one past the last turn that got a
	// complete answer (the assistant turns the harness then holds in its history). A failed
	// or broken call does not count, so its retry continues the thread, and a retry of the
	// last answered turn (turns-1) continues it too. For a recorded thread, it is the turns
	// served (the next one to serve).
	turns int
	// last is the thread's last step (its tool calls wait for results); lastOK says it got
	// a complete answer. A recorded thread's is the last step served.
	last   *tape.Step
	lastOK bool

	// A recorded thread: its steps, the step it went on from at each turn (kept:
	// tape.Thread.Kept, so that a superseded attempt is never served), and the thread and
	// turn of the call that spawned it (parent nil: none), which must be served before it
	// starts.
	rec        *tape.Thread
	kept       []int
	parentOf   *thread
	parentStep int

	// A live thread, as the gateway records it.
	index int // its index in the tape, -1 until its first step is written
	// firstText is the opening user messages (those before the model's first answer),
	// which name a subagent's task; agent says its first request offered tools.
	firstText string
	agent     bool
	steps     int // steps written
	lastIndex int
	// inFlight counts requests of this thread not yet answered.
	inFlight int
	// seenCalls holds the keys (callsKey) of the tool calls its steps made, and repeats
	// how many of its last steps in a row made calls it had made before (with
	// Config.Limits.MaxRepeat).
	seenCalls map[[32]byte]bool
	repeats   int
}

// threadSig is what identifies a conversation in each of its requests: its system prompt,
// the names of its tools and its opening messages.
type threadSig struct {
	// key is a hash of the system prompt, the tool names and the first user message: within
	// one run, the requests of a conversation all have its key.
	key uint64
	// The texts, for a recorded thread and a request matched against one: across runs, dates
	// and paths change, so they are scored by similarity (score). opening is every message
	// before the model's first answer.
	system, tools, opening string
	// prompt, set for a tape imported from a harness's session file (meta.labels
	// tapebox.form), is the user's text of the thread's opening: such a file keeps what the
	// user typed but not the harness's whole opening (Claude Code drops its reminder blocks,
	// Codex keeps other base instructions than it sends), so a request whose opening holds
	// the prompt counts as an opening that matches.
	prompt string
}

// threadSeed seeds the thread keys of this process (they are compared, never stored).
var threadSeed = maphash.MakeSeed()

// threadKey is the key of a request's conversation (threadSig.key).
func threadKey(req *tape.Request) uint64 {
	var h maphash.Hash
	h.SetSeed(threadSeed)
	h.WriteString(req.System)
	for _, t := range req.Tools {
		h.WriteByte(0)
		h.WriteString(t.Name)
	}
	h.WriteByte(1)
	eachFirstUserText(req, func(s string) {
		h.WriteString(s)
		h.WriteByte('\n')
	})
	return h.Sum64()
}

// sigOf is a request's whole signature, texts included.
func sigOf(req *tape.Request) threadSig {
	var tools []string
	for _, t := range req.Tools {
		tools = append(tools, t.Name)
	}
	return threadSig{key: threadKey(req), system: req.System, tools: strings.Join(tools, ","), opening: provider.OpeningText(req)}
}

// exactScore is the score of a signature against itself.
const exactScore = 7

// score says how well a request's signature fits a recorded thread's: the opening messages
// weigh most, then the tools, then the system prompt (which holds dates and paths that
// change).
func (a threadSig) score(b threadSig) int {
	s := 0
	if a.opening == b.opening || (a.prompt != "" && strings.Contains(b.opening, a.prompt)) {
		s += 4
	} else if match.Similar(a.opening, b.opening) {
		s += 2
	}
	if a.tools == b.tools {
		s += 2
	}
	if a.system == b.system {
		s++
	}
	return s
}

// lastUserText is the text of the last user message of a request's opening.
func lastUserText(req *tape.Request) string {
	text := ""
	for _, m := range req.Messages {
		if m.Role == "assistant" {
			break
		}
		if m.Role == "user" {
			var b strings.Builder
			for _, blk := range m.Content {
				if blk.Type == tape.BlockText {
					b.WriteString(blk.Text)
					b.WriteByte('\n') // as openingText joins them
				}
			}
			if t := strings.TrimSpace(b.String()); t != "" {
				text = t
			}
		}
	}
	return text
}

// eachFirstUserText calls fn with the text of each text block of the first user message.
func eachFirstUserText(req *tape.Request, fn func(string)) {
	for _, m := range req.Messages {
		if m.Role == "user" {
			for _, blk := range m.Content {
				if blk.Type == tape.BlockText {
					fn(blk.Text)
				}
			}
			return
		}
	}
}

// answeredCalls returns the tool call ids a request carries results for.
func answeredCalls(req *tape.Request) map[string]bool {
	ids := map[string]bool{}
	for _, m := range req.Messages {
		for _, b := range m.Content {
			if b.Type == tape.BlockToolResult {
				ids[b.ToolCallID] = true
			}
		}
	}
	return ids
}

// matcher attributes each model call to a thread: the endpoint's one thread matcher, for
// the calls it forwards live, the calls it serves from a tape, and a fork's both. Its
// threads are live (opened by open, for a request that starts a conversation) or recorded
// (the tape's, known before any request: recordedThreads). Its caller holds a lock.
type matcher struct {
	threads []*thread
	// spawns are the spawning calls of live threads still waiting for their child;
	// spawning names the tools that spawn.
	spawns   []spawn
	spawning []string
}

// find returns the thread a request belongs to, or nil, and whether the request asks again
// for a step of it already served (a recorded thread's). turns is the request's assistant
// turns and sig its signature: its key for live threads, its texts too (sigOf) for recorded
// ones. In order:
//   - a thread whose last step's tool calls the request answers (a recorded thread only
//     when it expects turns);
//   - among the threads that expect turns, the one whose signature fits the request's
//     best: a live thread's exactly (its key), a recorded thread's by score, at least 2
//     (its opening in part, or its tools), a retry scoring one less than the next turn.
//
// A live thread expects its next turn (0 only after a failed call or while the first is in
// flight), or its last answered turn again: a retry, by the harness or its SDK, of a call
// the gateway already answered (after a client-side timeout or a dropped connection). The
// retry is the thread's next step, and the thread goes on from its answer
// (tape.Thread.Superseded). A recorded thread whose parent call was served expects its
// next turn, or its last one again.
//
// Roles other than user and assistant (Claude Code's role:system entries, OpenAI
// developer messages) count neither as the first user message nor as turns.
func (m *matcher) find(req *tape.Request, turns int, sig threadSig) (th *thread, retry bool) {
	if answered := answeredCalls(req); len(answered) > 0 {
		// Call ids need not be unique across threads (a scripted model numbers them by
		// turn, and may answer a side request without tools with a call): a thread of the
		// request's own conversation (its key) wins over one that only made a call of the
		// same id.
		var first *thread
		for _, t := range m.threads {
			if t.last == nil || t.rec != nil && !t.expects(turns) {
				continue
			}
			for _, c := range t.last.ToolCalls {
				if !answered[c.ID] {
					continue
				}
				if t.sig.key == sig.key {
					return t, t.rec != nil && turns < t.turns
				}
				if first == nil {
					first = t
				}
				break
			}
		}
		if first != nil {
			return first, first.rec != nil && turns < first.turns
		}
	}
	best, bestScore := (*thread)(nil), -1
	for _, t := range m.threads {
		if !t.expects(turns) {
			continue
		}
		sc := exactScore
		switch {
		case t.rec == nil && t.sig.key != sig.key:
			continue
		case t.rec != nil:
			sc = t.sig.score(sig)
		}
		if turns < t.turns {
			sc-- // prefer a thread waiting for this turn over a retry
		}
		if sc > bestScore {
			best, bestScore = t, sc
		}
	}
	if best == nil || bestScore < 2 {
		return nil, false
	}
	return best, best.rec != nil && turns < best.turns
}

// expects says whether a request with turns assistant turns may continue t.
func (t *thread) expects(turns int) bool {
	if t.rec == nil {
		switch turns {
		case t.turns: // turn 0: after a failed first call, or while it is in flight
			return turns > 0 || t.last != nil && !t.lastOK || t.last == nil && t.inFlight > 0
		case t.turns - 1:
			return t.last != nil // a retry of the last turn answered
		}
		return false
	}
	if len(t.kept) == 0 || t.parentOf != nil && t.parentOf.turns <= t.parentStep {
		return false
	}
	return turns == t.turns || turns == t.turns-1
}

// answered notes that a live thread's request for turn got a complete answer: the thread
// expects the turn after it (a late answer to an earlier turn moves nothing back).
func (t *thread) answered(turn int) {
	t.turns = max(t.turns, turn+1)
}

// serve marks turn n of a recorded thread as served.
func (t *thread) serve(n int) {
	t.turns = n + 1
	t.last, t.lastOK = t.rec.Steps[t.kept[n]], true
}

// step is the index in a recorded thread of the step that answers turn n: the one the
// recording went on from (kept), or, past the last turn recorded, as many steps past the
// end as n is past the last turn.
func (t *thread) step(n int) int {
	if n < len(t.kept) {
		return t.kept[n]
	}
	return len(t.rec.Steps) + n - len(t.kept)
}

// turnOf is the turn of a recorded thread that step si answers: the kept steps before it.
func (t *thread) turnOf(si int) int {
	n := 0
	for n < len(t.kept) && t.kept[n] < si {
		n++
	}
	return n
}

// recordedThreads are the matcher's threads for serving rec: one per thread of rec, in its
// order, with the signatures sigs of their first requests (recordedSigs).
func recordedThreads(rec *tape.Tape, sigs []threadSig) []*thread {
	out := make([]*thread, len(rec.Threads))
	for i, th := range rec.Threads {
		out[i] = &thread{id: th.ID, parent: th.Parent, sig: sigs[i], rec: th, kept: th.Kept(), index: i}
	}
	for i, th := range rec.Threads {
		ref, _, ok := rec.ParentCall(th)
		if !ok {
			continue
		}
		for j, p := range rec.Threads {
			if p.ID == ref.Thread.ID {
				out[i].parentOf, out[i].parentStep = out[j], out[j].turnOf(ref.Index)
				break
			}
		}
	}
	return out
}

// recordedSigs are the signatures of rec's threads, by their first request (the zero
// signature for a thread without steps).
func recordedSigs(rec *tape.Tape) []threadSig {
	sigs := make([]threadSig, len(rec.Threads))
	imported := rec.Meta.Labels["tapebox.form"] != ""
	for i, th := range rec.Threads {
		if len(th.Steps) == 0 {
			continue
		}
		sigs[i] = sigOf(&th.Steps[0].Request)
		if imported {
			sigs[i].prompt = lastUserText(&th.Steps[0].Request)
		}
	}
	return sigs
}

// attribute decides which live thread a request belongs to, opening one when it starts a
// new conversation, whose parent is the pending spawning call whose prompt its opening user
// messages carry (else the oldest pending spawning call, else none).
//
// A conversation's first request sent again (after its answer, or while it is in flight)
// is a retry of that thread, unless a pending spawning call's prompt is in its opening: two
// subagents given the same task start alike, and the second is a thread of its own.
func (m *matcher) attribute(req *tape.Request) (th *thread, continued bool) {
	sig := threadSig{key: threadKey(req)}
	turns := req.Turns()
	text := ""
	if t, _ := m.find(req, turns, sig); t != nil {
		if turns > 0 || len(m.spawns) == 0 {
			return m.continues(t, turns), true
		}
		if text = openingText(req); !m.spawnFor(text) {
			return m.continues(t, turns), true
		}
	} else {
		text = openingText(req)
	}
	th = &thread{index: -1, sig: sig, firstText: text, agent: len(req.Tools) > 0}
	if len(m.threads) == 0 {
		th.id = "main"
	} else {
		th.id = fmt.Sprintf("t%d", len(m.threads))
		th.parent = m.claimSpawn(th)
	}
	m.threads = append(m.threads, th)
	return th, false
}

// maxFirstText bounds what a thread keeps of its opening user text to find its parent: a
// subagent's task prompt is far shorter, and a request of 30 MB must not stay in memory
// for as long as its thread waits to be written.
const maxFirstText = 1 << 20

// openingText is the opening user text of req, up to maxFirstText bytes (a copy).
func openingText(req *tape.Request) string {
	text := provider.OpeningUserText(req)
	if len(text) > maxFirstText {
		text = strings.Clone(text[:maxFirstText])
	}
	return text
}

// spawn is a spawning tool call waiting for its child's first request.
type spawn struct {
	thread string
	callID string
	prompt string
}

// noteSpawns remembers the spawning calls of a finished step.
func (m *matcher) noteSpawns(th *thread, s *tape.Step) {
	for _, c := range s.ToolCalls {
		if !slices.Contains(m.spawning, c.Name) {
			continue
		}
		m.spawns = append(m.spawns, spawn{thread: th.id, callID: c.ID, prompt: spawnPrompt(c)})
	}
}

// spawnPrompt takes the task text from a spawning call's input.
func spawnPrompt(c tape.ToolCall) string {
	for _, k := range []string{"prompt", "message", "task", "instructions", "input"} {
		if v := jsonField(c.Input, k); v != "" {
			return v
		}
	}
	return ""
}

// continues returns t, which a request for turn continues. When that is a retry of the
// turn t last had answered, the spawning calls of that answer, now superseded, are no
// longer pending: the harness never ran them, and a child must not claim them.
func (m *matcher) continues(t *thread, turns int) *thread {
	if t.rec != nil || turns >= t.turns || t.last == nil || len(m.spawns) == 0 {
		return t
	}
	m.spawns = slices.DeleteFunc(m.spawns, func(s spawn) bool {
		return s.thread == t.id && slices.ContainsFunc(t.last.ToolCalls, func(c tape.ToolCall) bool { return c.ID == s.callID })
	})
	return t
}

// spawnFor says whether a pending spawning call's prompt is in text.
func (m *matcher) spawnFor(text string) bool {
	for _, s := range m.spawns {
		if s.prompt != "" && strings.Contains(text, s.prompt) {
			return true
		}
	}
	return false
}

// claimSpawn finds the parent of a new thread th: the pending spawning call whose prompt
// its opening user messages carry, else, when its request offered tools (an agent), the
// oldest pending spawning call. A request that offers none and carries no call's prompt is
// a harness's side question (a title; Gemini CLI's loop check or edit correction, which may
// come while a subagent starts): it takes no call, which would leave the subagent the call
// started without its parent.
func (m *matcher) claimSpawn(th *thread) *tape.Parent {
	if len(m.spawns) == 0 {
		return nil
	}
	pick := -1
	for i, s := range m.spawns {
		if s.prompt != "" && strings.Contains(th.firstText, s.prompt) {
			pick = i
			break
		}
	}
	if pick < 0 {
		if !th.agent {
			return nil
		}
		pick = 0
	}
	s := m.spawns[pick]
	m.spawns = slices.Delete(m.spawns, pick, pick+1)
	return &tape.Parent{ThreadID: s.thread, ToolCallID: s.callID}
}
