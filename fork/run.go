package fork

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/tapebox/tapebox/controller"
	"github.com/tapebox/tapebox/replay"
	"github.com/tapebox/tapebox/sandbox"
	"github.com/tapebox/tapebox/tape"
	"github.com/tapebox/tapebox/workspace"
)

// Options configure Run: a fork server (Config) and the harness command run against it.
type Options struct {
	Config
	// TapePath is where Recording was loaded from: its start snapshot lies beside it.
	TapePath string
	// Workdir is where the recording's start snapshot is restored and Command runs: never
	// the tape's meta.cwd unless the user named it (HostWorkdir picks it). It must pass
	// CheckWorkdir (missing or empty, no system or home directory). Required unless Sandbox.
	Workdir string
	// NoWorkspace skips the restore (Workdir is only created) and the fork tape's
	// workspace.
	NoWorkspace bool
	// Command is the harness and its arguments (required). It runs in Workdir with Env
	// added to this process's environment, with ANTHROPIC_BASE_URL, OPENAI_BASE_URL,
	// GOOGLE_GEMINI_BASE_URL and TAPEBOX_GATEWAY_URL pointing at the fork server, as
	// tapebox record sets them, and PWD set to Workdir (OpenCode takes $PWD for its
	// working directory).
	Command []string
	Env     []string
	// Prepare, when set, is called with the fork server's base URL before Command runs on
	// this machine (not with Sandbox): it returns the command line to run instead and
	// variables to add, the set-up a harness needs to reach that URL (tapebox record's: the
	// Codex CLI's -c overrides of a provider, Gemini CLI's settings home, OpenCode's
	// config file), and what to remove when the command is done.
	Prepare func(base string) (argv, env []string, cleanup func(), err error)
	// Stdin, Stdout and Stderr are the command's; nil means none.
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	// Sandbox, when "docker-image:IMAGE", runs Command in a fresh container of IMAGE, which
	// must hold the harness, instead of on this machine: the start snapshot is restored into
	// its working directory (Workdir, else the tape's meta.cwd, else a fresh /workspace: replay.Cwd), the
	// container gets a bridge network and reaches the fork server on the Docker bridge's
	// address (the docker0 interface of a local engine), and the end manifest is read from
	// it. "" runs Command on this machine in Workdir.
	Sandbox string
	// Verify, when set, is a shell command (sh -c) run in the final workspace after the
	// fork (in the container with Sandbox); Result.Verify says how it went.
	Verify string
	// Listen is the address the fork server listens on when Command runs on this machine;
	// "" is a free loopback port.
	Listen string
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
	// Workdir is where the command ran (its final workspace; inside the container with
	// Options.Sandbox, removed with it).
	Workdir string
	// Verify is the verify command's outcome: "" when none ran, else "pass" or "fail";
	// VerifyOutput holds what it printed.
	Verify       string
	VerifyOutput string
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
	if opts.Sandbox != "" {
		return runSandbox(ctx, opts, th)
	}
	if opts.Workdir == "" {
		return nil, errors.New("fork: no working directory")
	}
	// Checked and used in the same, clean form: "link/../x" is not where the kernel goes.
	if opts.Workdir, err = filepath.Abs(opts.Workdir); err != nil {
		return nil, fmt.Errorf("fork: %w", err)
	}
	if err := CheckWorkdir(opts.Workdir); err != nil {
		return nil, fmt.Errorf("fork: %w", err)
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
	opts.Cwd = opts.Workdir
	srv, err := New(opts.Config)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", cmp.Or(opts.Listen, "127.0.0.1:0"))
	if err != nil {
		srv.Finish("listen failed")
		return nil, fmt.Errorf("fork: listen: %w", err)
	}
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 30 * time.Second}
	go hs.Serve(ln)
	base := "http://" + ln.Addr().String()
	argv, env := opts.Command, opts.Env
	if opts.Prepare != nil {
		pargv, penv, cleanup, err := opts.Prepare(base)
		if err != nil {
			shutdown(hs)
			srv.Finish(err.Error())
			return nil, fmt.Errorf("fork: prepare %s: %w", opts.Command[0], err)
		}
		if cleanup != nil {
			defer cleanup()
		}
		if len(pargv) > 0 {
			argv = pargv
		}
		env = append(append([]string(nil), env...), penv...)
	}

	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	cmd := exec.CommandContext(cctx, argv[0], argv[1:]...)
	cmd.Dir = opts.Workdir
	cmd.Stdin, cmd.Stdout, cmd.Stderr = opts.Stdin, opts.Stdout, opts.Stderr
	cmd.Env = append(append(os.Environ(), env...),
		"ANTHROPIC_BASE_URL="+base, "OPENAI_BASE_URL="+base+"/v1", "GOOGLE_GEMINI_BASE_URL="+base,
		"TAPEBOX_GATEWAY_URL="+base, "PWD="+opts.Workdir)
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
	res.count()
	if opts.Verify != "" && res.Reached {
		cmd := exec.CommandContext(ctx, "sh", "-c", opts.Verify)
		cmd.Dir = opts.Workdir
		out, err := cmd.CombinedOutput()
		res.Verify, res.VerifyOutput = verdict(err), string(out)
	}
	return res.finish(ferr, opts, th)
}

