package docker

import (
	"archive/tar"
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/mount"
	"github.com/docker/docker/client"
	"github.com/docker/docker/errdefs"
	"github.com/docker/docker/pkg/stdcopy"

	"github.com/tapebox/tapebox/sandbox"
	"github.com/tapebox/tapebox/sandbox/internal/kit"
	"github.com/tapebox/tapebox/workspace"
)

// Where InstallExecutor puts the executor: on the PATH, or in an anonymous volume when the
// root filesystem is read-only (the Engine API cannot copy into a read-only root or a tmpfs).
const (
	installDir         = "/usr/local/bin"
	installDirReadOnly = "/opt/tapebox"
)

// noEngineHint says what to do when no engine answers.
const noEngineHint = "start one (sudo dockerd &, or sudo scripts/ci-setup.sh in a checkout), point DOCKER_HOST at one, or use a local:DIR sandbox (this machine, isolated by bubblewrap where bwrap is installed; unsafe-local:DIR is not isolated)"

// Client connects to the Docker engine the environment names (DOCKER_HOST, DOCKER_API_VERSION,
// DOCKER_CERT_PATH, DOCKER_TLS_VERIFY; else the default socket) with API version negotiation,
// and checks that it answers. The error wraps sandbox.ErrNoEngine when it does not.
func Client(ctx context.Context) (*client.Client, error) {
	cli, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		return nil, fmt.Errorf("connect to the Docker engine: %w", err)
	}
	pctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	if _, err := cli.Ping(pctx); err != nil {
		host := cli.DaemonHost()
		cli.Close()
		return nil, fmt.Errorf("connect to the Docker engine at %s: %w (%v); %s", host, sandbox.ErrNoEngine, err, noEngineHint)
	}
	cli.NegotiateAPIVersion(ctx)
	return cli, nil
}

// Backend runs a sandbox's commands in a Docker container through the Engine API: an
// existing one (docker:NAME) or one it creates (docker-image:IMAGE). See the package doc.
type Backend struct {
	cli     *client.Client
	spec    sandbox.Spec
	id      string
	name    string
	created bool // TapeBox created the container; close removes it
	cwd     string
	user    string // the container's user, as its config names it
	env     []string
	logf    func(string, ...any)

	// The socket transport (socket.go): the host directory bind-mounted read-only at
	// sockDirIn and its private parent; sockOff is set once it failed and the stream took
	// over.
	sockHost, sockParent string
	sockForced           bool
	sockOff              atomic.Bool
	execs                sync.Map // *sandbox.Session -> its exec's ID, for the socket transport
}

var _ sandbox.Backend = (*Backend)(nil)

func init() {
	sandbox.Register(sandbox.SchemeDocker, Open)
	sandbox.Register(sandbox.SchemeDockerImage, Open)
}

// Open opens "docker:NAME" or "docker-image:IMAGE": see the package doc. sandbox.Open calls
// it for both schemes.
func Open(ctx context.Context, spec sandbox.Spec, opts sandbox.Options) (_ *sandbox.Sandbox, err error) {
	if opts.ExecutorPath != "" && !opts.InstallExecutor {
		return nil, fmt.Errorf("open sandbox %s: %w: ExecutorPath names the host binary to install; set InstallExecutor too, or SandboxExecutor for a binary already in the container",
			spec, sandbox.ErrOption)
	}
	if opts.Cwd != "" && !path.IsAbs(opts.Cwd) {
		return nil, fmt.Errorf("open sandbox %s: %w: Cwd %q must be an absolute path in the container", spec, sandbox.ErrOption, opts.Cwd)
	}
	cli, err := Client(ctx)
	if err != nil {
		return nil, fmt.Errorf("open sandbox %s: %w", spec, err)
	}
	d := &Backend{cli: cli, spec: spec, env: kit.EnvList(opts.Env), logf: kit.Logf(opts.Logf)}
	defer func() {
		if err != nil {
			d.Close(context.WithoutCancel(ctx), nil)
		}
	}()
	// What killed replays left behind goes while this sandbox is prepared.
	var reaping sync.WaitGroup
	reaping.Go(func() {
		reapLeftovers(ctx, cli, func(format string, args ...any) { d.logf("sandbox %s: %s", spec, fmt.Sprintf(format, args...)) })
	})
	defer reaping.Wait()

	var info sandbox.Info
	imageRef := ""
	if spec.Scheme == sandbox.SchemeDocker {
		if imageRef, err = d.attach(ctx, opts); err != nil {
			return nil, err
		}
	}
	if info.Arch, err = d.inspectImage(ctx, cmp.Or(imageRef, spec.Target), opts); err != nil {
		return nil, err
	}
	d.cwd = path.Clean("/" + cmp.Or(d.cwd, "/"))
	info.Cwd = d.cwd

	// The executor: installed by us (chosen by the image's architecture), or expected inside.
	exe, err := executorToInstall(ctx, spec, opts, info.Arch)
	if err != nil {
		return nil, err
	}
	switch {
	case exe == "":
		info.Executor = cmp.Or(opts.SandboxExecutor, sandbox.ExecutorName)
	case opts.ReadOnlyRoot:
		info.Executor = path.Join(installDirReadOnly, sandbox.ExecutorName)
	default:
		info.Executor = path.Join(installDir, sandbox.ExecutorName)
	}

	if spec.Scheme != sandbox.SchemeDockerImage {
		if err := d.ensureDir(ctx, d.cwd); err != nil {
			return nil, err
		}
		if exe != "" {
			if err := d.install(ctx, exe, info.Executor); err != nil {
				return nil, err
			}
		}
	} else if err := d.start(ctx, opts, exe, info.Executor); err != nil {
		return nil, err
	}
	info.ContainerID = d.id
	return sandbox.New(spec, d, info), nil
}

