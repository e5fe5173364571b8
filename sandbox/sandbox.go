package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"sync"
)

// The sandbox spec schemes Open accepts.
const (
	SchemeLocal       = "local"
	SchemeDocker      = "docker"
	SchemeDockerImage = "docker-image"
	// SchemeK8s is a fresh pod on a Kubernetes cluster: "k8s:[CONTEXT/]NAMESPACE?image=IMG".
	SchemeK8s = "k8s"
	// SchemeUnsafeLocal spells a local sandbox that is not isolated on purpose; ParseSpec
	// gives it as SchemeLocal with Spec.Unsafe set.
	SchemeUnsafeLocal = "unsafe-local"
)

// Label marks the containers and pods TapeBox creates; with OwnerLabel it lets a later Open
// remove a killed run's leftovers (docker ps -a --filter label=org.tapebox.sandbox lists them).
const Label = "org.tapebox.sandbox"

// OwnerLabel names the process that created a container or pod ("pid=P,start=T,pidns=N,boot=B":
// its pid, its start time in clock ticks since boot, its pid namespace and the boot's id), so
// that a later Open can tell a killed replay's leftovers from a running replay's sandboxes.
const OwnerLabel = "org.tapebox.owner"

// Errors callers may branch on; the errors Open and the methods return wrap them with the
// operation, the subject and what to do.
var (
	// ErrBadSpec: the sandbox spec is malformed or has an unknown scheme.
	ErrBadSpec = errors.New("bad sandbox spec")
	// ErrNoEngine: no Docker engine answered.
	ErrNoEngine = errors.New("no Docker engine reachable")
	// ErrNotFound: the container or image does not exist.
	ErrNotFound = errors.New("not found")
	// ErrNotRunning: the container exists but is not running (stopped, killed, paused).
	ErrNotRunning = errors.New("container not running")
	// ErrWrongArch: the executor binary is built for another architecture than the sandbox's.
	ErrWrongArch = errors.New("executor built for another architecture")
	// ErrNoExecutor: no tapebox-exec binary could be found or built.
	ErrNoExecutor = errors.New("no tapebox-exec binary")
	// ErrOption: an option that does not apply to the sandbox's kind, or a bad option value.
	ErrOption = errors.New("option does not apply")
)

