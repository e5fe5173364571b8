package testkit

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tapebox/tapebox/controller"
	"github.com/tapebox/tapebox/fork"
	"github.com/tapebox/tapebox/tape"
)

// ForkOption configures Fork and StartFork.
type ForkOption func(*forkConfig)

type forkConfig struct {
	thread    string
	overrides fork.Overrides
	command   []string
	env       []string
	agent     func(ctx context.Context, baseURL, dir string) error
	workdir   string
	output    string
	speed     float64
	logf      func(string, ...any)
}

// ForkThread forks on another thread than the main one.
func ForkThread(id string) ForkOption { return func(c *forkConfig) { c.thread = id } }

// ForkModel replaces the model field of every live request.
func ForkModel(model string) ForkOption { return func(c *forkConfig) { c.overrides.Model = model } }

// ForkSystemAppend appends text to the system prompt of every live request.
func ForkSystemAppend(text string) ForkOption {
	return func(c *forkConfig) { c.overrides.SystemAppend = text }
}

// ForkCommand is the harness to run (a real Claude Code or Codex, or any agent): it runs in
// the restored workspace with ANTHROPIC_BASE_URL, OPENAI_BASE_URL and TAPEBOX_GATEWAY_URL
// pointing at the fork, env added to this process's environment.
func ForkCommand(env []string, argv ...string) ForkOption {
	return func(c *forkConfig) { c.command, c.env = argv, env }
}

// ForkAgent runs the harness in this process instead: agent gets the fork's base URL (an
// Anthropic base URL; add /v1 for OpenAI's) and the restored workspace.
func ForkAgent(agent func(ctx context.Context, baseURL, dir string) error) ForkOption {
	return func(c *forkConfig) { c.agent = agent }
}

// ForkWorkdir restores the workspace into dir (missing or empty) instead of a fresh
// temporary directory. A harness that names absolute paths needs the tape's meta.cwd.
func ForkWorkdir(dir string) ForkOption { return func(c *forkConfig) { c.workdir = dir } }

// ForkOutput writes the fork tape to path instead of a temporary file.
func ForkOutput(path string) ForkOption { return func(c *forkConfig) { c.output = path } }

// ForkSpeed paces the steps served from the tape (default 0: no waiting).
func ForkSpeed(speed float64) ForkOption { return func(c *forkConfig) { c.speed = speed } }

// ForkLogf receives the fork's log lines (Fork defaults to the test's log).
func ForkLogf(logf func(format string, args ...any)) ForkOption {
	return func(c *forkConfig) { c.logf = logf }
}

// ForkResult is a finished fork.
type ForkResult struct {
	// Path is the fork tape and Tape the fork tape loaded (checked against the schema).
	Path string
	Tape *tape.Tape
	// Dir is the fork's final workspace.
	Dir string
	// Reached says the fork point was reached; Served counts per thread the steps served
	// from the recording, Live the steps recorded from the upstream.
	Reached bool
	Served  map[string]int
	Live    int
	// Ended and Detail are the fork tape's end.
	Ended  tape.EndReason
	Detail string
	// HarnessErr is the harness's error (a non-zero exit, an agent's error), nil when it
	// succeeded.
	HarnessErr error

	cleanup func()
}

// Close removes the temporary directories StartFork made.
func (r *ForkResult) Close() {
	if r.cleanup != nil {
		r.cleanup()
	}
}

// Fork forks the recording at tapePath at step at (numbered from 0 as tapebox inspect
// prints it) onto upstream: the steps before at are served from the tape, in the restored
// workspace, and the rest go to upstream, with the overrides. It fails tb when the fork
// cannot run or does not reach the fork point; what the live part did is the result's (its
// Ended, HarnessErr, Dir: check it with CheckVerify or CheckFiles-like assertions). The
// temporary directories go at the end of the test.
func Fork(tb testing.TB, tapePath string, at int, upstream string, opts ...ForkOption) *ForkResult {
	tb.Helper()
	opts = append([]ForkOption{ForkLogf(tb.Logf)}, opts...)
	r, err := StartFork(context.Background(), tapePath, at, upstream, opts...)
	if r != nil {
		tb.Cleanup(r.Close)
	}
	if err != nil {
		tb.Fatalf("%v", err)
	}
	return r
}