// attach fills d from the running container a docker: spec names and returns its image.
func (d *Backend) attach(ctx context.Context, opts sandbox.Options) (imageRef string, err error) {
	ci, err := d.cli.ContainerInspect(ctx, d.spec.Target)
	if err != nil {
		return "", d.containerErr("open sandbox", err)
	}
	if ci.State == nil || !ci.State.Running || ci.State.Paused || ci.State.Restarting {
		return "", fmt.Errorf("open sandbox %s: %w: container %s is %s; start it (docker start %s) or use docker-image:IMAGE for a fresh one",
			d.spec, sandbox.ErrNotRunning, d.spec.Target, stateName(ci.State), d.spec.Target)
	}
	d.id, d.name = ci.ID, strings.TrimPrefix(ci.Name, "/")
	d.cwd = opts.Cwd
	if d.cwd == "" && ci.Config != nil {
		d.cwd = ci.Config.WorkingDir
	}
	if ci.Config != nil {
		d.user = ci.Config.User
	}
	return ci.Image, nil
}

// inspectImage reads ref's architecture and, for a docker-image: spec, takes the working
// directory and user from it where opts leave them open, as docker run would.
func (d *Backend) inspectImage(ctx context.Context, ref string, opts sandbox.Options) (arch string, err error) {
	spec := d.spec
	img, err := d.cli.ImageInspect(ctx, ref)
	if err != nil {
		if errdefs.IsNotFound(err) && spec.Scheme == sandbox.SchemeDockerImage {
			return "", fmt.Errorf("open sandbox %s: image %s: %w; TapeBox never pulls: build tapebox/sandbox:bookworm with make sandbox-image, or bring the image in with docker import, docker load or docker pull",
				spec, spec.Target, sandbox.ErrNotFound)
		}
		if client.IsErrConnectionFailed(err) {
			return "", fmt.Errorf("open sandbox %s: %w (%v); %s", spec, sandbox.ErrNoEngine, err, noEngineHint)
		}
		return "", fmt.Errorf("open sandbox %s: inspect image %s: %w", spec, ref, err)
	}
	arch = img.Architecture
	if a, err := sandbox.NormalizeArch(img.Architecture); err == nil {
		arch = a
	}
	if spec.Scheme != sandbox.SchemeDockerImage {
		return arch, nil
	}
	d.cwd = opts.Cwd
	if d.cwd == "" && img.Config != nil {
		d.cwd = img.Config.WorkingDir
	}
	d.user = opts.User
	if d.user == "" && img.Config != nil && !kit.IsRoot(img.Config.User) {
		d.user = img.Config.User // the image's own user, as docker run would
	}
	if d.user == "" && !opts.ReadOnlyRoot {
		// With ReadOnlyRoot the working directory is an anonymous volume, which the engine
		// gives to root (or to the image directory's owner), and which no one in a
		// container without capabilities can give to another user: root it stays.
		d.user = sandbox.DefaultUser
	}
	warnf := kit.Warnf(opts.Warnf, opts.Logf)
	for _, w := range opts.Warnings() {
		warnf("sandbox %s: warning: %s", spec, w)
	}
	return arch, nil
}

