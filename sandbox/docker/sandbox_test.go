package docker

import (
	"bufio"
	"context"
	"errors"
	"io"
	"io/fs"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/api/types/mount"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/internal/testutil/dockertest"
	"github.com/tapebox/tapebox/internal/testutil/sandboxtest"
	"github.com/tapebox/tapebox/sandbox"
	"github.com/tapebox/tapebox/sandbox/internal/kit"
	_ "github.com/tapebox/tapebox/sandbox/local" // the local sandboxes the Docker ones are compared with
)

// openImage opens a fresh docker-image: sandbox and closes it when the test ends.
func openImage(t *testing.T, ref string, opts sandbox.Options) *sandbox.Sandbox {
	t.Helper()
	dockertest.Image(t, ref)
	sb, err := sandbox.Open(t.Context(), "docker-image:"+ref, opts)
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		assert.NoError(t, sb.Close(ctx))
	})
	return sb
}

// TestDockerSmoke proves the engine works: it lists images and runs a container from the
// image built from Debian packages.
func TestDockerSmoke(t *testing.T) {
	cli, ref := dockertest.Image(t, dockertest.SandboxImage)
	images, err := cli.ImageList(t.Context(), image.ListOptions{})
	require.NoError(t, err)
	var tags []string
	for _, im := range images {
		tags = append(tags, im.RepoTags...)
	}
	assert.Contains(t, tags, ref)

	sb := openImage(t, ref, sandbox.Options{})
	res, err := sb.Exec(t.Context(), []string{"sh", "-c", "cat /etc/debian_version; command -v python3 || echo no-python"})
	require.NoError(t, err)
	assert.Equal(t, 0, res.ExitCode, "stderr: %s", res.Stderr)
	lines := strings.Split(strings.TrimSpace(string(res.Stdout)), "\n")
	require.Len(t, lines, 2)
	assert.True(t, strings.HasPrefix(lines[0], "12."), "debian_version %q is not bookworm", lines[0])
	assert.Equal(t, "no-python", lines[1])
}

func TestDockerSessionEcho(t *testing.T) {
	sb := openImage(t, dockertest.TinyImage, sandbox.Options{})
	sandboxtest.CheckEcho(t, sb, "one", `{"op":"call","id":"1"}`, strings.Repeat("y", 1<<20), "last")
}

func TestDockerSessionStderrAndExit(t *testing.T) {
	sandboxtest.CheckExitError(t, openImage(t, dockertest.TinyImage, sandbox.Options{}))
}

func TestDockerSessionsConcurrent(t *testing.T) {
	sb := openImage(t, dockertest.TinyImage, sandbox.Options{})
	const n = 4
	errs := make(chan error, n)
	for i := range n {
		go func() {
			s, err := sb.StartCommand(t.Context(), []string{"cat"})
			if err != nil {
				errs <- err
				return
			}
			defer s.Close()
			want := strings.Repeat(string(rune('a'+i)), 1000)
			go func() { s.Stdin.Write([]byte(want + "\n")) }()
			got, err := bufio.NewReader(s.Stdout).ReadString('\n')
			if err == nil && got != want+"\n" {
				err = assert.AnError
			}
			errs <- err
		}()
	}
	for range n {
		assert.NoError(t, <-errs)
	}
}

func TestDockerExec(t *testing.T) {
	sb := openImage(t, dockertest.TinyImage, sandbox.Options{Cwd: "/work/app", Env: map[string]string{"TAPEBOX_TEST": "yes"}})
	assert.Equal(t, "/work/app", sb.Cwd())
	sandboxtest.CheckExec(t, sb, []sandboxtest.ExecCase{
		{Name: "cwd created and used", Argv: []string{"pwd"}, Stdout: "/work/app\n"},
		{Name: "env", Argv: []string{"sh", "-c", "echo $TAPEBOX_TEST"}, Stdout: "yes\n"},
		{Name: "exit status and stderr", Argv: []string{"sh", "-c", "echo e >&2; exit 4"}, Stderr: "e\n", ExitCode: 4},
		{Name: "exit 127 from a shell is a result", Argv: []string{"sh", "-c", "exit 127"}, ExitCode: 127},
		{Name: "not found", Argv: []string{"no-such-command-tapebox"}, WantErr: []string{"could not be run", "exec no-such-command-tapebox in docker-image:"}},
	})
}

