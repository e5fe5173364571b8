package docker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/tapebox/tapebox/sandbox"
	"github.com/tapebox/tapebox/sandbox/internal/kit"
)

// sockDirPattern matches the socket directories' private parents in $TMPDIR.
const sockDirPattern = "tapebox-sock-*"

// ownerFile, in a socket directory's private parent, holds its maker (kit.Owner), for the
// reaper.
const ownerFile = "owner"

// sockDirIn is where the host's socket directory is mounted in a created container.
const sockDirIn = "/run/tapebox-exec"

// maxSocketPath is the longest path a unix socket address holds (sun_path: 108 bytes with
// the terminating NUL).
const maxSocketPath = 107

// readyTimeout bounds the wait for the executor to connect.
const readyTimeout = 10 * time.Second

func sockName(id string) string { return "ctl-" + id + ".sock" }

// socketDir makes the host directory for a created container's controller sockets: "s" in a
// private temporary directory (0700: other users of the host stay out). "s" is 0755 and
// belongs to this process's user; the container gets it read-only, so nothing in the
// container can create, remove or replace a file in it. The sockets themselves are 0666,
// for whatever user the container runs as.
func socketDir() (parent, dir string, err error) {
	parent, err = os.MkdirTemp("", strings.TrimSuffix(sockDirPattern, "*"))
	if err != nil {
		return "", "", fmt.Errorf("make a directory for the executor's socket: %w (is $TMPDIR writable?)", err)
	}
	// Who made it, for the replay that finds it after this process was killed.
	if me, ok := kit.Self(); ok {
		err = os.WriteFile(filepath.Join(parent, ownerFile), []byte(me.String()+"\n"), 0o600)
	}
	dir = filepath.Join(parent, "s")
	if err == nil {
		err = os.Mkdir(dir, 0o755)
	}
	if err == nil {
		err = os.Chmod(dir, 0o755) // past the umask
	}
	if err != nil {
		os.RemoveAll(parent)
		return "", "", fmt.Errorf("make a directory for the executor's socket in %s: %w", parent, err)
	}
	if n := len(filepath.Join(dir, sockName(kit.RandomHex(6)))); n > maxSocketPath {
		os.RemoveAll(parent)
		return "", "", fmt.Errorf("the executor's socket in %s would have a %d-byte path, over the %d a unix socket address holds; set TMPDIR to a shorter directory",
			dir, n, maxSocketPath)
	}
	return parent, dir, nil
}

// planSocket decides whether a container TapeBox creates gets the socket transport, and
// makes its host directory. It fails only when TransportSocket is forced and impossible.
func (d *Backend) planSocket(opts sandbox.Options) error {
	t, _ := sandbox.ParseTransport(string(opts.Transport))
	if t == sandbox.TransportStream || d.spec.Scheme != sandbox.SchemeDockerImage {
		return nil
	}
	d.sockForced = t == sandbox.TransportSocket
	var why string
	switch {
	case !peerCredSupported:
		why = "the controller cannot tell who connects to its socket on " + runtime.GOOS + " (it needs Linux's SO_PEERCRED)"
	case !localEngine(d.cli):
		why = fmt.Sprintf("the engine at %s is not on this machine, so it cannot bind-mount a host directory", d.cli.DaemonHost())
	case opts.Runtime != "" && opts.Runtime != "runc":
		why = fmt.Sprintf("runtime %s may not pass a host socket through a bind mount", opts.Runtime)
	default:
		parent, dir, err := socketDir()
		if err != nil {
			why = err.Error()
		} else {
			d.sockParent, d.sockHost = parent, dir
			return nil
		}
	}
	if d.sockForced {
		return fmt.Errorf("open sandbox %s: %w: the socket transport is not possible: %s; use the exec stream (--exec-transport stream or auto)", d.spec, sandbox.ErrOption, why)
	}
	d.logf("sandbox %s: the executor will use the exec stream: %s", d.spec, why)
	return nil
}

// dropSocket gives up the socket transport and removes its host directory.
func (d *Backend) dropSocket() {
	if d.sockParent != "" {
		os.RemoveAll(d.sockParent)
	}
	d.sockParent, d.sockHost = "", ""
}

