package local

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/tapebox/tapebox/sandbox"
	"github.com/tapebox/tapebox/sandbox/internal/kit"
	"github.com/tapebox/tapebox/workspace"
)

// Where things are inside a jailed local sandbox.
const (
	// jailHome is HOME: a directory of the sandbox's own /tmp, so that what tools keep in
	// HOME neither reaches the host's home nor shows up in the workspace.
	jailHome = "/tmp/tapebox-home"
	// jailExecutor is where the host's tapebox-exec is bound read-only.
	jailExecutor = "/run/tapebox/tapebox-exec"
	// jailPATH is PATH when the host has none, or none of its entries is in the jail.
	jailPATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
)

// Backend runs everything in a directory of this machine: under bubblewrap (jail)
// where it can, else as plain host processes that isolate nothing. Either way the commands
// get a minimal environment, never the host's whole one.
type Backend struct {
	spec sandbox.Spec
	dir  string
	env  []string
	jail *jail // nil: not isolated
}

var _ sandbox.Backend = (*Backend)(nil)

func init() { sandbox.Register(sandbox.SchemeLocal, Open) }

// Isolated reports whether the sandbox runs its commands under bubblewrap.
func (l *Backend) Isolated() bool { return l.jail != nil }

// Open opens "local:DIR" or "unsafe-local:DIR" (spec.Unsafe): see the package doc.
// sandbox.Open calls it for the local scheme.
func Open(ctx context.Context, spec sandbox.Spec, opts sandbox.Options) (*sandbox.Sandbox, error) {
	dir, err := filepath.Abs(spec.Target)
	if err != nil {
		return nil, fmt.Errorf("open sandbox %s: %w", spec, err)
	}
	if dir == "/" && !spec.Unsafe {
		return nil, fmt.Errorf("open sandbox %s: %w: / cannot be isolated (only DIR is writable, and it would be the whole machine); say unsafe-local:/ to run there without isolation", spec, sandbox.ErrBadSpec)
	}
	// What replays killed before their Close left (set-id bits, private directories) goes
	// before this one makes its own.
	reapLeftovers(func(format string, args ...any) {
		kit.Logf(opts.Logf)("sandbox %s: %s", spec, fmt.Sprintf(format, args...))
	})
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("open sandbox %s: create the directory: %w", spec, err)
	}
	l := &Backend{spec: spec, dir: dir}
	info := sandbox.Info{Cwd: dir, Arch: runtime.GOARCH}
	// The executor is found now but only needed by Start, so a sandbox used for Exec and
	// Snapshot works without one.
	switch {
	case opts.ExecutorPath != "":
		info.Executor = opts.ExecutorPath
		if runtime.GOOS == "linux" {
			if err := sandbox.CheckExecutorArch(opts.ExecutorPath, runtime.GOARCH, "this host"); err != nil {
				return nil, fmt.Errorf("open sandbox %s: %w", spec, err)
			}
		}
	case runtime.GOOS == "linux":
		info.Executor, info.ExecutorErr = sandbox.ExecutorPath(ctx, runtime.GOARCH)
	default:
		// ExecutorPath finds Linux builds; elsewhere use a host build on the PATH.
		info.Executor, info.ExecutorErr = exec.LookPath(sandbox.ExecutorName)
		if info.ExecutorErr != nil {
			info.ExecutorErr = fmt.Errorf("%w: %s is not on PATH (go install %s/cmd/tapebox-exec) and Options.ExecutorPath is empty",
				sandbox.ErrNoExecutor, sandbox.ExecutorName, sandbox.Module)
		}
	}
	if info.ExecutorErr != nil {
		info.ExecutorErr = fmt.Errorf("start the executor in %s: %w", spec, info.ExecutorErr)
	}
	const risk = "the tape's commands run on this machine with your rights: they can read and write your files outside DIR and use the network (the environment is minimal)"
	if spec.Unsafe {
		warnf(opts, "warning: sandbox %s is NOT isolated: %s", spec, risk)
	} else {
		exe := ""
		if info.ExecutorErr == nil {
			if exe, err = filepath.Abs(info.Executor); err != nil {
				return nil, fmt.Errorf("open sandbox %s: %w", spec, err)
			}
		}
		j, err := openJail(ctx, dir, exe)
		if errors.Is(err, errNotReady) {
			// Not a machine that cannot isolate: a slow one, or a caller that gave up.
			return nil, fmt.Errorf("open sandbox %s: %w", spec, err)
		}
		if err != nil {
			warnf(opts, "warning: sandbox %s is NOT isolated: %v; %s. Spell it unsafe-local:DIR to say you mean it", spec, err, risk)
		} else {
			l.jail = j
			if exe != "" {
				info.Executor = jailExecutor
			}
			kit.Logf(opts.Logf)("sandbox %s: isolated with bubblewrap: only %s is writable, no network, its own /tmp and HOME, a minimal environment", spec, dir)
		}
	}
	l.env = localEnv(l.jail, opts.Env)
	return sandbox.New(spec, l, info), nil
}