func TestDockerExecCancel(t *testing.T) {
	sb := openImage(t, dockertest.TinyImage, sandbox.Options{})
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	_, err := sb.Exec(ctx, []string{"sleep", "60"})
	assert.ErrorIs(t, err, context.DeadlineExceeded)
}

// TestDockerSafeDefaults checks what a created container gets, from the engine's view and
// from inside.
func TestDockerSafeDefaults(t *testing.T) {
	cli := dockertest.Client(t)
	tests := []struct {
		name  string
		opts  sandbox.Options
		check func(t *testing.T, sb *sandbox.Sandbox, hc *container.HostConfig)
	}{
		{
			name: "defaults",
			opts: sandbox.Options{Cwd: "/work/tb"},
			check: func(t *testing.T, sb *sandbox.Sandbox, hc *container.HostConfig) {
				assert.Equal(t, []string{"ALL"}, []string(hc.CapDrop))
				assert.Contains(t, hc.SecurityOpt, "no-new-privileges")
				assert.Equal(t, "none", string(hc.NetworkMode))
				assert.False(t, hc.ReadonlyRootfs)
				status := execOut(t, sb, "cat", "/proc/self/status")
				assert.Contains(t, status, "CapEff:\t0000000000000000")
				assert.Contains(t, status, "NoNewPrivs:\t1")
				links := execOut(t, sb, "ls", "/sys/class/net")
				assert.Equal(t, "lo", strings.TrimSpace(links), "no network but loopback")
				assert.Contains(t, execOut(t, sb, "ps", "-o", "pid,args"), "docker-init", "PID 1 reaps orphans")
				// Limited and unprivileged by default.
				require.NotNil(t, hc.PidsLimit)
				assert.Equal(t, int64(sandbox.DefaultPidsLimit), *hc.PidsLimit)
				assert.Equal(t, int64(sandbox.DefaultMemory), hc.Memory)
				assert.Equal(t, int64(sandbox.DefaultMemory), hc.MemorySwap, "no swap beyond the limit")
				assert.Equal(t, int64(1e9), hc.NanoCPUs)
				assert.Equal(t, "65534:65534\n", execOut(t, sb, "sh", "-c", "echo $(id -u):$(id -g)"))
				assert.Equal(t, "65534:65534\n", execOut(t, sb, "stat", "-c", "%u:%g", sb.Cwd()), "the working directory it made is the user's")
			},
		},
		{
			name: "no limits",
			opts: sandbox.Options{Memory: -1, CPUs: -1, PidsLimit: -1},
			check: func(t *testing.T, sb *sandbox.Sandbox, hc *container.HostConfig) {
				assert.True(t, hc.PidsLimit == nil || *hc.PidsLimit <= 0, "no pids limit: %v", hc.PidsLimit)
				assert.Zero(t, hc.Memory)
				assert.Zero(t, hc.NanoCPUs)
			},
		},
		{
			name: "limits",
			opts: sandbox.Options{Memory: 256 << 20, CPUs: 0.5, PidsLimit: 64, Network: "bridge", CapAdd: []string{"CHOWN"}},
			check: func(t *testing.T, sb *sandbox.Sandbox, hc *container.HostConfig) {
				assert.Equal(t, int64(256<<20), hc.Memory)
				assert.Equal(t, int64(5e8), hc.NanoCPUs)
				require.NotNil(t, hc.PidsLimit)
				assert.Equal(t, int64(64), *hc.PidsLimit)
				assert.Equal(t, "bridge", string(hc.NetworkMode))
				assert.Contains(t, []string(hc.CapAdd), "CAP_CHOWN")
				assert.Contains(t, execOut(t, sb, "ls", "/sys/class/net"), "eth0")
			},
		},
		{
			name: "executor bind-mounted",
			opts: sandbox.Options{InstallExecutor: true, ExecutorPath: sandboxtest.FakeExecutor(t, runtime.GOARCH), Transport: sandbox.TransportStream},
			check: func(t *testing.T, sb *sandbox.Sandbox, hc *container.HostConfig) {
				require.Len(t, hc.Mounts, 1)
				assert.Equal(t, mount.Mount{Type: mount.TypeBind, Source: sandboxtest.FakeExecutor(t, runtime.GOARCH), Target: "/usr/local/bin/tapebox-exec", ReadOnly: true}, hc.Mounts[0])
				assert.Equal(t, runtime.GOARCH+"\n", execOut(t, sb, "tapebox-exec", "arch"))
			},
		},
		{
			name: "executor copied",
			opts: sandbox.Options{InstallExecutor: true, CopyExecutor: true, ExecutorPath: sandboxtest.FakeExecutor(t, runtime.GOARCH), Transport: sandbox.TransportStream},
			check: func(t *testing.T, sb *sandbox.Sandbox, hc *container.HostConfig) {
				assert.Empty(t, hc.Mounts)
				assert.Equal(t, runtime.GOARCH+"\n", execOut(t, sb, "tapebox-exec", "arch"))
			},
		},
		{
			name: "read-only root, executor copied",
			opts: sandbox.Options{ReadOnlyRoot: true, Cwd: "/app", InstallExecutor: true, CopyExecutor: true, ExecutorPath: sandboxtest.FakeExecutor(t, runtime.GOARCH)},
			check: func(t *testing.T, sb *sandbox.Sandbox, hc *container.HostConfig) {
				assert.True(t, hc.ReadonlyRootfs)
				assert.Equal(t, "/opt/tapebox/tapebox-exec", sb.Executor())
				assert.Equal(t, runtime.GOARCH+"\n", execOut(t, sb, sb.Executor(), "arch"))
			},
		},
		{
			name: "read-only root",
			opts: sandbox.Options{ReadOnlyRoot: true, Cwd: "/app", InstallExecutor: true, ExecutorPath: sandboxtest.FakeExecutor(t, runtime.GOARCH)},
			check: func(t *testing.T, sb *sandbox.Sandbox, hc *container.HostConfig) {
				assert.True(t, hc.ReadonlyRootfs)
				assert.Equal(t, "/opt/tapebox/tapebox-exec", sb.Executor())
				res, err := sb.Exec(t.Context(), []string{"touch", "/root-file"})
				require.NoError(t, err)
				assert.NotEqual(t, 0, res.ExitCode, "the root is writable")
				for _, p := range []string{"/app/f", "/tmp/f"} {
					res, err := sb.Exec(t.Context(), []string{"touch", p})
					require.NoError(t, err)
					assert.Equal(t, 0, res.ExitCode, "%s: %s", p, res.Stderr)
				}
				// The executor runs, and so does a binary in /tmp.
				assert.Equal(t, runtime.GOARCH+"\n", execOut(t, sb, sb.Executor(), "arch"))
				assert.Equal(t, "ok\n", execOut(t, sb, "sh", "-c", "cp /bin/busybox /tmp/busybox && /tmp/busybox echo ok"))
				files, err := sb.Snapshot(t.Context(), ".")
				require.NoError(t, err)
				assert.Contains(t, files, "f")
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sb := openImage(t, dockertest.TinyImage, tt.opts)
			ci, err := cli.ContainerInspect(t.Context(), sb.ContainerID())
			require.NoError(t, err)
			assert.Equal(t, "1", ci.Config.Labels[sandbox.Label])
			tt.check(t, sb, ci.HostConfig)
		})
	}
}