// executorToInstall names the host binary to install for arch, or "" when the executor is
// expected inside the sandbox already.
func executorToInstall(ctx context.Context, spec sandbox.Spec, opts sandbox.Options, arch string) (string, error) {
	if !opts.InstallExecutor {
		return "", nil
	}
	exe := opts.ExecutorPath
	if exe == "" {
		var err error
		if exe, err = sandbox.ExecutorPath(ctx, arch); err != nil {
			return "", fmt.Errorf("open sandbox %s: %w", spec, err)
		}
	}
	if err := sandbox.CheckExecutorArch(exe, arch, "sandbox "+spec.String()); err != nil {
		return "", fmt.Errorf("open sandbox %s: %w", spec, err)
	}
	return exe, nil
}

// start creates and starts a fresh container for a docker-image: spec, with the executor exe
// (when set) at dest. A created container on an engine of this machine gets the executor
// bind-mounted read-only: no copy (about 50 ms of a 0.3 s start). Elsewhere, or if the engine
// refuses the mount (a VM that does not share the path), it is copied in before the start.
func (d *Backend) start(ctx context.Context, opts sandbox.Options, exe, dest string) error {
	spec := d.spec
	bind := exe != "" && !opts.CopyExecutor && localEngine(d.cli)
	if err := d.planSocket(opts); err != nil {
		return err
	}
	// When the engine refuses a bind mount, give up the socket's (unless forced), then the
	// executor's.
	retryMount := func(err error) bool {
		if !isMountErr(err) {
			return false
		}
		switch {
		case d.sockHost != "" && !d.sockForced:
			d.logf("sandbox %s: bind-mounting the socket directory failed (%v); the executor will use the exec stream", spec, err)
			d.dropSocket()
		case bind:
			d.logf("sandbox %s: bind-mounting the executor failed (%v); copying it instead", spec, err)
			bind = false
		default:
			return false
		}
		return true
	}
	for {
		mountExe := ""
		if bind {
			mountExe = exe
		}
		if err := d.create(ctx, opts, mountExe, dest); err != nil {
			if retryMount(err) {
				continue
			}
			return err
		}
		if exe != "" && !bind {
			if err := d.install(ctx, exe, dest); err != nil {
				return err
			}
		}
		made := false
		if !opts.ReadOnlyRoot && !kit.IsRoot(d.user) {
			var err error
			if made, err = d.makeCwd(ctx); err != nil {
				return err
			}
		}
		err := d.cli.ContainerStart(ctx, d.id, container.StartOptions{})
		if err == nil {
			if !made {
				d.warnOwner(ctx)
			}
			break
		}
		err = fmt.Errorf("open sandbox %s: start container %s: %w", spec, d.name, err)
		if !retryMount(err) {
			return err
		}
		if err := d.remove(ctx); err != nil {
			return err
		}
	}
	d.logf("sandbox %s: started container %s (%.12s)", spec, d.name, d.id)
	return nil
}