// Options prepare a sandbox. The zero value is valid: safe defaults for created containers,
// the executor looked up on the sandbox's PATH.
type Options struct {
	// Cwd is the working directory inside the sandbox for the executor and Exec; it is created
	// when missing. Default: the container's (or image's) working directory, else "/". The
	// local backend ignores it: its working directory is the spec's DIR.
	Cwd string
	// InstallExecutor puts the tapebox-exec binary matching the sandbox's architecture into a
	// Docker sandbox, at /usr/local/bin/tapebox-exec (/opt/tapebox/tapebox-exec with
	// ReadOnlyRoot): copied with the Engine API (CopyToContainer), or, for a container TapeBox
	// creates on an engine of this machine, bind-mounted read-only, which saves the copy.
	// Without it the executor must already be on the container's PATH.
	InstallExecutor bool
	// CopyExecutor makes InstallExecutor always copy, never bind-mount.
	CopyExecutor bool
	// ExecutorPath is the host's tapebox-exec binary to install (Docker) or run (local).
	// Default: ExecutorPath(ctx, arch), see the package doc.
	ExecutorPath string
	// SandboxExecutor is the executor's path inside the sandbox when it is not installed by
	// TapeBox. Default: "tapebox-exec", looked up on the container's PATH.
	SandboxExecutor string
	// Env is added to the environment of the executor and of Exec commands (and of created
	// containers).
	Env map[string]string
	// Logf, when set, receives progress lines (container created, executor installed ...).
	Logf func(format string, args ...any)
	// Transport is how the executor session reaches a Docker sandbox: TransportAuto (the
	// default), TransportStream or TransportSocket. See Transport.
	Transport Transport
	// Labels are added to the container or pod TapeBox creates (a corpus replay names the
	// tape there); they are ignored for a sandbox TapeBox did not create. They cannot
	// replace TapeBox's own labels.
	Labels map[string]string

	// The options below apply only to containers TapeBox creates (docker-image:); Open rejects
	// them for other sandboxes.

	// Network is the created container's network mode; default "none" (no network at all).
	// "bridge", "host" or a network's name give it one ("host" with a warning: the tape's
	// commands then reach this machine's loopback services).
	Network string
	// Memory limits the container's memory (without swap beyond it), in bytes; 0 means
	// DefaultMemory, a negative value no limit.
	Memory int64
	// CPUs limits the container to this many CPUs (1.5 = one and a half); 0 means
	// DefaultCPUs, a negative value no limit.
	CPUs float64
	// PidsLimit caps the number of processes (threads included) in the container; 0 means
	// DefaultPidsLimit, a negative value no limit.
	PidsLimit int64
	// User is who the container's processes (the executor and the tape's commands) run as:
	// "UID[:GID]" or "NAME[:GROUP]" as in docker run --user. Default: the image's USER when
	// it names one other than root, else DefaultUser. The working directory is made this
	// user's when TapeBox creates it (see the package doc).
	User string
	// ReadOnlyRoot makes the container's root filesystem read-only. Cwd and the executor's
	// directory are then anonymous volumes (removed with the container) and /tmp a tmpfs, so
	// the workdir stays writable and the executor can still be copied in.
	ReadOnlyRoot bool
	// Runtime is the OCI runtime for the container, such as "runsc" (gVisor); default: the
	// engine's default runtime.
	Runtime string
	// CapAdd gives back capabilities to the container, which otherwise drops them all. Those
	// that break the container's isolation (SYS_ADMIN, SYS_PTRACE, ALL ...) get a warning.
	CapAdd []string
	// AllowNetworkUnenforced lets a k8s: sandbox without a network run where its "no
	// network" cannot be relied on: the deny-all NetworkPolicy could not be created, one of
	// the same name differs from TapeBox's, or the probe found that the cluster does not
	// enforce NetworkPolicies. Open refuses those cases without it (with it, it warns).
	AllowNetworkUnenforced bool
	// Warnf, when set, receives the warnings Open gives about unsafe options (a host
	// network, a capability that breaks isolation), one line each; without it they go to
	// Logf.
	Warnf func(format string, args ...any)
}

// The limits and the user of a container TapeBox creates when Options leave them zero.
const (
	// DefaultPidsLimit is enough for a build with a few hundred processes and stops a fork
	// bomb.
	DefaultPidsLimit = 512
	// DefaultMemory is 2 GiB.
	DefaultMemory = 2 << 30
	// DefaultCPUs is one CPU's worth of time (a CFS quota): a runaway tape leaves the rest
	// of the machine to the host.
	DefaultCPUs = 1.0
	// DefaultUser is nobody:nogroup in Debian-based images (and a user without a name in
	// others).
	DefaultUser = "65534:65534"
)

// createdOnly names the set options that only containers TapeBox creates can honour.
func (o *Options) createdOnly() []string {
	var set []string
	if o.Network != "" {
		set = append(set, "Network")
	}
	if o.Memory != 0 {
		set = append(set, "Memory")
	}
	if o.CPUs != 0 {
		set = append(set, "CPUs")
	}
	if o.PidsLimit != 0 {
		set = append(set, "PidsLimit")
	}
	if o.User != "" {
		set = append(set, "User")
	}
	if o.ReadOnlyRoot {
		set = append(set, "ReadOnlyRoot")
	}
	if o.Runtime != "" {
		set = append(set, "Runtime")
	}
	if len(o.CapAdd) > 0 {
		set = append(set, "CapAdd")
	}
	return set
}

func (o *Options) check() error {
	if o.User != "" && (strings.TrimSpace(o.User) != o.User || strings.ContainsAny(o.User, " \t\n") || strings.Count(o.User, ":") > 1 ||
		strings.HasPrefix(o.User, ":") || strings.HasSuffix(o.User, ":")) {
		return fmt.Errorf("%w: User %q: want UID[:GID] or NAME[:GROUP]", ErrOption, o.User)
	}
	return nil
}

