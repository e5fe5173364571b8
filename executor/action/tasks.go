package action

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/tapebox/tapebox/internal/jsonlex"
)

// Tasks runs detached background commands and answers for them. Each task lives in its
// own directory, <state dir>/tasks/<id>/, made when the task starts:
//
//	task.json  the request (command, cwd, start time) and the wrapper's pid
//	output     stdout and stderr, interleaved
//	exit       the exit code, written by the wrapper shell when the command ends
//	killed     present when the task was stopped through Kill
//	cursor     how far Poll has read output
//
// The command runs under a wrapper shell in its own session, so it outlives the executor,
// and a restarted executor (a new Tasks on the same state directory) still answers for it:
// everything but stdin is on disk. A task in a pseudo-terminal (TaskRequest.TTY) is the
// exception: this process copies its terminal's output to the output file, so it ends with
// the executor (its terminal hangs up), as a Codex session ends with Codex.
type Tasks struct {
	// State is the state directory. Start makes its "tasks" subdirectory, and Remove
	// deletes that (and a shared state directory) once no task is left.
	State *StateDir

	mu   sync.Mutex
	live map[string]*liveTask
}

type liveTask struct {
	// done is closed once the command has ended and its output is all in the file.
	done  chan struct{}
	stdin io.WriteCloser
}

// TaskRequest starts a background task.
type TaskRequest struct {
	// ID names the task; empty picks a random one (see NewTaskID).
	ID      string
	Command string
	Shell   string
	Login   bool
	Dir     string
	Env     []string
	// Stdin keeps a pipe to the command's stdin open for Write; otherwise stdin is
	// /dev/null.
	Stdin bool
	// TTY runs the command in a new pseudo-terminal (its stdin, stdout and stderr, and its
	// controlling terminal); Write types into it. The terminal's line discipline echoes
	// input and turns "\n" into "\r\n", as for Codex's exec_command with tty: true.
	TTY bool
	// ExitLine appends "\n[exited with code N]\n" to the output file when the command
	// ends, as Claude Code does to a background task's file. Output and Poll leave it out.
	ExitLine bool
}

// TaskStatus is what is known of a task.
type TaskStatus struct {
	ID      string `json:"id"`
	Command string `json:"command"`
	Cwd     string `json:"cwd"`
	PID     int    `json:"pid"`
	// StartedMS is the start time in milliseconds since the Unix epoch.
	StartedMS int64 `json:"started_ms"`
	TTY       bool  `json:"tty,omitempty"`
	ExitLine  bool  `json:"exit_line,omitempty"`
	// Running is true until the command ends or is killed.
	Running bool `json:"-"`
	// ExitCode is set once the command has ended by itself.
	ExitCode *int `json:"-"`
	Killed   bool `json:"-"`
}

// State names the task's state the way the harnesses do: running, completed, failed or
// killed.
func (s TaskStatus) State() string {
	switch {
	case s.Running:
		return "running"
	case s.Killed:
		return "killed"
	case s.ExitCode != nil && *s.ExitCode == 0:
		return "completed"
	default:
		return "failed"
	}
}

// ErrNoTask is returned for a task id that has no directory.
var ErrNoTask = errors.New("no such task")

// ErrNoStdin is returned by Write for a task whose stdin is not open: started without
// Stdin or TTY, or by another process.
var ErrNoStdin = errors.New("stdin is not open")

