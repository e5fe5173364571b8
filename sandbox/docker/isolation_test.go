package docker

import (
	"context"
	"path"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/image"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/internal/testutil/dockertest"
	"github.com/tapebox/tapebox/internal/testutil/sandboxtest"
	"github.com/tapebox/tapebox/sandbox"
)

// hostMount is a mount in a container whose files live on a host filesystem.
type hostMount struct {
	point, hostPath, fsType string
}

// virtualFS are the filesystems of a container's own making: nothing on them is a host file.
var virtualFS = []string{"overlay", "proc", "sysfs", "tmpfs", "devpts", "mqueue", "cgroup", "cgroup2", "devtmpfs", "securityfs", "nsfs", "bpf"}

// hostMounts lists a container's mounts of host filesystems, from its /proc/self/mountinfo.
func hostMounts(t *testing.T, sb *sandbox.Sandbox) []hostMount {
	t.Helper()
	var ms []hostMount
	for _, line := range strings.Split(strings.TrimSpace(execOut(t, sb, "cat", "/proc/self/mountinfo")), "\n") {
		f := strings.Fields(line)
		sep := slices.Index(f, "-")
		require.True(t, sep >= 6 && sep+1 < len(f), "mountinfo line %q", line)
		if fsType := f[sep+1]; !slices.Contains(virtualFS, fsType) {
			ms = append(ms, hostMount{point: f[4], hostPath: f[3], fsType: fsType})
		}
	}
	return ms
}

// TestDockerNoWritableHostDir: no process in a container TapeBox creates can write a file
// into a directory of the host: every host directory mounted into it (the executor's
// socket directory among them) refuses a new file, and so does the executor binary. The
// container's own volumes (Options.ReadOnlyRoot's working directory) are the container's.
func TestDockerNoWritableHostDir(t *testing.T) {
	cli := dockertest.Client(t)
	exe := sandboxtest.FakeExecutor(t, runtime.GOARCH)
	for _, tt := range []struct {
		name string
		opts sandbox.Options
	}{
		{"defaults", sandbox.Options{InstallExecutor: true, ExecutorPath: exe}},
		{"read-only root", sandbox.Options{InstallExecutor: true, ExecutorPath: exe, ReadOnlyRoot: true, Cwd: "/app"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			sb := openImage(t, dockertest.TinyImage, tt.opts)
			ci, err := cli.ContainerInspect(t.Context(), sb.ContainerID())
			require.NoError(t, err)
			var volumes, binds []string
			for _, m := range ci.Mounts {
				if m.Type == "volume" {
					volumes = append(volumes, m.Destination)
				} else {
					binds = append(binds, m.Destination)
				}
			}
			require.Contains(t, binds, sockDirIn, "the socket transport is on")
			var probed []string
			for _, m := range hostMounts(t, sb) {
				if slices.Contains(volumes, m.point) {
					continue
				}
				isDir := exitCode(t, sb, "test", "-d", m.point) == 0
				switch {
				case isDir:
					probe := path.Join(m.point, ".tapebox-probe")
					assert.NotEqual(t, 0, exitCode(t, sb, "sh", "-c", "echo x > "+probe), "%s (%s on the host) takes a new file", m.point, m.hostPath)
					assert.NotEqual(t, 0, exitCode(t, sb, "ln", "-s", "/", probe+"-link"), "%s (%s on the host) takes a symbolic link", m.point, m.hostPath)
				case slices.Contains(binds, m.point):
					assert.NotEqual(t, 0, exitCode(t, sb, "sh", "-c", ": >> "+m.point), "%s (%s on the host) is writable", m.point, m.hostPath)
				default:
					continue // the engine's own files of this container: /etc/hosts, /etc/resolv.conf, /etc/hostname
				}
				probed = append(probed, m.point)
			}
			assert.Subset(t, probed, binds, "every bind mount probed")
		})
	}
}

// execCode runs argv in the sandbox and returns its exit status.
func exitCode(t *testing.T, sb *sandbox.Sandbox, argv ...string) int {
	t.Helper()
	res, err := sb.Exec(t.Context(), argv)
	require.NoError(t, err)
	return res.ExitCode
}

