package gateway

import (
	"github.com/tapebox/tapebox/tape"
)

// eventLog records a stream's events for the tape: as chunks in memory, then, once they
// pass spillAt bytes, in a spill file with their times kept apart, and none of them once
// the stream is over the recording limit (over), which the tape then records as a
// truncation marker.
type eventLog struct {
	limit int64 // negative: none
	total int64 // the stream's bytes so far
	// events counts the events seen, recorded or not.
	events int
	over   bool

	chunks []tape.Chunk // while in memory
	held   int          // bytes of chunks
	spill  *spill       // once spilled: the events' bytes, one after the other
	marks  []eventMark
	path   string // the call's, for the log
	logf   func(string, ...any)
}

// eventMark is a spilled event: when it arrived, and where it ends in the spill.
type eventMark struct {
	at  float64
	end int64
}

// read counts n more bytes of the stream.
func (l *eventLog) read(n int) {
	l.total += int64(n)
	if !l.over && l.limit >= 0 && l.total > l.limit {
		l.logf("%s: a stream over the recording limit of %d bytes, forwarded whole, recorded as a truncation marker", l.path, l.limit)
		l.over = true
		l.chunks, l.marks, l.held = nil, nil, 0
		l.spill.Reset()
	}
}

// add records an event that arrived at (ms since the request).
func (l *eventLog) add(at float64, ev string) {
	l.events++
	switch {
	case l.over:
	case l.marks == nil && l.held+len(ev) <= spillAt:
		l.chunks = append(l.chunks, tape.Chunk{AtMS: at, Data: ev})
		l.held += len(ev)
	default:
		if l.marks == nil {
			for _, c := range l.chunks {
				l.write(c.AtMS, c.Data)
			}
			l.chunks, l.held = nil, 0
		}
		l.write(at, ev)
	}
}

func (l *eventLog) write(at float64, ev string) {
	if _, err := l.spill.Write([]byte(ev)); err != nil {
		l.logf("record a stream: %v; recording it as a truncation marker", err)
		l.over = true
		l.chunks, l.marks = nil, nil
		l.spill.Reset()
		return
	}
	l.marks = append(l.marks, eventMark{at: at, end: l.spill.Len()})
}

// answer returns a copy of a holding the events recorded so far, or the truncation marker.
func (l *eventLog) answer(a *answer) *answer {
	c := a.clip()
	c.chunks, c.cut = nil, nil
	switch {
	case l.over:
		c.cut = &tape.Truncation{Bytes: l.total, Limit: l.limit}
	case l.marks == nil:
		c.chunks = l.chunks[:len(l.chunks):len(l.chunks)]
	default:
		data, err := l.spill.Bytes()
		if err != nil {
			l.logf("record a stream: %v; recording it as a truncation marker", err)
			c.cut = &tape.Truncation{Bytes: l.total, Limit: l.limit}
			return c
		}
		all := string(data)
		c.chunks = make([]tape.Chunk, len(l.marks))
		var from int64
		for i, m := range l.marks {
			c.chunks[i] = tape.Chunk{AtMS: m.at, Data: all[from:m.end]}
			from = m.end
		}
	}
	return c
}