// NewTaskID returns prefix followed by n random characters of [0-9a-z].
func NewTaskID(prefix string, n int) string {
	const alphabet = "0123456789abcdefghijklmnopqrstuvwxyz"
	b := make([]byte, n)
	fillRandom(b)
	for i := range b {
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	return prefix + string(b)
}

func (t *Tasks) dir(id string) (string, error) {
	if id == "" || strings.ContainsAny(id, `/\`) || id == "." || id == ".." {
		return "", fmt.Errorf("task %q: %w", id, ErrNoTask)
	}
	return filepath.Join(t.State.Path, tasksDir, id), nil
}

// tasksDir is the state directory's subdirectory of tasks.
const tasksDir = "tasks"

// OutputPath is the file that holds a task's output.
func (t *Tasks) OutputPath(id string) string {
	return filepath.Join(t.State.Path, tasksDir, id, "output")
}

// wrapper runs the command and records its exit code with a builtin (no extra process).
// A reader that finds the exit file still empty sees the wrapper alive and reports the
// task as running. $4, when set, is the line to append to the output (ExitLine); it is
// written before the exit file, so a finished task's output always has it.
const wrapper = `"$0" ` + `$3 "$1"; c=$?; [ -z "$4" ] || printf "$4" "$c" >> "$2/output"; printf '%s' "$c" > "$2/exit"; exit $c`

// exitLine is Claude Code's last line of a finished task's output file, a printf format.
const exitLine = "\n[exited with code %s]\n"

// Start launches a background task and returns at once.
func (t *Tasks) Start(ctx context.Context, req TaskRequest) (_ TaskStatus, err error) {
	if req.ID == "" {
		req.ID = NewTaskID("", 9)
	}
	dir, err := t.dir(req.ID)
	if err != nil {
		return TaskStatus{}, err
	}
	_, err = os.Lstat(dir)
	fresh := errors.Is(err, fs.ErrNotExist)
	if dir, err = t.State.Make(tasksDir, req.ID); err != nil {
		return TaskStatus{}, fmt.Errorf("start task %s: %w", req.ID, err)
	}
	defer func() {
		// A task that did not start leaves nothing behind (but what was there before).
		if err != nil && fresh {
			_ = os.RemoveAll(dir)
			t.State.Prune(tasksDir)
		}
	}()
	out, err := os.OpenFile(filepath.Join(dir, "output"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return TaskStatus{}, fmt.Errorf("start task %s: %w", req.ID, err)
	}
	sh, flag := shellFlag(req.Shell, req.Login)
	line := ""
	if req.ExitLine {
		line = exitLine
	}
	cmd := exec.Command(sh, "-c", wrapper, sh, req.Command, dir, flag, line)
	cmd.Dir = req.Dir
	cmd.Env = req.Env
	cmd.Stdout = out
	cmd.Stderr = out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	var stdin, master, slave *os.File
	switch {
	case req.TTY:
		if master, slave, err = openPTY(); err != nil {
			out.Close()
			return TaskStatus{}, fmt.Errorf("start task %s: %w", req.ID, err)
		}
		defer slave.Close()
		cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
		cmd.SysProcAttr = ttyAttr()
		stdin = master
	case req.Stdin:
		pr, pw, err := os.Pipe()
		if err != nil {
			out.Close()
			return TaskStatus{}, fmt.Errorf("start task %s: stdin: %w", req.ID, err)
		}
		defer pr.Close()
		cmd.Stdin = pr
		stdin = pw
	}
	if err := cmd.Start(); err != nil {
		out.Close()
		if stdin != nil {
			stdin.Close()
		}
		return TaskStatus{}, fmt.Errorf("start task %s: %w", req.ID, err)
	}
	st := TaskStatus{ID: req.ID, Command: req.Command, Cwd: req.Dir, PID: cmd.Process.Pid,
		StartedMS: time.Now().UnixMilli(), TTY: req.TTY, ExitLine: req.ExitLine, Running: true}
	if err := os.WriteFile(filepath.Join(dir, "task.json"), appendMeta(nil, &st), 0o644); err != nil {
		killGroup(st.PID)
		out.Close()
		return TaskStatus{}, fmt.Errorf("start task %s: %w", req.ID, err)
	}
	lt := &liveTask{done: make(chan struct{})}
	if stdin != nil {
		lt.stdin = stdin
	}
	t.mu.Lock()
	if t.live == nil {
		t.live = map[string]*liveTask{}
	}
	t.live[req.ID] = lt
	t.mu.Unlock()
	copied := make(chan struct{})
	if master != nil {
		go func() {
			// Until every holder of the terminal has closed it (EIO), or Remove closes
			// the master.
			_, _ = io.Copy(out, master)
			out.Close()
			close(copied)
		}()
	} else {
		out.Close() // the wrapper has its own descriptor
		close(copied)
	}
	go func() {
		_ = cmd.Wait() // reap; the wrapper has written the exit code
		// What the command wrote to its terminal just before it ended may still be in
		// the terminal's buffer: wait for the copy, but not for a child the command left
		// running with the terminal open.
		select {
		case <-copied:
		case <-time.After(ttyDrain):
		}
		close(lt.done)
	}()
	return st, nil
}

// ttyDrain bounds the wait, after a terminal's command has ended, for the rest of its
// output.
const ttyDrain = 250 * time.Millisecond

// Status reads a task's state from its directory.
func (t *Tasks) Status(id string) (TaskStatus, error) {
	dir, err := t.dir(id)
	if err != nil {
		return TaskStatus{}, err
	}
	st, err := readMeta(id, dir)
	if err != nil {
		return TaskStatus{}, err
	}
	if _, err := os.Stat(filepath.Join(dir, "killed")); err == nil {
		st.Killed = true
	}
	// Whether it runs, before its exit code: a wrapper seen ended has written it.
	running, live := t.running(id, st.PID)
	var code *int
	if b, err := os.ReadFile(filepath.Join(dir, "exit")); err == nil {
		if n, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
			code = &n
		}
	}
	if !live && code != nil {
		running = false // the wrapper is on its way out
	}
	st.Running = !st.Killed && running
	if !st.Running {
		st.ExitCode = code
	}
	return st, nil
}

// appendMeta appends st's task.json: json.Marshal's bytes (HTML escaped), written by hand
// so that the executor links no reflective encoder (tasks_test.go compares the two).
func appendMeta(b []byte, st *TaskStatus) []byte {
	b = jsonlex.AppendString(append(b, `{"id":`...), st.ID, true)
	b = jsonlex.AppendString(append(b, `,"command":`...), st.Command, true)
	b = jsonlex.AppendString(append(b, `,"cwd":`...), st.Cwd, true)
	b = strconv.AppendInt(append(b, `,"pid":`...), int64(st.PID), 10)
	b = strconv.AppendInt(append(b, `,"started_ms":`...), st.StartedMS, 10)
	if st.TTY {
		b = append(b, `,"tty":true`...)
	}
	if st.ExitLine {
		b = append(b, `,"exit_line":true`...)
	}
	return append(b, '}')
}

// readMeta reads a task's task.json.
func readMeta(id, dir string) (TaskStatus, error) {
	var st TaskStatus
	b, err := os.ReadFile(filepath.Join(dir, "task.json"))
	if errors.Is(err, fs.ErrNotExist) {
		return TaskStatus{}, fmt.Errorf("task %q: %w", id, ErrNoTask)
	}
	if err != nil {
		return TaskStatus{}, fmt.Errorf("task %s: %w", id, err)
	}
	if err := jsonlex.Unmarshal(b, &st); err != nil {
		return TaskStatus{}, fmt.Errorf("task %s: task.json: %w", id, err)
	}
	return st, nil
}

// liveTask returns the task id if this process started it, else nil.
func (t *Tasks) liveTask(id string) *liveTask {
	t.mu.Lock()
	lt := t.live[id]
	t.mu.Unlock()
	return lt
}

// running says whether a task has yet to end, and whether this process started it. One
// started here runs until its wrapper is reaped and its output is all in the file.
func (t *Tasks) running(id string, pid int) (running, live bool) {
	lt := t.liveTask(id)
	if lt != nil {
		select {
		case <-lt.done:
			return false, true
		default:
			return true, true
		}
	}
	// Not started by this process: ask the kernel. A pid reused by now is an accepted risk.
	return pid > 0 && syscall.Kill(pid, 0) == nil, false
}

// Wait waits until the task ends or timeout passes, and returns its status.
func (t *Tasks) Wait(ctx context.Context, id string, timeout time.Duration) (TaskStatus, error) {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	lt := t.liveTask(id)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		st, err := t.Status(id)
		if err != nil || !st.Running {
			return st, err
		}
		var done <-chan struct{}
		if lt != nil {
			done = lt.done
		}
		select {
		case <-done:
			// The wrapper has exited: its exit file is in place.
			lt = nil
		case <-tick.C:
		case <-deadline.C:
			return t.Status(id)
		case <-ctx.Done():
			return st, ctx.Err()
		}
	}
}

// Kill stops a task's whole process group and marks it killed.
func (t *Tasks) Kill(id string) (TaskStatus, error) {
	st, err := t.Status(id)
	if err != nil {
		return st, err
	}
	if !st.Running {
		return st, nil
	}
	dir, _ := t.dir(id)
	if err := os.WriteFile(filepath.Join(dir, "killed"), nil, 0o644); err != nil {
		return st, fmt.Errorf("kill task %s: %w", id, err)
	}
	_ = syscall.Kill(-st.PID, syscall.SIGKILL)
	lt := t.liveTask(id)
	if lt != nil {
		select {
		case <-lt.done:
		case <-time.After(2 * time.Second):
		}
	}
	st.Running, st.Killed = false, true
	return st, nil
}

// KillGroup kills what is left of a task's process group (SIGKILL), such as the
// background jobs of a command that has exited, as Codex's unified exec does when a
// command ends.
func (t *Tasks) KillGroup(id string) error {
	st, err := t.Status(id)
	if err != nil {
		return err
	}
	if st.PID > 0 {
		killGroup(st.PID)
	}
	return nil
}

// Write sends data to a task's stdin. Only a task started with Stdin by this process has
// one.
func (t *Tasks) Write(id string, data []byte) error {
	lt := t.liveTask(id)
	if lt == nil || lt.stdin == nil {
		return fmt.Errorf("write to task %s: %w", id, ErrNoStdin)
	}
	if _, err := lt.stdin.Write(data); err != nil {
		return fmt.Errorf("write to task %s: %w", id, err)
	}
	return nil
}

// Output returns a task's whole output so far, without the ExitLine.
func (t *Tasks) Output(id string) ([]byte, error) {
	dir, err := t.dir(id)
	if err != nil {
		return nil, err
	}
	b, err := os.ReadFile(filepath.Join(dir, "output"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("task %q: %w", id, ErrNoTask)
	}
	if err != nil {
		return nil, err
	}
	const open = "\n[exited with code "
	if i := bytes.LastIndex(b, []byte(open)); i >= 0 && bytes.HasSuffix(b, []byte("]\n")) {
		if _, err := strconv.Atoi(string(b[i+len(open) : len(b)-2])); err == nil {
			if st, err := readMeta(id, dir); err == nil && st.ExitLine {
				b = b[:i]
			}
		}
	}
	return b, nil
}

// Poll returns the output written since the previous Poll of the same task, and moves the
// cursor (kept on disk, so it survives a restart).
func (t *Tasks) Poll(id string) ([]byte, error) {
	dir, err := t.dir(id)
	if err != nil {
		return nil, err
	}
	out, err := t.Output(id)
	if err != nil {
		return nil, err
	}
	cur := 0
	if b, err := os.ReadFile(filepath.Join(dir, "cursor")); err == nil {
		cur, _ = strconv.Atoi(strings.TrimSpace(string(b)))
	}
	if cur > len(out) {
		cur = len(out)
	}
	if err := os.WriteFile(filepath.Join(dir, "cursor"), []byte(strconv.Itoa(len(out))), 0o644); err != nil {
		return nil, fmt.Errorf("poll task %s: %w", id, err)
	}
	return out[cur:], nil
}

// Remove forgets a task that has ended: its directory is deleted, and the tasks directory
// with it when no other task is left.
func (t *Tasks) Remove(id string) error {
	dir, err := t.dir(id)
	if err != nil {
		return err
	}
	t.mu.Lock()
	if lt := t.live[id]; lt != nil && lt.stdin != nil {
		lt.stdin.Close()
	}
	delete(t.live, id)
	t.mu.Unlock()
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	t.State.Prune(tasksDir)
	return nil
}

// Close closes the stdin pipes this Tasks holds; the tasks themselves keep running, but
// for those in a terminal, which it hangs up.
func (t *Tasks) Close() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, lt := range t.live {
		if lt.stdin != nil {
			lt.stdin.Close()
		}
	}
	return nil
}

// fillRandom fills b from math/rand/v2 (ChaCha8 seeded from the OS): random enough for ids,
// and much smaller in the static binary than crypto/rand.
func fillRandom(b []byte) {
	for i := range b {
		b[i] = byte(rand.Uint32())
	}
}

// FillRandom is fillRandom for the harness modules.
func FillRandom(b []byte) { fillRandom(b) }