// isolationBreakers are the capabilities that let a process in a container reach past it:
// mount and namespace control, the host's kernel, devices and other processes, file
// handles outside its root, the network stack, eBPF.
var isolationBreakers = []string{"ALL", "SYS_ADMIN", "SYS_MODULE", "SYS_RAWIO", "SYS_PTRACE", "SYS_BOOT", "SYS_TIME",
	"DAC_READ_SEARCH", "NET_ADMIN", "BPF", "PERFMON", "MAC_ADMIN", "MAC_OVERRIDE", "SYSLOG"}

// Warnings are the one-line warnings Open gives, through Options.Warnf, about the options
// that weaken a created container or pod: a host network, capabilities that break isolation.
func (o *Options) Warnings() []string {
	var w []string
	if o.Network == "host" {
		w = append(w, "--network host: the tape's commands share this machine's network: they reach its loopback services and can listen on its ports")
	} else if strings.HasPrefix(o.Network, "container:") {
		w = append(w, fmt.Sprintf("--network %s: the tape's commands share that container's network, its loopback services included", o.Network))
	}
	var caps []string
	for _, c := range o.CapAdd {
		name := strings.TrimPrefix(strings.ToUpper(c), "CAP_")
		if slices.Contains(isolationBreakers, name) && !slices.Contains(caps, name) {
			caps = append(caps, name)
		}
	}
	if len(caps) > 0 {
		w = append(w, fmt.Sprintf("capabilities %s: a process holding them can reach past the container (as with --privileged); give them to trusted tapes only", strings.Join(caps, ", ")))
	}
	return w
}

// File is one entry of a sandbox's file tree, as Snapshot returns it and WriteFiles takes it.
type File struct {
	// Mode is the type and permission bits (fs.ModeDir for a directory, fs.ModeSymlink for a
	// symbolic link, 0 type bits for a regular file).
	Mode fs.FileMode
	// Data is a regular file's contents.
	Data []byte
	// Link is a symbolic link's target.
	Link string
}

// ExecResult is what a one-shot command did.
type ExecResult struct {
	Stdout, Stderr []byte
	// ExitCode is the command's exit status.
	ExitCode int
}

// Spec is a parsed sandbox spec.
type Spec struct {
	// Scheme is SchemeLocal, SchemeDocker or SchemeDockerImage.
	Scheme string
	// Target is the directory, the container's name or ID, or the image reference.
	Target string
	// Unsafe marks a local sandbox that runs without isolation on purpose
	// ("unsafe-local:DIR"). It is a local sandbox in every other way, so that code asking
	// for SchemeLocal treats both alike.
	Unsafe bool
}

func (s Spec) String() string {
	if s.Unsafe && s.Scheme == SchemeLocal {
		return SchemeUnsafeLocal + ":" + s.Target
	}
	return s.Scheme + ":" + s.Target
}

// ParseSpec parses "local:DIR", "unsafe-local:DIR", "docker:NAME" or "docker-image:IMAGE".
func ParseSpec(spec string) (Spec, error) {
	scheme, target, ok := strings.Cut(spec, ":")
	if !ok {
		return Spec{}, fmt.Errorf("%w %q: want local:DIR, docker:CONTAINER or docker-image:IMAGE", ErrBadSpec, spec)
	}
	switch scheme {
	case SchemeLocal, SchemeUnsafeLocal, SchemeDocker, SchemeDockerImage, SchemeK8s:
	default:
		return Spec{}, fmt.Errorf("%w %q: unknown scheme %q; use local:DIR, unsafe-local:DIR, docker:CONTAINER, docker-image:IMAGE or k8s:NAMESPACE?image=IMAGE", ErrBadSpec, spec, scheme)
	}
	if strings.TrimSpace(target) == "" || target != strings.TrimSpace(target) {
		what := map[string]string{SchemeLocal: "a directory", SchemeUnsafeLocal: "a directory", SchemeDocker: "a container name or ID", SchemeDockerImage: "an image reference", SchemeK8s: "a namespace and ?image=IMAGE"}[scheme]
		return Spec{}, fmt.Errorf("%w %q: %s: needs %s after the colon, without spaces", ErrBadSpec, spec, scheme, what)
	}
	if scheme == SchemeUnsafeLocal {
		return Spec{Scheme: SchemeLocal, Target: target, Unsafe: true}, nil
	}
	return Spec{Scheme: scheme, Target: target}, nil
}

