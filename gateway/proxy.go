package gateway

import (
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/tapebox/tapebox/tape"
	"github.com/tapebox/tapebox/tape/provider"
)

// proxy forwards r upstream and copies the answer back. When rec is set, the exchange is
// recorded as a step: a stream is forwarded event by event as it arrives, a body read by
// read, and either is recorded before the client gets its last byte. Every path with a
// rec ends in g.commit. When the upstream breaks off an answer the client is still reading,
// the client's connection is aborted too, as a broken upstream connection would look.
func (g *Gateway) proxy(w http.ResponseWriter, r *http.Request, p tape.Provider, fwd string, body *requestBody, rec *recording) {
	out, err := g.upstreamRequest(r, p, fwd, body, rec != nil)
	if err != nil {
		g.fail(w, rec, p, fmt.Sprintf("build upstream request: %v", redactError(err)))
		return
	}
	if r.ContentLength != 0 {
		// The transport reads the client's body while the answer is written back; without
		// full duplex, an HTTP/1 server drains and closes the body when the answer's header
		// goes out, and the transport, still reading it, fails and drops the upstream
		// connection mid-answer.
		_ = http.NewResponseController(w).EnableFullDuplex()
	}
	resp, err := g.transport.RoundTrip(out)
	if err != nil {
		if r.Context().Err() != nil {
			// The client left before any answer: nothing to forward, nothing failed upstream.
			g.logf("%s %s: the client went away before the upstream answered", r.Method, r.URL.Path)
			if rec != nil {
				now := g.now()
				g.commit(rec, &answer{firstByte: now, lastByte: now})
			}
			return
		}
		g.fail(w, rec, p, fmt.Sprintf("upstream %s: %v", out.URL.Host, redactError(err)))
		return
	}
	defer resp.Body.Close()
	copyHeaders(w.Header(), resp.Header)
	w.WriteHeader(resp.StatusCode)
	stream := isEventStream(resp.Header)
	var broke bool // the upstream broke off while the client was still reading
	switch {
	case rec == nil:
		broke = g.pipe(w, r, resp, stream)
	case stream:
		broke = g.relayStream(w, r, resp, rec)
	default:
		broke = g.relayBody(w, r, resp, rec)
	}
	if rec != nil {
		g.kickSync()
	}
	if broke {
		panic(http.ErrAbortHandler)
	}
}

// upstreamRequest builds the request to send upstream, to path fwd (route's) under the
// upstream's base. Every body streams through as it arrives; a recorded call's through
// body, which keeps it for the recording.
func (g *Gateway) upstreamRequest(r *http.Request, p tape.Provider, fwd string, body *requestBody, recorded bool) (*http.Request, error) {
	base := g.upstreams[p]
	target := strings.TrimSuffix(base.Scheme+"://"+base.Host+base.EscapedPath(), "/") + fwd
	if r.URL.RawQuery != "" {
		target += "?" + r.URL.RawQuery
	}
	var rd io.Reader = r.Body
	if body != nil {
		rd = body
	}
	if r.ContentLength == 0 {
		rd = http.NoBody
	}
	out, err := http.NewRequestWithContext(r.Context(), r.Method, target, rd)
	if err != nil {
		return nil, err
	}
	out.ContentLength = r.ContentLength
	if withheld := g.copyRequestHeaders(out.Header, r.Header, base.Host, recorded); withheld != "" {
		g.logf("%s %s: not a model call the gateway records: sent without the injected %s", r.Method, r.URL.Path, withheld)
	}
	return out, nil
}

