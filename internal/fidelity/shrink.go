package fidelity

import (
	"context"
	"regexp"
	"strings"
)

// Class is a known kind of divergence, with the reason the executor cannot or does not
// reproduce it.
type Class struct {
	// Name is short and stable ("bash-timing"); regression cases name it in Known.
	Name string
	// Reason says why the replay differs, for docs/fidelity.md.
	Reason string
	// Version, when set, is a prefix the harness version must have ("2.0.").
	Version string
	// Tool and Field, when set, must equal the divergence's; Text, when set, must match its
	// recorded or its replayed side.
	Tool, Field string
	Text        *regexp.Regexp
	// Match, when set, must hold too: for what the fields above cannot say (the call's
	// input class, the same bytes in another order).
	Match func(d Divergence) bool
	// Follow, when set, says whether an unclassified divergence of a later call follows
	// from one of this class in the same sequence (a write_stdin to a session that the
	// class's call left running on one side only): it then takes the class (see follow).
	Follow func(later Divergence) bool
}

// matches says whether d belongs to c.
func (c Class) matches(version string, d Divergence) bool {
	if !strings.HasPrefix(version, c.Version) {
		return false
	}
	if c.Tool != "" && c.Tool != d.Tool {
		return false
	}
	if c.Field != "" && c.Field != d.Field {
		return false
	}
	if c.Text != nil && !c.Text.MatchString(d.Recorded) && !c.Text.MatchString(d.Replayed) {
		return false
	}
	return c.Match == nil || c.Match(d)
}

// Classify returns the name of the first class a divergence d seen on harness version
// belongs to, or "".
func Classify(classes []Class, version string, d Divergence) string {
	for _, c := range classes {
		if c.matches(version, d) {
			return c.Name
		}
	}
	return ""
}

// follow gives each unclassified divergence of divs the class of a divergence of an
// earlier call that it follows from (Class.Follow).
func follow(classes []Class, divs []Divergence) {
	for i := range divs {
		d := &divs[i]
		if d.Class != "" || d.Call < 0 {
			continue
		}
		for _, e := range divs {
			if e.Class == "" || e.Call < 0 || e.Call >= d.Call {
				continue
			}
			for _, c := range classes {
				if c.Name == e.Class && c.Follow != nil && c.Follow(*d) {
					d.Class = c.Name
				}
			}
		}
	}
}

// Shrink reduces seq while diverges says it still diverges: it drops calls (later ones
// first, as a call can only depend on earlier ones; a call whose placeholder refers to a
// dropped call goes with it, and the others' placeholders are renumbered), then files the
// calls do not need,
// then replaces calls with the simpler variants g.Simplify offers. Each candidate costs one
// diverges; Shrink stops early when ctx ends. The result has Seed 0 and Origin set to the
// seed it came from.
func Shrink(ctx context.Context, g Grammar, seq *Sequence, diverges func(*Sequence) bool) *Sequence {
	best := seq.clone()
	if best.Origin == 0 {
		best.Origin = best.Seed
	}
	best.Seed = 0
	try := func(c *Sequence) bool {
		if ctx.Err() != nil {
			return false
		}
		if diverges(c) {
			best = c
			return true
		}
		return false
	}
	for changed := true; changed && ctx.Err() == nil; {
		changed = false
		for i := len(best.Calls) - 1; i >= 0; i-- {
			if len(best.Calls) == 1 {
				break
			}
			if i >= len(best.Calls) {
				continue // an earlier drop took calls that referred to it
			}
			if try(dropCall(best, i)) {
				changed = true
			}
		}
		for i := len(best.Files) - 1; i >= 0; i-- {
			c := best.clone()
			c.Files = append(c.Files[:i:i], best.Files[i+1:]...)
			if try(c) {
				changed = true
			}
		}
		if g.Simplify == nil {
			continue
		}
		for i := range best.Calls {
			for _, v := range g.Simplify(best.Calls[i]) {
				c := best.clone()
				c.Calls[i] = v
				if try(c) {
					changed = true
					break
				}
			}
		}
	}
	return best
}

// dropCall returns a copy of s without call i, nor the calls whose placeholders refer to
// it (directly or through another dropped call); the placeholders of the calls left are
// renumbered to the new positions.
func dropCall(s *Sequence, i int) *Sequence {
	c := s.clone()
	gone := map[int]bool{i: true}
	pos := make([]int, len(s.Calls)) // old index -> new index, -1 for gone
	c.Calls = c.Calls[:0]
	for j, call := range s.Calls {
		for _, r := range Refs(call.Input) {
			if gone[r.Step] {
				gone[j] = true
			}
		}
		if gone[j] {
			pos[j] = -1
			continue
		}
		pos[j] = len(c.Calls)
		if HasRefs(call.Input) {
			call.Input, _ = renumber(call.Input, func(n int) int {
				if n < 0 || n >= len(pos) {
					return -1
				}
				return pos[n]
			})
		}
		c.Calls = append(c.Calls, call)
	}
	return c
}