// create creates (does not start) a container with safe defaults.
// exe, when set, is bind-mounted read-only at dest.
func (d *Backend) create(ctx context.Context, opts sandbox.Options, exe, dest string) error {
	if opts.ReadOnlyRoot && d.cwd == "/" {
		return fmt.Errorf("open sandbox %s: %w: ReadOnlyRoot needs a Cwd other than / (it becomes a writable volume)", d.spec, sandbox.ErrOption)
	}
	init := true
	cfg := &container.Config{
		Image: d.spec.Target,
		// Keeps the container alive for execs; docker-init (Init) is PID 1 and reaps the
		// orphans of background commands. The image needs sleep (coreutils or busybox).
		Entrypoint: []string{"sleep", "infinity"},
		User:       d.user,
		Env:        d.env,
		Labels:     map[string]string{sandbox.Label: "1"},
	}
	for k, v := range opts.Labels {
		if _, own := cfg.Labels[k]; !own && k != sandbox.OwnerLabel {
			cfg.Labels[k] = v
		}
	}
	if me, ok := kit.Self(); ok {
		cfg.Labels[sandbox.OwnerLabel] = me.String()
	}
	if kit.IsRoot(d.user) {
		// The engine makes a missing working directory root's, which suits root. For another
		// user makeCwd makes it before the start (about 45 ms: the engine's archive
		// extraction), and execs name it.
		cfg.WorkingDir = d.cwd
	}
	hc := &container.HostConfig{
		NetworkMode:    container.NetworkMode(cmp.Or(opts.Network, "none")),
		CapDrop:        []string{"ALL"},
		CapAdd:         opts.CapAdd,
		SecurityOpt:    []string{"no-new-privileges"},
		Init:           &init,
		ReadonlyRootfs: opts.ReadOnlyRoot,
		Runtime:        opts.Runtime,
		Resources: container.Resources{
			Memory:   kit.Limit(opts.Memory, sandbox.DefaultMemory),
			NanoCPUs: int64(kit.Limit(opts.CPUs, sandbox.DefaultCPUs) * 1e9),
		},
	}
	if pids := kit.Limit(opts.PidsLimit, sandbox.DefaultPidsLimit); pids > 0 {
		hc.PidsLimit = &pids
	} else {
		unlimited := int64(-1) // 0 would leave the engine's default
		hc.PidsLimit = &unlimited
	}
	if hc.Memory > 0 {
		hc.MemorySwap = hc.Memory // no swap beyond the limit
	}
	if exe != "" {
		hc.Mounts = append(hc.Mounts, mount.Mount{Type: mount.TypeBind, Source: exe, Target: dest, ReadOnly: true})
	}
	if d.sockHost != "" {
		// Read-only: the container reaches the controller's sockets and can change nothing.
		hc.Mounts = append(hc.Mounts, mount.Mount{Type: mount.TypeBind, Source: d.sockHost, Target: sockDirIn, ReadOnly: true})
	}
	if opts.ReadOnlyRoot {
		hc.Mounts = append(hc.Mounts, mount.Mount{Type: mount.TypeVolume, Target: d.cwd})
		if opts.InstallExecutor && exe == "" {
			hc.Mounts = append(hc.Mounts, mount.Mount{Type: mount.TypeVolume, Target: installDirReadOnly})
		}
		if d.cwd != "/tmp" {
			hc.Tmpfs = map[string]string{"/tmp": "rw,exec,nosuid,nodev,mode=1777"}
		}
	}
	name := "tapebox-" + kit.RandomHex(6)
	resp, err := d.cli.ContainerCreate(ctx, cfg, hc, nil, nil, name)
	if err != nil {
		hint := ""
		if opts.Runtime != "" && strings.Contains(strings.ToLower(err.Error()), "runtime") {
			hint = fmt.Sprintf("; is runtime %q configured in the engine (docker info, daemon.json \"runtimes\")?", opts.Runtime)
		}
		return fmt.Errorf("open sandbox %s: create a container: %w%s", d.spec, err, hint)
	}
	d.id, d.name, d.created = resp.ID, name, true
	d.logf("sandbox %s: created container %s (%.12s)", d.spec, name, resp.ID)
	return nil
}

// localEngine reports whether the engine listens on this machine (a unix socket or a named
// pipe), so that it can bind-mount the host's files.
func localEngine(cli *client.Client) bool {
	h := cli.DaemonHost()
	return strings.HasPrefix(h, "unix://") || strings.HasPrefix(h, "npipe://")
}

// isMountErr recognizes an engine's refusal of a bind mount.
func isMountErr(err error) bool {
	e := strings.ToLower(err.Error())
	return strings.Contains(e, "mount") || strings.Contains(e, "bind source") || strings.Contains(e, "not shared")
}

// remove force-removes the created container and its anonymous volumes.
func (d *Backend) remove(ctx context.Context) error {
	if !d.created || d.id == "" {
		return nil
	}
	err := d.cli.ContainerRemove(ctx, d.id, container.RemoveOptions{Force: true, RemoveVolumes: true})
	if err != nil && !errdefs.IsNotFound(err) {
		return fmt.Errorf("sandbox %s: remove container %s: %w; remove it by hand: docker rm -f %s", d.spec, d.name, err, d.id)
	}
	d.logf("sandbox %s: removed container %s", d.spec, d.name)
	d.id, d.created = "", false
	return nil
}

// ensureDir creates dir in the container when it is missing.
func (d *Backend) ensureDir(ctx context.Context, dir string) error {
	if _, err := d.cli.ContainerStatPath(ctx, d.id, dir); err == nil {
		return nil
	} else if !errdefs.IsNotFound(err) {
		return d.containerErr("check working directory "+dir, err)
	}
	return d.createDir(ctx, dir)
}

