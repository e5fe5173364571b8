package controller_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/docker/docker/errdefs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/controller"
	"github.com/tapebox/tapebox/internal/testutil/dockertest"
	"github.com/tapebox/tapebox/internal/testutil/sandboxtest"
	"github.com/tapebox/tapebox/sandbox"
	"github.com/tapebox/tapebox/tape"
)

// decoy is a unix socket on the host that nothing should ever connect to.
type decoy struct {
	path  string
	conns atomic.Int32
	ln    net.Listener
	wg    sync.WaitGroup
}

func newDecoy(t *testing.T) *decoy {
	t.Helper()
	dir, err := os.MkdirTemp("", "decoy-") // short: a socket path holds 107 bytes
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	d := &decoy{path: filepath.Join(dir, "host.sock")}
	d.ln, err = net.Listen("unix", d.path)
	require.NoError(t, err)
	d.wg.Go(func() {
		for {
			c, err := d.ln.Accept()
			if err != nil {
				return
			}
			d.conns.Add(1)
			c.Close()
		}
	})
	t.Cleanup(func() {
		d.ln.Close()
		d.wg.Wait()
	})
	return d
}

// buildFor builds a testdata command for linux/arch.
func buildFor(t *testing.T, pkg, arch string) []byte {
	t.Helper()
	out := filepath.Join(t.TempDir(), filepath.Base(pkg))
	cmd := exec.CommandContext(t.Context(), "go", "build", "-trimpath", "-o", out, pkg)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+arch)
	b, err := cmd.CombinedOutput()
	require.NoError(t, err, "build %s: %s", pkg, b)
	data, err := os.ReadFile(out)
	require.NoError(t, err)
	return data
}

// killExecutor kills the topmost tapebox-exec ancestor of the shell: the serving executor.
const killExecutor = `p=$PPID; top=; while [ "$p" -gt 1 ]; do case "$(cat /proc/$p/comm)" in tapebox-exec*) top=$p;; esac; p=$(cut -d' ' -f4 /proc/$p/stat); done; kill -9 $top`

// TestReplaySocketSwapAttack plays issue 14's first finding in a container TapeBox creates:
// a tape step starts a process that, for every socket appearing in the executor's socket
// directory, at once tries to swap it for a symbolic link to a socket on the host (a decoy),
// and then to connect to it and pose as the executor; then it kills the executor, so that
// the controller starts a new session. The replay goes on over the real executor, and the
// decoy never hears from anyone.
func TestReplaySocketSwapAttack(t *testing.T) {
	_, ref := dockertest.Image(t, dockertest.SandboxImage)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	d := newDecoy(t)
	var log sandboxtest.LogLines
	logf := func(format string, args ...any) {
		log.Logf(format, args...)
		t.Logf(format, args...)
	}
	sb, err := sandbox.Open(ctx, "docker-image:"+ref, sandbox.Options{Cwd: "/app", InstallExecutor: true, Logf: logf})
	require.NoError(t, err)
	defer sb.Close(context.WithoutCancel(ctx))
	require.Equal(t, "unix-socket", sb.Transport())
	require.NoError(t, sb.WriteFiles(ctx, "/opt/attack", map[string]sandbox.File{
		"sockswap": {Mode: 0o755, Data: buildFor(t, "./testdata/sockswap", sb.Arch())},
	}))

	rec := bashTape(
		[]string{
			`if [ ! -f /tmp/.killed ]; then touch /tmp/.killed; setsid /opt/attack/sockswap /run/tapebox-exec ` + d.path +
				` </dev/null >/tmp/swap.log 2>&1 & sleep 0.5; ` + killExecutor + `; fi; echo alive`,
			"echo after",
		},
		[]string{"alive", "after"},
	)
	out := filepath.Join(t.TempDir(), "replay.json")
	res, err := controller.Replay(ctx, rec, sb, controller.Options{Cwd: sb.Cwd(), Output: out, Logf: logf, CallTimeout: time.Minute})
	swapLog, _ := sb.Exec(context.WithoutCancel(ctx), []string{"cat", "/tmp/swap.log"})
	if swapLog != nil {
		t.Logf("sockswap:\n%s", swapLog.Stdout)
	}
	assert.Zero(t, d.conns.Load(), "the host socket the container pointed at received a connection")
	require.NoError(t, err)
	requireRestartedIdentical(t, rec, res, out)

	require.NotNil(t, swapLog)
	assert.Contains(t, string(swapLog.Stdout), "watching /run/tapebox-exec")
	assert.NotContains(t, string(swapLog.Stdout), "swapped", "a socket in the directory was replaced")
	assert.Contains(t, string(swapLog.Stdout), "swap failed: symlink "+d.path+" /run/tapebox-exec/", "the attacker tried")
	assert.Contains(t, string(swapLog.Stdout), "read-only file system")
	if strings.Contains(string(swapLog.Stdout), "connected as an executor") {
		assert.Contains(t, log.String(), "refused a connection to the executor's socket from pid", "the impostor was turned away")
	}
	assert.Equal(t, "unix-socket", sb.Transport(), "the session went on over the socket")
}