// TestDockerUser: who a created container runs the tape as, and who owns its working
// directory.
func TestDockerUser(t *testing.T) {
	cli, ref := dockertest.Image(t, dockertest.TinyImage)
	// An image that names its own user.
	id, _ := dockertest.Run(t, ref)
	committed, err := cli.ContainerCommit(t.Context(), id, container.CommitOptions{Reference: "tapebox/test-user:" + strings.ToLower(t.Name()), Changes: []string{"USER 4321:4321"}})
	require.NoError(t, err)
	t.Cleanup(func() { cli.ImageRemove(context.Background(), committed.ID, image.RemoveOptions{Force: true}) })

	for _, tt := range []struct {
		name, image  string
		opts         sandbox.Options
		id, cwdOwner string
		log          string
	}{
		{"default", ref, sandbox.Options{Cwd: "/work/proj"}, "65534:65534", "65534:65534", "created /work/proj for user 65534:65534"},
		{"root", ref, sandbox.Options{Cwd: "/work/proj", User: "0"}, "0:0", "0:0", ""},
		{"uid only", ref, sandbox.Options{Cwd: "/work/proj", User: "1234"}, "1234:0", "1234:0", ""},
		{"by name", ref, sandbox.Options{Cwd: "/work/proj", User: "nobody"}, "65534:65534", "65534:65534", ""},
		{"the image's user", committed.ID, sandbox.Options{Cwd: "/work/proj"}, "4321:4321", "4321:4321", ""},
		{"an image directory of root's", ref, sandbox.Options{Cwd: "/app"}, "65534:65534", "0:0",
			"warning: the working directory /app is the image's and belongs to 0:0 (mode 755): the tape's commands run as 65534:65534 and may not write there; --user 0:0 runs them as its owner"},
		{"read-only root", ref, sandbox.Options{Cwd: "/work/proj", ReadOnlyRoot: true}, "0:0", "0:0", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var log sandboxtest.LogLines
			tt.opts.Logf = log.Logf
			sb := openImage(t, tt.image, tt.opts)
			assert.Equal(t, tt.id+"\n", execOut(t, sb, "sh", "-c", "echo $(id -u):$(id -g)"))
			assert.Equal(t, tt.cwdOwner+"\n", execOut(t, sb, "stat", "-c", "%u:%g", sb.Cwd()))
			if tt.cwdOwner == tt.id {
				execOut(t, sb, "sh", "-c", "echo x > made && mkdir d")
				require.NoError(t, sb.WriteFiles(t.Context(), "sub/deeper", map[string]sandbox.File{"f": {Data: []byte("x")}}))
				assert.Equal(t, strings.Repeat(tt.id+"\n", 3), execOut(t, sb, "stat", "-c", "%u:%g", "sub", "sub/deeper", "sub/deeper/f"),
					"WriteFiles makes files and directories the user's")
			}
			if tt.log != "" {
				assert.Contains(t, log.String(), tt.log)
			}
		})
	}
}

// TestDockerWarnings: a host network and capabilities that break isolation are accepted
// with one line each.
func TestDockerWarnings(t *testing.T) {
	var warnings, log sandboxtest.LogLines
	openImage(t, dockertest.TinyImage, sandbox.Options{Cwd: "/work/proj", Network: "host", CapAdd: []string{"sys_admin", "CAP_NET_ADMIN", "CHOWN", "SYS_ADMIN"}, Warnf: warnings.Logf, Logf: log.Logf})
	assert.Equal(t, "sandbox docker-image:"+dockertest.TinyImage+": warning: --network host: the tape's commands share this machine's network: they reach its loopback services and can listen on its ports\n"+
		"sandbox docker-image:"+dockertest.TinyImage+": warning: capabilities SYS_ADMIN, NET_ADMIN: a process holding them can reach past the container (as with --privileged); give them to trusted tapes only",
		warnings.String())
	assert.NotContains(t, log.String(), "warning")

	openImage(t, dockertest.TinyImage, sandbox.Options{Network: "none", CapAdd: []string{"CHOWN"}, Warnf: warnings.Logf})
	assert.Equal(t, 2, len(warnings.Lines()), "no more warnings")
}
