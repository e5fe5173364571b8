package action

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"
)

// MaxCapture is the most output Shell keeps from one command (64 MiB); the rest is
// dropped and ShellResult.Dropped counts it. Harnesses truncate far below this.
const MaxCapture = 64 << 20

// ShellRequest is one command to run to completion.
type ShellRequest struct {
	// Command is a shell script, run as `SHELL -c Command` (or `SHELL -lc` with Login).
	Command string
	// Argv, when set instead of Command, is run as is (Codex's older shell tool).
	Argv []string
	// Shell overrides the shell found by FindShell.
	Shell string
	Login bool
	// Dir is the working directory; Env the whole environment (nil: the executor's).
	Dir string
	Env []string
	// Timeout ends the command (its whole process group) after this long; 0 means none.
	Timeout time.Duration
}

// ShellResult is what a finished command left.
type ShellResult struct {
	// Output is stdout and stderr interleaved as written (one file holds both, as the
	// harnesses do it), at most MaxCapture bytes.
	Output []byte
	// Dropped counts output bytes beyond MaxCapture.
	Dropped  int64
	ExitCode int
	// Signal is set when the command was killed by a signal (ExitCode is then 128+n).
	Signal   string
	TimedOut bool
	Duration time.Duration
	// Pid is the command's process id, the id of its process group too.
	Pid int
}

var (
	shellOnce sync.Once
	shellPath string
)

// FindShell returns bash when present, else sh. Bash is $SHELL when that is a bash, else
// /bin/bash, as both harnesses find it: the path shows in the shell's own messages
// ("/bin/bash: line 1: x: command not found").
func FindShell() string {
	shellOnce.Do(func() {
		var cands []string
		if sh := os.Getenv("SHELL"); filepath.IsAbs(sh) && filepath.Base(sh) == "bash" {
			cands = append(cands, sh)
		}
		for _, c := range append(cands, "/bin/bash", "/usr/bin/bash", "bash") {
			if p, err := exec.LookPath(c); err == nil {
				shellPath = p
				return
			}
		}
		shellPath = "/bin/sh"
		if p, err := exec.LookPath("sh"); err == nil {
			shellPath = p
		}
	})
	return shellPath
}

// ShellArgv returns the argv that runs req.
func ShellArgv(req ShellRequest) []string {
	if len(req.Argv) > 0 {
		return req.Argv
	}
	sh, flag := shellFlag(req.Shell, req.Login)
	return []string{sh, flag, req.Command}
}

// shellFlag returns the shell to run a command string with (sh, FindShell's, when "")
// and the flag that hands it the command: -c, or -lc for a login shell.
func shellFlag(sh string, login bool) (string, string) {
	if sh == "" {
		sh = FindShell()
	}
	if login {
		return sh, "-lc"
	}
	return sh, "-c"
}

// Shell runs a command to completion. Output goes to a temporary file rather than a pipe,
// so a process the command leaves running in the background cannot hold the call open.
// A command that fails or times out is a result, not an error; the error is for a command
// that could not be started.
func Shell(ctx context.Context, req ShellRequest) (ShellResult, error) {
	argv := ShellArgv(req)
	if len(argv) == 0 || argv[0] == "" {
		return ShellResult{}, errors.New("shell: empty command")
	}
	out, err := os.CreateTemp("", "tapebox-shell-*")
	if err != nil {
		return ShellResult{}, fmt.Errorf("shell: output file: %w", err)
	}
	defer os.Remove(out.Name())
	defer out.Close()
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		return ShellResult{}, fmt.Errorf("shell: open %s: %w", os.DevNull, err)
	}
	defer devnull.Close()

	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = req.Dir
	cmd.Env = req.Env
	cmd.Stdin = devnull
	cmd.Stdout = out
	cmd.Stderr = out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return ShellResult{}, fmt.Errorf("shell: start %q: %w", argv[0], err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var timer <-chan time.Time
	if req.Timeout > 0 {
		t := time.NewTimer(req.Timeout)
		defer t.Stop()
		timer = t.C
	}
	var res ShellResult
	var werr error
	select {
	case werr = <-done:
	case <-timer:
		res.TimedOut = true
		killGroup(cmd.Process.Pid)
		werr = <-done
	case <-ctx.Done():
		killGroup(cmd.Process.Pid)
		<-done
		return ShellResult{}, fmt.Errorf("shell: %w", ctx.Err())
	}
	res.Duration = time.Since(start)
	res.Pid = cmd.Process.Pid
	res.ExitCode, res.Signal = exitStatus(cmd.ProcessState, werr)
	res.Output, res.Dropped, err = readCapped(out.Name(), MaxCapture)
	if err != nil {
		return res, fmt.Errorf("shell: read output: %w", err)
	}
	return res, nil
}

func killGroup(pid int) {
	_ = syscall.Kill(-pid, syscall.SIGKILL)
}

func exitStatus(ps *os.ProcessState, err error) (int, string) {
	if ps == nil {
		if err != nil {
			return 127, ""
		}
		return 0, ""
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal()), ws.Signal().String()
	}
	return ps.ExitCode(), ""
}

func readCapped(path string, max int64) ([]byte, int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, 0, err
	}
	n := st.Size()
	dropped := int64(0)
	if n > max {
		dropped = n - max
		n = max
	}
	buf := make([]byte, n)
	if _, err := f.ReadAt(buf, 0); err != nil && n > 0 {
		return nil, 0, err
	}
	return buf, dropped, nil
}