// Sandbox is where tool calls run: a local directory or a Docker container. Its methods are
// safe for concurrent use.
type Sandbox struct {
	spec        Spec
	cwd         string
	arch        string
	containerID string
	executor    string // the executor's path or name inside the sandbox
	executorErr error  // why there is no executor; Start returns it
	b           Backend

	mu       sync.Mutex
	sessions map[*Session]struct{}
	closed   bool
}

// Open parses a sandbox spec and prepares the sandbox:
//
//   - "local:DIR": the executor runs in DIR (created if missing) under bubblewrap where it
//     can: only DIR is writable, no network, a private /tmp and HOME, a minimal
//     environment (see the package doc). Without a working bwrap it runs as a host process,
//     isolating nothing, and says so through Options.Logf in one "warning:" line.
//   - "unsafe-local:DIR": a host process in DIR, never isolated, with the same warning.
//   - "docker:NAME": an existing, running container, by name or ID; Close leaves it running.
//   - "docker-image:IMAGE": a fresh container from a local image (never pulled), with safe
//     defaults (see Options); Close removes it.
//
// The Docker engine is the one the environment names (DOCKER_HOST, else the default socket).
// ctx bounds the preparation only; the sandbox lives until Close.
//
// Each scheme's backend is a package of its own, linked in by importing it: sandbox/local,
// sandbox/docker, sandbox/k8s, or sandbox/all for every one. A spec whose backend is not
// linked in fails with an error wrapping ErrNoBackend that names the package to import.
func Open(ctx context.Context, spec string, opts Options) (*Sandbox, error) {
	s, err := ParseSpec(spec)
	if err != nil {
		return nil, err
	}
	if err := opts.check(); err != nil {
		return nil, fmt.Errorf("open sandbox %s: %w", s, err)
	}
	if err := opts.Transport.check(s); err != nil {
		return nil, fmt.Errorf("open sandbox %s: %w", s, err)
	}
	if s.Scheme != SchemeDockerImage && s.Scheme != SchemeK8s {
		if set := opts.createdOnly(); len(set) > 0 {
			return nil, fmt.Errorf("open sandbox %s: %w: %s only apply to containers TapeBox creates; use docker-image:IMAGE",
				s, ErrOption, strings.Join(set, ", "))
		}
	}
	open, err := opener(s)
	if err != nil {
		return nil, err
	}
	return open(ctx, s, opts)
}

// Spec returns the sandbox's parsed spec.
func (s *Sandbox) Spec() Spec { return s.spec }

// Cwd returns the working directory inside the sandbox, as an absolute path: what the
// controller sends in the executor's hello.
func (s *Sandbox) Cwd() string { return s.cwd }

// Arch returns the sandbox's architecture in Go's terms: "amd64" or "arm64" (or another
// GOARCH for an unusual image).
func (s *Sandbox) Arch() string { return s.arch }

// ContainerID returns the Docker container's full ID, or "" for a local sandbox.
func (s *Sandbox) ContainerID() string { return s.containerID }

// Backend returns the backend the sandbox runs on: a *local.Backend, *docker.Backend or
// *k8s.Backend, for what only that kind can tell.
func (s *Sandbox) Backend() Backend { return s.b }

// Executor returns the path (or PATH name) of tapebox-exec inside the sandbox.
func (s *Sandbox) Executor() string { return s.executor }

// Start runs "tapebox-exec serve" in the sandbox, in Cwd with Options.Env, and returns its
// stdio as a session. On Docker it is one exec with a hijacked stdin/stdout stream; locally a
// host process. ctx bounds the start only; the session lives until it ends or is closed.
func (s *Sandbox) Start(ctx context.Context) (*Session, error) {
	if s.executorErr != nil {
		return nil, s.executorErr
	}
	return s.startSession(ctx, []string{s.executor, "serve"}, true)
}

// Transport names how Start reaches the executor: "pipes" (local), "exec-stream" (a Docker
// exec's hijacked stream through the engine) or "unix-socket" (the controller's unix socket in
// a host directory mounted read-only, which the executor connects to and which bypasses the
// engine; see Options.Transport).
func (s *Sandbox) Transport() string { return s.b.Transport() }