// warnf gives a warning to Options.Logf, or to the standard error when there is none: a
// sandbox that is not isolated must not go unsaid.
func warnf(opts sandbox.Options, format string, args ...any) {
	if opts.Logf != nil {
		opts.Logf(format, args...)
		return
	}
	fmt.Fprintf(os.Stderr, "tapebox: "+format+"\n", args...)
}

// localEnvKeys are the host variables a local sandbox passes on (with LC_*): what commands
// need to find programs and speak the user's language, none that carries a credential.
var localEnvKeys = []string{"PATH", "HOME", "TMPDIR", "SHELL", "USER", "LOGNAME", "LANG", "LANGUAGE", "TERM", "TZ"}

// localEnv is the environment of a local sandbox's commands: localEnvKeys from the host's,
// then extra (Options.Env). In a jail PATH keeps only the entries the jail sees, HOME is
// jailHome and TMPDIR is unset (/tmp is the sandbox's own).
func localEnv(j *jail, extra map[string]string) []string {
	var env []string
	hasPath := false
	for _, kv := range os.Environ() {
		k, v, _ := strings.Cut(kv, "=")
		if !slices.Contains(localEnvKeys, k) && !strings.HasPrefix(k, "LC_") {
			continue
		}
		if j != nil {
			switch k {
			case "HOME", "TMPDIR":
				continue
			case "PATH":
				v = j.path(v)
			case "SHELL":
				if !jailVisible(v) {
					continue
				}
			}
		}
		hasPath = hasPath || k == "PATH"
		env = append(env, k+"="+v)
	}
	if !hasPath {
		env = append(env, "PATH="+jailPATH)
	}
	if j != nil {
		env = append(env, "HOME="+jailHome)
	}
	return append(env, kit.EnvList(extra)...)
}

// command is the host command that runs argv in the sandbox: argv itself, or bwrap with
// the files it needs as fds 3 and on. run is exec.Command or a closure over
// exec.CommandContext.
func (l *Backend) command(run func(string, ...string) *exec.Cmd, argv []string) *exec.Cmd {
	name, args, files := argv[0], argv[1:], []*os.File(nil)
	if l.jail != nil {
		name, args, files = l.jail.command(argv)
	}
	cmd := run(name, args...)
	cmd.Dir, cmd.Env, cmd.ExtraFiles = l.dir, l.env, files
	return cmd
}

// StartExecutor starts the executor as Start does, on its stdin and stdout.
func (l *Backend) StartExecutor(ctx context.Context, argv []string) (*sandbox.Session, error) {
	return l.Start(ctx, argv)
}

// Transport is "pipes".
func (l *Backend) Transport() string { return "pipes" }

// Start runs argv in the directory (under bwrap when the sandbox is jailed) with pipes for
// its stdio.
func (l *Backend) Start(ctx context.Context, argv []string) (*sandbox.Session, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("start %s in %s: %w", argv[0], l.spec, err)
	}
	// Not CommandContext: ctx bounds the start, the session outlives it.
	cmd := l.command(exec.Command, argv)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("start %s in %s: %w", argv[0], l.spec, err)
	}
	// Our own pipe, not StdoutPipe: Wait must not close the reader before it is drained.
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("start %s in %s: %w", argv[0], l.spec, err)
	}
	s := sandbox.NewSession(stdin, pr)
	cmd.Stdout, cmd.Stderr = pw, s.StderrSink()
	// A background child that keeps stderr open must not hold Wait forever.
	cmd.WaitDelay = time.Second
	if err := cmd.Start(); err != nil {
		pr.Close()
		pw.Close()
		stdin.Close()
		return nil, fmt.Errorf("start %s in %s: %w", argv[0], l.spec, err)
	}
	pw.Close()
	go func() {
		err := cmd.Wait()
		var ee *exec.ExitError
		if errors.As(err, &ee) && ee.Exited() {
			err = sandbox.NewExitError(argv[0], ee.ExitCode(), s.Stderr())
		} else if err != nil {
			err = fmt.Errorf("session %s in %s: %w", argv[0], l.spec, err)
		}
		s.Finish(err)
	}()
	s.SetKill(func() { _ = cmd.Process.Kill() })
	s.SetStop(func() error {
		_ = stdin.Close()
		select {
		case <-s.Done():
		case <-time.After(sandbox.SessionGrace):
			_ = cmd.Process.Kill()
			<-s.Done()
			pr.Close()
			return nil // ended as Close asked; Wait reports the kill
		}
		pr.Close()
		return sandbox.CloseResult(s.Wait())
	})
	return s, nil
}

