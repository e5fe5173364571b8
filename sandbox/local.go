package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"time"

	"github.com/tapebox/tapebox/workspace"
)

// localBackend runs everything as host processes in a directory. It isolates nothing.
type localBackend struct {
	spec Spec
	dir  string
	env  []string
}

func openLocal(ctx context.Context, spec Spec, opts Options) (*Sandbox, error) {
	dir, err := filepath.Abs(spec.Target)
	if err != nil {
		return nil, fmt.Errorf("open sandbox %s: %w", spec, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("open sandbox %s: create the directory: %w", spec, err)
	}
	l := &localBackend{spec: spec, dir: dir, env: append(os.Environ(), envList(opts.Env)...)}
	sb := &Sandbox{spec: spec, cwd: dir, arch: runtime.GOARCH, b: l}
	// The executor is found now but only needed by Start, so a sandbox used for Exec and
	// Snapshot works without one.
	switch {
	case opts.ExecutorPath != "":
		sb.executor = opts.ExecutorPath
		if runtime.GOOS == "linux" {
			if err := checkExecutorArch(opts.ExecutorPath, runtime.GOARCH, "this host"); err != nil {
				return nil, fmt.Errorf("open sandbox %s: %w", spec, err)
			}
		}
	case runtime.GOOS == "linux":
		sb.executor, sb.executorErr = ExecutorPath(ctx, runtime.GOARCH)
	default:
		// ExecutorPath finds Linux builds; elsewhere use a host build on the PATH.
		sb.executor, sb.executorErr = exec.LookPath(ExecutorName)
		if sb.executorErr != nil {
			sb.executorErr = fmt.Errorf("%w: %s is not on PATH (go install %s/cmd/tapebox-exec) and Options.ExecutorPath is empty",
				ErrNoExecutor, ExecutorName, Module)
		}
	}
	if sb.executorErr != nil {
		sb.executorErr = fmt.Errorf("start the executor in %s: %w", spec, sb.executorErr)
	}
	return sb, nil
}

func (l *localBackend) startExecutor(ctx context.Context, argv []string) (*Session, error) {
	return l.start(ctx, argv)
}

func (l *localBackend) transport() string { return "pipes" }

func (l *localBackend) start(ctx context.Context, argv []string) (*Session, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("start %s in %s: %w", argv[0], l.spec, err)
	}
	// Not CommandContext: ctx bounds the start, the session outlives it.
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir, cmd.Env = l.dir, l.env
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("start %s in %s: %w", argv[0], l.spec, err)
	}
	// Our own pipe, not StdoutPipe: Wait must not close the reader before it is drained.
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("start %s in %s: %w", argv[0], l.spec, err)
	}
	s := &Session{Stdin: stdin, Stdout: pr, stderr: newTailBuffer(stderrTailSize), done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = pw, s.stderr
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
			stderr := s.stderr.String()
			err = &ExitError{Command: argv[0], Code: ee.ExitCode(), Stderr: stderr, Hint: exitHint(argv[0], ee.ExitCode(), stderr)}
		} else if err != nil {
			err = fmt.Errorf("session %s in %s: %w", argv[0], l.spec, err)
		}
		s.finish(err)
	}()
	s.stop = func() error {
		_ = stdin.Close()
		select {
		case <-s.done:
		case <-time.After(sessionGrace):
			_ = cmd.Process.Kill()
			<-s.done
			pr.Close()
			return nil // ended as Close asked; Wait reports the kill
		}
		pr.Close()
		return closeResult(s.err)
	}
	return s, nil
}

func (l *localBackend) exec(ctx context.Context, argv []string) (*ExecResult, error) {
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir, cmd.Env = l.dir, l.env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = time.Second
	err := cmd.Run()
	res := &ExecResult{Stdout: stdout.Bytes(), Stderr: stderr.Bytes(), ExitCode: cmd.ProcessState.ExitCode()}
	var ee *exec.ExitError
	if err != nil && !(errors.As(err, &ee) && ee.Exited() && ctx.Err() == nil) {
		return nil, fmt.Errorf("exec %s in %s: %w", argv[0], l.spec, err)
	}
	return res, nil
}

func (l *localBackend) abs(dir string) string {
	if filepath.IsAbs(dir) {
		return filepath.Clean(dir)
	}
	return filepath.Join(l.dir, dir)
}

func (l *localBackend) snapshot(ctx context.Context, dir string) (map[string]File, error) {
	abs := l.abs(dir)
	if fi, err := os.Stat(abs); err != nil || !fi.IsDir() {
		if err == nil {
			err = errors.New("not a directory")
		}
		return nil, fmt.Errorf("snapshot %s in %s: %w", abs, l.spec, err)
	}
	files, err := snapshotDir(abs)
	if err != nil {
		return nil, fmt.Errorf("snapshot %s in %s: %w", abs, l.spec, err)
	}
	return files, nil
}

func (l *localBackend) writeFiles(ctx context.Context, dir string, files map[string]File) error {
	abs := l.abs(dir)
	if err := writeDir(abs, files); err != nil {
		return fmt.Errorf("write files to %s in %s: %w", abs, l.spec, err)
	}
	return nil
}

func (l *localBackend) restoreWorkspace(ctx context.Context, snapshot *os.File, info workspace.Info) error {
	if err := workspace.Restore(ctx, snapshot, info, l.dir); err != nil {
		return fmt.Errorf("restore workspace in %s: %w", l.spec, err)
	}
	return nil
}

func (l *localBackend) workspaceManifest(ctx context.Context, opts workspace.Options) (workspace.Manifest, error) {
	m, err := workspace.ManifestDir(ctx, l.dir, opts)
	if err != nil {
		return nil, fmt.Errorf("workspace manifest in %s: %w", l.spec, err)
	}
	return m, nil
}

func (l *localBackend) close(ctx context.Context, open []*Session) error {
	closeSessions(open)
	return nil
}
