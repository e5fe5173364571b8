package fakeprovider

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/tapebox/tapebox/tape"
	"github.com/tapebox/tapebox/tape/provider"
)

// Server is a scripted model provider. It is an http.Handler; Start serves it on a
// loopback port of its own.
type Server struct {
	script Script

	ctx    context.Context // canceled by Close: ends waits in handlers
	cancel context.CancelFunc

	mu       sync.Mutex
	closed   bool // set by Close: later requests are refused, not counted in handlers
	requests []Request
	attempts map[stepKey]int
	problems []string
	http     *http.Server
	listener net.Listener
	handlers sync.WaitGroup
}

type stepKey struct {
	thread string
	step   int
}

// New returns a server that answers with script. It serves nothing until Start (or until
// it is used as a handler, e.g. with httptest.NewServer).
func New(script Script) *Server {
	ctx, cancel := context.WithCancel(context.Background())
	return &Server{script: script, ctx: ctx, cancel: cancel, attempts: map[stepKey]int{}}
}

// Start serves on a free port of 127.0.0.1.
func (s *Server) Start() error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("fakeprovider: listen: %w", err)
	}
	srv := &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second}
	s.mu.Lock()
	s.http, s.listener = srv, ln
	s.mu.Unlock()
	go func() { _ = srv.Serve(ln) }()
	return nil
}

// URL is the server's base URL, http://127.0.0.1:PORT with no trailing slash ("" before
// Start). Clients append their own paths (/v1/messages ...), with any prefix.
func (s *Server) URL() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.listener == nil {
		return ""
	}
	return "http://" + s.listener.Addr().String()
}

// Close stops the server: waits in handlers end, connections are closed, and Close
// returns when every handler has returned. A request that reaches the handler after Close
// began is answered 503 and not recorded.
func (s *Server) Close() error {
	s.mu.Lock()
	s.closed = true
	srv := s.http
	s.mu.Unlock()
	s.cancel()
	var err error
	if srv != nil {
		err = srv.Close()
	}
	s.handlers.Wait()
	return err
}

// Requests returns a copy of every request received so far, in arrival order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Request, len(s.requests))
	copy(out, s.requests)
	return out
}

// ThreadRequests returns the model calls answered from the named thread, in arrival
// order.
func (s *Server) ThreadRequests(thread string) []Request {
	var out []Request
	for _, r := range s.Requests() {
		if r.Thread == thread {
			out = append(out, r)
		}
	}
	return out
}

// Err returns an error listing every request the script could not answer (no thread
// matched, a step past the end of a thread, an unknown path), or nil.
func (s *Server) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.problems) == 0 {
		return nil
	}
	return fmt.Errorf("fakeprovider: %d unscripted request(s):\n\t%s", len(s.problems), strings.Join(s.problems, "\n\t"))
}

func (s *Server) problem(format string, args ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.problems = append(s.problems, fmt.Sprintf(format, args...))
}

// endpoint classifies a request by method and path suffix.
func endpoint(r *http.Request) Endpoint {
	p := strings.TrimSuffix(r.URL.Path, "/")
	if _, _, ok := provider.GeminiPath(p); ok && r.Method == http.MethodPost {
		return EndpointGemini
	}
	switch {
	case r.Method == http.MethodPost && strings.HasSuffix(p, "/messages/count_tokens"):
		return EndpointCountTokens
	case r.Method == http.MethodPost && strings.HasSuffix(p, "/messages"):
		return EndpointMessages
	case r.Method == http.MethodPost && strings.HasSuffix(p, "/chat/completions"):
		return EndpointChat
	case r.Method == http.MethodPost && strings.HasSuffix(p, "/responses"):
		return EndpointResponses
	case r.Method == http.MethodGet && strings.HasSuffix(p, "/responses"):
		return EndpointWebSocket
	case r.Method == http.MethodGet && (strings.HasSuffix(p, "/models") || strings.Contains(p, "/models/")):
		return EndpointModels
	}
	return EndpointUnknown
}

