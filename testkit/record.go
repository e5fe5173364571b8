package testkit

import (
	"fmt"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"

	"github.com/tapebox/tapebox/gateway"
	"github.com/tapebox/tapebox/tape"
	"github.com/tapebox/tapebox/testkit/fakeprovider"
)

// The scripted provider's types, so that tests outside this module can write scripts. See
// Script for how a model call finds its answer.
type (
	// Script is what the fake model answers: one list of turns per thread (the main agent,
	// each subagent). A model call goes to the thread whose Marker appears in its opening
	// text (the prompt), and gets the turn numbered by the assistant turns already in it.
	Script = fakeprovider.Script
	// Thread is one conversation of a Script.
	Thread = fakeprovider.Thread
	// Turn is one model answer: text, tool calls, or both.
	Turn = fakeprovider.Turn
	// Fault spoils or slows one answer (an HTTP error, delays, a stream cut midway).
	Fault = fakeprovider.Fault
	// Provider is a scripted model provider serving the Anthropic Messages, OpenAI Chat
	// Completions and OpenAI Responses wire formats on 127.0.0.1, streaming or not. Its
	// Requests method returns what it received; Err lists the calls the script could not
	// answer.
	Provider = fakeprovider.Server
	// ProviderRequest is a request the Provider received.
	ProviderRequest = fakeprovider.Request
)

// Call returns a tool call named name whose input is input encoded as JSON, for a Turn.
func Call(name string, input any) tape.ToolCall { return fakeprovider.Call(name, input) }

// Custom returns a freeform tool call (such as Codex's apply_patch) whose input is text.
func Custom(name, text string) tape.ToolCall { return fakeprovider.Custom(name, text) }

// StartProvider serves script on a free port of 127.0.0.1; the caller closes it.
func StartProvider(script Script) (*Provider, error) {
	p := fakeprovider.New(script)
	if err := p.Start(); err != nil {
		return nil, fmt.Errorf("testkit: %w", err)
	}
	return p, nil
}

// NewProvider serves script on a free port of 127.0.0.1 until the test ends; point a
// harness (or NewGateway) at p.URL(). At the end it fails tb if the provider received model
// calls its script could not answer.
func NewProvider(tb testing.TB, script Script) *Provider {
	tb.Helper()
	p, err := StartProvider(script)
	if err != nil {
		tb.Fatalf("%v", err)
	}
	tb.Cleanup(func() {
		p.Close()
		if err := p.Err(); err != nil {
			tb.Errorf("testkit: the scripted provider at %s: %v", p.URL(), err)
		}
	})
	return p
}

// GatewayOption configures a recording gateway.
type GatewayOption func(*gateway.Config)

// Harness names the recorded agent's harness (claude-code, codex) instead of detecting it
// from the traffic; the replay's executor formats tool results the way that harness does.
func Harness(name string) GatewayOption { return func(c *gateway.Config) { c.Harness = name } }

// Workspace makes the recording carry the agent's working directory dir: its start snapshot
// beside the tape and its end manifest, so that a replay restores it and CheckEndState can
// check the end state.
func Workspace(dir string) GatewayOption { return func(c *gateway.Config) { c.Workspace = dir } }

// Task adds a key to the tape's meta.task.
func Task(key, value string) GatewayOption {
	return func(c *gateway.Config) {
		if c.Task == nil {
			c.Task = map[string]string{}
		}
		c.Task[key] = value
	}
}

// Label adds a key to the tape's meta.labels.
func Label(key, value string) GatewayOption {
	return func(c *gateway.Config) {
		if c.Labels == nil {
			c.Labels = map[string]string{}
		}
		c.Labels[key] = value
	}
}

// GatewayLogf sends the gateway's line per call to logf (NewGateway: the test's log).
func GatewayLogf(logf func(format string, args ...any)) GatewayOption {
	return func(c *gateway.Config) { c.Logf = logf }
}

// Gateway is a recording gateway served on 127.0.0.1: the agent's model calls go through it
// to the upstream provider and are recorded into a tape.
type Gateway struct {
	// URL is the base URL to give the agent (ANTHROPIC_BASE_URL; an OpenAI base URL is
	// URL + "/v1").
	URL string
	// Path is the tape being recorded.
	Path string
	// Recorder is the gateway itself.
	Recorder *gateway.Gateway

	srv  *httptest.Server
	once sync.Once
	tape *tape.Tape
	err  error
}

// StartGateway records the calls it forwards to upstream (a base URL such as a Provider's)
// into a tape at path; the caller finishes or closes it.
func StartGateway(upstream, path string, opts ...GatewayOption) (*Gateway, error) {
	cfg := gateway.Config{Output: path, Upstream: upstream}
	for _, o := range opts {
		o(&cfg)
	}
	g, err := gateway.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("testkit: %w", err)
	}
	srv := httptest.NewServer(g)
	return &Gateway{URL: srv.URL, Path: path, Recorder: g, srv: srv}, nil
}

// NewGateway records into a tape in a temporary directory the calls it forwards to upstream,
// until Finish or the end of the test.
func NewGateway(tb testing.TB, upstream string, opts ...GatewayOption) *Gateway {
	tb.Helper()
	opts = append([]GatewayOption{GatewayLogf(tb.Logf)}, opts...)
	g, err := StartGateway(upstream, filepath.Join(tb.TempDir(), "run.json"), opts...)
	if err != nil {
		tb.Fatalf("%v", err)
	}
	tb.Cleanup(func() { g.Close() })
	return g
}

// Finish stops serving, ends the tape (complete when the main agent's last call got a final
// answer, else cut or upstream_error: see gateway.Gateway.Outcome), and loads it back,
// checked against the tape schema. Later calls return the same.
func (g *Gateway) Finish() (*tape.Tape, error) {
	g.once.Do(func() {
		g.srv.Close()
		reason, detail := g.Recorder.Outcome()
		if err := g.Recorder.Finish(reason, detail); err != nil {
			g.err = fmt.Errorf("testkit: finish the recording %s: %w", g.Path, err)
			return
		}
		g.tape, g.err = LoadTape(g.Path)
	})
	return g.tape, g.err
}

// Close finishes the recording if Finish was not called; it returns Finish's error.
func (g *Gateway) Close() error {
	_, err := g.Finish()
	return err
}
