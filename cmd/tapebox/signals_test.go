package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/client"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/internal/testutil/dockertest"
	"github.com/tapebox/tapebox/sandbox"
)

var (
	buildOnce sync.Once
	binary    string
	buildErr  error
)

// tapeboxBinary builds this command once for the package's tests.
func tapeboxBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "tapebox-signals-")
		if err != nil {
			buildErr = err
			return
		}
		binary = filepath.Join(dir, "tapebox")
		out, err := exec.Command("go", "build", "-o", binary, ".").CombinedOutput()
		if err != nil {
			buildErr = errors.New("go build: " + err.Error() + "\n" + string(out))
		}
	})
	require.NoError(t, buildErr)
	return binary
}

// sleepTape is the hand-built Claude Code tape with its first Bash call made "sleep 60": a
// replay of it is busy in the sandbox for a minute.
func sleepTape(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "testdata", "replay", "claude-code.json"))
	require.NoError(t, err)
	var tp map[string]any
	require.NoError(t, json.Unmarshal(data, &tp))
	step := tp["threads"].([]any)[0].(map[string]any)["steps"].([]any)[0].(map[string]any)
	call := step["tool_calls"].([]any)[1].(map[string]any)
	require.Equal(t, "Bash", call["name"])
	call["input"].(map[string]any)["command"] = "sleep 60; echo ready"
	out, err := json.Marshal(tp)
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "sleep.json")
	require.NoError(t, os.WriteFile(path, out, 0o644))
	return path
}

// containersOf lists the containers TapeBox created for the process pid (its owner label).
func containersOf(t *testing.T, cli *client.Client, pid int) []string {
	t.Helper()
	list, err := cli.ContainerList(context.Background(), container.ListOptions{All: true, Filters: filters.NewArgs(filters.Arg("label", sandbox.OwnerLabel))})
	require.NoError(t, err)
	var ids []string
	for _, c := range list {
		if strings.HasPrefix(c.Labels[sandbox.OwnerLabel], "pid="+strconv.Itoa(pid)+",") {
			ids = append(ids, c.ID)
		}
	}
	return ids
}

// lines collects a process's stderr and says when a line containing a string arrived.
type lines struct {
	mu   sync.Mutex
	all  []string
	seen chan string
	eof  chan struct{} // closed when the output has been read to its end
}

func readLines(r io.Reader) *lines {
	l := &lines{seen: make(chan string, 100), eof: make(chan struct{})}
	go func() {
		defer close(l.eof)
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			l.mu.Lock()
			l.all = append(l.all, sc.Text())
			l.mu.Unlock()
			select {
			case l.seen <- sc.Text():
			default:
			}
		}
		close(l.seen)
	}()
	return l
}

// drained waits until the process's output has been read to its end: exec.Cmd.Wait closes
// the pipe, and what the process wrote last would otherwise be lost to the test.
func (l *lines) drained(t *testing.T) {
	t.Helper()
	select {
	case <-l.eof:
	case <-time.After(time.Minute):
		t.Fatalf("the output did not end within a minute:\n%s", l.String())
	}
}

func (l *lines) waitFor(t *testing.T, s string, within time.Duration) time.Time {
	t.Helper()
	deadline := time.After(within)
	for {
		select {
		case line, ok := <-l.seen:
			if !ok {
				t.Fatalf("the output ended before %q:\n%s", s, l.String())
			}
			if strings.Contains(line, s) {
				return time.Now()
			}
		case <-deadline:
			t.Fatalf("no %q within %v:\n%s", s, within, l.String())
		}
	}
}

func (l *lines) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.all, "\n")
}

// startReplay starts "tapebox replay" of the sleep tape in a fresh container and returns
// once the executor session is up and the sleep is running.
func startReplay(t *testing.T, image string) (*exec.Cmd, *lines) {
	t.Helper()
	cmd := exec.Command(tapeboxBinary(t), "replay", "--tape", sleepTape(t), "--sandbox", "docker-image:"+image, "--speed", "0")
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	l := readLines(stderr)
	l.waitFor(t, "parallel tool calls", 2*time.Minute)
	time.Sleep(300 * time.Millisecond) // the sleep call is in flight
	return cmd, l
}

