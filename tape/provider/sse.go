package provider

import (
	"bytes"
	"strings"
)

// EventSplitter splits a server-sent event stream into events as its bytes arrive, so that
// a proxy can forward bytes as they come and record each complete event with its time.
// Every byte written comes out exactly once, in order: in an event from Write or in the
// rest from Flush, so the events joined give back the stream. Lines end in "\n" or "\r\n"
// (a lone "\r" does not end a line); an event ends with a blank line. The zero value is
// ready to use.
type EventSplitter struct {
	buf  []byte
	scan int // buf[:scan] has been searched for line ends
	line int // start of the line being read
}

// Write adds p to the stream and returns the events it completed, each verbatim including
// its terminating blank line. A blank line with no event before it comes out as an event of
// its own.
func (s *EventSplitter) Write(p []byte) (events []string) {
	s.buf = append(s.buf, p...)
	start := 0
	for {
		i := bytes.IndexByte(s.buf[s.scan:], '\n')
		if i < 0 {
			s.scan = len(s.buf)
			break
		}
		end := s.scan + i + 1
		line := s.buf[s.line : end-1]
		if len(line) == 0 || (len(line) == 1 && line[0] == '\r') {
			events = append(events, string(s.buf[start:end]))
			start = end
		}
		s.line, s.scan = end, end
	}
	if start > 0 {
		n := copy(s.buf, s.buf[start:])
		s.buf = s.buf[:n]
		s.scan -= start
		s.line -= start
	}
	return events
}

// Flush returns what remains at the end of the stream (an event without its blank line, or
// a part of one; "" when the stream ended cleanly) and resets the splitter.
func (s *EventSplitter) Flush() string {
	rest := string(s.buf)
	*s = EventSplitter{}
	return rest
}

// ParseEvent returns an event's name (its "event:" field, "" when absent) and its data (the
// "data:" lines joined with "\n"). Comment lines and other fields are ignored.
func ParseEvent(ev string) (name, data string) {
	var lines []string
	for len(ev) > 0 {
		line := ev
		if i := strings.IndexByte(ev, '\n'); i >= 0 {
			line, ev = ev[:i], ev[i+1:]
		} else {
			ev = ""
		}
		line = strings.TrimSuffix(line, "\r")
		if line == "" || line[0] == ':' {
			continue
		}
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "event":
			name = value
		case "data":
			lines = append(lines, value)
		}
	}
	if len(lines) == 1 {
		return name, lines[0]
	}
	return name, strings.Join(lines, "\n")
}