// createDir creates dir (and its missing parents, root's) in the container, owned by the
// container's user.
func (d *Backend) createDir(ctx context.Context, dir string) error {
	owner, byName := kit.OwnerOf(d.user)
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: strings.TrimPrefix(dir, "/") + "/", Mode: 0o755, ModTime: time.Now(),
		Uid: owner.UID, Gid: owner.GID}); err != nil {
		return fmt.Errorf("create %s in %s: %w", dir, d.spec, err)
	}
	tw.Close()
	// A numeric owner is in the header; a name is the engine's to resolve (CopyUIDGID).
	if err := d.cli.CopyToContainer(ctx, d.id, "/", &buf, container.CopyToContainerOptions{CopyUIDGID: byName}); err != nil {
		return d.containerErr("create working directory "+dir, err)
	}
	d.logf("sandbox %s: created %s for user %s", d.spec, dir, cmp.Or(d.user, "root"))
	return nil
}

// makeCwd creates the working directory of a created container, before it starts, when the
// image does not have it; made says whether it did.
func (d *Backend) makeCwd(ctx context.Context) (made bool, err error) {
	if _, err := d.cli.ContainerStatPath(ctx, d.id, d.cwd); err == nil {
		return false, nil
	} else if !errdefs.IsNotFound(err) {
		return false, d.containerErr("check working directory "+d.cwd, err)
	}
	return true, d.createDir(ctx, d.cwd)
}

// warnOwner logs a warning when the working directory, the image's (or an anonymous volume,
// with ReadOnlyRoot), is neither the container's user's nor writable by them.
func (d *Backend) warnOwner(ctx context.Context) {
	owner, byName := kit.OwnerOf(d.user)
	if byName || owner.UID == 0 {
		return
	}
	rc, _, err := d.cli.CopyFromContainer(ctx, d.id, d.cwd)
	if err != nil {
		return
	}
	defer rc.Close() // after the first header: the engine stops archiving
	hdr, err := tar.NewReader(rc).Next()
	if err != nil || hdr.Uid == owner.UID || hdr.Mode&0o002 != 0 || (hdr.Gid == owner.GID && hdr.Mode&0o020 != 0) {
		return
	}
	d.logf("sandbox %s: warning: the working directory %s is the image's and belongs to %d:%d (mode %o): the tape's commands run as %s and may not write there; --user %d:%d runs them as its owner",
		d.spec, d.cwd, hdr.Uid, hdr.Gid, hdr.Mode&0o7777, d.user, hdr.Uid, hdr.Gid)
}