func execOut(t *testing.T, sb *sandbox.Sandbox, argv ...string) string {
	t.Helper()
	res, err := sb.Exec(t.Context(), argv)
	require.NoError(t, err)
	require.Equal(t, 0, res.ExitCode, "%v: %s", argv, res.Stderr)
	return string(res.Stdout)
}

func TestDockerCloseRemovesCreated(t *testing.T) {
	cli, ref := dockertest.Image(t, dockertest.TinyImage)
	sb, err := sandbox.Open(t.Context(), "docker-image:"+ref, sandbox.Options{ReadOnlyRoot: true, Cwd: "/app"})
	require.NoError(t, err)
	id := sb.ContainerID()
	require.Len(t, id, 64)
	ci, err := cli.ContainerInspect(t.Context(), id)
	require.NoError(t, err)
	var volumes []string
	for _, m := range ci.Mounts {
		if m.Type == "volume" {
			volumes = append(volumes, m.Name)
		}
	}
	require.NotEmpty(t, volumes)
	s, err := sb.StartCommand(t.Context(), []string{"cat"})
	require.NoError(t, err)

	require.NoError(t, sb.Close(t.Context()))
	_, err = cli.ContainerInspect(t.Context(), id)
	assert.Error(t, err, "container still there after Close")
	for _, v := range volumes {
		_, err := cli.VolumeInspect(t.Context(), v)
		assert.Error(t, err, "volume %s still there after Close", v)
	}
	assert.Error(t, sandboxtest.WaitDone(t, s), "session of a removed container")
	assert.NoError(t, sb.Close(t.Context()), "second Close")
	_, err = sb.Exec(t.Context(), []string{"true"})
	assert.ErrorContains(t, err, "the sandbox is closed")
}