// copyRequestHeaders copies a request's end-to-end headers to dst and, on a recorded model
// call, applies the injections for host. Injections apply to nothing else, so that a key the
// gateway holds can be spent only on the calls it records, not on the provider's other APIs
// (admin keys, files, organizations). It returns the names of the injected headers it
// withheld from a call that is not recorded ("" when none).
func (g *Gateway) copyRequestHeaders(dst, src http.Header, host string, recorded bool) (withheld string) {
	var inject []Injection
	for _, inj := range g.cfg.Inject {
		if !inj.matches(host) {
			continue
		}
		if !recorded {
			withheld += inj.Name + " "
			continue
		}
		inject = append(inject, inj)
	}
	connection := src.Values("Connection")
	for k, vs := range src {
		switch {
		case isHop(k, connection), strings.EqualFold(k, "Host"):
			continue
		case recorded && (k == "Accept-Encoding" || k == "Expect"):
			// A recorded answer must be readable: ask for it uncompressed (the client asked
			// for an encoding it accepts, and identity is always acceptable). The body is
			// already read, so there is nothing to wait for with Expect.
			continue
		case len(inject) > 0 && IsCredential(k):
			continue // the gateway holds this host's credentials
		}
		dst[k] = vs
	}
	for _, inj := range inject {
		dst.Set(inj.Name, inj.Value)
	}
	return strings.TrimSpace(withheld)
}

// redactError redacts the credentials in the query of the URL an error names (a
// *url.Error's), since its message is recorded: in the step's answer and in meta.ended.
func redactError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		ue.URL = tape.RedactURL(ue.URL)
	}
	return err
}

// copyHeaders copies a response's end-to-end headers.
func copyHeaders(dst, src http.Header) {
	connection := src.Values("Connection")
	for k, vs := range src {
		if isHop(k, connection) {
			continue
		}
		dst[k] = vs
	}
}

// isHop says whether a header is connection-level: a hop-by-hop header, or one the
// Connection header names.
func isHop(name string, connection []string) bool {
	for _, h := range hopHeaders {
		if strings.EqualFold(h, name) {
			return true
		}
	}
	for _, v := range connection {
		for _, f := range strings.Split(v, ",") {
			if strings.EqualFold(strings.TrimSpace(f), name) {
				return true
			}
		}
	}
	return false
}

func isEventStream(h http.Header) bool {
	ct, _, err := mime.ParseMediaType(h.Get("Content-Type"))
	return err == nil && ct == "text/event-stream"
}

const copyBuffer = 32 << 10

// buffers recycles copy buffers across calls.
var buffers = sync.Pool{New: func() any { return new([copyBuffer]byte) }}

func getBuffer() (*[copyBuffer]byte, []byte) {
	p := buffers.Get().(*[copyBuffer]byte)
	return p, p[:]
}

// pipe copies an answer that is not recorded, flushing every read of a stream. It reports
// whether the upstream broke off while the client was still there.
func (g *Gateway) pipe(w http.ResponseWriter, r *http.Request, resp *http.Response, stream bool) (broke bool) {
	rc := http.NewResponseController(w)
	if stream {
		if err := rc.Flush(); err != nil {
			return false
		}
	}
	p, buf := getBuffer()
	defer buffers.Put(p)
	for {
		n, err := resp.Body.Read(buf)
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				return false
			}
			if stream {
				if werr := rc.Flush(); werr != nil {
					return false
				}
			}
		}
		if err != nil {
			return err != io.EOF && r.Context().Err() == nil
		}
	}
}

