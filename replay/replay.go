package replay

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"sync"
	"time"

	"github.com/tapebox/tapebox/compare"
	"github.com/tapebox/tapebox/controller"
	"github.com/tapebox/tapebox/sandbox"
	"github.com/tapebox/tapebox/tape"
	"github.com/tapebox/tapebox/tape/unsupported"
	"github.com/tapebox/tapebox/workspace"
)

// DefaultCwd is where the tool calls of a tape that does not name an absolute working
// directory (meta.cwd) run in a container or pod: a fresh directory, created by the sandbox,
// never the image's own working directory (often /), into which a start snapshot would be
// restored and whose system files the end manifest would compare.
const DefaultCwd = "/workspace"

// The bare local schemes: a fresh temporary directory, removed when the replay closes.
const (
	LocalTemp       = sandbox.SchemeLocal
	UnsafeLocalTemp = sandbox.SchemeUnsafeLocal
)

// Options configure Run and Open. The zero value replays at full speed (no model latency),
// with the tape's start snapshot when it has one, into the working directory Cwd's rule
// picks.
type Options struct {
	// TapePath is the file the tape was read from: its start snapshot (meta.workspace.
	// snapshot) lies beside it. A tape that names a snapshot needs it, unless NoWorkspace.
	TapePath string
	// Sandbox are the options the sandbox opens with (limits, user, network, transport,
	// labels ...). Open sets their Cwd (see Cwd), sets InstallExecutor for the sandboxes
	// TapeBox creates (docker-image:, k8s:), and fills Env and Logf from these Options when
	// they are empty.
	Sandbox sandbox.Options
	// Cwd, when CwdSet, is the working directory inside a container or pod ("" keeps the
	// image's own). Otherwise the tape's meta.cwd when it is an absolute path, else
	// DefaultCwd. A local:DIR sandbox works in DIR whatever the tape says.
	Cwd    string
	CwdSet bool
	// Env is the executor's environment (and the sandbox's, unless Sandbox.Env is set).
	Env map[string]string
	// Speed scales the recorded model latency: 1 as recorded, 0 none.
	Speed float64
	// HarnessPace paces the harness's own time between turns too (controller.Options).
	HarnessPace bool
	// Output is where the replay tape is written after every step; "" writes none.
	Output string
	// CallTimeout bounds each tool call (controller.Options.CallTimeout).
	CallTimeout time.Duration
	// NoWorkspace neither restores the start snapshot nor reads an end manifest.
	NoWorkspace bool
	// Compare compares the replay with its recording when it ends (Result.Report).
	Compare bool
	// Logf receives the replay's progress lines and the sandbox's; nil discards them.
	Logf func(format string, args ...any)
	// Progress is told when each step and each tool call starts (controller.Options).
	Progress func(controller.Progress)
	// Opened, when set, is called by Run with the open sandbox before the replay starts;
	// the function it returns runs when the replay ended, before the sandbox closes (a
	// telemetry sampler of the container, say).
	Opened func(sb *sandbox.Sandbox) (done func(), err error)
}

// Result is what a replay did: the player's result (steps, tool calls, times, the replay
// tape), where it ran, and what the user waited for.
type Result struct {
	*controller.Result
	// Spec is the sandbox's spec, Cwd its working directory, Transport how the calls
	// reached the executor.
	Spec, Cwd, Transport string
	// Setup is how long Open took: the snapshot's check, creating and starting the sandbox
	// and installing the executor. Zero for a sandbox made ready before Play (a warm pool).
	Setup time.Duration
	// FirstResult is how long after Play started the first tool call's result came back
	// (restoring the snapshot, starting the executor session, pacing the first model call,
	// running the call); zero when no call ran. Setup + FirstResult is what a user of Run
	// waits for before the replay does anything visible.
	FirstResult time.Duration
	// Report is compare's report of the replay against its recording (Options.Compare).
	Report *compare.Report
}

// Identical says whether the replay was compared and found identical to its recording.
func (r *Result) Identical() bool { return r != nil && r.Report != nil && r.Report.Identical }

// Replay is a tape with its sandbox open, ready to play: what Open returns.
type Replay struct {
	rec      *tape.Tape
	opts     Options
	snapshot string
	sb       *sandbox.Sandbox
	setup    time.Duration
	tmp      string // a fresh directory of the bare local schemes, removed by Close

	closeOnce sync.Once
	closeErr  error
}