// ServeHTTP answers one request.
func (s *Server) ServeHTTP(w http.ResponseWriter, hr *http.Request) {
	if !s.enter() {
		writeError(w, endpoint(hr), http.StatusServiceUnavailable, "api_error", "fakeprovider: the server is closed")
		return
	}
	defer s.handlers.Done()

	req, err := s.read(hr)
	if err != nil {
		s.record(req)
		s.problem("%s %s: %v", hr.Method, hr.URL.Path, err)
		writeError(w, req.Endpoint, http.StatusBadRequest, "invalid_request_error", err.Error())
		return
	}

	switch req.Endpoint {
	case EndpointUnknown:
		s.record(req)
		s.problem("%s %s: unknown path", hr.Method, hr.URL.Path)
		writeError(w, req.Endpoint, http.StatusNotFound, "not_found_error", "fakeprovider: no such endpoint: "+hr.Method+" "+hr.URL.Path)
		return
	case EndpointWebSocket:
		s.record(req)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUpgradeRequired)
		_, _ = io.WriteString(w, `{"error":{"message":"fakeprovider: WebSocket is not supported, use HTTP streaming","type":"invalid_request_error"}}`)
		return
	case EndpointModels:
		s.record(req)
		s.serveModels(w, hr)
		return
	case EndpointCountTokens:
		s.record(req)
		writeJSON(w, http.StatusOK, map[string]any{"input_tokens": tokens(len(req.Body))})
		return
	}

	var stream struct {
		Stream bool `json:"stream"`
	}
	if err := json.Unmarshal(req.Body, &stream); err != nil {
		s.record(req)
		s.problem("%s %s: body is not JSON: %v", hr.Method, hr.URL.Path, err)
		writeError(w, req.Endpoint, http.StatusBadRequest, "invalid_request_error", "fakeprovider: body is not JSON: "+err.Error())
		return
	}
	req.Stream = stream.Stream
	if req.Endpoint == EndpointGemini {
		_, req.Stream, _ = provider.GeminiPath(hr.URL.Path)
	}

	name := s.match(&req)
	thread := s.script.thread(name)
	req.Step = req.AssistantTurns()
	if thread == nil {
		req.Step = -1
		s.record(req)
		s.problem("%s %s: no thread matches (opening %q)", hr.Method, hr.URL.Path, clip(req.Opening(), 200))
		s.answer(w, hr, &req, Turn{Text: "fakeprovider: no scripted thread matches this request."}, "unmatched", -1)
		return
	}
	req.Thread = name
	s.mu.Lock()
	key := stepKey{name, req.Step}
	req.Attempt = s.attempts[key]
	s.attempts[key]++
	s.mu.Unlock()

	if req.Step >= len(thread.Turns) && !(thread.Repeat && len(thread.Turns) > 0) {
		s.record(req)
		s.problem("thread %q: step %d requested, the script has %d turn(s)", name, req.Step, len(thread.Turns))
		s.answer(w, hr, &req, Turn{Text: fmt.Sprintf("fakeprovider: thread %s has no turn %d.", name, req.Step)}, name, req.Step)
		return
	}
	turn := thread.Turns[min(req.Step, len(thread.Turns)-1)]
	if turn.Dynamic != nil {
		turn = turn.Dynamic(&req)
	}
	if f := turn.Fault; f != nil && !f.applies(req.Attempt) {
		turn.Fault = nil
	}
	if f := turn.Fault; f != nil && f.Status != 0 {
		req.Faulted = true
		s.record(req)
		s.serveFault(hr.Context(), w, &req, f)
		return
	}
	s.record(req)
	s.answer(w, hr, &req, turn, name, req.Step)
}

// enter counts a handler in, unless the server is closed. The count and the flag change
// under one lock: a WaitGroup's Add from zero may not race with its Wait, and a handler that
// reaches ServeHTTP while Close waits (its request read by a front before Close, say) is
// either counted before Close looks or refused.
func (s *Server) enter() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.handlers.Add(1)
	return true
}

// applies says whether the fault spoils the given attempt (0-based).
func (f *Fault) applies(attempt int) bool {
	switch {
	case f.Times < 0:
		return true
	case f.Times == 0:
		return attempt == 0
	}
	return attempt < f.Times
}

func (s *Server) match(r *Request) string {
	if s.script.Match != nil {
		return s.script.Match(r)
	}
	return s.script.matchMarker(r)
}

// read turns an HTTP request into a Request, reading the body.
func (s *Server) read(hr *http.Request) (Request, error) {
	req := Request{
		Time:     time.Now(),
		Method:   hr.Method,
		Path:     hr.URL.Path,
		Query:    hr.URL.RawQuery,
		Header:   hr.Header.Clone(),
		Endpoint: endpoint(hr),
		Step:     -1,
	}
	body, err := io.ReadAll(hr.Body)
	if err != nil {
		return req, fmt.Errorf("read body: %w", err)
	}
	if strings.EqualFold(hr.Header.Get("Content-Encoding"), "gzip") {
		zr, err := gzip.NewReader(bytes.NewReader(body))
		if err != nil {
			req.Body = body
			return req, fmt.Errorf("gzip body: %w", err)
		}
		plain, err := io.ReadAll(zr)
		if err != nil {
			req.Body = body
			return req, fmt.Errorf("gzip body: %w", err)
		}
		body = plain
	}
	req.Body = body
	return req, nil
}

func (s *Server) record(r Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = append(s.requests, r)
}

