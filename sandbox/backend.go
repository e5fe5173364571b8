package sandbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"

	"github.com/tapebox/tapebox/workspace"
)

// ErrNoBackend: the spec's scheme is known but no backend for it is linked into the program.
var ErrNoBackend = errors.New("sandbox backend not linked in")

// Backend is what one kind of sandbox implements (sandbox/local, sandbox/docker, sandbox/k8s);
// Sandbox wraps it with the checks every kind shares: an empty command, a closed sandbox,
// a bad path, the sessions still open at Close. Sandbox calls it only while the sandbox is
// open, and its methods may be called concurrently.
type Backend interface {
	// Start runs argv with its stdio as a Session (NewSession).
	Start(ctx context.Context, argv []string) (*Session, error)
	// StartExecutor starts "tapebox-exec serve" (argv) on the backend's transport.
	StartExecutor(ctx context.Context, argv []string) (*Session, error)
	// Transport names what StartExecutor uses now ("pipes", "exec-stream" ...).
	Transport() string
	// Exec runs argv to its end; a non-zero exit status is in the result, not an error.
	Exec(ctx context.Context, argv []string) (*ExecResult, error)
	// Snapshot reads the file tree under dir (relative to the working directory unless
	// absolute).
	Snapshot(ctx context.Context, dir string) (map[string]File, error)
	// WriteFiles writes files under dir; their paths are checked already.
	WriteFiles(ctx context.Context, dir string, files map[string]File) error
	// RestoreWorkspace puts a workspace snapshot described by info into the working
	// directory, verifying it on the way (workspace.Tar, workspace.Restore).
	RestoreWorkspace(ctx context.Context, snapshot *os.File, info workspace.Info) error
	// WorkspaceManifest reads the working directory's manifest.
	WorkspaceManifest(ctx context.Context, opts workspace.Options) (workspace.Manifest, error)
	// Close releases the sandbox; open are the sessions still open, for the backend to end
	// in the order that suits it (CloseSessions closes them all).
	Close(ctx context.Context, open []*Session) error
}

// Opener opens the sandboxes of one scheme. Open has parsed the spec and checked the options
// that apply to every kind before it calls one.
type Opener func(ctx context.Context, spec Spec, opts Options) (*Sandbox, error)

var (
	openersMu sync.RWMutex
	openers   = map[string]Opener{}
)

// backendPackage names the package that registers each scheme, for the error of a program
// that does not link it.
var backendPackage = map[string]string{
	SchemeLocal:       "sandbox/local",
	SchemeDocker:      "sandbox/docker",
	SchemeDockerImage: "sandbox/docker",
	SchemeK8s:         "sandbox/k8s",
}

// Register makes Open hand the specs of scheme (SchemeLocal, SchemeDocker ...) to open. A
// backend package calls it from its init, so that importing the package is what links the
// backend in; registering a scheme twice panics.
func Register(scheme string, open Opener) {
	openersMu.Lock()
	defer openersMu.Unlock()
	if _, dup := openers[scheme]; dup {
		panic("sandbox: Register called twice for scheme " + scheme)
	}
	openers[scheme] = open
}

// Schemes lists the schemes whose backends are linked in, sorted.
func Schemes() []string {
	openersMu.RLock()
	defer openersMu.RUnlock()
	list := make([]string, 0, len(openers))
	for s := range openers {
		list = append(list, s)
	}
	slices.Sort(list)
	return list
}

func opener(s Spec) (Opener, error) {
	openersMu.RLock()
	open := openers[s.Scheme]
	openersMu.RUnlock()
	if open != nil {
		return open, nil
	}
	pkg := backendPackage[s.Scheme]
	linked := strings.Join(Schemes(), ", ")
	if linked == "" {
		linked = "none"
	}
	return nil, fmt.Errorf("open sandbox %s: %w: this program does not link %s (linked: %s); import _ %q, or %q for every backend",
		s, ErrNoBackend, pkg, linked, Module+"/"+pkg, Module+"/sandbox/all")
}

// Info is what a backend found out while opening a sandbox, for New.
type Info struct {
	// Cwd is the working directory inside the sandbox, absolute.
	Cwd string
	// Arch is the sandbox's architecture in Go's terms.
	Arch string
	// ContainerID is the container's ID, "" where there is none.
	ContainerID string
	// Executor is tapebox-exec's path (or PATH name) inside the sandbox.
	Executor string
	// ExecutorErr, when set, is why there is no executor: Start returns it, the other
	// methods work.
	ExecutorErr error
}

// New wraps an opened backend as a Sandbox; a backend's Opener returns it.
func New(spec Spec, b Backend, info Info) *Sandbox {
	return &Sandbox{spec: spec, cwd: info.Cwd, arch: info.Arch, containerID: info.ContainerID,
		executor: info.Executor, executorErr: info.ExecutorErr, b: b}
}
