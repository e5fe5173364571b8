// Package sandbox is where replayed tool calls run: a Docker container, a Kubernetes pod or a
// local directory, behind one concrete type, Sandbox, opened from a spec string.
//
//	import _ "github.com/tapebox/tapebox/sandbox/docker" // or sandbox/all
//
//	sb, err := sandbox.Open(ctx, "docker-image:tapebox/sandbox:bookworm",
//		sandbox.Options{Cwd: "/app", InstallExecutor: true})
//	...
//	defer sb.Close(ctx)
//	sess, err := sb.Start(ctx) // "tapebox-exec serve": protocol lines on sess.Stdin / sess.Stdout
//
// # Backends
//
//   - docker:NAME: an existing running container. Close leaves it as it was.
//   - docker-image:IMAGE: a fresh container from a local image; Close removes it with its
//     anonymous volumes. Images are never pulled (make sandbox-image builds the test image,
//     tapebox/sandbox:bookworm, from Debian packages).
//   - local:DIR: the executor runs on this machine with DIR as its working directory, under
//     bubblewrap where it can (see Local sandboxes). Close ends every process it started
//     there and removes its private /tmp; DIR is left as it is.
//   - unsafe-local:DIR: the executor runs as a host process in DIR. It isolates NOTHING:
//     tool calls read and write the host's files, start host processes and use the host's
//     network as the current user. Use it for trusted tapes only.
//
// Each backend is a package of its own that registers its schemes when it is imported:
// sandbox/local (local:, unsafe-local:, with bubblewrap), sandbox/docker (docker:,
// docker-image:, through the Engine API) and sandbox/k8s (k8s:, a pod through client-go).
// sandbox/all imports them all; the command line and testkit do. A program that imports
// only this package links no backend's client, and Open of a scheme whose backend it does
// not link fails with ErrNoBackend, naming the package to import. A backend implements
// Backend; New wraps it as a Sandbox, which adds the checks every kind shares.
//
// # Local sandboxes
//
// local:DIR runs each command under bwrap (Debian package bubblewrap) where it can: only DIR
// is writable, no network, a private /tmp and HOME, a minimal environment. Package
// sandbox/local says exactly what the sandbox sees and where it falls back to a host
// process.
//
// # The executor binary
//
// Options.InstallExecutor puts tapebox-exec into a container or pod, choosing the build by
// the sandbox's architecture and checking the binary's ELF header against it (how it gets
// there is the backend's: see sandbox/docker and sandbox/k8s).
// The host binary comes from Options.ExecutorPath or FindExecutor, which
// looks in $TAPEBOX_EXEC_DIR, beside the running executable, and otherwise in the TapeBox
// sources the running program was built from (a checkout, a replace directory, the module
// cache): their dist/ when it is newer than the executor's sources, else a build of them with
// the Go toolchain into the user cache dir (CGO_ENABLED=0, GOOS=linux, the wanted GOARCH). The
// build-on-demand step keeps "go test", "go install" and testkit users working without a make
// step, from any directory; release archives ship the binaries beside tapebox and never build.
//
// # Workspaces
//
// RestoreWorkspace puts a tape's start snapshot (package workspace) into the working
// directory and WorkspaceManifest reads the end state back, through the backend (the Engine
// API, tar in a pod, or the local directory). The snapshot is verified before anything
// reaches the sandbox. In a container the files belong to the container's user.
//
// # Errors
//
// Errors name the operation and the sandbox and say what to do; they wrap ErrBadSpec,
// ErrNoEngine, ErrNotFound, ErrNotRunning, ErrWrongArch, ErrNoExecutor or ErrOption where a
// caller may want to branch, and *ExitError for a command that exited non-zero.
package sandbox