// count fills Served and Live from the fork tape.
func (res *Result) count() {
	if out, err := tape.LoadFile(res.Output); err == nil {
		if f := out.Meta.ForkedFrom; f != nil {
			res.Served = f.Served
		}
		for _, t := range out.Threads {
			res.Live += len(t.Steps) - res.Served[t.ID]
		}
	}
}

func verdict(err error) string {
	if err != nil {
		return "fail"
	}
	return "pass"
}

// finish returns res with the error Run returns.
func (res *Result) finish(ferr error, opts Options, th *tape.Thread) (*Result, error) {
	reason, detail := res.Ended, res.Detail
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

// bridgeAddress is the address of a local Docker engine's default bridge (docker0), where a
// container with a bridge network reaches this machine.
func bridgeAddress() (string, error) {
	ifc, err := net.InterfaceByName("docker0")
	if err != nil {
		return "", fmt.Errorf("the Docker bridge docker0: %w (a docker-image: fork needs a local engine's default bridge)", err)
	}
	addrs, err := ifc.Addrs()
	if err != nil {
		return "", fmt.Errorf("the Docker bridge docker0: %w", err)
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil {
			return n.IP.String(), nil
		}
	}
	return "", errors.New("the Docker bridge docker0 has no IPv4 address")
}

// runSandbox is Run with the command in a fresh container.
func runSandbox(ctx context.Context, opts Options, th *tape.Thread) (*Result, error) {
	rec := opts.Recording
	if opts.Logf == nil {
		opts.Logf = func(string, ...any) {}
	}
	spec, err := sandbox.ParseSpec(opts.Sandbox)
	if err != nil {
		return nil, fmt.Errorf("fork: %w", err)
	}
	if spec.Scheme != sandbox.SchemeDockerImage {
		return nil, fmt.Errorf("fork: sandbox %s: only docker-image:IMAGE is supported (the harness runs in a fresh container)", opts.Sandbox)
	}
	var snap string
	w := rec.Meta.Workspace
	if !opts.NoWorkspace {
		if snap, err = controller.SnapshotFor(opts.TapePath, rec); err != nil {
			return nil, fmt.Errorf("fork: %w", err)
		}
	}
	host, err := bridgeAddress()
	if err != nil {
		return nil, fmt.Errorf("fork: %w", err)
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return nil, fmt.Errorf("fork: listen on the Docker bridge: %w", err)
	}
	base := "http://" + ln.Addr().String()
	// The container's working directory follows the replay's rule: Workdir, else the tape's
	// meta.cwd, else a fresh replay.DefaultCwd, never the image's root.
	cwd := replay.Cwd(spec, rec, replay.Options{Cwd: opts.Workdir, CwdSet: opts.Workdir != "", Logf: opts.Logf})
	env := map[string]string{"ANTHROPIC_BASE_URL": base, "OPENAI_BASE_URL": base + "/v1", "GOOGLE_GEMINI_BASE_URL": base, "TAPEBOX_GATEWAY_URL": base}
	for _, kv := range opts.Env {
		if k, v, ok := strings.Cut(kv, "="); ok {
			env[k] = v
		}
	}
	sb, err := sandbox.Open(ctx, opts.Sandbox, sandbox.Options{Cwd: cwd, Network: "bridge", Env: env, Logf: opts.Logf})
	if err != nil {
		ln.Close()
		return nil, fmt.Errorf("fork: %w", err)
	}
	defer sb.Close(context.WithoutCancel(ctx))
	if snap != "" {
		if err := sb.RestoreWorkspace(ctx, snap, workspace.InfoOf(w)); err != nil {
			ln.Close()
			return nil, fmt.Errorf("fork: %w", err)
		}
	}
	opts.Workspace, opts.Cwd = "", sb.Cwd()
	srv, err := New(opts.Config)
	if err != nil {
		ln.Close()
		return nil, err
	}
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 30 * time.Second}
	go hs.Serve(ln)

	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	grace := cmp.Or(opts.DivergeGrace, 5*time.Second)
	go func() {
		select {
		case <-srv.Diverged():
			if live, _ := srv.Live(); !live {
				select {
				case <-time.After(grace):
					cancel()
				case <-cctx.Done():
				}
			}
		case <-cctx.Done():
		}
	}()
	started := time.Now()
	er, runErr := sb.Exec(cctx, opts.Command)
	res := &Result{Output: opts.Output, Wall: time.Since(started), Workdir: sb.Cwd(),
		RecordedToFork: time.Duration(th.Steps[opts.At].Timing.RequestAt * float64(time.Millisecond))}
	if er != nil {
		if opts.Stdout != nil {
			opts.Stdout.Write(er.Stdout)
		}
		if opts.Stderr != nil {
			opts.Stderr.Write(er.Stderr)
		}
		res.ExitCode = er.ExitCode
	}
	shutdown(hs)
	failed := ""
	switch {
	case runErr != nil:
		failed = runErr.Error()
	case res.ExitCode != 0:
		failed = fmt.Sprintf("%s exited with code %d", opts.Command[0], res.ExitCode)
	}
	if w != nil && !opts.NoWorkspace {
		if err := forkWorkspace(ctx, sb, srv, w, snap, opts.Output); err != nil {
			opts.Logf("fork: workspace: %v", err)
		}
	}
	reason, detail, ferr := srv.Finish(failed)
	res.Ended, res.Detail = reason, detail
	var at time.Time
	res.Reached, at = srv.Live()
	if res.Reached {
		res.ToFork, res.FirstToFork = at.Sub(started), at.Sub(srv.FirstCall())
	}
	if main := rec.Main(); len(main.Steps) > 0 {
		res.RecordedFirstToFork = time.Duration((th.Steps[opts.At].Timing.RequestAt - main.Steps[0].Timing.RequestAt) * float64(time.Millisecond))
	}
	res.count()
	if opts.Verify != "" && res.Reached {
		vr, err := sb.Exec(ctx, []string{"sh", "-c", opts.Verify})
		switch {
		case err != nil:
			res.Verify, res.VerifyOutput = "fail", err.Error()
		default:
			res.Verify = "pass"
			if vr.ExitCode != 0 {
				res.Verify = "fail"
			}
			res.VerifyOutput = string(vr.Stdout) + string(vr.Stderr)
		}
	}
	if runErr != nil && ferr == nil && !res.Reached {
		ferr = fmt.Errorf("run %s in %s: %w", opts.Command[0], opts.Sandbox, runErr)
		if missingCommand(runErr) {
			ferr = fmt.Errorf("%w\n%s", ferr, MissingHarness(opts.Command[0], spec.Target))
		}
	}
	return res.finish(ferr, opts, th)
}