// relayStream forwards an event stream as it arrives and records it event by event. The
// step is recorded (and published) when the stream's final event arrives, before that
// event is forwarded; whatever follows it amends the step. A stream over the recording
// limit is recorded as a truncation marker (eventLog).
func (g *Gateway) relayStream(w http.ResponseWriter, r *http.Request, resp *http.Response, rec *recording) (broke bool) {
	rc := http.NewResponseController(w)
	writeErr := rc.Flush() // the headers, as soon as the upstream sent them
	a := &answer{status: resp.StatusCode, header: resp.Header, stream: true, problems: statusProblems(resp.StatusCode)}
	evs := &eventLog{limit: g.maxRecord, spill: g.newSpill(), path: r.URL.Path, logf: g.logf}
	defer evs.spill.Reset()
	var (
		split     provider.EventSplitter
		pending   int  // bytes in split not yet out in an event
		committed = -1 // how many events the recorded step holds, once recorded
		readErr   error
		// unsplit is set when an event grows past spillAt bytes in a stream over the limit:
		// the splitter would hold it whole, so the stream is no longer split; it is
		// recorded at its end, its last byte held back until then (in held).
		unsplit bool
		held    []byte
	)
	forward := func(b []byte) {
		if writeErr == nil && len(b) > 0 {
			if _, writeErr = w.Write(b); writeErr == nil {
				writeErr = rc.Flush()
			}
		}
	}
	p, buf := getBuffer()
	defer buffers.Put(p)
	for {
		n, err := resp.Body.Read(buf)
		if n > 0 {
			now := g.now()
			if a.firstByte.IsZero() {
				a.firstByte = now
			}
			a.lastByte = now
			evs.read(n)
			switch {
			case unsplit && committed < 0:
				forward(held)
				forward(buf[:n-1])
				held = append(held[:0], buf[n-1])
			case unsplit:
				forward(buf[:n])
			default:
				at := tape.RoundMS(now.Sub(rec.at))
				before := pending
				pending += n
				hold, consumed := -1, 0
				for _, ev := range split.Write(buf[:n]) {
					evs.add(at, ev)
					consumed += len(ev)
					pending -= len(ev)
					if !a.complete && isTerminal(rec.p, ev) {
						a.complete = true
						hold = consumed - before - 1 // the final event's last byte, in buf
					}
				}
				switch {
				case hold >= 0 && committed < 0:
					// Everything but the final event's last byte goes out now; the rest once
					// the step is recorded, so that a client never holds an answer the tape
					// lacks.
					forward(buf[:hold])
					g.commit(rec, evs.answer(a))
					committed = evs.events
					forward(buf[hold:n])
				case evs.over && pending > spillAt:
					g.logf("%s: an event of over %d bytes in a stream over the recording limit: the stream is recorded when it ends", r.URL.Path, spillAt)
					unsplit = true
					split = provider.EventSplitter{} // its partial event is not recorded
					if committed < 0 {
						forward(buf[:n-1])
						held = append(held[:0], buf[n-1])
					} else {
						forward(buf[:n])
					}
				default:
					forward(buf[:n])
				}
			}
		}
		if err != nil {
			if err != io.EOF {
				readErr = err
			}
			break
		}
	}
	if rest := split.Flush(); rest != "" && !unsplit {
		evs.add(tape.RoundMS(a.lastByte.Sub(rec.at)), rest)
	}
	if unsplit && committed < 0 {
		a.complete = readErr == nil // its events cannot be told apart any more: a clean end will do
	}
	clientGone := r.Context().Err() != nil || writeErr != nil
	if rec.p == tape.ProviderGemini && committed < 0 && !clientGone {
		// A Gemini stream has no final event: it ends when the body does.
		a.complete = readErr == nil
	}
	var broken []string
	if readErr != nil && !clientGone {
		broken = append(broken, fmt.Sprintf("upstream stream broke: %v", readErr))
	}
	if clientGone && !a.complete {
		g.logf("%s: the client went away mid-stream; recording the %d events that arrived", r.URL.Path, evs.events)
	}
	if a.firstByte.IsZero() {
		a.firstByte = g.now()
		a.lastByte = a.firstByte
	}
	switch {
	case committed < 0:
		a.problems = append(a.problems, broken...)
		g.commit(rec, evs.answer(a))
		forward(held)
	case evs.events > committed || len(broken) > 0 || evs.over:
		g.amend(rec, evs.answer(a), broken)
	}
	return readErr != nil && !clientGone
}