// install copies the host binary exe to dest in the container.
func (d *Backend) install(ctx context.Context, exe, dest string) error {
	f, err := os.Open(exe)
	if err != nil {
		return fmt.Errorf("install the executor in %s: %w", d.spec, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("install the executor in %s: %w", d.spec, err)
	}
	var buf bytes.Buffer
	buf.Grow(int(fi.Size()) + 2048)
	tw := tar.NewWriter(&buf)
	hdr := &tar.Header{Typeflag: tar.TypeReg, Name: path.Base(dest), Mode: 0o755, Size: fi.Size(), ModTime: fi.ModTime()}
	if err := tw.WriteHeader(hdr); err != nil {
		return fmt.Errorf("install the executor in %s: %w", d.spec, err)
	}
	if _, err := io.Copy(tw, f); err != nil {
		return fmt.Errorf("install the executor in %s: read %s: %w", d.spec, exe, err)
	}
	if err := tw.Close(); err != nil {
		return fmt.Errorf("install the executor in %s: %w", d.spec, err)
	}
	if err := d.cli.CopyToContainer(ctx, d.id, path.Dir(dest), &buf, container.CopyToContainerOptions{}); err != nil {
		err = d.containerErr("install the executor at "+dest, err)
		if strings.Contains(strings.ToLower(err.Error()), "read-only") {
			err = fmt.Errorf("%w; the container's root is read-only: copy tapebox-exec into a writable volume yourself and set SandboxExecutor", err)
		}
		return err
	}
	d.logf("sandbox %s: installed %s at %s", d.spec, exe, dest)
	return nil
}

// containerErr wraps an engine error about the container with what happened and what to do.
func (d *Backend) containerErr(op string, err error) error {
	who := d.spec.Target
	if d.name != "" {
		who = d.name
	}
	switch {
	case client.IsErrConnectionFailed(err):
		return fmt.Errorf("%s in %s: %w (%v); %s", op, d.spec, sandbox.ErrNoEngine, err, noEngineHint)
	case errdefs.IsNotFound(err) && strings.Contains(strings.ToLower(err.Error()), "container"):
		return fmt.Errorf("%s in %s: container %s: %w (%v); list containers with docker ps -a, or use docker-image:IMAGE for a fresh one",
			op, d.spec, who, sandbox.ErrNotFound, err)
	case errdefs.IsConflict(err) && strings.Contains(strings.ToLower(err.Error()), "not running"):
		return fmt.Errorf("%s in %s: %w: container %s %s", op, d.spec, sandbox.ErrNotRunning, who, d.stoppedDetail())
	}
	return fmt.Errorf("%s in %s: %w", op, d.spec, err)
}

// stoppedDetail says how the container ended and what to do, for a not-running error.
func (d *Backend) stoppedDetail() string {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ci, err := d.cli.ContainerInspect(ctx, d.id)
	if err != nil || ci.State == nil {
		return "is not running"
	}
	s := fmt.Sprintf("is %s (exit code %d", stateName(ci.State), ci.State.ExitCode)
	if ci.State.OOMKilled {
		s += ", killed for running out of memory"
	}
	s += ")"
	if d.created {
		if ci.State.ExitCode == 127 {
			s += "; the image has no sleep command to keep the container alive (it needs coreutils or busybox)"
		}
		return s + "; the sandbox is gone: open a new one"
	}
	return s + fmt.Sprintf("; start it again (docker start %s)", d.spec.Target)
}

func stateName(st *container.State) string {
	switch {
	case st == nil:
		return "in an unknown state"
	case st.Paused:
		return "paused"
	case st.Restarting:
		return "restarting"
	case st.Status != "":
		return st.Status
	}
	return "not running"
}

// Start runs argv as a docker exec in the container, its stdio attached as the Session's
// (the engine's multiplexed stream split into stdout and stderr).
func (d *Backend) Start(ctx context.Context, argv []string) (*sandbox.Session, error) {
	what := "start " + argv[0]
	ex, err := d.cli.ContainerExecCreate(ctx, d.id, container.ExecOptions{
		Cmd: argv, AttachStdin: true, AttachStdout: true, AttachStderr: true,
		WorkingDir: d.cwd, Env: d.env,
	})
	if err != nil {
		return nil, d.containerErr(what, err)
	}
	resp, err := d.cli.ContainerExecAttach(ctx, ex.ID, container.ExecAttachOptions{})
	if err != nil {
		return nil, d.containerErr(what, err)
	}
	s := sandbox.NewSession(&hijackedStdin{conn: resp.Conn, closeWrite: resp.CloseWrite}, nil)
	// The runtime reports a command it cannot start (not found, wrong architecture) on
	// stdout; the head of stdout tells that apart from the command's own output.
	head := &kit.Head{Max: 1024}
	var ended sync.Once
	streamEnded := func(streamErr error) {
		ended.Do(func() {
			go func() {
				diag := s.Stderr()
				if h := head.String(); kit.IsOCIExecFailure(h) {
					diag = h + diag
				}
				s.Finish(d.execExit(ex.ID, argv[0], diag, streamErr))
			}()
		})
	}
	s.Stdout = &demuxReader{r: resp.Reader, stderr: s.StderrSink(), head: head, onEnd: streamEnded}
	s.SetStop(func() error {
		_ = resp.CloseWrite()
		exited := d.waitExec(ex.ID, s.Done(), sandbox.SessionGrace)
		// The Engine API cannot signal an exec's process: cutting the stream closes its
		// stdio, and the executor exits when it sees that. It also ends a Read in progress.
		resp.Close()
		streamEnded(sandbox.ErrSessionClosed)
		err := s.Wait()
		d.execs.Delete(s)
		if !exited {
			return nil // ended as Close asked; Wait reports the cut
		}
		return sandbox.CloseResult(err)
	})
	d.execs.Store(s, ex.ID)
	return s, nil
}

// waitExec waits up to grace for an exec's process to exit (or done to close), polling the
// engine; it reports whether it did. An exec the engine no longer knows counts as exited.
func (d *Backend) waitExec(execID string, done <-chan struct{}, grace time.Duration) bool {
	ctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	for delay := 2 * time.Millisecond; ; delay = min(2*delay, 50*time.Millisecond) {
		select {
		case <-done:
			return true
		default:
		}
		ins, err := d.cli.ContainerExecInspect(ctx, execID)
		if ctx.Err() != nil {
			return false
		}
		if err != nil || !ins.Running {
			return true
		}
		select {
		case <-done:
			return true
		case <-ctx.Done():
			return false
		case <-time.After(delay):
		}
	}
}

// execExit waits for the exec's exit status once its stream has ended.
func (d *Backend) execExit(execID, command, stderr string, streamErr error) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for delay := time.Millisecond; ; delay = min(2*delay, 100*time.Millisecond) {
		ins, err := d.cli.ContainerExecInspect(ctx, execID)
		if err != nil {
			if streamErr != nil {
				return fmt.Errorf("session %s in %s: stream broken: %w", command, d.spec, streamErr)
			}
			return d.containerErr("session "+command+": read exit status", err)
		}
		if !ins.Running {
			if ins.ExitCode == 0 {
				return nil
			}
			return sandbox.NewExitError(command, ins.ExitCode, stderr)
		}
		if streamErr != nil {
			return fmt.Errorf("session %s in %s: stream cut while the command runs: %w", command, d.spec, streamErr)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("session %s in %s: output ended but the command still runs after 10 s", command, d.spec)
		case <-time.After(delay):
		}
	}
}