// HarnessImage is the image make harness-image (scripts/harness-image.sh) builds from make
// sandbox-image's: Gemini CLI and OpenCode, with the set-up a sandboxed fork of each needs.
const HarnessImage = "tapebox/harnesses:bookworm"

// MissingHarness says what to do when the image of a sandboxed fork has no command on its
// PATH.
func MissingHarness(command, image string) string {
	return fmt.Sprintf("%s is not on the PATH of the image %s: a sandboxed fork runs CMD inside the image, which must hold the harness and its set-up (make harness-image builds %s with Gemini CLI and OpenCode; docs/fork.md)", command, image, HarnessImage)
}

// missingCommand says whether err is the sandbox's report of a command it could not start:
// exit status 126 or 127 with the runtime's "not found".
func missingCommand(err error) bool {
	var ee *sandbox.ExitError
	if !errors.As(err, &ee) || ee.Code != 126 && ee.Code != 127 {
		return false
	}
	low := strings.ToLower(ee.Stderr)
	return strings.Contains(low, "not found") || strings.Contains(low, "no such file")
}

// forkWorkspace gives the fork tape a copy of the recording's start snapshot, beside it, and
// the container's end manifest.
func forkWorkspace(ctx context.Context, sb *sandbox.Sandbox, srv *Server, w *tape.Workspace, snap, output string) error {
	m, err := sb.WorkspaceManifest(ctx, workspace.Recorded(w))
	if err != nil {
		return err
	}
	out := &tape.Workspace{Exclude: w.Exclude, End: m.TapeEntries()}
	if snap != "" {
		dst := workspace.SnapshotPath(output)
		if err := copyFile(snap, dst); err != nil {
			return err
		}
		out.Snapshot, out.Digest, out.Size, out.Files, out.Bytes = filepath.Base(dst), w.Digest, w.Size, w.Files, w.Bytes
	}
	return srv.SetWorkspace(out)
}

func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(to)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

func shutdown(hs *http.Server) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	hs.Shutdown(ctx)
}
