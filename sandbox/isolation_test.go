package sandbox

import (
	"path"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/internal/dockertest"
)

// hostMount is a mount in a container whose files live on a host filesystem.
type hostMount struct {
	point, hostPath, fsType string
}

// virtualFS are the filesystems of a container's own making: nothing on them is a host file.
var virtualFS = []string{"overlay", "proc", "sysfs", "tmpfs", "devpts", "mqueue", "cgroup", "cgroup2", "devtmpfs", "securityfs", "nsfs", "bpf"}

// hostMounts lists a container's mounts of host filesystems, from its /proc/self/mountinfo.
func hostMounts(t *testing.T, sb *Sandbox) []hostMount {
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
	exe := fakeExecutor(t, hostArch())
	for _, tt := range []struct {
		name string
		opts Options
	}{
		{"defaults", Options{InstallExecutor: true, ExecutorPath: exe}},
		{"read-only root", Options{InstallExecutor: true, ExecutorPath: exe, ReadOnlyRoot: true, Cwd: "/app"}},
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
func exitCode(t *testing.T, sb *Sandbox, argv ...string) int {
	t.Helper()
	res, err := sb.Exec(t.Context(), argv)
	require.NoError(t, err)
	return res.ExitCode
}
