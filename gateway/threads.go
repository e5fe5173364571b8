package gateway

import (
	"fmt"
	"hash/maphash"
	"slices"
	"strconv"
	"strings"

	"github.com/tapebox/tapebox/tape"
	"github.com/tapebox/tapebox/tape/harnesses"
	"github.com/tapebox/tapebox/tape/provider"
)

// SpawningTools are the tools known to start a subagent (the harness table's, package
// tape/harnesses): Claude Code's Agent and Task, Codex's multi-agent spawn tools.
var SpawningTools = harnesses.SpawningTools()

// thread is the gateway's view of one conversation while recording.
type thread struct {
	id     string
	index  int // index in the tape, -1 until its first step is written
	parent *tape.Parent
	key    string // system prompt + tool names + first user message
	// firstText is the opening user messages (those before the model's first answer),
	// which name a subagent's task.
	firstText string
	steps     int // steps written
	// turns counts the steps that got a complete answer: the assistant turns the harness
	// holds in its history. A failed or broken call does not count, so its retry continues
	// the thread.
	turns int
	// last is the thread's last written step (its tool calls wait for results); lastOK
	// says it got a complete answer.
	last      *tape.Step
	lastIndex int
	lastOK    bool
	// inFlight counts requests of this thread not yet answered.
	inFlight int
	// seenCalls holds the keys (callsKey) of the tool calls its steps made, and repeats
	// how many of its last steps in a row made calls it had made before (with
	// Config.Limits.MaxRepeat).
	seenCalls map[[32]byte]bool
	repeats   int
}

// threadSeed seeds the thread keys of this process (they are compared, never stored).
var threadSeed = maphash.MakeSeed()

// threadKey identifies a conversation by what stays the same across its calls: a hash of
// the system prompt, the tool names and the first user message.
func threadKey(req *tape.Request) string {
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
	return strconv.FormatUint(h.Sum64(), 16)
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

// attribute decides which thread a request belongs to, creating one when it starts a new
// conversation. It must be called with the gateway's lock held.
//
// In order: a request that answers the tool calls of a thread's last step continues that
// thread; a request with the same conversation key as a thread, with as many assistant
// turns as the thread has complete answers, continues it (a follow-up without tool calls,
// or the retry of a call that failed); anything else starts a thread, whose parent is the
// pending spawning call whose prompt its first user message carries (else the oldest
// pending spawning call, else none).
//
// Roles other than user and assistant (Claude Code's role:system entries, OpenAI developer
// messages) count neither as the first user message nor as turns.
func (g *Gateway) attribute(req *tape.Request) (th *thread, continued bool) {
	answered := answeredCalls(req)
	key := threadKey(req)
	turns := provider.AssistantTurns(req)
	if len(answered) > 0 {
		for _, t := range g.threads {
			if t.last == nil {
				continue
			}
			for _, c := range t.last.ToolCalls {
				if answered[c.ID] {
					return t, true
				}
			}
		}
	}
	for _, t := range g.threads {
		if t.key == key && turns == t.turns && (turns > 0 || t.last != nil && !t.lastOK) {
			return t, true
		}
	}
	th = &thread{index: -1, key: key, firstText: openingText(req)}
	if len(g.threads) == 0 {
		th.id = "main"
	} else {
		th.id = fmt.Sprintf("t%d", len(g.threads))
		th.parent = g.claimSpawn(th.firstText)
	}
	g.threads = append(g.threads, th)
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
func (g *Gateway) noteSpawns(th *thread, s *tape.Step) {
	for _, c := range s.ToolCalls {
		if !slices.Contains(g.spawning, c.Name) {
			continue
		}
		g.spawns = append(g.spawns, spawn{thread: th.id, callID: c.ID, prompt: spawnPrompt(c)})
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

// claimSpawn finds the parent of a new thread whose first user message is text.
func (g *Gateway) claimSpawn(text string) *tape.Parent {
	if len(g.spawns) == 0 {
		return nil
	}
	pick := -1
	for i, s := range g.spawns {
		if s.prompt != "" && strings.Contains(text, s.prompt) {
			pick = i
			break
		}
	}
	if pick < 0 {
		pick = 0
	}
	s := g.spawns[pick]
	g.spawns = slices.Delete(g.spawns, pick, pick+1)
	return &tape.Parent{ThreadID: s.thread, ToolCallID: s.callID}
}
