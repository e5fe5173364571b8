package fork

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/tapebox/tapebox/gateway"
	"github.com/tapebox/tapebox/tape"
	"github.com/tapebox/tapebox/tape/unsupported"
)

// Config configures a fork Server.
type Config struct {
	// Recording is the tape to fork (required).
	Recording *tape.Tape
	// Thread is the thread of the fork point ("" means the main thread's id) and At the
	// step, numbered from 0 as inspect prints it: steps 0..At-1 of Thread are served from
	// the recording, step At goes upstream.
	Thread string
	At     int
	// Upstream receives the live calls (a provider's root URL; "" means the provider's
	// public API). Transport reaches it; nil means the gateway's default.
	Upstream  string
	Transport http.RoundTripper
	// Overrides change every live request.
	Overrides Overrides
	// Output is the fork tape's path (required).
	Output string
	// Speed paces the served steps as gateway.SimulatorOptions.Speed does (0: none).
	Speed float64
	// Workspace, when set, is the directory the harness works in, the recording's start
	// snapshot already restored there: the fork tape snapshots it (so that the fork tape
	// replays on its own) and records its end manifest.
	Workspace string
	// Cwd, when set, is the directory the harness works in (Run sets it): the fork tape's
	// meta.cwd and, when it is not the recording's, known from the start as what the
	// recording's meta.cwd stands for, so that results naming paths under it match.
	Cwd string
	// Logf receives one line per call and per problem; nil discards them.
	Logf func(format string, args ...any)
}

// Server is the model endpoint in fork mode (gateway.Fork) with the overrides applied to
// every live request: an http.Handler a harness points its provider base URL at.
type Server struct {
	*gateway.Fork
}

// Check says whether the fork point exists in rec: an error naming the thread or the step
// when it does not. A tape that records a feature TapeBox does not replay (package
// unsupported: Codex's multi_agent_v2) is refused with its *unsupported.Error.
func Check(rec *tape.Tape, thread string, at int) (*tape.Thread, error) {
	if err := unsupported.Check(rec); err != nil {
		return nil, fmt.Errorf("fork: %w", err)
	}
	return gateway.CheckFork(rec, thread, at)
}

// Prefix returns, per thread id, how many steps a fork at step at of th serves from the
// recording (gateway.ForkPrefix).
func Prefix(rec *tape.Tape, th *tape.Thread, at int) map[string]int {
	return gateway.ForkPrefix(rec, th, at)
}

// New prepares a fork server. The fork tape is created at cfg.Output at once.
func New(cfg Config) (*Server, error) {
	if cfg.Recording == nil {
		return nil, errors.New("fork: no recording")
	}
	gcfg := gateway.ForkConfig{Recording: cfg.Recording, Thread: cfg.Thread, At: cfg.At,
		Upstream: cfg.Upstream, Transport: cfg.Transport, Output: cfg.Output, Speed: cfg.Speed,
		Workspace: cfg.Workspace, Cwd: cfg.Cwd, Logf: cfg.Logf, Overrides: cfg.Overrides.Map()}
	if cfg.Overrides != (Overrides{}) {
		gcfg.Rewrite, gcfg.RewritePath = cfg.Overrides.Apply, cfg.Overrides.Path
	}
	f, err := gateway.NewFork(gcfg) // its errors say "fork: ..."
	if err != nil {
		return nil, err
	}
	return &Server{Fork: f}, nil
}
