package testkit

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tapebox/tapebox/controller"
	"github.com/tapebox/tapebox/replay"
	"github.com/tapebox/tapebox/sandbox"
	"github.com/tapebox/tapebox/schema"
	"github.com/tapebox/tapebox/tape"
)

// RequireDockerEnv is the variable that turns skips for a missing Docker engine or image into
// failures: Replay and Bench skip a Docker sandbox when no engine answers or the image is
// missing, unless TAPEBOX_REQUIRE_DOCKER=1 (CI sets it).
const RequireDockerEnv = "TAPEBOX_REQUIRE_DOCKER"

// Option configures Replay, Run and Bench.
type Option func(*config)

type config struct {
	cwd         string
	cwdSet      bool
	speed       float64
	harnessPace bool
	env         map[string]string
	sandbox     sandbox.Options
	output      string
	callTimeout time.Duration
	logf        func(string, ...any)
	noWorkspace bool
}

// NoWorkspace replays without restoring the tape's start snapshot (meta.workspace) and takes
// no end manifest. By default a tape's snapshot, beside it, is checked and restored into the
// sandbox before step 1, and the end manifest read into the replay tape (see CheckEndState).
func NoWorkspace() Option { return func(c *config) { c.noWorkspace = true } }

// Cwd sets the working directory inside a container or pod. Default: where the tape was
// recorded (its meta.cwd, when an absolute path), else a fresh replay.DefaultCwd; Cwd("")
// keeps the image's. A local sandbox works in its own directory whatever the tape says.
func Cwd(dir string) Option { return func(c *config) { c.cwd, c.cwdSet = dir, true } }

// Speed scales the recorded model latency: 0 (the default) removes it, 1 reproduces it.
func Speed(speed float64) Option { return func(c *config) { c.speed = speed } }

// HarnessPace makes a replay with a Speed above 0 wait between turns as long as the
// harness did (its tool calls and its own work), and read the end state as long after the
// last response as the recording did (controller.Options.HarnessPace).
func HarnessPace() Option { return func(c *config) { c.harnessPace = true } }

// Env adds variables to the executor's environment.
func Env(env map[string]string) Option {
	return func(c *config) {
		if c.env == nil {
			c.env = map[string]string{}
		}
		for k, v := range env {
			c.env[k] = v
		}
	}
}

// SandboxOptions sets the options the sandbox is opened with (limits, runtime, network of a
// created container ...). Cwd and Env options given to testkit take precedence; a Cwd set
// here takes precedence over the tape's meta.cwd.
func SandboxOptions(o sandbox.Options) Option { return func(c *config) { c.sandbox = o } }

// Output writes the replay tape to path. Default: a file in a temporary directory.
func Output(path string) Option { return func(c *config) { c.output = path } }

// CallTimeout bounds each tool call (default one minute); a call that takes longer gets an
// error result and the replay goes on.
func CallTimeout(d time.Duration) Option { return func(c *config) { c.callTimeout = d } }

// Logf receives the controller's and the sandbox's progress lines. Replay and Bench default to
// the test's log.
func Logf(logf func(format string, args ...any)) Option { return func(c *config) { c.logf = logf } }

func newConfig(opts []Option) *config {
	c := &config{callTimeout: time.Minute}
	for _, o := range opts {
		o(c)
	}
	return c
}

// Result is a replay: the recording, the replay tape, what the controller measured, and the
// sandbox in its end state for checks. Its sandbox stays open until the test ends (Replay) or
// Close (Run).
type Result struct {
	// Recording is the tape that was replayed; RecordingPath its file.
	Recording     *tape.Tape
	RecordingPath string
	// Tape is the replay tape, also written at TapePath.
	Tape     *tape.Tape
	TapePath string
	// Controller is what the controller measured: steps, tool calls, wall, tool and model time.
	Controller *controller.Result
	// Sandbox is where the replay ran, still open, for end-state checks (Snapshot, Exec).
	Sandbox *sandbox.Sandbox
	// Err is why the replay stopped before the end of some thread (an
	// *controller.IncompleteError), or nil. CheckReachedEnd reports it.
	Err error

	cleanup []func() error
}

// Close closes the sandbox (removing a container TapeBox created) and the temporary
// directories of the replay. Replay registers it with tb.Cleanup.
func (r *Result) Close() error {
	var errs []error
	for i := len(r.cleanup) - 1; i >= 0; i-- {
		errs = append(errs, r.cleanup[i]())
	}
	r.cleanup = nil
	return errors.Join(errs...)
}

// Replay replays the tape at tapePath in executor mode into a fresh sandbox and returns the
// result; the sandbox and temporary files are cleaned up with tb.Cleanup. sandboxSpec is:
//
//	"local"               a fresh temporary directory, isolated with bubblewrap where it can
//	                      be (see package sandbox; otherwise not isolated, with a warning)
//	"local:DIR"           the directory DIR, as it is
//	"unsafe-local"        a fresh temporary directory, never isolated (host processes)
//	"unsafe-local:DIR"    the directory DIR, never isolated
//	"docker-image:IMAGE"  a fresh container from a local image, removed at the end
//	"IMAGE"               the same, for a spec without a known scheme
//	"docker:NAME"         an existing container
//	"k8s:NS?image=IMAGE"  a fresh pod on a Kubernetes cluster, deleted at the end
//
// A tape that cannot be loaded or a sandbox that cannot be opened fails tb. A Docker
// sandbox with no engine reachable, or a missing image, skips tb, unless
// TAPEBOX_REQUIRE_DOCKER=1. A replay that stops before the end does not fail tb by itself:
// Result.Err says why, and CheckReachedEnd reports it.
func Replay(tb testing.TB, tapePath, sandboxSpec string, opts ...Option) *Result {
	tb.Helper()
	opts = append([]Option{Logf(tb.Logf)}, opts...)
	r, err := Run(tb.Context(), tapePath, sandboxSpec, opts...)
	if err != nil {
		skipOrFatal(tb, err)
	}
	tb.Cleanup(func() {
		if err := r.Close(); err != nil {
			tb.Errorf("testkit: %v", err)
		}
	})
	if r.Err != nil {
		tb.Logf("testkit: replay of %s in %s stopped early: %v", tapePath, sandboxSpec, r.Err)
	}
	return r
}

