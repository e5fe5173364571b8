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
	th, err := opts.check()
	if err != nil {
		return nil, err
	}
	if opts.Sandbox != "" {
		return runSandbox(ctx, opts, th)
	}
	if err := opts.restoreWorkdir(ctx); err != nil {
		return nil, fmt.Errorf("fork: %w", err)
	}
	srv, err := New(opts.Config)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", cmp.Or(opts.Listen, "127.0.0.1:0"))
	if err != nil {
		srv.Finish("listen failed")
		return nil, fmt.Errorf("fork: listen: %w", err)
	}
	hs := serve(srv, ln)
	base := "http://" + ln.Addr().String()
	argv, env, cleanup, err := opts.prepare(base)
	if err != nil {
		shutdown(hs)
		srv.Finish(err.Error())
		return nil, fmt.Errorf("fork: prepare %s: %w", opts.Command[0], err)
	}
	defer cleanup()

	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go interruptOnDivergence(cctx, cancel, srv, opts.DivergeGrace)
	cmd := opts.hostCommand(cctx, argv, env, base)
	started := time.Now()
	runErr := cmd.Run()
	res := &Result{Output: opts.Output, Wall: time.Since(started), Workdir: opts.Workdir}
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
	ferr := res.settle(srv, failed, started, opts, th)
	if opts.Verify != "" && res.Reached {
		cmd := exec.CommandContext(ctx, "sh", "-c", opts.Verify)
		cmd.Dir = opts.Workdir
		out, err := cmd.CombinedOutput()
		res.Verify, res.VerifyOutput = verdict(err), string(out)
	}
	return res.finish(ferr, opts, th)
}

// check returns the thread of the fork point once the options name a recording, a fork
// point in it and a command.
func (opts *Options) check() (*tape.Thread, error) {
	if opts.Recording == nil {
		return nil, errors.New("fork: no recording")
	}
	th, err := Check(opts.Recording, opts.Thread, opts.At)
	if err != nil {
		return nil, fmt.Errorf("fork %s: %w", opts.TapePath, err)
	}
	if len(opts.Command) == 0 {
		return nil, errors.New("fork: no command")
	}
	return th, nil
}

// restoreWorkdir makes Workdir absolute, checks it (CheckWorkdir) and restores the
// recording's start snapshot there (only creates it with NoWorkspace); the fork server then
// works there (Config.Cwd) and, with a snapshot, takes the fork tape's workspace from it.
func (opts *Options) restoreWorkdir(ctx context.Context) error {
	if opts.Workdir == "" {
		return errors.New("no working directory")
	}
	// Checked and used in the same, clean form: "link/../x" is not where the kernel goes.
	var err error
	if opts.Workdir, err = filepath.Abs(opts.Workdir); err != nil {
		return err
	}
	if err := CheckWorkdir(opts.Workdir); err != nil {
		return err
	}
	opts.Cwd = opts.Workdir
	if opts.NoWorkspace {
		return os.MkdirAll(opts.Workdir, 0o755)
	}
	snap, err := controller.SnapshotFor(opts.TapePath, opts.Recording)
	if err != nil {
		return err
	}
	if err := controller.RestoreSnapshot(ctx, opts.Recording, snap, opts.Workdir); err != nil {
		return err
	}
	opts.Workspace = opts.Workdir
	return nil
}

// prepare returns the command line and the variables to add for a fork server at base
// (Options.Prepare's, else Command and Env) and what to call when the command is done.
func (opts *Options) prepare(base string) (argv, env []string, cleanup func(), err error) {
	argv, env, cleanup = opts.Command, opts.Env, func() {}
	if opts.Prepare == nil {
		return argv, env, cleanup, nil
	}
	pargv, penv, pcleanup, err := opts.Prepare(base)
	if err != nil {
		return nil, nil, nil, err
	}
	if pcleanup != nil {
		cleanup = pcleanup
	}
	if len(pargv) > 0 {
		argv = pargv
	}
	return argv, append(append([]string(nil), env...), penv...), cleanup, nil
}

// hostCommand is argv run in Workdir on this machine against the fork server at base:
// interrupted (then killed 10 seconds later) when ctx is done.
func (opts *Options) hostCommand(ctx context.Context, argv, env []string, base string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = opts.Workdir
	cmd.Stdin, cmd.Stdout, cmd.Stderr = opts.Stdin, opts.Stdout, opts.Stderr
	cmd.Env = append(append(os.Environ(), env...),
		"ANTHROPIC_BASE_URL="+base, "OPENAI_BASE_URL="+base+"/v1", "GOOGLE_GEMINI_BASE_URL="+base,
		"TAPEBOX_GATEWAY_URL="+base, "PWD="+opts.Workdir)
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 10 * time.Second
	return cmd
}

// serve serves srv on ln until shutdown.
func serve(srv *Server, ln net.Listener) *http.Server {
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 30 * time.Second}
	go hs.Serve(ln)
	return hs
}

// interruptOnDivergence calls cancel (which interrupts the command) grace after the harness
// diverged from the recording before the fork point (0: 5 seconds), unless ctx is done first.
func interruptOnDivergence(ctx context.Context, cancel context.CancelFunc, srv *Server, grace time.Duration) {
	select {
	case <-srv.Diverged():
		if live, _ := srv.Live(); live {
			return
		}
		t := time.NewTimer(cmp.Or(grace, 5*time.Second))
		defer t.Stop()
		select {
		case <-t.C:
			cancel()
		case <-ctx.Done():
		}
	case <-ctx.Done():
	}
}

