package fakeprovider

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/tapebox/tapebox/tape/provider"
)

// created is the fixed creation time of every answer, so answers are deterministic.
const created = 1767225600 // 2026-01-01T00:00:00Z

// errCut reports that a Fault cut the answer short.
var errCut = errors.New("fakeprovider: stream cut by fault")

// errGone reports that the client or the server went away during a wait.
var errGone = errors.New("fakeprovider: request canceled")

// writer writes one answer, applying the turn's delays and cut.
type writer struct {
	w      http.ResponseWriter
	ctx    context.Context // the request's
	done   <-chan struct{} // closed when the server closes
	fault  *Fault
	events int
}

func (o *writer) firstByte() time.Duration {
	if o.fault == nil {
		return 0
	}
	return o.fault.FirstByte
}

// wait sleeps d unless the request or the server ends first; it says whether to go on.
func (o *writer) wait(d time.Duration) bool {
	if d <= 0 {
		return o.ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-o.ctx.Done():
	case <-o.done:
	}
	return false
}

// startStream sends the headers of an event stream.
func (o *writer) startStream() {
	h := o.w.Header()
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	h.Set("Cache-Control", "no-cache")
	o.w.WriteHeader(http.StatusOK)
}

// stream sends an answer's events, each flushed, with the turn's delays and cut.
func (o *writer) stream(events []provider.Event) error {
	o.startStream()
	for _, e := range events {
		if err := o.event(e); err != nil {
			return err
		}
	}
	return nil
}

// event sends one event as it goes on the wire (provider.Event.SSE), flushed, after the
// turn's delay between events; a Fault's Cut stops the stream before it.
func (o *writer) event(e provider.Event) error {
	if o.events > 0 && o.fault != nil && !o.wait(o.fault.BetweenChunks) {
		return errGone
	}
	if o.fault != nil && o.fault.Cut > 0 && o.events >= o.fault.Cut {
		return errCut
	}
	if _, err := io.WriteString(o.w, e.SSE()); err != nil {
		return err
	}
	if f, ok := o.w.(http.Flusher); ok {
		f.Flush()
	}
	o.events++
	return nil
}

// body sends a whole JSON answer; a Fault's Cut sends half of it and drops the connection.
func (o *writer) body(b []byte) error {
	h := o.w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(b)))
	o.w.WriteHeader(http.StatusOK)
	if o.fault != nil && o.fault.Cut > 0 {
		_, _ = o.w.Write(b[:len(b)/2])
		if f, ok := o.w.(http.Flusher); ok {
			f.Flush()
		}
		return errCut
	}
	_, err := o.w.Write(b)
	return err
}

// newAnswer makes turn concrete for one request: model, ids and token counts.
func newAnswer(req *Request, turn Turn, thread string, step int) provider.Answer {
	var m struct {
		Model string `json:"model"`
	}
	_ = json.Unmarshal(req.Body, &m)
	if model, _, ok := provider.GeminiPath(req.Path); ok && req.Endpoint == EndpointGemini {
		m.Model = model // the Gemini API names the model in the path
	}
	if m.Model == "" {
		m.Model = "fake-model"
	}
	tag := idPart(thread) + "_" + stepPart(step)
	a := provider.Answer{Model: m.Model, Created: created}
	a.Usage.InputTokens = int64(tokens(len(req.Body)))
	out := len(turn.Text)
	msgID := ""
	switch req.Endpoint {
	case EndpointMessages:
		a.ID = "msg_fake_" + tag
	case EndpointChat:
		a.ID = "chatcmpl-fake_" + tag
	default:
		a.ID = "resp_fake_" + tag
		msgID = "msg_fake_" + tag
	}
	if req.Endpoint == EndpointResponses {
		// Items are further Responses output items; the other formats have no place for them.
		for _, it := range turn.Items {
			a.Items = append(a.Items, provider.Item{Raw: it})
		}
	}
	if turn.Text != "" {
		a.Items = append(a.Items, provider.Item{Text: turn.Text, ID: msgID})
	}
	for i, c := range turn.Calls {
		n := fmt.Sprintf("%s_%d", tag, i)
		// The Gemini API sends calls without ids; the harness makes its own up.
		if c.ID == "" && req.Endpoint != EndpointGemini {
			if req.Endpoint == EndpointMessages {
				c.ID = "toolu_fake_" + n
			} else {
				c.ID = "call_fake_" + n
			}
		}
		if c.Kind == "" {
			c.Kind = "function"
		}
		if len(c.Input) == 0 {
			c.Input = json.RawMessage("{}")
		}
		if ns := turn.Namespaces[c.Name]; ns != "" {
			c.Namespace = ns
		}
		prefix := "fc_fake_"
		if c.Kind == "custom" {
			prefix = "ctc_fake_"
		}
		a.Items = append(a.Items, provider.Item{Call: &c, ID: prefix + n})
		out += len(c.Input)
	}
	a.Usage.OutputTokens = int64(tokens(out))
	return a
}

// idPart keeps the characters of a thread name that every provider allows in ids.
func idPart(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r < utf8.RuneSelf && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	if b.Len() == 0 {
		return "t"
	}
	return b.String()
}

func stepPart(step int) string {
	if step < 0 {
		return "x"
	}
	return strconv.Itoa(step)
}