// answer writes turn in the wire format of the request.
func (s *Server) answer(w http.ResponseWriter, hr *http.Request, req *Request, turn Turn, thread string, step int) {
	a := newAnswer(req, turn, thread, step)
	out := &writer{w: w, ctx: hr.Context(), done: s.ctx.Done(), fault: turn.Fault}
	if f := turn.Fault; f != nil {
		for k, vs := range f.Header {
			for _, v := range vs {
				w.Header().Add(k, v)
			}
		}
		if f.RetryAfter != "" {
			w.Header().Set("Retry-After", f.RetryAfter)
		}
	}
	if req.Endpoint == EndpointMessages {
		w.Header().Set("Request-Id", "req_"+a.ID)
	} else {
		w.Header().Set("X-Request-Id", "req_"+a.ID)
	}
	if !out.wait(out.firstByte()) {
		return
	}
	p := map[Endpoint]tape.Provider{EndpointMessages: tape.ProviderAnthropic, EndpointChat: tape.ProviderOpenAIChat, EndpointResponses: tape.ProviderOpenAIResponses, EndpointGemini: tape.ProviderGemini}[req.Endpoint]
	var err error
	if req.Stream {
		events, eerr := provider.Stream(p, a, provider.StreamOptions{Piece: s.script.pieceSize(), IncludeUsage: includeUsage(req)})
		if eerr != nil {
			s.problem("answer %s: %v", a.ID, eerr)
			http.Error(w, eerr.Error(), http.StatusInternalServerError)
			return
		}
		err = out.stream(events)
	} else {
		b, eerr := provider.Body(p, a)
		if eerr != nil {
			s.problem("answer %s: %v", a.ID, eerr)
			http.Error(w, eerr.Error(), http.StatusInternalServerError)
			return
		}
		err = out.body(b)
	}
	if errors.Is(err, errCut) {
		// Abort the connection without ending the chunked body, as a reset stream would.
		panic(http.ErrAbortHandler)
	}
}

// includeUsage reads Chat Completions' stream_options.include_usage.
func includeUsage(req *Request) bool {
	var v struct {
		StreamOptions struct {
			IncludeUsage bool `json:"include_usage"`
		} `json:"stream_options"`
	}
	_ = json.Unmarshal(req.Body, &v)
	return v.StreamOptions.IncludeUsage
}

// serveFault answers with the fault's status and body.
func (s *Server) serveFault(ctx context.Context, w http.ResponseWriter, req *Request, f *Fault) {
	for k, vs := range f.Header {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	if f.RetryAfter != "" {
		w.Header().Set("Retry-After", f.RetryAfter)
	}
	if f.FirstByte > 0 {
		t := time.NewTimer(f.FirstByte)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return
		case <-s.ctx.Done():
			return
		}
	}
	if f.Body != "" {
		if w.Header().Get("Content-Type") == "" {
			ct := "text/plain; charset=utf-8"
			if json.Valid([]byte(f.Body)) {
				ct = "application/json"
			}
			w.Header().Set("Content-Type", ct)
		}
		w.WriteHeader(f.Status)
		_, _ = io.WriteString(w, f.Body)
		return
	}
	writeError(w, req.Endpoint, f.Status, errorType(f.Status), fmt.Sprintf("fakeprovider: injected fault %d", f.Status))
}

// errorType is the Anthropic error type of a status.
func errorType(status int) string {
	switch {
	case status == http.StatusTooManyRequests:
		return "rate_limit_error"
	case status == 529:
		return "overloaded_error"
	case status == http.StatusUnauthorized:
		return "authentication_error"
	case status == http.StatusNotFound:
		return "not_found_error"
	case status >= 500:
		return "api_error"
	}
	return "invalid_request_error"
}

// writeError writes an error body in the endpoint's wire format.
func writeError(w http.ResponseWriter, e Endpoint, status int, typ, msg string) {
	p := tape.ProviderOpenAIChat // the OpenAI shape, Chat and Responses alike
	if e == EndpointMessages || e == EndpointCountTokens {
		p = tape.ProviderAnthropic
	}
	if e == EndpointGemini {
		p = tape.ProviderGemini
	}
	b := provider.ErrorBody(p, typ, "", msg)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", fmt.Sprint(len(b)))
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, _ := json.Marshal(v)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", fmt.Sprint(len(b)))
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// serveModels lists the script's models, in Anthropic's shape when the client sent
// anthropic-version, else in OpenAI's.
func (s *Server) serveModels(w http.ResponseWriter, hr *http.Request) {
	models := s.script.Models
	if len(models) == 0 {
		models = []string{"fake-model"}
	}
	anthropic := hr.Header.Get("anthropic-version") != ""
	entry := func(id string) map[string]any {
		if anthropic {
			return map[string]any{"type": "model", "id": id, "display_name": id, "created_at": "2025-01-01T00:00:00Z"}
		}
		return map[string]any{"id": id, "object": "model", "created": created, "owned_by": "fakeprovider"}
	}
	p := strings.TrimSuffix(hr.URL.Path, "/")
	if _, id, ok := strings.Cut(p, "/models/"); ok {
		for _, m := range models {
			if m == id {
				writeJSON(w, http.StatusOK, entry(m))
				return
			}
		}
		writeError(w, EndpointModels, http.StatusNotFound, "not_found_error", "fakeprovider: no model "+id)
		return
	}
	data := make([]map[string]any, 0, len(models))
	for _, m := range models {
		data = append(data, entry(m))
	}
	if anthropic {
		writeJSON(w, http.StatusOK, map[string]any{"data": data, "has_more": false, "first_id": models[0], "last_id": models[len(models)-1]})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": data})
}

// tokens is the fake token count of n bytes of text.
func tokens(n int) int { return n/4 + 1 }

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
