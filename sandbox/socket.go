package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Transport says how the executor session of a Docker sandbox travels between the host and
// "tapebox-exec serve".
type Transport string

// The transports. A local sandbox always uses pipes to a host process.
const (
	// TransportAuto (also the zero value) uses a unix socket when TapeBox creates the
	// container (docker-image:) on an engine of this machine with the default runtime, and
	// the exec stream otherwise. When the socket cannot be set up (the engine refuses the
	// bind mount, the executor is too old for serve --listen, the socket cannot be reached
	// through the mount), it says why through Options.Logf and uses the exec stream.
	TransportAuto Transport = "auto"
	// TransportStream always uses the exec session's hijacked stdin/stdout stream through
	// the engine: about 0.1 ms a round trip on engine 20.10.
	TransportStream Transport = "stream"
	// TransportSocket insists on the unix socket: Open and Start fail, saying why, where
	// TransportAuto would fall back to the stream. The executor listens on a socket in a host
	// directory bind-mounted into the container and the controller connects to it, so calls
	// bypass the engine (about 0.03 ms a round trip); the exec session stays, as the
	// executor's lifeline and for its stderr.
	TransportSocket Transport = "socket"
)

// ParseTransport parses "auto", "stream" or "socket" ("" is auto).
func ParseTransport(s string) (Transport, error) {
	t := Transport(s)
	switch t {
	case "", TransportAuto:
		return TransportAuto, nil
	case TransportStream, TransportSocket:
		return t, nil
	}
	return "", fmt.Errorf("%w: unknown executor transport %q: use auto, stream or socket", ErrOption, s)
}

func (t Transport) check(spec Spec) error {
	t, err := ParseTransport(string(t))
	if err != nil {
		return err
	}
	if t == TransportSocket && spec.Scheme != SchemeDockerImage {
		return fmt.Errorf("%w: the socket transport needs a container TapeBox creates (docker-image:IMAGE), where it can bind-mount the socket's directory; %s sandboxes use %s",
			ErrOption, spec.Scheme, map[string]string{SchemeLocal: "pipes", SchemeDocker: "the exec stream"}[spec.Scheme])
	}
	return nil
}

// sockDirIn is where the host's socket directory is mounted in a created container.
const sockDirIn = "/run/tapebox-exec"

// maxSocketPath is the longest path a unix socket address holds (sun_path: 108 bytes with
// the terminating NUL).
const maxSocketPath = 107

// readyTimeout bounds the wait for the executor's "listening" line.
const readyTimeout = 10 * time.Second

func sockName(id string) string { return "exec-" + id + ".sock" }

// socketDir makes the host directory for a created container's executor sockets: "s" in a
// private temporary directory. "s" is world-writable so that the container's user (root
// without capabilities, or a remapped user) can create sockets in it; the private parent
// (0700) keeps other users of the host out.
func socketDir() (parent, dir string, err error) {
	parent, err = os.MkdirTemp("", "tapebox-sock-")
	if err != nil {
		return "", "", fmt.Errorf("make a directory for the executor's socket: %w (is $TMPDIR writable?)", err)
	}
	dir = filepath.Join(parent, "s")
	if err := os.Mkdir(dir, 0o777); err == nil {
		err = os.Chmod(dir, 0o777) // past the umask
	}
	if err != nil {
		os.RemoveAll(parent)
		return "", "", fmt.Errorf("make a directory for the executor's socket in %s: %w", parent, err)
	}
	if n := len(filepath.Join(dir, sockName(randomHex(6)))); n > maxSocketPath {
		os.RemoveAll(parent)
		return "", "", fmt.Errorf("the executor's socket in %s would have a %d-byte path, over the %d a unix socket address holds; set TMPDIR to a shorter directory",
			dir, n, maxSocketPath)
	}
	return parent, dir, nil
}

// planSocket decides whether a container TapeBox creates gets the socket transport, and
// makes its host directory. It fails only when TransportSocket is forced and impossible.
func (d *dockerBackend) planSocket(opts Options) error {
	t, _ := ParseTransport(string(opts.Transport))
	if t == TransportStream || d.spec.Scheme != SchemeDockerImage {
		return nil
	}
	d.sockForced = t == TransportSocket
	var why string
	switch {
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
		return fmt.Errorf("open sandbox %s: %w: the socket transport is not possible: %s; use the exec stream (--exec-transport stream or auto)", d.spec, ErrOption, why)
	}
	d.logf("sandbox %s: the executor will use the exec stream: %s", d.spec, why)
	return nil
}

// dropSocket gives up the socket transport and removes its host directory.
func (d *dockerBackend) dropSocket() {
	if d.sockParent != "" {
		os.RemoveAll(d.sockParent)
	}
	d.sockParent, d.sockHost = "", ""
}

func (d *dockerBackend) transport() string {
	if d.sockHost != "" && !d.sockOff.Load() {
		return "unix-socket"
	}
	return "exec-stream"
}

// socketError is a failure of the socket transport that the exec stream may not have.
type socketError struct{ msg string }

func (e *socketError) Error() string { return "executor socket: " + e.msg }