// hijackedStdin is a session's stdin: writes go to the hijacked connection, Close half-closes it.
type hijackedStdin struct {
	conn       io.Writer
	closeWrite func() error
}

func (w *hijackedStdin) Write(p []byte) (int, error) { return w.conn.Write(p) }
func (w *hijackedStdin) Close() error                { return w.closeWrite() }

// Exec runs argv as a docker exec in the container and waits for its exit status.
func (d *Backend) Exec(ctx context.Context, argv []string) (*sandbox.ExecResult, error) {
	what := "exec " + argv[0]
	ex, err := d.cli.ContainerExecCreate(ctx, d.id, container.ExecOptions{
		Cmd: argv, AttachStdout: true, AttachStderr: true, WorkingDir: d.cwd, Env: d.env,
	})
	if err != nil {
		return nil, d.containerErr(what, err)
	}
	resp, err := d.cli.ContainerExecAttach(ctx, ex.ID, container.ExecAttachOptions{})
	if err != nil {
		return nil, d.containerErr(what, err)
	}
	defer resp.Close()
	stop := context.AfterFunc(ctx, resp.Close) // the hijacked stream does not follow ctx
	defer stop()
	var stdout, stderr bytes.Buffer
	if _, err := stdcopy.StdCopy(&stdout, &stderr, resp.Reader); err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("%s in %s: %w", what, d.spec, ctx.Err())
		}
		return nil, fmt.Errorf("%s in %s: read output: %w", what, d.spec, err)
	}
	for delay := time.Millisecond; ; delay = min(2*delay, 50*time.Millisecond) {
		ins, err := d.cli.ContainerExecInspect(ctx, ex.ID)
		if err != nil {
			return nil, d.containerErr(what+": read exit status", err)
		}
		if !ins.Running {
			res := &sandbox.ExecResult{Stdout: stdout.Bytes(), Stderr: stderr.Bytes(), ExitCode: ins.ExitCode}
			if out := string(res.Stdout) + string(res.Stderr); (ins.ExitCode == 126 || ins.ExitCode == 127) && kit.IsOCIExecFailure(out) {
				return res, fmt.Errorf("%s in %s: %w", what, d.spec,
					sandbox.NewExitError(argv[0], ins.ExitCode, out))
			}
			return res, nil
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("%s in %s: %w", what, d.spec, ctx.Err())
		case <-time.After(delay):
		}
	}
}

func (d *Backend) abs(dir string) string {
	if path.IsAbs(dir) {
		return path.Clean(dir)
	}
	return path.Join(d.cwd, dir)
}

// Snapshot reads the tree under dir through the engine's archive API (CopyFromContainer).
func (d *Backend) Snapshot(ctx context.Context, dir string) (map[string]sandbox.File, error) {
	abs := d.abs(dir)
	rc, _, err := d.cli.CopyFromContainer(ctx, d.id, abs)
	if err != nil {
		if errdefs.IsNotFound(err) && !strings.Contains(strings.ToLower(err.Error()), "no such container") {
			return nil, fmt.Errorf("snapshot %s in %s: %w: no such directory", abs, d.spec, sandbox.ErrNotFound)
		}
		return nil, d.containerErr("snapshot "+abs, err)
	}
	defer rc.Close()
	files, err := sandbox.ReadTar(rc)
	if err != nil {
		return nil, fmt.Errorf("snapshot %s in %s: %w", abs, d.spec, err)
	}
	return files, nil
}