// skipOrFatal skips tb for a missing Docker engine or image (unless TAPEBOX_REQUIRE_DOCKER=1)
// and fails it for anything else.
func skipOrFatal(tb testing.TB, err error) {
	tb.Helper()
	docker := errors.Is(err, sandbox.ErrNoEngine) || (errors.Is(err, sandbox.ErrNotFound) && strings.Contains(err.Error(), ": image "))
	if docker && os.Getenv(RequireDockerEnv) != "1" {
		tb.Skipf("testkit: %v (set %s=1 to make this a failure)", err, RequireDockerEnv)
	}
	tb.Fatalf("testkit: %v", err)
}

// Run is Replay without a testing.TB: the caller closes the result. The error is for a tape
// that cannot be loaded or a sandbox or executor that cannot be started; a replay that
// stops before the end returns a result with Err set.
func Run(ctx context.Context, tapePath, sandboxSpec string, opts ...Option) (_ *Result, err error) {
	c := newConfig(opts)
	rec, err := LoadTape(tapePath)
	if err != nil {
		return nil, err
	}
	r := &Result{Recording: rec, RecordingPath: tapePath}
	defer func() {
		if err != nil {
			r.Close()
		}
	}()
	tmp, err := os.MkdirTemp("", "testkit-replay-")
	if err != nil {
		return nil, fmt.Errorf("testkit: %w", err)
	}
	r.cleanup = append(r.cleanup, func() error { return os.RemoveAll(tmp) })
	r.TapePath = c.output
	if r.TapePath == "" {
		r.TapePath = filepath.Join(tmp, "replay.json")
	}
	ro := c.replayOptions(tapePath)
	ro.Output = r.TapePath
	rp, err := replay.Open(ctx, rec, sandboxSpecOf(sandboxSpec, tmp), ro)
	if err != nil {
		return nil, fmt.Errorf("testkit: open sandbox: %w", err)
	}
	r.Sandbox = rp.Sandbox()
	r.cleanup = append(r.cleanup, func() error {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		return rp.Close(cctx)
	})
	res, err := rp.Play(ctx)
	if res.Tape == nil {
		return nil, fmt.Errorf("testkit: replay %s in %s: %w", tapePath, r.Sandbox.Spec(), err)
	}
	r.Controller, r.Tape, r.Err = res.Result, res.Tape, err
	return r, nil
}

// sandboxSpecOf is the spec testkit replays in: "local" and "unsafe-local" are a fresh
// directory under tmp, and a spec without a known scheme is an image.
func sandboxSpecOf(spec, tmp string) string {
	switch {
	case spec == sandbox.SchemeLocal, spec == sandbox.SchemeUnsafeLocal:
		return spec + ":" + filepath.Join(tmp, "sandbox")
	case strings.HasPrefix(spec, sandbox.SchemeLocal+":"), strings.HasPrefix(spec, sandbox.SchemeUnsafeLocal+":"),
		strings.HasPrefix(spec, sandbox.SchemeDocker+":"), strings.HasPrefix(spec, sandbox.SchemeDockerImage+":"),
		strings.HasPrefix(spec, sandbox.SchemeK8s+":"):
		return spec
	}
	return sandbox.SchemeDockerImage + ":" + spec
}

// replayOptions are the replay's options (replay.Options) for the tape at tapePath: a Cwd
// given to testkit wins over one in SandboxOptions, which wins over the tape's meta.cwd.
func (c *config) replayOptions(tapePath string) replay.Options {
	o := replay.Options{TapePath: tapePath, Sandbox: c.sandbox, Cwd: c.cwd, CwdSet: c.cwdSet, Env: c.env, Speed: c.speed, HarnessPace: c.harnessPace,
		CallTimeout: c.callTimeout, Logf: c.logf, NoWorkspace: c.noWorkspace}
	if !c.cwdSet && c.sandbox.Cwd != "" {
		o.Cwd, o.CwdSet = c.sandbox.Cwd, true
	}
	if len(c.env) > 0 {
		o.Sandbox.Env = c.env
	}
	return o
}

// LoadTape reads a tape and checks it against the tape schema, with every problem in the
// error.
func LoadTape(path string) (*tape.Tape, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("testkit: %w", err)
	}
	if err := schema.Validate(data); err != nil {
		return nil, fmt.Errorf("testkit: %s is not a valid tape: %w", path, err)
	}
	t, err := tape.Unmarshal(data)
	if err != nil {
		return nil, fmt.Errorf("testkit: %s: %w", path, err)
	}
	return t, nil
}