// Transport is "unix-socket" while the executor talks over a socket in a host directory
// mounted into the container, else "exec-stream".
func (d *Backend) Transport() string {
	if d.sockHost != "" && !d.sockOff.Load() {
		return "unix-socket"
	}
	return "exec-stream"
}

// socketError is a failure of the socket transport that the exec stream may not have.
type socketError struct{ msg string }

func (e *socketError) Error() string { return "executor socket: " + e.msg }

// StartExecutor starts the executor on the socket transport when the sandbox has one, and
// gives it up for the exec stream, for good, when the socket fails where the stream may not
// (unless the transport was asked for by name).
func (d *Backend) StartExecutor(ctx context.Context, argv []string) (*sandbox.Session, error) {
	if d.sockHost == "" || d.sockOff.Load() {
		return d.Start(ctx, argv)
	}
	s, err := d.startSocket(ctx, argv)
	var se *socketError
	if err == nil || d.sockForced || !errors.As(err, &se) {
		return s, err
	}
	d.sockOff.Store(true)
	d.logf("sandbox %s: %v; the executor uses the exec stream from now on", d.spec, err)
	return d.Start(ctx, argv)
}

// startSocket listens on a fresh socket in the host directory, starts "tapebox-exec serve
// --dial unix:..." through an exec session and accepts the executor's connection: the
// first one whose peer (SO_PEERCRED) is the exec's own process, as the engine reports it.
// Any other connection (another process in the container) is refused. The controller
// never connects to anything in the sandbox: the socket is its own, in a directory the
// container can only read. The session reads and writes the connection; the exec stream
// only carries stderr and tells when the executor has exited.
func (d *Backend) startSocket(ctx context.Context, argv []string) (*sandbox.Session, error) {
	name := sockName(kit.RandomHex(6))
	inPath, hostPath := path.Join(sockDirIn, name), filepath.Join(d.sockHost, name)
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: hostPath, Net: "unix"})
	if err != nil {
		return nil, &socketError{fmt.Sprintf("listen on %s: %v", hostPath, err)}
	}
	defer ln.Close() // removes the socket file: once the executor is connected, nobody else may
	if err := os.Chmod(hostPath, 0o666); err != nil {
		return nil, &socketError{fmt.Sprintf("make %s connectable for the container's user: %v", hostPath, err)}
	}
	argv = append(slices.Clip(argv), "--dial", "unix:"+inPath)
	st, err := d.Start(ctx, argv)
	if err != nil {
		return nil, err
	}
	// The exec stream's end is the executor's exit; draining it also keeps its stderr.
	drained := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, st.Stdout)
		close(drained)
	}()
	conn, err := d.acceptExecutor(ctx, ln, st)
	if err != nil {
		st.Close()
		<-drained
		return nil, err
	}
	if conn == nil {
		// The executor exited before it connected: too old for --dial (a usage error), unable
		// to reach the socket, or unable to run at all, which the stream would not change:
		// the ended session reports that as a stream session would.
		<-drained
		var ee *sandbox.ExitError
		werr := st.Wait()
		switch {
		case errors.As(werr, &ee) && ee.Code == 2 && strings.Contains(ee.Stderr, "--dial"):
			st.Close()
			return nil, &socketError{"this tapebox-exec does not know serve --dial (an older build)"}
		case errors.As(werr, &ee) && strings.Contains(ee.Stderr, "dial unix:"):
			st.Close()
			return nil, &socketError{fmt.Sprintf("the executor could not connect to %s (%s on the host): %s; the engine may not pass sockets through a bind mount",
				inPath, hostPath, strings.TrimSpace(lastLine(ee.Stderr)))}
		}
		return st, nil
	}
	s := sandbox.NewSession(sockStdin{conn}, conn)
	s.ShareStderr(st) // the exec session carries the executor's stderr
	go func() { s.Finish(st.Wait()) }()
	s.SetStop(func() error {
		// The end of the connection ends the session as the end of stdin does on the stream:
		// calls in flight finish, the executor exits. The exec's stdin closes only after the
		// grace period, since its end cancels the calls in flight.
		_ = conn.CloseWrite()
		t := time.NewTimer(sandbox.SessionGrace)
		select {
		case <-st.Done():
		case <-t.C:
		}
		t.Stop()
		err := st.Close()
		conn.Close()
		<-s.Done()
		<-drained
		return err
	})
	d.logf("sandbox %s: executor session over unix socket %s", d.spec, hostPath)
	return s, nil
}

