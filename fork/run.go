package fork

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"time"

	"github.com/tapebox/tapebox/controller"
	"github.com/tapebox/tapebox/tape"
)

// Options configure Run: a fork server (Config) and the harness command run against it.
type Options struct {
	Config
	// TapePath is where Recording was loaded from: its start snapshot lies beside it.
	TapePath string
	// Workdir is where the recording's start snapshot is restored and Command runs; it must
	// be missing or empty. Required.
	Workdir string
	// NoWorkspace skips the restore (Workdir is only created) and the fork tape's
	// workspace.
	NoWorkspace bool
	// Command is the harness and its arguments (required). It runs in Workdir with Env
	// added to this process's environment, and with ANTHROPIC_BASE_URL, OPENAI_BASE_URL and
	// TAPEBOX_GATEWAY_URL pointing at the fork server, as tapebox record sets them.
	Command []string
	Env     []string
	// Stdin, Stdout and Stderr are the command's; nil means none.
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	// DivergeGrace is how long the command may go on once its requests stopped matching
	// the recording before the fork point; 0 means 5 seconds. Then it is interrupted.
	DivergeGrace time.Duration
}

// Result is what a fork did.
type Result struct {
	// Output is the fork tape's path.
	Output string
	// Ended and Detail are the fork tape's meta.ended.
	Ended  tape.EndReason
	Detail string
	// ExitCode is the command's.
	ExitCode int
	// Reached says whether the fork point was reached; ToFork is how long after the
	// command started its first live request arrived, and RecordedToFork how long the
	// recording took to the same step (its request_at).
	Reached        bool
	ToFork         time.Duration
	RecordedToFork time.Duration
	// FirstToFork and RecordedFirstToFork are the same from the harness's first model call
	// on: the harness's own start-up, which a fork cannot save, left out.
	FirstToFork         time.Duration
	RecordedFirstToFork time.Duration
	// Served counts the steps served from the recording per thread (the upstream requests
	// the fork saved); Live counts the steps recorded live.
	Served map[string]int
	Live   int
	// Wall is the command's run time.
	Wall time.Duration
	// Workdir is where the command ran (its final workspace).
	Workdir string
}

// ServedSteps is the number of steps served from the recording, all threads together.
func (r *Result) ServedSteps() int {
	n := 0
	for _, v := range r.Served {
		n += v
	}
	return n
}

// ErrDiverged is wrapped by Run's error when the harness stopped matching the recording
// before the fork point.
var ErrDiverged = errors.New("the harness diverged from the recording before the fork point")

// Run forks: it checks the fork point, restores the workspace, serves the fork on a free
// loopback port, runs the command against it and finishes the fork tape. The error is nil
// when the command ran and the fork point was reached, whatever the live part did (see
// Result.Ended and ExitCode).
func Run(ctx context.Context, opts Options) (*Result, error) {
	rec := opts.Recording
	if rec == nil {
		return nil, errors.New("fork: no recording")
	}
	th, err := Check(rec, opts.Thread, opts.At)
	if err != nil {
		return nil, fmt.Errorf("fork %s: %w", opts.TapePath, err)
	}
	if len(opts.Command) == 0 {
		return nil, errors.New("fork: no command")
	}
	if opts.Workdir == "" {
		return nil, errors.New("fork: no working directory")
	}
	if opts.NoWorkspace {
		if err := os.MkdirAll(opts.Workdir, 0o755); err != nil {
			return nil, fmt.Errorf("fork: %w", err)
		}
	} else {
		snap, err := controller.SnapshotFor(opts.TapePath, rec)
		if err != nil {
			return nil, fmt.Errorf("fork: %w", err)
		}
		if err := controller.RestoreSnapshot(ctx, rec, snap, opts.Workdir); err != nil {
			return nil, fmt.Errorf("fork: %w", err)
		}
		opts.Workspace = opts.Workdir
	}
	srv, err := New(opts.Config)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		srv.Finish("listen failed")
		return nil, fmt.Errorf("fork: listen: %w", err)
	}
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 30 * time.Second}
	go hs.Serve(ln)
	base := "http://" + ln.Addr().String()

	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	cmd := exec.CommandContext(cctx, opts.Command[0], opts.Command[1:]...)
	cmd.Dir = opts.Workdir
	cmd.Stdin, cmd.Stdout, cmd.Stderr = opts.Stdin, opts.Stdout, opts.Stderr
	cmd.Env = append(append(os.Environ(), opts.Env...),
		"ANTHROPIC_BASE_URL="+base, "OPENAI_BASE_URL="+base+"/v1", "TAPEBOX_GATEWAY_URL="+base)
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 10 * time.Second
	grace := opts.DivergeGrace
	if grace == 0 {
		grace = 5 * time.Second
	}
	go func() {
		select {
		case <-srv.Diverged():
			if live, _ := srv.Live(); !live {
				t := time.NewTimer(grace)
				defer t.Stop()
				select {
				case <-t.C:
					cancel()
				case <-cctx.Done():
				}
			}
		case <-cctx.Done():
		}
	}()
	started := time.Now()
	runErr := cmd.Run()
	wall := time.Since(started)
	res := &Result{Output: opts.Output, Wall: wall, Workdir: opts.Workdir,
		RecordedToFork: time.Duration(th.Steps[opts.At].Timing.RequestAt * float64(time.Millisecond))}
	var ee *exec.ExitError
	failed := ""
	switch {
	case runErr == nil:
	case errors.As(runErr, &ee):
		res.ExitCode = ee.ExitCode()
		if res.ExitCode < 0 {
			res.ExitCode = 128 + 2
		}
		failed = fmt.Sprintf("%s exited with code %d", opts.Command[0], res.ExitCode)
	default:
		shutdown(hs)
		srv.Finish(runErr.Error())
		return nil, fmt.Errorf("fork: run %s: %w", opts.Command[0], runErr)
	}
	shutdown(hs)
	reason, detail, ferr := srv.Finish(failed)
	res.Ended, res.Detail = reason, detail
	res.Reached, _ = srv.Live()
	if _, at := srv.Live(); res.Reached {
		res.ToFork = at.Sub(started)
		res.FirstToFork = at.Sub(srv.FirstCall())
	}
	if main := rec.Main(); len(main.Steps) > 0 {
		res.RecordedFirstToFork = time.Duration((th.Steps[opts.At].Timing.RequestAt - main.Steps[0].Timing.RequestAt) * float64(time.Millisecond))
	}
	if out, err := tape.LoadFile(opts.Output); err == nil {
		if f := out.Meta.ForkedFrom; f != nil {
			res.Served = f.Served
		}
		for _, t := range out.Threads {
			res.Live += len(t.Steps) - res.Served[t.ID]
		}
	}
	if ferr != nil {
		return res, fmt.Errorf("fork: %w", ferr)
	}
	if !res.Reached {
		if reason == tape.EndDiverged {
			return res, fmt.Errorf("fork %s: %w: %s", opts.TapePath, ErrDiverged, detail)
		}
		return res, fmt.Errorf("fork %s: the fork point (thread %s step %d) was not reached: %s", opts.TapePath, th.ID, opts.At, detail)
	}
	return res, nil
}

func shutdown(hs *http.Server) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	hs.Shutdown(ctx)
}