// WriteFiles writes files under dir through the engine's archive API, owned by the
// container's user.
func (d *Backend) WriteFiles(ctx context.Context, dir string, files map[string]sandbox.File) error {
	abs := d.abs(dir)
	// Extract from the nearest directory that exists; the missing ones are made with the
	// files, so that they belong to the container's user too.
	dest, prefix := abs, ""
	for {
		_, err := d.cli.ContainerStatPath(ctx, d.id, dest)
		if err == nil || dest == "/" {
			break
		}
		if !errdefs.IsNotFound(err) {
			return d.containerErr("write files to "+abs, err)
		}
		dest, prefix = path.Dir(dest), path.Join(path.Base(dest), prefix)
	}
	if prefix != "" {
		all := make(map[string]sandbox.File, len(files)+strings.Count(prefix, "/")+1)
		for p := prefix; p != "."; p = path.Dir(p) {
			all[p] = sandbox.File{Mode: fs.ModeDir | 0o755}
		}
		for n, f := range files {
			all[path.Join(prefix, n)] = f
		}
		files = all
	}
	// The files belong to the container's user, as restoreWorkspace's do.
	owner, byName := kit.OwnerOf(d.user)
	var buf bytes.Buffer
	if err := sandbox.WriteTar(&buf, files, owner); err != nil {
		return fmt.Errorf("write files to %s in %s: %w", abs, d.spec, err)
	}
	if err := d.cli.CopyToContainer(ctx, d.id, dest, &buf, container.CopyToContainerOptions{AllowOverwriteDirWithFile: true, CopyUIDGID: byName}); err != nil {
		return d.containerErr("write files to "+abs, err)
	}
	return nil
}

// RestoreWorkspace copies the snapshot into the working directory through the engine's
// archive API, owned by the container's user.
func (d *Backend) RestoreWorkspace(ctx context.Context, snapshot *os.File, info workspace.Info) error {
	// The files belong to the container's user, who runs the tool calls. A numeric user goes
	// into the headers; a name is left to the engine (CopyUIDGID), which looks it up in the
	// container's passwd file and fails for a user missing there, numeric ones included.
	// Tar verifies the whole snapshot before it returns, and checks every entry again as the
	// engine reads them.
	rc, byName, err := kit.WorkspaceTar(snapshot, info, d.user)
	if err != nil {
		return fmt.Errorf("restore workspace in %s: %w", d.spec, err)
	}
	defer rc.Close()
	if err := d.ensureDir(ctx, d.cwd); err != nil {
		return err
	}
	err = d.cli.CopyToContainer(ctx, d.id, d.cwd, rc, container.CopyToContainerOptions{CopyUIDGID: byName})
	if err != nil {
		return d.containerErr("restore workspace "+snapshot.Name()+" into "+d.cwd, err)
	}
	return nil
}

// WorkspaceManifest reads the working directory's manifest from the engine's archive of it,
// bounded as a directory the tape's commands wrote is (workspace.Options.Untrusted).
func (d *Backend) WorkspaceManifest(ctx context.Context, opts workspace.Options) (workspace.Manifest, error) {
	opts.Untrusted = true
	rc, _, err := d.cli.CopyFromContainer(ctx, d.id, d.cwd)
	if err != nil {
		return nil, d.containerErr("workspace manifest of "+d.cwd, err)
	}
	defer rc.Close()
	// The archive names the directory's entries "<base of cwd>/<path>".
	m, err := workspace.ManifestTar(rc, path.Base(d.cwd), opts)
	if err != nil {
		return nil, fmt.Errorf("workspace manifest of %s in %s: %w", d.cwd, d.spec, err)
	}
	return m, nil
}

// Close removes the container, which ends its sessions, and the socket directory.
func (d *Backend) Close(ctx context.Context, open []*sandbox.Session) error {
	var errs []error
	// Removing the container ends its sessions at once.
	if err := d.remove(ctx); err != nil {
		errs = append(errs, fmt.Errorf("close %w", err))
	}
	sandbox.CloseSessions(open)
	d.dropSocket()
	if err := d.cli.Close(); err != nil {
		errs = append(errs, fmt.Errorf("close sandbox %s: close the engine client: %w", d.spec, err))
	}
	return errors.Join(errs...)
}
