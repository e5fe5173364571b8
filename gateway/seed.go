package gateway

import (
	"errors"
	"fmt"
	"time"

	"github.com/tapebox/tapebox/tape"
	"github.com/tapebox/tapebox/tape/provider"
)

// Seed writes steps that did not pass through the gateway (a fork's prefix, served from a
// recording) into the tape before its first live call, each marked ServedFromTape, and takes them as the threads'
// history: a live request that answers the tool calls of a seeded thread's last step
// continues that thread, as if the gateway had recorded the seeded steps itself. prefix's
// threads keep their ids and parents; threads without steps are left out. Its timings are
// in milliseconds since prefix.Meta.StartedAt and are moved onto the gateway's clock. Its
// meta gives the tape's provider, model, harness and cwd; meta.forked_from is set with
// SetForkedFrom. Seed must come before any call, once.
func (g *Gateway) Seed(prefix *tape.Tape) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.steps > 0 || len(g.threads) > 0 || g.metaSet {
		return errors.New("gateway: seed: calls were recorded already")
	}
	if g.finished {
		return errors.New("gateway: seed: the recording is finished")
	}
	shift := tape.RoundMS(prefix.Meta.StartedAt.Sub(g.start.UTC()))
	m := prefix.Meta
	if err := g.out.updateMeta(func(meta *tape.Meta) {
		meta.Provider, meta.Model = m.Provider, m.Model
		if meta.Harness == "" {
			meta.Harness, meta.HarnessVersion = m.Harness, m.HarnessVersion
		}
		if meta.Cwd == "" {
			meta.Cwd = m.Cwd
		}
	}); err != nil {
		return fmt.Errorf("gateway: seed: %w", err)
	}
	g.metaSet, g.mainSeen = true, true
	for _, pt := range prefix.Threads {
		if len(pt.Steps) == 0 {
			continue
		}
		th := &thread{id: pt.ID, parent: pt.Parent, sig: threadSig{key: threadKey(&pt.Steps[0].Request)}, firstText: provider.OpeningUserText(&pt.Steps[0].Request), agent: len(pt.Steps[0].Request.Tools) > 0}
		i, err := g.out.addThread(pt.ID, pt.Parent)
		if err != nil {
			return fmt.Errorf("gateway: seed thread %s: %w", pt.ID, err)
		}
		th.index = i
		for _, src := range pt.Steps {
			s := *src
			s.Timing = shiftTiming(s.Timing, shift)
			s.ServedFromTape = true
			si, err := g.out.append(i, &s, nil)
			if err != nil {
				return fmt.Errorf("gateway: seed thread %s: %w", pt.ID, err)
			}
			th.last, th.lastIndex = &s, si
			th.lastOK = s.Response.Status > 0 && s.Response.Status < 400
			switch {
			case !th.lastOK:
			case len(s.Request.Messages) == 0: // a request not kept tells no turn
				th.turns++
			default:
				th.answered(s.Request.Turns())
			}
			th.steps++
			g.steps++
			g.noteSpawns(th, &s)
		}
		g.threads = append(g.threads, th)
	}
	// A spawning call whose child is seeded has been claimed.
	for _, th := range g.threads {
		if th.parent == nil {
			continue
		}
		for k, sp := range g.spawns {
			if sp.thread == th.parent.ThreadID && sp.callID == th.parent.ToolCallID {
				g.spawns = append(g.spawns[:k], g.spawns[k+1:]...)
				break
			}
		}
	}
	g.dirty.Store(true)
	if err := g.out.sync(); err != nil {
		return fmt.Errorf("gateway: seed: %w", err)
	}
	return nil
}

// SetForkedFrom records meta.forked_from.
func (g *Gateway) SetForkedFrom(f *tape.ForkedFrom) error {
	return g.updateMeta("forked_from", nil, func(m *tape.Meta) { m.ForkedFrom = f })
}

// SetWorkspace records meta.workspace as given (a start snapshot and end manifest taken
// elsewhere, such as in a container), for a gateway made without Config.Workspace.
func (g *Gateway) SetWorkspace(w *tape.Workspace) error {
	var refuse error
	if g.cfg.Workspace != "" {
		refuse = errors.New("the gateway takes the workspace itself (Config.Workspace)")
	}
	return g.updateMeta("workspace", refuse, func(m *tape.Meta) { m.Workspace = w })
}

// updateMeta applies fn to the tape's meta and has the change written soon; it fails, naming
// field, when the recording is finished or, after that check, with refuse when not nil.
func (g *Gateway) updateMeta(field string, refuse error, fn func(*tape.Meta)) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.finished {
		return fmt.Errorf("gateway: set %s: the recording is finished", field)
	}
	if refuse != nil {
		return fmt.Errorf("gateway: set %s: %w", field, refuse)
	}
	if err := g.out.updateMeta(fn); err != nil {
		return fmt.Errorf("gateway: set %s: %w", field, err)
	}
	g.dirty.Store(true)
	g.kickSync()
	return nil
}

// Start returns when the recording started: the origin of its steps' timings.
func (g *Gateway) Start() time.Time { return g.start }

func shiftTiming(t tape.Timing, ms float64) tape.Timing {
	t.RequestAt += ms
	t.FirstByteAt += ms
	t.LastByteAt += ms
	if t.NextRequestAt != nil {
		n := *t.NextRequestAt + ms
		t.NextRequestAt = &n
	}
	return t
}