// acceptExecutor waits for the executor of the exec session st to connect to ln, at most
// readyTimeout. It returns the connection, or nil and no error when the executor exited
// first. A connection from any other process is closed and the wait goes on.
func (d *Backend) acceptExecutor(parent context.Context, ln *net.UnixListener, st *sandbox.Session) (*net.UnixConn, error) {
	ctx, cancel := context.WithTimeout(parent, readyTimeout)
	defer cancel()
	// The engine learns the exec's pid as it starts the process: ask while it starts.
	type pidResult struct {
		pid int
		err error
	}
	pidc := make(chan pidResult, 1)
	var wg sync.WaitGroup
	wg.Go(func() {
		execID, _ := d.execs.Load(st)
		pid, err := d.execPID(ctx, execID.(string))
		pidc <- pidResult{pid, err}
	})
	type acceptResult struct {
		conn *net.UnixConn
		err  error
	}
	acceptc := make(chan acceptResult, 1)
	wg.Go(func() {
		var want *pidResult
		for {
			c, err := ln.AcceptUnix()
			if err != nil {
				acceptc <- acceptResult{err: err}
				return
			}
			peer, perr := peerPID(c)
			if want == nil {
				r := <-pidc
				want = &r
			}
			switch {
			case want.err != nil:
				c.Close()
				acceptc <- acceptResult{err: want.err}
				return
			case perr != nil:
				d.logf("sandbox %s: refused a connection to the executor's socket: %v", d.spec, perr)
			case peer != want.pid:
				d.logf("sandbox %s: refused a connection to the executor's socket from pid %d: the executor is pid %d", d.spec, peer, want.pid)
			default:
				acceptc <- acceptResult{conn: c}
				return
			}
			c.Close()
		}
	})
	var res acceptResult
	got := false
	select {
	case res = <-acceptc:
		got = true
	case <-st.Done():
	case <-ctx.Done():
	}
	ln.Close() // ends the accept loop; the socket file goes
	cancel()   // ends the pid lookup
	if !got {
		res = <-acceptc
	}
	wg.Wait()
	switch {
	case res.conn != nil && !got:
		// Connected just as the wait ended: the session is given up all the same.
		res.conn.Close()
	case res.conn != nil:
		return res.conn, nil
	}
	select {
	case <-st.Done():
		return nil, nil
	default:
	}
	if parent.Err() != nil {
		return nil, fmt.Errorf("start %s in %s: %w", sandbox.ExecutorName, d.spec, parent.Err())
	}
	if ctx.Err() != nil {
		return nil, &socketError{fmt.Sprintf("the executor did not connect within %v", readyTimeout)}
	}
	return nil, &socketError{res.err.Error()}
}

// execPID returns the host pid of an exec's process, waiting for the engine to know it.
func (d *Backend) execPID(ctx context.Context, execID string) (int, error) {
	for delay := 500 * time.Microsecond; ; delay = min(2*delay, 20*time.Millisecond) {
		ins, err := d.cli.ContainerExecInspect(ctx, execID)
		if err != nil {
			return 0, fmt.Errorf("find the executor's pid: %w", err)
		}
		if ins.Pid != 0 {
			return ins.Pid, nil
		}
		if !ins.Running && ins.ExitCode != 0 {
			return 0, fmt.Errorf("find the executor's pid: it exited with status %d", ins.ExitCode)
		}
		select {
		case <-ctx.Done():
			return 0, fmt.Errorf("find the executor's pid: %w", ctx.Err())
		case <-time.After(delay):
		}
	}
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}

// sockStdin is a socket session's stdin: Close half-closes the connection, which the
// executor reads as the end of the session.
type sockStdin struct{ c *net.UnixConn }

func (w sockStdin) Write(p []byte) (int, error) { return w.c.Write(p) }
func (w sockStdin) Close() error                { return w.c.CloseWrite() }