// TestSignalsStopReplay sends real signals to the built tapebox during a replay whose
// sandbox is a real container busy with "sleep 60": SIGINT and SIGTERM print "stopping…" and
// end the replay, removing the container, long before the sleep would have ended; a second
// SIGINT exits at once with 130.
func TestSignalsStopReplay(t *testing.T) {
	cli, image := dockertest.Image(t, dockertest.SandboxImage)
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			cmd, l := startReplay(t, image)
			require.Len(t, containersOf(t, cli, cmd.Process.Pid), 1, "the replay's container")
			sent := time.Now()
			require.NoError(t, cmd.Process.Signal(sig))
			l.waitFor(t, "stopping…", 10*time.Second)
			l.drained(t)
			err := cmd.Wait()
			took := time.Since(sent)
			t.Logf("%v: stopping… printed and the replay ended %v after the signal", sig, took.Round(time.Millisecond))
			var ee *exec.ExitError
			require.ErrorAs(t, err, &ee, "a stopped replay fails")
			assert.Equal(t, 1, ee.ExitCode(), "it returned, not killed by the signal:\n%s", l)
			assert.Less(t, took, 20*time.Second, "it did not wait for the 60 s call")
			assert.Empty(t, containersOf(t, cli, cmd.Process.Pid), "the container is removed:\n%s", l)
			assert.Contains(t, l.String(), "context canceled")
		})
	}
	t.Run("twice", func(t *testing.T) {
		cmd, l := startReplay(t, image)
		pid := cmd.Process.Pid
		t.Cleanup(func() {
			// The first SIGINT's removal may still be under way: force it, whatever it says.
			for _, id := range containersOf(t, cli, pid) {
				cli.ContainerRemove(context.Background(), id, container.RemoveOptions{Force: true})
			}
		})
		require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
		l.waitFor(t, "stopping…", 10*time.Second)
		require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
		err := cmd.Wait()
		var ee *exec.ExitError
		require.ErrorAs(t, err, &ee)
		assert.Equal(t, 130, ee.ExitCode(), "a second Ctrl-C exits at once, with 128+SIGINT:\n%s", l)
	})
}

// TestSIGPIPECleansUp: "tapebox replay --check 2>&1 | head" whose reader goes away: the
// replay is not killed by SIGPIPE before its container is removed (it ends by itself, the
// container gone).
func TestSIGPIPECleansUp(t *testing.T) {
	cli, image := dockertest.Image(t, dockertest.SandboxImage)
	r, w, err := os.Pipe()
	require.NoError(t, err)
	cmd := exec.Command(tapeboxBinary(t), "replay", "--check", "--tape", filepath.Join("..", "..", "testdata", "replay", "claude-code.json"),
		"--sandbox", "docker-image:"+image, "--speed", "0")
	cmd.Stdout, cmd.Stderr = w, w
	require.NoError(t, cmd.Start())
	w.Close()
	pid := cmd.Process.Pid
	t.Cleanup(func() {
		cmd.Process.Kill()
		for _, id := range containersOf(t, cli, pid) {
			dockertest.Remove(t, id)
		}
	})
	// As head -1 does: read the first line, then go away.
	first, err := bufio.NewReader(r).ReadString('\n')
	require.NoError(t, err)
	assert.Contains(t, first, "tapebox replay:")
	deadline := time.Now().Add(2 * time.Minute)
	for len(containersOf(t, cli, pid)) == 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	require.NoError(t, r.Close())
	err = cmd.Wait()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok {
		assert.False(t, ws.Signaled(), "killed by %v (%v) instead of cleaning up", ws.Signal(), err)
	}
	assert.Empty(t, containersOf(t, cli, pid), "the container is removed")
}
