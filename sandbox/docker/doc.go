// Package docker is the sandbox backend for "docker:NAME" (an existing, running container;
// Close leaves it as it was) and "docker-image:IMAGE" (a fresh container from a local image,
// never pulled; Close removes it with its anonymous volumes). Importing it registers both
// schemes with package sandbox:
//
//	import _ "github.com/tapebox/tapebox/sandbox/docker"
//
//	sb, err := sandbox.Open(ctx, "docker-image:tapebox/sandbox:bookworm",
//		sandbox.Options{Cwd: "/app", InstallExecutor: true})
//
// It is the only package (with sandbox/telemetry) that links the Docker client.
//
// Both schemes use the Engine API through the official Go client (DOCKER_HOST or the
// default socket, API version negotiated; engine 20.10 / API 1.41 and later). A session is ONE
// exec whose stdin/stdout/stderr travel over a hijacked connection, demultiplexed with stdcopy;
// no docker CLI process is involved, so a call costs a round trip on that stream rather than a
// new exec (about 0.1 ms against 60 ms and more on engine 20.10). The stream is demultiplexed
// inside Session.Stdout's Read, with no goroutine in between, so a session adds next to
// nothing to the stream's own round trip. The Engine API cannot signal an exec's process:
// Session.Close closes the stream and the executor exits when its stdin ends.
//
// # Executor transport
//
// A container TapeBox creates (docker-image:) on an engine of this machine, with the default
// runtime, gets a host directory bind-mounted READ-ONLY at /run/tapebox-exec: "s" in a
// private temporary directory (0700), itself 0755 and owned by this process's user. For
// each session Start listens on a fresh socket there (0666, for whatever user the container
// runs as), runs "tapebox-exec serve --dial unix:/run/tapebox-exec/ctl-ID.sock" through an
// exec session, and accepts the first connection whose peer (SO_PEERCRED) is that exec's
// own process as the engine reports it; any other process in the container that connects
// is turned away, and the socket file goes once the executor is in. The controller never
// connects to a path in the sandbox and nothing in the container can create, replace or
// remove a file in that directory, so no tape can point the controller (often root) at
// another socket of the host. Calls then bypass the engine (about 0.03 ms a Noop round
// trip against 0.1 ms). The exec session stays as the executor's lifeline (its end ends the
// executor) and carries its stderr. Where the socket cannot work (remote engine, another
// runtime, a host other than Linux, a socket path over 107 bytes, a refused mount, an
// executor without --dial or that cannot reach the socket) the exec stream is used and
// Options.Logf says why; Options.Transport forces either (Sandbox.Transport tells which is
// in use). Existing containers (docker:) always use the exec stream.
//
// # Containers TapeBox creates
//
// docker-image: containers get safe defaults: every capability dropped (Options.CapAdd gives
// some back), no-new-privileges, no network unless Options.Network names one, limits on
// processes (DefaultPidsLimit, 512: a fork bomb stops there), memory (DefaultMemory, 2 GiB,
// no swap beyond it) and CPU time (DefaultCPUs, one CPU's worth), a user other than root
// (Options.User; default the image's USER when it names one other than root, else
// DefaultUser, 65534:65534), an optional read-only root (then the working directory and the
// executor's directory are anonymous volumes and /tmp a tmpfs), an optional runtime such as
// runsc, docker-init as PID 1 to reap background commands, and "sleep infinity" as the
// command that keeps the container alive (the image needs a sleep: coreutils or busybox).
// A negative limit means none. Open warns (Options.Warnf) about a host network and about
// capabilities that break isolation (SYS_ADMIN, SYS_PTRACE, NET_ADMIN, ALL ...).
//
// # Leftovers
//
// Close removes what Open made. A process killed before it could (SIGKILL, a crash) leaves
// its container and its socket directory behind; the next Open of a Docker sandbox removes
// them. The containers carry the labels org.tapebox.sandbox and org.tapebox.owner (OwnerLabel:
// the creating process's pid, its start time, its pid namespace and the boot's id), and each
// socket directory's private parent ($TMPDIR/tapebox-sock-*) an "owner" file with the same;
// what belongs to a process of this boot and pid namespace that no longer runs (no process
// with that pid and start time) goes, while Open prepares its own sandbox. Leftovers of an
// owner Open cannot judge (another machine on a shared engine, another pid namespace, an
// earlier boot, or TapeBox before these labels) stay: docker ps -a --filter
// label=org.tapebox.sandbox lists them.
//
// The working directory (Options.Cwd) is created before the container starts when the image
// does not have it, owned by the container's user (its missing parents are root's, 0755), so
// that the tape can work there; WriteFiles and RestoreWorkspace give their files to that
// user too. A directory the image has keeps its owner, and Open logs a warning when that is
// not the user. With ReadOnlyRoot the working directory is an anonymous volume, which the
// engine gives to root (or to the image directory's owner) and which a container without
// capabilities cannot chown, so such containers run as root unless Options.User says
// otherwise.
//
// # The executor and the workspace in a container
//
// Options.InstallExecutor copies the executor into an existing container with the Engine API
// (a tar through CopyToContainer). A container TapeBox creates on an engine of this machine
// gets it bind-mounted read-only, which saves the copy (about 50 ms); on a remote engine, or
// when the engine refuses the mount, it is copied into the created container before it
// starts. RestoreWorkspace and WorkspaceManifest go through CopyToContainer and
// CopyFromContainer; the files belong to the container's user: a numeric one is written into
// the archive's headers, a name is resolved by the engine from the container's passwd file.
package docker