// Exec runs argv in the directory (under bwrap when jailed) and waits for its exit status.
func (l *Backend) Exec(ctx context.Context, argv []string) (*sandbox.ExecResult, error) {
	cmd := l.command(func(name string, args ...string) *exec.Cmd { return exec.CommandContext(ctx, name, args...) }, argv)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = time.Second
	err := cmd.Run()
	res := &sandbox.ExecResult{Stdout: stdout.Bytes(), Stderr: stderr.Bytes(), ExitCode: cmd.ProcessState.ExitCode()}
	var ee *exec.ExitError
	if err != nil && !(errors.As(err, &ee) && ee.Exited() && ctx.Err() == nil) {
		return nil, fmt.Errorf("exec %s in %s: %w", argv[0], l.spec, err)
	}
	if l.jail != nil && res.ExitCode == 1 && bytes.HasPrefix(res.Stderr, []byte("bwrap: ")) {
		// bwrap's own failure, such as a command not found, is not the command's exit status.
		return nil, fmt.Errorf("exec %s in %s: %s", argv[0], l.spec, bytes.TrimSpace(res.Stderr))
	}
	return res, nil
}

func (l *Backend) abs(dir string) string {
	if filepath.IsAbs(dir) {
		return filepath.Clean(dir)
	}
	return filepath.Join(l.dir, dir)
}

// Snapshot reads the tree under dir from the host's file system.
func (l *Backend) Snapshot(ctx context.Context, dir string) (map[string]sandbox.File, error) {
	abs := l.abs(dir)
	if fi, err := os.Stat(abs); err != nil || !fi.IsDir() {
		if err == nil {
			err = errors.New("not a directory")
		}
		return nil, fmt.Errorf("snapshot %s in %s: %w", abs, l.spec, err)
	}
	files, err := sandbox.ReadDir(abs)
	if err != nil {
		return nil, fmt.Errorf("snapshot %s in %s: %w", abs, l.spec, err)
	}
	return files, nil
}

// WriteFiles writes files under dir on the host's file system.
func (l *Backend) WriteFiles(ctx context.Context, dir string, files map[string]sandbox.File) error {
	abs := l.abs(dir)
	if err := sandbox.WriteDir(abs, files); err != nil {
		return fmt.Errorf("write files to %s in %s: %w", abs, l.spec, err)
	}
	return nil
}

// RestoreWorkspace extracts the snapshot into the directory (workspace.Restore).
func (l *Backend) RestoreWorkspace(ctx context.Context, snapshot *os.File, info workspace.Info) error {
	if err := workspace.Restore(ctx, snapshot, info, l.dir); err != nil {
		return fmt.Errorf("restore workspace in %s: %w", l.spec, err)
	}
	return nil
}

// WorkspaceManifest reads the directory's manifest (workspace.ManifestDir), bounded as
// a directory the tape's commands wrote is (workspace.Options.Untrusted).
func (l *Backend) WorkspaceManifest(ctx context.Context, opts workspace.Options) (workspace.Manifest, error) {
	opts.Untrusted = true
	m, err := workspace.ManifestDir(ctx, l.dir, opts)
	if err != nil {
		return nil, fmt.Errorf("workspace manifest in %s: %w", l.spec, err)
	}
	return m, nil
}

// Close ends the open sessions and, for a jailed sandbox, the jail; then it clears the
// setuid and setgid bits of DIR's files (see stripSetID).
func (l *Backend) Close(ctx context.Context, open []*sandbox.Session) error {
	sandbox.CloseSessions(open)
	if l.jail != nil {
		err := l.jail.close()
		if serr := stripSetID(l.dir); serr != nil && err == nil {
			err = serr
		}
		if err != nil {
			return fmt.Errorf("close sandbox %s: %w", l.spec, err)
		}
	}
	return nil
}