// TestReplayForkBomb: a tape step that forks without end meets the container's default
// limits (processes, memory, one CPU): the replay ends within its call timeouts, the machine
// stays responsive meanwhile, the executor session lives through it (it must not die for
// want of a thread), the container is gone afterwards, and a loop that spawns processes
// until it cannot ends with an error result. (Against the code before the
// defaults the test stops at the limits' check, before any bomb runs: an unbounded fork bomb
// would take the machine down.)
func TestReplayForkBomb(t *testing.T) {
	cli, ref := dockertest.Image(t, dockertest.SandboxImage)
	const callTimeout = 20 * time.Second
	for _, tt := range []struct {
		name, cmd string
		wantError bool // the bomb shows as an error result
	}{
		// Backgrounded: the call itself returns at once; the bomb rages on behind the
		// replay's next steps until the container goes.
		{"bash function", `:(){ :|:& };:`, false},
		// The loop runs in the call until the limit stops it.
		{"sleeps", `while true; do sleep 600 & done`, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
			defer cancel()
			sb, err := sandbox.Open(ctx, "docker-image:"+ref, sandbox.Options{Cwd: "/app", InstallExecutor: true, Logf: t.Logf})
			require.NoError(t, err)
			defer sb.Close(context.WithoutCancel(ctx))
			id := sb.ContainerID()
			limits, err := sb.Exec(ctx, []string{"cat", "/sys/fs/cgroup/pids/pids.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"})
			require.NoError(t, err)
			require.Equal(t, fmt.Sprintf("%d\n%d\n", sandbox.DefaultPidsLimit, sandbox.DefaultMemory), string(limits.Stdout),
				"the container's process and memory limits (cgroup v1); stderr: %s", limits.Stderr)

			// The host's own scheduling delay while the bomb runs: a 10 ms sleep that wakes
			// seconds late means an unresponsive machine.
			var lag atomic.Int64
			stop := make(chan struct{})
			var wg sync.WaitGroup
			wg.Go(func() {
				for {
					start := time.Now()
					select {
					case <-stop:
						return
					case <-time.After(10 * time.Millisecond):
					}
					if late := time.Since(start) - 10*time.Millisecond; late > time.Duration(lag.Load()) {
						lag.Store(int64(late))
					}
				}
			})

			rec := bashTape([]string{tt.cmd, "sleep 2; echo still here"}, []string{"(Bash completed with no output)", "still here"})
			out := filepath.Join(t.TempDir(), "replay.json")
			start := time.Now()
			// The executor shares the container's process limit with the bomb: it must not
			// die for want of a thread (it reserves its threads when a session starts).
			var restarts atomic.Int32
			logf := func(format string, args ...any) {
				t.Helper()
				msg := fmt.Sprintf(format, args...)
				if strings.Contains(msg, "executor session died") {
					restarts.Add(1)
				}
				t.Log(msg)
			}
			_, rerr := controller.Replay(ctx, rec, sb, controller.Options{Cwd: sb.Cwd(), Output: out, Logf: logf, CallTimeout: callTimeout})
			took := time.Since(start)
			require.NoError(t, sb.Close(context.WithoutCancel(ctx)))
			close(stop)
			wg.Wait()
			t.Logf("replay took %v, the host's worst wake-up delay %v; replay error: %v", took, time.Duration(lag.Load()), rerr)
			assert.Less(t, took, 2*callTimeout, "the replay ends within its call timeouts")
			assert.Zero(t, restarts.Load(), "the executor session lives through the bomb")
			assert.Less(t, time.Duration(lag.Load()), 2*time.Second, "the host stays responsive")
			_, err = cli.ContainerInspect(context.WithoutCancel(ctx), id)
			assert.True(t, errdefs.IsNotFound(err), "the container is removed: %v", err)

			rep, err := tape.LoadFile(out)
			require.NoError(t, err)
			var errs []string
			for _, st := range rep.Main().Steps {
				for _, r := range st.ToolResults {
					t.Logf("result: error=%v %.200q", r.IsError, r.Text())
					if r.IsError {
						errs = append(errs, r.Text())
					}
				}
			}
			if tt.wantError {
				assert.NotEmpty(t, errs, "the fork bomb shows in the replay as an error result")
			}
		})
	}
}