func TestDockerExistingContainer(t *testing.T) {
	cli := dockertest.Client(t)
	id, name := dockertest.Run(t, dockertest.TinyImage)
	exe := sandboxtest.FakeExecutor(t, runtime.GOARCH)

	sb, err := sandbox.Open(t.Context(), "docker:"+name, sandbox.Options{Cwd: "/data", InstallExecutor: true, ExecutorPath: exe})
	require.NoError(t, err)
	assert.Equal(t, id, sb.ContainerID())
	assert.Equal(t, runtime.GOARCH, sb.Arch())
	assert.Equal(t, "/usr/local/bin/tapebox-exec", sb.Executor())
	assert.Equal(t, "/data\n", execOut(t, sb, "pwd"), "Cwd created in an existing container")

	s, err := sb.Start(t.Context())
	require.NoError(t, err)
	r := bufio.NewReader(s.Stdout)
	assert.Equal(t, "ping", sandboxtest.RoundTrip(t, s, r, "ping"))
	require.NoError(t, s.Close())
	assert.NoError(t, s.Wait())

	require.NoError(t, sb.Close(t.Context()))
	ci, err := cli.ContainerInspect(t.Context(), id)
	require.NoError(t, err, "Close must leave a container it did not create")
	assert.True(t, ci.State.Running)

	// By ID, without installing: the executor is now on the PATH.
	sb, err = sandbox.Open(t.Context(), "docker:"+id[:12], sandbox.Options{})
	require.NoError(t, err)
	defer sb.Close(t.Context())
	assert.Equal(t, "tapebox-exec", sb.Executor())
	assert.Equal(t, "/", sb.Cwd(), "the container's own working directory")
	assert.Equal(t, runtime.GOARCH+"\n", execOut(t, sb, "tapebox-exec", "arch"))
}

func TestDockerWriteFilesSnapshot(t *testing.T) {
	sb := openImage(t, dockertest.TinyImage, sandbox.Options{Cwd: "/work/app"})
	require.NoError(t, sb.WriteFiles(t.Context(), "proj", sandboxtest.SeedFiles), "into a missing directory")
	got, err := sb.Snapshot(t.Context(), "proj")
	require.NoError(t, err)
	assert.Equal(t, sandboxtest.WithParents(sandboxtest.SeedFiles), got)

	require.NoError(t, sb.WriteFiles(t.Context(), "/work/app/proj", map[string]sandbox.File{"README.md": {Mode: 0o600, Data: []byte("new")}}), "into an existing one")
	got, err = sb.Snapshot(t.Context(), "/work/app/proj/")
	require.NoError(t, err)
	assert.Equal(t, sandbox.File{Mode: 0o600, Data: []byte("new")}, got["README.md"])

	// Files made inside the sandbox, hard links included, show up too.
	execOut(t, sb, "sh", "-c", "mkdir -p made && echo hi > made/a && ln made/a made/b && ln -s a made/c")
	got, err = sb.Snapshot(t.Context(), "made")
	require.NoError(t, err)
	assert.Equal(t, map[string]sandbox.File{
		"a": {Mode: 0o644, Data: []byte("hi\n")},
		"b": {Mode: 0o644, Data: []byte("hi\n")},
		"c": {Mode: fs.ModeSymlink | 0o777, Link: "a"},
	}, got)

	_, err = sb.Snapshot(t.Context(), "missing")
	require.ErrorIs(t, err, sandbox.ErrNotFound)
	assert.Contains(t, err.Error(), "snapshot /work/app/missing")
}

// TestDockerLocalSameSnapshot: the two backends see the same end state for the same files.
func TestDockerLocalSameSnapshot(t *testing.T) {
	docker := openImage(t, dockertest.TinyImage, sandbox.Options{Cwd: "/work/app"})
	local, _ := sandboxtest.OpenLocal(t, sandbox.Options{})
	var snaps []map[string]sandbox.File
	for _, sb := range []*sandbox.Sandbox{docker, local} {
		require.NoError(t, sb.WriteFiles(t.Context(), "", sandboxtest.SeedFiles))
		res, err := sb.Exec(t.Context(), []string{"sh", "-c", "echo made > made.txt && chmod 640 made.txt && rm src/empty"})
		require.NoError(t, err)
		require.Equal(t, 0, res.ExitCode, "%s", res.Stderr)
		snap, err := sb.Snapshot(t.Context(), ".")
		require.NoError(t, err)
		snaps = append(snaps, snap)
	}
	assert.Equal(t, snaps[0], snaps[1])
	assert.Equal(t, sandbox.File{Mode: 0o640, Data: []byte("made\n")}, snaps[0]["made.txt"])
}