// Run replays rec in a fresh sandbox of spec (see Open) and closes the sandbox. The error is
// nil when every thread was played to its end; the result is non-nil once the sandbox opened,
// also when the replay stopped early (its Tape says how far it got).
func Run(ctx context.Context, rec *tape.Tape, spec string, opts Options) (*Result, error) {
	r, err := Open(ctx, rec, spec, opts)
	if err != nil {
		return nil, err
	}
	defer r.closeAfter(ctx)
	if opts.Opened != nil {
		done, err := opts.Opened(r.sb)
		if err != nil {
			return nil, err
		}
		if done != nil {
			defer done()
		}
	}
	return r.Play(ctx)
}

// Open does the part of Run before the replay: it finds the tape's start snapshot beside
// opts.TapePath and checks it against its digest (before any sandbox exists, so that an
// altered snapshot runs nothing), and opens a sandbox of spec:
//
//   - "local" and "unsafe-local": a fresh temporary directory, removed by Close;
//   - "local:DIR", "unsafe-local:DIR": DIR, which must be empty or missing when the tape
//     carries a snapshot;
//   - "docker:NAME": an existing container (the executor installed only when
//     opts.Sandbox.InstallExecutor says so);
//   - "docker-image:IMAGE", "k8s:...": a fresh container or pod with the executor installed.
//
// In a container or pod the tool calls run in the tape's meta.cwd when it is an absolute path,
// else in DefaultCwd (Options.Cwd overrides both); a replay never restores a snapshot into,
// nor reads the end state of, the container's root.
func Open(ctx context.Context, rec *tape.Tape, spec string, opts Options) (*Replay, error) {
	start := time.Now()
	if opts.Logf == nil {
		opts.Logf = func(string, ...any) {}
	}
	if rec.Main() == nil {
		return nil, errors.New("replay: the tape has no main thread")
	}
	if err := unsupported.Check(rec); err != nil {
		return nil, fmt.Errorf("replay: %w", err)
	}
	r := &Replay{rec: rec, opts: opts}
	if !opts.NoWorkspace {
		snap, err := controller.SnapshotFor(opts.TapePath, rec)
		if err != nil {
			return nil, err
		}
		r.snapshot = snap
	}
	if spec == LocalTemp || spec == UnsafeLocalTemp {
		dir, err := os.MkdirTemp("", "tapebox-replay-")
		if err != nil {
			return nil, fmt.Errorf("replay: %w", err)
		}
		r.tmp = dir
		spec += ":" + filepath.Join(dir, "work")
	}
	s, err := sandbox.ParseSpec(spec)
	if err != nil {
		r.removeTemp()
		return nil, err
	}
	so := SandboxOptions(s, rec, opts)
	sb, err := sandbox.Open(ctx, spec, so)
	if err != nil {
		r.removeTemp()
		return nil, err
	}
	r.sb = sb
	if s.Scheme != sandbox.SchemeLocal && sb.Cwd() == "/" && hasWorkspace(rec, opts) {
		r.Close(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("replay in %s: the tape carries a workspace and the working directory is the container's root /: give a working directory (--cwd DIR), or replay with --no-workspace", s)
	}
	r.setup = time.Since(start)
	opts.Logf("sandbox %s: executor calls over %s", sb.Spec(), sb.Transport())
	return r, nil
}

// hasWorkspace says whether a replay of rec restores a snapshot or reads an end manifest.
func hasWorkspace(rec *tape.Tape, opts Options) bool {
	return !opts.NoWorkspace && rec.Meta.Workspace != nil
}

// SandboxOptions are the options a replay of rec opens a sandbox of spec with: opts.Sandbox
// with the working directory (Cwd) and the executor's installation decided by the one rule
// every replay shares, and Env and Logf from opts when opts.Sandbox leaves them empty.
func SandboxOptions(spec sandbox.Spec, rec *tape.Tape, opts Options) sandbox.Options {
	so := opts.Sandbox
	so.Cwd = Cwd(spec, rec, opts)
	created := spec.Scheme == sandbox.SchemeDockerImage || spec.Scheme == sandbox.SchemeK8s
	so.InstallExecutor = so.InstallExecutor || (created && so.SandboxExecutor == "")
	if so.Env == nil {
		so.Env = opts.Env
	}
	if so.Logf == nil {
		so.Logf = opts.Logf
	}
	return so
}

// Cwd is the working directory a replay of rec asks a sandbox of spec for, and it says
// why through opts.Logf: opts.Cwd when CwdSet, else the tape's meta.cwd when it is an
// absolute path, else DefaultCwd, a fresh directory. A local sandbox works in its own
// directory (""), whatever the tape says.
func Cwd(spec sandbox.Spec, rec *tape.Tape, opts Options) string {
	logf := opts.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	switch {
	case spec.Scheme == sandbox.SchemeLocal:
		return ""
	case opts.CwdSet:
		return opts.Cwd
	case rec.Meta.Cwd == "":
		logf("the tape does not say where it was recorded (no meta.cwd): the tool calls run in a fresh %s; --cwd sets another", DefaultCwd)
		return DefaultCwd
	case !path.IsAbs(rec.Meta.Cwd):
		logf("the tape was recorded in %q, not an absolute path in a container: the tool calls run in a fresh %s; --cwd sets another", rec.Meta.Cwd, DefaultCwd)
		return DefaultCwd
	}
	logf("working directory %s, where the tape was recorded (meta.cwd; --cwd sets another)", rec.Meta.Cwd)
	return rec.Meta.Cwd
}

// Sandbox is the open sandbox; it stays open until Close.
func (r *Replay) Sandbox() *sandbox.Sandbox { return r.sb }

// Setup is how long Open took.
func (r *Replay) Setup() time.Duration { return r.setup }

// Play plays the tape in the open sandbox: the start snapshot is restored, the tape played
// with controller.Replay, the end manifest read, and the replay compared with its recording
// when Options.Compare. It leaves the sandbox open, unless ctx is cancelled: then it closes
// it at once. The result is never nil; its Tape is nil
// when the replay could not start (an unwritable Output, a snapshot that could not be
// restored, an executor that does not answer). The error is an *controller.IncompleteError
// when some thread could not be played to its end.
func (r *Replay) Play(ctx context.Context) (*Result, error) {
	o := r.opts
	copts := controller.Options{Cwd: r.sb.Cwd(), Env: o.Env, Speed: o.Speed, HarnessPace: o.HarnessPace, Output: o.Output,
		CallTimeout: o.CallTimeout, Logf: o.Logf, Snapshot: r.snapshot, NoWorkspace: o.NoWorkspace, Progress: o.Progress}
	if r.sb.Spec().Scheme == sandbox.SchemeLocal && o.Output != "" {
		copts.WorkspaceExclude = workspace.OwnFiles(r.sb.Cwd(), o.Output)
	}
	// A replay that is stopped (Ctrl-C, a cancelled corpus) closes its sandbox at once: that
	// kills what runs there (the container is removed, a local sandbox's process group
	// killed), so that the player does not wait out the calls in flight nor the executor's
	// grace period.
	stop := context.AfterFunc(ctx, func() { r.kill(ctx) })
	defer stop()
	start := time.Now()
	cres, err := controller.Replay(ctx, r.rec, r.sb, copts)
	res := &Result{Result: cres, Spec: r.sb.Spec().String(), Cwd: r.sb.Cwd(), Transport: r.sb.Transport(), Setup: r.setup}
	if cres == nil {
		res.Result = &controller.Result{}
		return res, err
	}
	if !cres.FirstResult.IsZero() {
		res.FirstResult = cres.FirstResult.Sub(start)
	}
	if o.Compare && cres.Tape != nil {
		res.Report = compare.Compare(r.rec, cres.Tape)
	}
	return res, err
}

// Close closes the sandbox (removing a container or pod TapeBox created) and the temporary
// directory of a bare local spec. It may be called more than once.
func (r *Replay) Close(ctx context.Context) error {
	r.closeOnce.Do(func() {
		if r.sb != nil {
			if err := r.sb.Close(ctx); err != nil {
				r.closeErr = fmt.Errorf("close sandbox %s: %w", r.sb.Spec(), err)
			}
		}
		r.removeTemp()
	})
	return r.closeErr
}

// closeAfter closes the sandbox after a replay, even a cancelled one, within 30 seconds.
func (r *Replay) closeAfter(ctx context.Context) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if err := r.Close(cctx); err != nil {
		r.opts.Logf("%v", err)
	}
}

// kill closes the sandbox of a stopped replay: what runs there is killed at once
// (sandbox.Kill).
func (r *Replay) kill(ctx context.Context) {
	r.closeOnce.Do(func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		if err := r.sb.Kill(cctx); err != nil {
			r.closeErr = fmt.Errorf("close sandbox %s: %w", r.sb.Spec(), err)
			r.opts.Logf("%v", r.closeErr)
		}
		r.removeTemp()
	})
}

func (r *Replay) removeTemp() {
	if r.tmp != "" {
		os.RemoveAll(r.tmp)
	}
}
