package provider_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/tapebox/tapebox/tape/provider"
)

func TestEventSplitter(t *testing.T) {
	for _, tc := range []struct {
		name   string
		writes []string
		events []string
		rest   string
	}{
		{
			name:   "one write, two events",
			writes: []string{"event: a\ndata: 1\n\nevent: b\ndata: 2\n\n"},
			events: []string{"event: a\ndata: 1\n\n", "event: b\ndata: 2\n\n"},
		},
		{
			name:   "crlf",
			writes: []string{"event: a\r\ndata: 1\r\n\r\ndata: 2\r\n\r\n"},
			events: []string{"event: a\r\ndata: 1\r\n\r\n", "data: 2\r\n\r\n"},
		},
		{
			name:   "mixed line ends",
			writes: []string{"data: 1\r\n\ndata: 2\n\r\n"},
			events: []string{"data: 1\r\n\n", "data: 2\n\r\n"},
		},
		{
			name:   "blank line split across writes",
			writes: []string{"data: 1\n", "\n", "data: 2\r", "\n\r", "\n"},
			events: []string{"data: 1\n\n", "data: 2\r\n\r\n"},
		},
		{
			name:   "event spread over many writes",
			writes: []string{"da", "ta: {\"a\":", "1}", "\n", "", "\ndata"},
			events: []string{"data: {\"a\":1}\n\n"},
			rest:   "data",
		},
		{
			name:   "stray blank lines come out on their own",
			writes: []string{"\n\ndata: 1\n\n\n"},
			events: []string{"\n", "\n", "data: 1\n\n", "\n"},
		},
		{
			name:   "no blank line yet",
			writes: []string{"data: [DONE]\n"},
			rest:   "data: [DONE]\n",
		},
		{
			name:   "nothing",
			writes: []string{""},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var sp provider.EventSplitter
			var got []string
			for _, w := range tc.writes {
				got = append(got, sp.Write([]byte(w))...)
			}
			assert.Equal(t, tc.events, got)
			assert.Equal(t, tc.rest, sp.Flush())
			assert.Empty(t, sp.Flush(), "Flush resets")
			assert.Equal(t, strings.Join(tc.writes, ""), strings.Join(got, "")+tc.rest)
		})
	}
}

func TestParseEvent(t *testing.T) {
	for _, tc := range []struct{ ev, name, data string }{
		{"event: message_start\ndata: {\"a\":1}\n\n", "message_start", `{"a":1}`},
		{"data: [DONE]\n\n", "", "[DONE]"},
		{"event:ping\r\ndata:{}\r\n\r\n", "ping", "{}"},
		{": comment\nevent: x\nid: 7\nretry: 100\ndata: a\ndata:  b\ndata\n\n", "x", "a\n b\n"},
		{"data: cut", "", "cut"},
		{"event: a\nevent: b\n\n", "b", ""},
		{"\n", "", ""},
		{"", "", ""},
	} {
		name, data := provider.ParseEvent(tc.ev)
		assert.Equal(t, tc.name, name, "%q", tc.ev)
		assert.Equal(t, tc.data, data, "%q", tc.ev)
	}
}