// relayBody forwards an answer that is not a stream as it arrives, all but its last byte,
// records it, then forwards that byte, so that a client never holds an answer the tape
// lacks. A body over the recording limit is forwarded whole all the same and recorded as a
// truncation marker; on its way to the limit, what is kept of it past spillAt waits in a
// spill file rather than in memory.
func (g *Gateway) relayBody(w http.ResponseWriter, r *http.Request, resp *http.Response, rec *recording) (broke bool) {
	a := &answer{status: resp.StatusCode, header: resp.Header}
	limit := g.maxRecord
	kept := g.newSpill()
	defer kept.Reset()
	over := limit >= 0 && resp.ContentLength > limit
	var (
		total             int64
		held              [1]byte
		holding           bool
		readErr, writeErr error
	)
	p, buf := getBuffer()
	defer buffers.Put(p)
	for {
		n, err := resp.Body.Read(buf)
		if n > 0 {
			if a.firstByte.IsZero() {
				a.firstByte = g.now()
			}
			total += int64(n)
			if !over {
				if limit >= 0 && total > limit {
					over = true
					kept.Reset()
				} else if _, err := kept.Write(buf[:n]); err != nil {
					g.logf("%s: %v; recording the answer as a truncation marker", r.URL.Path, err)
					over = true
					kept.Reset()
				}
			}
			if writeErr == nil && holding {
				_, writeErr = w.Write(held[:])
			}
			if writeErr == nil && n > 1 {
				_, writeErr = w.Write(buf[:n-1])
			}
			held[0], holding = buf[n-1], true
		}
		if err != nil {
			if err != io.EOF {
				readErr = err
			}
			break
		}
	}
	a.lastByte = g.now()
	if a.firstByte.IsZero() {
		a.firstByte = a.lastByte
	}
	a.complete = readErr == nil
	if !over {
		raw, err := kept.Bytes()
		if err != nil {
			g.logf("%s: %v; recording the answer as a truncation marker", r.URL.Path, err)
		}
		a.raw, over = raw, err != nil
	}
	if enc := resp.Header.Get("Content-Encoding"); enc != "" && a.complete && !over {
		switch plain, err := decodeBody(a.raw, enc, limit); {
		case errors.Is(err, errOverLimit):
			over = true
		case err == nil:
			a.raw = plain
		}
	}
	if over {
		a.raw, a.cut = nil, &tape.Truncation{Bytes: total, Limit: limit}
		g.logf("%s: an answer of %d bytes, over the recording limit of %d, forwarded whole and recorded as a truncation marker", r.URL.Path, total, limit)
	}
	clientGone := r.Context().Err() != nil || writeErr != nil
	if readErr != nil && !clientGone {
		a.problems = append(a.problems, fmt.Sprintf("upstream body broke: %v", readErr))
	}
	a.problems = append(a.problems, statusProblems(resp.StatusCode)...)
	if a.complete && holding && writeErr == nil {
		// All but the last byte is out; that byte once the step is recorded.
		http.NewResponseController(w).Flush()
	}
	g.commit(rec, a)
	if holding && writeErr == nil {
		if _, err := w.Write(held[:]); err != nil {
			return false
		}
	}
	if a.complete {
		// The answer is out: the client has it now, before the handler's work after it.
		http.NewResponseController(w).Flush()
	}
	if readErr != nil && !clientGone {
		// Let the client have what arrived before its connection breaks.
		http.NewResponseController(w).Flush()
		return true
	}
	return false
}

// statusProblems says when a status is an upstream failure: a server error or a rate limit.
// Other client errors are the agent's, not the provider's.
func statusProblems(status int) []string {
	if status >= 500 || status == http.StatusTooManyRequests {
		return []string{fmt.Sprintf("upstream answered %d %s", status, http.StatusText(status))}
	}
	return nil
}

// fail answers a request the gateway could not forward, in the wire format's error shape,
// and records it first.
func (g *Gateway) fail(w http.ResponseWriter, rec *recording, p tape.Provider, msg string) {
	g.logf("%s", msg)
	e := apiError{status: http.StatusBadGateway, typ: "api_error", msg: "tapebox gateway: " + msg}
	if rec != nil {
		now := g.now()
		h := http.Header{"Content-Type": {"application/json"}}
		g.commit(rec, &answer{status: e.status, header: h, raw: e.body(p), firstByte: now, lastByte: now, problems: []string{msg}})
		g.kickSync()
	}
	writeError(w, p, e)
}

// answer is what came back for a recorded call.
type answer struct {
	status int
	header http.Header
	stream bool
	raw    []byte       // a body (not a stream)
	chunks []tape.Chunk // a stream's events
	// cut, when set, stands for a body or stream over the recording limit: neither raw nor
	// chunks are recorded.
	cut *tape.Truncation
	// firstByte and lastByte are when the first and the last byte arrived.
	firstByte, lastByte time.Time
	// complete says the whole answer arrived: a stream's final event, a body to its end.
	complete bool
	// problems say what failed upstream, if anything.
	problems []string
}

// clip returns a copy of a that later appends to a.chunks cannot reach.
func (a *answer) clip() *answer {
	c := *a
	c.chunks = a.chunks[:len(a.chunks):len(a.chunks)]
	c.problems = a.problems[:len(a.problems):len(a.problems)]
	return &c
}