func TestDockerBadInput(t *testing.T) {
	dockertest.Image(t, dockertest.TinyImage)
	_, stopped := dockertest.Run(t, dockertest.TinyImage, "true")
	waitExited(t, stopped)
	other := map[string]string{"amd64": "arm64", "arm64": "amd64"}[runtime.GOARCH]

	tests := []struct {
		name    string
		spec    string
		opts    sandbox.Options
		wantErr error
		want    []string
	}{
		{"missing container", "docker:tapebox-no-such-container", sandbox.Options{}, sandbox.ErrNotFound, []string{"docker ps -a", "docker-image:IMAGE"}},
		{"stopped container", "docker:" + stopped, sandbox.Options{}, sandbox.ErrNotRunning, []string{"is exited", "docker start " + stopped}},
		{"missing image", "docker-image:tapebox/no-such-image:1", sandbox.Options{}, sandbox.ErrNotFound, []string{"make sandbox-image", "docker import"}},
		{"wrong architecture", "docker-image:" + dockertest.TinyImage, sandbox.Options{InstallExecutor: true, ExecutorPath: sandboxtest.FakeExecutor(t, other)},
			sandbox.ErrWrongArch, []string{"built for " + other, "is " + runtime.GOARCH, "tapebox exec-binary --arch " + runtime.GOARCH}},
		{"read-only root without cwd", "docker-image:" + dockertest.TinyImage, sandbox.Options{ReadOnlyRoot: true}, sandbox.ErrOption, []string{"needs a Cwd other than /"}},
		{"relative cwd", "docker-image:" + dockertest.TinyImage, sandbox.Options{Cwd: "app"}, sandbox.ErrOption, []string{"must be an absolute path"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sb, err := sandbox.Open(t.Context(), tt.spec, tt.opts)
			if sb != nil {
				sb.Close(t.Context())
			}
			require.ErrorIs(t, err, tt.wantErr)
			for _, w := range tt.want {
				assert.Contains(t, err.Error(), w)
			}
		})
	}
}

func waitExited(t *testing.T, name string) {
	t.Helper()
	cli := dockertest.Client(t)
	waitc, errc := cli.ContainerWait(t.Context(), name, container.WaitConditionNotRunning)
	select {
	case <-waitc:
	case err := <-errc:
		require.NoError(t, err)
	}
}