// StartCommand is Start for any command: argv runs in the sandbox with its stdin, stdout and
// stderr as a Session.
func (s *Sandbox) StartCommand(ctx context.Context, argv []string) (*Session, error) {
	return s.startSession(ctx, argv, false)
}

func (s *Sandbox) startSession(ctx context.Context, argv []string, executor bool) (*Session, error) {
	if len(argv) == 0 || argv[0] == "" {
		return nil, fmt.Errorf("start a session in %s: empty command", s.spec)
	}
	if err := s.checkOpen("start " + argv[0]); err != nil {
		return nil, err
	}
	start := s.b.Start
	if executor {
		start = s.b.StartExecutor
	}
	sess, err := start(ctx, argv)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	if s.sessions == nil {
		s.sessions = map[*Session]struct{}{}
	}
	s.sessions[sess] = struct{}{}
	s.mu.Unlock()
	stop := sess.stop
	sess.stop = func() error {
		err := stop()
		s.mu.Lock()
		delete(s.sessions, sess)
		s.mu.Unlock()
		return err
	}
	return sess, nil
}

// Exec runs a one-shot command in the sandbox (in Cwd, with Options.Env) and waits for it. A
// command that runs and exits non-zero is not an error: see ExecResult.ExitCode. The error is
// for a command that could not run (not found, sandbox gone).
func (s *Sandbox) Exec(ctx context.Context, argv []string) (*ExecResult, error) {
	if len(argv) == 0 || argv[0] == "" {
		return nil, fmt.Errorf("exec in %s: empty command", s.spec)
	}
	if err := s.checkOpen("exec " + argv[0]); err != nil {
		return nil, err
	}
	return s.b.Exec(ctx, argv)
}

// Snapshot returns the file tree under dir (relative to Cwd unless absolute): every file,
// directory and symbolic link keyed by its slash-separated path relative to dir (dir itself
// is not included). It is the sandbox's end state for checks and comparisons; contents are
// read into memory.
func (s *Sandbox) Snapshot(ctx context.Context, dir string) (map[string]File, error) {
	if err := s.checkOpen("snapshot " + dir); err != nil {
		return nil, err
	}
	return s.b.Snapshot(ctx, dir)
}

// WriteFiles creates files, directories and symbolic links under dir (relative to Cwd unless
// absolute), keyed by slash-separated relative paths, overwriting what exists. Missing parent
// directories are created. It seeds a sandbox's starting state.
func (s *Sandbox) WriteFiles(ctx context.Context, dir string, files map[string]File) error {
	for name := range files {
		if !fs.ValidPath(name) || name == "." {
			return fmt.Errorf("write files to %s in %s: bad path %q: use a slash-separated path relative to the directory, without . or .. elements", dir, s.spec, name)
		}
	}
	if err := s.checkOpen("write files to " + dir); err != nil {
		return err
	}
	return s.b.WriteFiles(ctx, dir, files)
}

// checkOpen fails op once the sandbox is closed.
func (s *Sandbox) checkOpen(op string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return fmt.Errorf("%s in %s: the sandbox is closed", op, s.spec)
	}
	return nil
}

// Close releases the sandbox: it removes the container when TapeBox created it (with its
// anonymous volumes) and closes the engine connection. Sessions still open are cut off. A
// local directory is left as it is.
func (s *Sandbox) Close(ctx context.Context) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	open := make([]*Session, 0, len(s.sessions))
	for sess := range s.sessions {
		open = append(open, sess)
	}
	s.mu.Unlock()
	return s.b.Close(ctx, open)
}

// Kill is Close for a sandbox whose work is abandoned (a replay stopped with Ctrl-C): the
// commands still running get no grace period to finish, they are killed at once, and then
// the sandbox is closed as Close does.
func (s *Sandbox) Kill(ctx context.Context) error {
	s.mu.Lock()
	for sess := range s.sessions {
		if sess.kill != nil {
			sess.kill()
		}
	}
	s.mu.Unlock()
	return s.Close(ctx)
}

// CloseSessions closes sessions concurrently (each may wait its grace period): what a
// Backend's Close does with the sessions still open.
func CloseSessions(open []*Session) {
	var wg sync.WaitGroup
	for _, sess := range open {
		wg.Go(func() { _ = sess.Close() })
	}
	wg.Wait()
}