func (d *dockerBackend) startExecutor(ctx context.Context, argv []string) (*Session, error) {
	if d.sockHost == "" || d.sockOff.Load() {
		return d.start(ctx, argv)
	}
	s, err := d.startSocket(ctx, argv)
	var se *socketError
	if err == nil || d.sockForced || !errors.As(err, &se) {
		return s, err
	}
	d.sockOff.Store(true)
	d.logf("sandbox %s: %v; the executor uses the exec stream from now on", d.spec, err)
	return d.start(ctx, argv)
}

// startSocket starts "tapebox-exec serve --listen unix:..." through an exec session, waits
// for its "listening" line and connects to the socket through the host directory. The
// session reads and writes the connection; the exec stream only carries stderr and tells
// when the executor has exited.
func (d *dockerBackend) startSocket(ctx context.Context, argv []string) (*Session, error) {
	name := sockName(randomHex(6))
	inPath, hostPath := path.Join(sockDirIn, name), filepath.Join(d.sockHost, name)
	argv = append(slices.Clip(argv), "--listen", "unix:"+inPath)
	st, err := d.start(ctx, argv)
	if err != nil {
		return nil, err
	}
	line, err := readReady(ctx, st)
	if err != nil {
		if ctx.Err() != nil {
			st.Close()
			return nil, fmt.Errorf("start %s in %s: %w", argv[0], d.spec, ctx.Err())
		}
		if !errors.Is(err, io.EOF) {
			st.Close()
			return nil, &socketError{err.Error()}
		}
		// The executor exited before listening: too old for --listen (a usage error), or
		// unable to run at all, which the stream would not change: the ended session
		// reports that as a stream session would.
		<-st.Done()
		var ee *ExitError
		if errors.As(st.Wait(), &ee) && ee.Code == 2 && strings.Contains(ee.Stderr, "--listen") {
			st.Close()
			return nil, &socketError{"this tapebox-exec does not know serve --listen (an older build)"}
		}
		return st, nil
	}
	if want := "listening unix:" + inPath; line != want {
		// The runtime's own failure ("cannot exec in a stopped state") ends the exec at once:
		// the ended session reports it as a stream session would.
		drained := make(chan struct{})
		go func() {
			_, _ = io.Copy(io.Discard, st.Stdout)
			close(drained)
		}()
		t := time.NewTimer(sessionGrace)
		defer t.Stop()
		select {
		case <-drained:
			<-st.Done()
			return st, nil
		case <-t.C:
		}
		st.Close()
		<-drained
		return nil, &socketError{fmt.Sprintf("the executor said %q, not %q", line, want)}
	}
	c, err := net.DialTimeout("unix", hostPath, readyTimeout)
	if err != nil {
		st.Close()
		return nil, &socketError{fmt.Sprintf("connect to %s (%s in the container): %v; the engine may not pass sockets through a bind mount", hostPath, inPath, err)}
	}
	conn := c.(*net.UnixConn)
	s := &Session{Stdin: sockStdin{conn}, Stdout: conn, stderr: st.stderr, done: make(chan struct{})}
	// The exec stream's end is the executor's exit; draining it also keeps its stderr.
	go func() { _, _ = io.Copy(io.Discard, st.Stdout) }()
	go func() {
		<-st.done
		s.finish(st.err)
	}()
	s.stop = func() error {
		// The end of the connection ends the session as the end of stdin does on the stream:
		// calls in flight finish, the executor exits. The exec's stdin closes only after the
		// grace period, since its end cancels the calls in flight.
		_ = conn.CloseWrite()
		t := time.NewTimer(sessionGrace)
		select {
		case <-st.done:
		case <-t.C:
		}
		t.Stop()
		err := st.Close()
		conn.Close()
		<-s.done
		return err
	}
	d.logf("sandbox %s: executor session over unix socket %s", d.spec, hostPath)
	return s, nil
}

// readReady reads the executor's first stdout line, waiting at most readyTimeout (a stuck
// start is cut off by closing the session).
func readReady(ctx context.Context, st *Session) (string, error) {
	type res struct {
		line string
		err  error
	}
	ch := make(chan res, 1)
	go func() {
		var b []byte
		var one [1]byte
		for len(b) < 4096 {
			n, err := st.Stdout.Read(one[:])
			if n == 1 {
				if one[0] == '\n' {
					ch <- res{line: string(b)}
					return
				}
				b = append(b, one[0])
			}
			if err != nil {
				ch <- res{err: err}
				return
			}
		}
		ch <- res{err: fmt.Errorf("no line in the executor's first %d bytes of output", len(b))}
	}()
	t := time.NewTimer(readyTimeout)
	defer t.Stop()
	select {
	case r := <-ch:
		return r.line, r.err
	case <-ctx.Done():
	case <-t.C:
	}
	st.Close() // ends the read above
	<-ch
	if ctx.Err() != nil {
		return "", ctx.Err()
	}
	return "", fmt.Errorf("the executor did not start listening within %v", readyTimeout)
}

// sockStdin is a socket session's stdin: Close half-closes the connection, which the
// executor reads as the end of the session.
type sockStdin struct{ c *net.UnixConn }

func (w sockStdin) Write(p []byte) (int, error) { return w.c.Write(p) }
func (w sockStdin) Close() error                { return w.c.CloseWrite() }
