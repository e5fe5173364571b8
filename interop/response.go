package interop

import (
	"cmp"
	"encoding/json"
	"strings"

	"github.com/tapebox/tapebox/tape"
)

// responseName is how a raw response names itself: its id (msg_..., chatcmpl-..., resp_...)
// and the model that answered.
type responseName struct {
	ID    string `json:"id"`
	Model string `json:"model"`
}

// responseHead is where a raw response names itself: at the top of a JSON body, or in the
// message (Anthropic's message_start) or response (Responses' response.created) of one of
// its first stream events.
type responseHead struct {
	responseName
	Message  responseName `json:"message"`
	Response responseName `json:"response"`
}

// responseID is the provider's id of a step's response, from its raw body or its first
// stream events; "" when the tape has neither.
func responseID(s *tape.Step) string {
	return fromResponse(s, func(n responseName) string { return n.ID })
}

// responseModel is the model a raw response names, or "".
func responseModel(s *tape.Step) string {
	return fromResponse(s, func(n responseName) string { return n.Model })
}

// fromResponse is what field picks of a step's raw response: of the top of its JSON body,
// else of the message or response of the first of its first four stream chunks that names
// one; "" when none does.
func fromResponse(s *tape.Step, field func(responseName) string) string {
	var h responseHead
	if raw := s.Response.Raw; len(raw) > 0 && raw[0] == '{' {
		if json.Unmarshal(raw, &h) == nil {
			if v := field(h.responseName); v != "" {
				return v
			}
		}
	}
	for i, c := range s.Response.Chunks {
		if i > 3 {
			break
		}
		for _, line := range strings.Split(c.Data, "\n") {
			if data, ok := strings.CutPrefix(line, "data:"); ok && json.Unmarshal([]byte(strings.TrimSpace(data)), &h) == nil {
				if v := cmp.Or(field(h.Message), field(h.Response)); v != "" {
					return v
				}
			}
		}
	}
	return ""
}

// answerText is the text of a response's text blocks and that of its thinking blocks, each
// joined without a separator.
func answerText(content []tape.Block) (text, reasoning string) {
	for _, b := range content {
		switch b.Type {
		case tape.BlockText:
			text += b.Text
		case tape.BlockThinking:
			reasoning += b.Text
		}
	}
	return text, reasoning
}

// resultsAt is when a step's tool results went back to the model, on the tape's clock: with
// the thread's next request, else (the thread's last step) at the response's last byte.
func resultsAt(t tape.Timing) float64 {
	if t.NextRequestAt != nil {
		return *t.NextRequestAt
	}
	return t.LastByteAt
}