// settle finishes the fork tape (failed: why the command failed, "" if it did not) and fills
// res from the server and the tape: how the tape ended, whether and when the fork point was
// reached (the command having started at started), when the recording reached it, and the
// steps served and live. It returns Finish's error.
func (res *Result) settle(srv *Server, failed string, started time.Time, opts Options, th *tape.Thread) error {
	reason, detail, ferr := srv.Finish(failed)
	res.Ended, res.Detail = reason, detail
	var at time.Time
	res.Reached, at = srv.Live()
	if res.Reached {
		res.ToFork, res.FirstToFork = at.Sub(started), at.Sub(srv.FirstCall())
	}
	forkAt := th.Steps[opts.At].Timing.RequestAt
	res.RecordedToFork = msDuration(forkAt)
	if main := opts.Recording.Main(); len(main.Steps) > 0 {
		res.RecordedFirstToFork = msDuration(forkAt - main.Steps[0].Timing.RequestAt)
	}
	res.count()
	return ferr
}

func msDuration(ms float64) time.Duration { return time.Duration(ms * float64(time.Millisecond)) }

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
	if !opts.NoWorkspace {
		if snap, err = controller.SnapshotFor(opts.TapePath, opts.Recording); err != nil {
			return nil, fmt.Errorf("fork: %w", err)
		}
	}
	ln, base, err := listenOnBridge()
	if err != nil {
		return nil, fmt.Errorf("fork: %w", err)
	}
	sb, err := opts.openContainer(ctx, spec, base, snap)
	if err != nil {
		ln.Close()
		return nil, fmt.Errorf("fork: %w", err)
	}
	defer sb.Close(context.WithoutCancel(ctx))
	opts.Workspace, opts.Cwd = "", sb.Cwd()
	srv, err := New(opts.Config)
	if err != nil {
		ln.Close()
		return nil, err
	}
	hs := serve(srv, ln)

	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go interruptOnDivergence(cctx, cancel, srv, opts.DivergeGrace)
	started := time.Now()
	er, runErr := sb.Exec(cctx, opts.Command)
	res := &Result{Output: opts.Output, Wall: time.Since(started), Workdir: sb.Cwd()}
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
	if w := opts.Recording.Meta.Workspace; w != nil && !opts.NoWorkspace {
		if err := forkWorkspace(ctx, sb, srv, w, snap, opts.Output); err != nil {
			opts.Logf("fork: workspace: %v", err)
		}
	}
	ferr := res.settle(srv, failed, started, opts, th)
	if opts.Verify != "" && res.Reached {
		res.Verify, res.VerifyOutput = verifyIn(ctx, sb, opts.Verify)
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

// listenOnBridge listens on a free port of the Docker bridge's address (bridgeAddress),
// where a container reaches the fork server at base.
func listenOnBridge() (ln net.Listener, base string, err error) {
	host, err := bridgeAddress()
	if err != nil {
		return nil, "", err
	}
	ln, err = net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return nil, "", fmt.Errorf("listen on the Docker bridge: %w", err)
	}
	return ln, "http://" + ln.Addr().String(), nil
}

// openContainer opens the fresh container the command runs in: a bridge network, the
// provider base URLs pointing at the fork server at base (Env added), and the start
// snapshot snap (unless "") restored into its working directory, which follows the replay's
// rule: Workdir, else the tape's meta.cwd, else a fresh replay.DefaultCwd, never the image's
// root.
func (opts *Options) openContainer(ctx context.Context, spec sandbox.Spec, base, snap string) (*sandbox.Sandbox, error) {
	rec := opts.Recording
	cwd := replay.Cwd(spec, rec, replay.Options{Cwd: opts.Workdir, CwdSet: opts.Workdir != "", Logf: opts.Logf})
	env := map[string]string{"ANTHROPIC_BASE_URL": base, "OPENAI_BASE_URL": base + "/v1", "GOOGLE_GEMINI_BASE_URL": base, "TAPEBOX_GATEWAY_URL": base}
	for _, kv := range opts.Env {
		if k, v, ok := strings.Cut(kv, "="); ok {
			env[k] = v
		}
	}
	sb, err := sandbox.Open(ctx, opts.Sandbox, sandbox.Options{Cwd: cwd, Network: "bridge", Env: env, Logf: opts.Logf})
	if err != nil {
		return nil, err
	}
	if snap != "" {
		if err := sb.RestoreWorkspace(ctx, snap, workspace.InfoOf(rec.Meta.Workspace)); err != nil {
			sb.Close(context.WithoutCancel(ctx))
			return nil, err
		}
	}
	return sb, nil
}

// verifyIn runs the verify command in the container: "pass" or "fail", and what it printed.
func verifyIn(ctx context.Context, sb *sandbox.Sandbox, verify string) (outcome, output string) {
	vr, err := sb.Exec(ctx, []string{"sh", "-c", verify})
	if err != nil {
		return "fail", err.Error()
	}
	outcome = "pass"
	if vr.ExitCode != 0 {
		outcome = "fail"
	}
	return outcome, string(vr.Stdout) + string(vr.Stderr)
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
