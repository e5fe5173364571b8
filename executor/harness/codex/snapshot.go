package codex

import (
	"bytes"
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/tapebox/tapebox/executor/action"
)

// snapshotTimeout bounds the login shell that captures the snapshot.
const snapshotTimeout = 10 * time.Second

const snapshotMark = "\x00tapebox-shell-snapshot\x00"

// loginEnv returns the environment of Codex's shell snapshot, captured once per session:
// Codex 0.171 runs a login shell once and then runs each exec_command with login true as
// `bash -c CMD` in the environment that shell exported (so not in a login shell, and
// without its functions and aliases; `bash -lc CMD` only while the snapshot is not ready).
// nil means the capture failed, and commands run in a login shell.
func (s *session) loginEnv(ctx context.Context) []string {
	s.snapOnce.Do(func() { s.snapEnv = captureLoginEnv(ctx, s.env.Cwd, s.env.Environ) })
	return s.snapEnv
}

func captureLoginEnv(ctx context.Context, dir string, environ []string) []string {
	sh := action.FindShell()
	// Bash lists its exported variables with builtins; another shell needs env(1).
	script := "printf '\\000tapebox-shell-snapshot\\000'; "
	if filepath.Base(sh) == "bash" {
		script += `for __v in $(compgen -e); do printf '%s=%s\0' "$__v" "${!__v}"; done`
	} else {
		script += "exec env -0"
	}
	// Not the caller's deadline: the snapshot serves the whole session.
	ctx = context.WithoutCancel(ctx)
	res, err := action.Shell(ctx, action.ShellRequest{Command: script, Shell: sh, Login: true, Dir: dir, Env: environ, Timeout: snapshotTimeout})
	if err != nil || res.ExitCode != 0 || res.TimedOut {
		return nil
	}
	_, dump, ok := bytes.Cut(res.Output, []byte(snapshotMark))
	if !ok {
		return nil
	}
	var env []string
	for _, kv := range strings.Split(string(dump), "\x00") {
		name, _, ok := strings.Cut(kv, "=")
		if !ok || name == "" {
			continue
		}
		switch name {
		case "_", "SHLVL", "PWD":
			// The command's own shell sets these.
			continue
		}
		env = append(env, kv)
	}
	return env
}

// shellPath resolves exec_command's shell as Codex does: bash is the user's bash, another
// name is looked up in PATH; empty means the default.
func shellPath(name string) string {
	switch {
	case name == "" || name == "bash" || name == action.FindShell():
		return action.FindShell()
	case !strings.Contains(name, "/"):
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return name
}