// StartFork is Fork for code without a testing.TB; the caller closes the result.
func StartFork(ctx context.Context, tapePath string, at int, upstream string, opts ...ForkOption) (*ForkResult, error) {
	var c forkConfig
	for _, o := range opts {
		o(&c)
	}
	if (c.agent == nil) == (c.command == nil) {
		return nil, errors.New("testkit: Fork needs one harness: ForkCommand or ForkAgent")
	}
	rec, err := LoadTape(tapePath)
	if err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp("", "testkit-fork-")
	if err != nil {
		return nil, fmt.Errorf("testkit: %w", err)
	}
	res := &ForkResult{cleanup: func() { os.RemoveAll(tmp) }}
	if c.workdir == "" {
		c.workdir = filepath.Join(tmp, "work")
	}
	if c.output == "" {
		c.output = filepath.Join(tmp, "fork.json")
	}
	res.Path, res.Dir = c.output, c.workdir
	cfg := fork.Config{Recording: rec, Thread: c.thread, At: at, Upstream: upstream, Overrides: c.overrides,
		Output: c.output, Speed: c.speed, Logf: c.logf}
	if c.command != nil {
		fr, err := fork.Run(ctx, fork.Options{Config: cfg, TapePath: tapePath, Workdir: c.workdir, Command: c.command, Env: c.env})
		if fr != nil {
			res.Reached, res.Served, res.Live, res.Ended, res.Detail = fr.Reached, fr.Served, fr.Live, fr.Ended, fr.Detail
			if fr.ExitCode != 0 {
				res.HarnessErr = fmt.Errorf("%s exited with code %d", c.command[0], fr.ExitCode)
			}
		}
		if err != nil {
			return res, fmt.Errorf("testkit: %w", err)
		}
	} else {
		if _, err := fork.Check(rec, c.thread, at); err != nil {
			return res, fmt.Errorf("testkit: fork %s: %w", tapePath, err)
		}
		snap, err := controller.SnapshotFor(tapePath, rec)
		if err != nil {
			return res, fmt.Errorf("testkit: %w", err)
		}
		if err := controller.RestoreSnapshot(ctx, rec, snap, c.workdir); err != nil {
			return res, fmt.Errorf("testkit: %w", err)
		}
		cfg.Workspace = c.workdir
		srv, err := fork.New(cfg)
		if err != nil {
			return res, fmt.Errorf("testkit: %w", err)
		}
		hs := httptest.NewServer(srv)
		res.HarnessErr = c.agent(ctx, hs.URL, c.workdir)
		hs.Close()
		failed := ""
		if res.HarnessErr != nil {
			failed = res.HarnessErr.Error()
		}
		res.Ended, res.Detail, err = srv.Finish(failed)
		if err != nil {
			return res, fmt.Errorf("testkit: %w", err)
		}
		res.Reached, _ = srv.Live()
		res.Served = srv.Served()
	}
	if res.Tape, err = LoadTape(res.Path); err != nil {
		return res, err
	}
	if c.agent != nil {
		for _, th := range res.Tape.Threads {
			res.Live += len(th.Steps) - res.Served[th.ID]
		}
	}
	if !res.Reached {
		return res, fmt.Errorf("testkit: fork %s at step %d: the fork point was not reached: %s %s", tapePath, at, res.Ended, res.Detail)
	}
	return res, nil
}

// CheckVerify runs command (sh -c) in the fork's final workspace: nil when it exits 0, else
// an error with its output.
func CheckVerify(r *ForkResult, command string) error {
	cmd := exec.Command("sh", "-c", command)
	cmd.Dir = r.Dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("testkit.CheckVerify: %q in %s: %v\n%s", command, r.Dir, err, strings.TrimSpace(string(out)))
	}
	return nil
}