// TestDockerFailedOpenCleansUp: a failed Open removes the container it created.
func TestDockerFailedOpenCleansUp(t *testing.T) {
	_, ref := dockertest.Image(t, dockertest.TinyImage)
	before := tapeboxContainers(t)
	// A missing runtime fails at create; a working directory under a file fails after
	// create, when it is made.
	_, err := sandbox.Open(t.Context(), "docker-image:"+ref, sandbox.Options{Runtime: "tapebox-no-such-runtime"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), `is runtime "tapebox-no-such-runtime" configured`)
	_, err = sandbox.Open(t.Context(), "docker-image:"+ref, sandbox.Options{Cwd: "/etc/passwd/tapebox"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "working directory /etc/passwd/tapebox")
	assert.Equal(t, before, tapeboxContainers(t))
}

func tapeboxContainers(t *testing.T) []string {
	t.Helper()
	cli := dockertest.Client(t)
	list, err := cli.ContainerList(t.Context(), container.ListOptions{All: true})
	require.NoError(t, err)
	// This process's only: other test packages create and remove containers meanwhile.
	me, ok := kit.Self()
	require.True(t, ok, "this process as an owner")
	var ids []string
	for _, c := range list {
		if c.Labels[sandbox.Label] != "" && c.Labels[sandbox.OwnerLabel] == me.String() {
			ids = append(ids, c.ID)
		}
	}
	slices.Sort(ids)
	return ids
}

func TestDockerMissingExecutor(t *testing.T) {
	sb := openImage(t, dockertest.TinyImage, sandbox.Options{})
	s, err := sb.Start(t.Context())
	require.NoError(t, err, "the exec starts; the command is missing")
	defer s.Close()
	_, _ = io.Copy(io.Discard, s.Stdout)
	var ee *sandbox.ExitError
	require.ErrorAs(t, sandboxtest.WaitDone(t, s), &ee)
	assert.Contains(t, []int{126, 127}, ee.Code)
	assert.Contains(t, ee.Error(), "executable file not found")
	assert.Contains(t, ee.Error(), "--install-executor")
}

func TestDockerContainerKilled(t *testing.T) {
	cli := dockertest.Client(t)
	sb := openImage(t, dockertest.TinyImage, sandbox.Options{})
	s, err := sb.StartCommand(t.Context(), []string{"cat"})
	require.NoError(t, err)
	defer s.Close()
	require.NoError(t, cli.ContainerKill(t.Context(), sb.ContainerID(), "KILL"))
	_, _ = io.Copy(io.Discard, s.Stdout)
	assert.Error(t, sandboxtest.WaitDone(t, s), "a killed container ends the session with an error")

	_, err = sb.Exec(t.Context(), []string{"true"})
	require.ErrorIs(t, err, sandbox.ErrNotRunning)
	assert.Contains(t, err.Error(), "open a new one")
	_, err = sb.StartCommand(t.Context(), []string{"cat"})
	require.ErrorIs(t, err, sandbox.ErrNotRunning)
}

// TestDockerRealExecutor installs the real tapebox-exec (chosen by the image's
// architecture) and says hello; it skips until the executor exists.
func TestDockerRealExecutor(t *testing.T) {
	sandboxtest.RealExecutor(t, runtime.GOARCH)
	for _, ref := range []string{dockertest.SandboxImage, dockertest.TinyImage} {
		t.Run(ref, func(t *testing.T) {
			for _, tr := range []sandbox.Transport{sandbox.TransportStream, sandbox.TransportSocket} {
				sb := openImage(t, ref, sandbox.Options{Cwd: "/app", InstallExecutor: true, Transport: tr})
				s, err := sb.Start(t.Context())
				require.NoError(t, err)
				hello := sandboxtest.HelloRoundTrip(t, s, "/app")
				assert.Equal(t, "/app", hello.Cwd)
				sandboxtest.Bye(t, s)
				require.NoError(t, s.Close(), "%s", tr)
				assert.NoError(t, s.Wait(), "%s: the executor exits 0 after bye; stderr: %s", tr, s.Stderr())
			}
		})
	}
}

func TestMain(m *testing.M) { sandboxtest.Main(m) }

func TestOpenNoEngine(t *testing.T) {
	t.Setenv("DOCKER_HOST", "unix://"+filepath.Join(t.TempDir(), "no-docker.sock"))
	for _, spec := range []string{"docker:box", "docker-image:tapebox/sandbox:bookworm"} {
		t.Run(spec, func(t *testing.T) {
			_, err := sandbox.Open(t.Context(), spec, sandbox.Options{})
			require.ErrorIs(t, err, sandbox.ErrNoEngine)
			assert.Contains(t, err.Error(), "no-docker.sock")
			assert.Contains(t, err.Error(), "local:DIR")
		})
	}
}

func TestIsMountErr(t *testing.T) {
	for msg, want := range map[string]bool{
		"Error response from daemon: invalid mount config for type \"bind\": bind source path does not exist: /x": true,
		"Mounts denied: The path /Users/x is not shared from the host":                                            true,
		"Error response from daemon: No such image: x":                                                            false,
		"OCI runtime create failed: runc create failed: unable to start container process":                        false,
	} {
		assert.Equal(t, want, isMountErr(errors.New(msg)), msg)
	}
}

func TestOpenExecutorPathWithoutInstall(t *testing.T) {
	_, err := sandbox.Open(t.Context(), "docker:box", sandbox.Options{ExecutorPath: "/bin/true"})
	require.ErrorIs(t, err, sandbox.ErrOption)
	assert.Contains(t, err.Error(), "set InstallExecutor too")
}

// TestDockerStderrEscaped: in a container too, a child writes into its parent's stderr
// through /proc, and the session's error messages carry it escaped.
func TestDockerStderrEscaped(t *testing.T) {
	sb := openImage(t, dockertest.TinyImage, sandbox.Options{})
	sandboxtest.CheckStderrEscaped(t, sb)
}
