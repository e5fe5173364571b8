package docker

import (
	"testing"

	"github.com/docker/docker/api/types/container"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/internal/testutil/dockertest"
	"github.com/tapebox/tapebox/internal/testutil/sandboxtest"
	"github.com/tapebox/tapebox/sandbox"
	"github.com/tapebox/tapebox/workspace"
)

func TestDockerWorkspace(t *testing.T) {
	sb := openImage(t, dockertest.TinyImage, sandbox.Options{Cwd: "/work/app"})
	sandboxtest.CheckWorkspace(t, sb)
	res, err := sb.Exec(t.Context(), []string{"stat", "-c", "%u:%g", ".", "README.md"})
	require.NoError(t, err)
	assert.Equal(t, "65534:65534\n65534:65534\n", string(res.Stdout), "owned by the container's user (the default)")

	// The executor's state directory is left out by default.
	_, err = sb.Exec(t.Context(), []string{"sh", "-c", "mkdir -p .tapebox/tasks && echo out > .tapebox/tasks/1"})
	require.NoError(t, err)
	m, err := sb.WorkspaceManifest(t.Context(), workspace.Options{})
	require.NoError(t, err)
	for _, e := range m {
		assert.NotContains(t, e.Path, ".tapebox")
	}
	m, err = sb.WorkspaceManifest(t.Context(), workspace.Options{NoDefaultExclude: true})
	require.NoError(t, err)
	assert.Contains(t, m, workspace.Entry{Path: ".tapebox/tasks/1", Type: workspace.TypeFile, Mode: "0644", Size: 4, SHA256: sandboxtest.SHA256Hex("out\n")})
}

// TestDockerWorkspaceOwner: the restored files belong to the user the container runs as: a
// numeric one the container's passwd file does not know, or a name it does.
func TestDockerWorkspaceOwner(t *testing.T) {
	cli, img := dockertest.Image(t, dockertest.TinyImage)
	for user, want := range map[string]string{"1234:1234": "1234:1234", "nobody": "65534:65534"} {
		t.Run(user, func(t *testing.T) {
			created, err := cli.ContainerCreate(t.Context(),
				&container.Config{Image: img, Cmd: []string{"sleep", "infinity"}, User: user, Labels: map[string]string{dockertest.Label: t.Name()}},
				&container.HostConfig{NetworkMode: "none"}, nil, nil, "")
			require.NoError(t, err)
			t.Cleanup(func() { dockertest.Remove(t, created.ID) })
			require.NoError(t, cli.ContainerStart(t.Context(), created.ID, container.StartOptions{}))
			sb, err := sandbox.Open(t.Context(), "docker:"+created.ID, sandbox.Options{Cwd: "/tmp"})
			require.NoError(t, err)
			defer sb.Close(t.Context())

			snap, info, _ := sandboxtest.SnapshotFile(t)
			require.NoError(t, sb.RestoreWorkspace(t.Context(), snap, info))
			res, err := sb.Exec(t.Context(), []string{"sh", "-c", "stat -c %u:%g README.md src; echo more >> src/main.go && echo writable"})
			require.NoError(t, err)
			assert.Equal(t, want+"\n"+want+"\nwritable\n", string(res.Stdout), "stderr: %s", res.Stderr)
		})
	}
}

// TestDockerWorkspaceRefused: nothing of a snapshot that fails verification reaches the
// container.
func TestDockerWorkspaceRefused(t *testing.T) {
	sb := openImage(t, dockertest.TinyImage, sandbox.Options{Cwd: "/app"})
	snap, info, _ := sandboxtest.SnapshotFile(t)
	bad := info
	bad.Bytes++
	sandboxtest.CheckRestoreRefused(t, sb, snap, bad)

	m, err := sb.WorkspaceManifest(t.Context(), workspace.Options{})
	require.NoError(t, err)
	assert.Empty(t, m, "the working directory is still empty")
	res, err := sb.Exec(t.Context(), []string{"sh", "-c", "test -e /tmp/tapebox-evil && echo present || echo absent"})
	require.NoError(t, err)
	assert.Equal(t, "absent\n", string(res.Stdout))
}

// TestDockerLocalSameWorkspace: one snapshot restored in both backends gives one manifest,
// and the container's root directory can be listed too.
func TestDockerLocalSameWorkspace(t *testing.T) {
	docker := openImage(t, dockertest.TinyImage, sandbox.Options{Cwd: "/work/proj"})
	local, _ := sandboxtest.OpenLocal(t, sandbox.Options{})
	snap, info, recorded := sandboxtest.SnapshotFile(t)
	for _, sb := range []*sandbox.Sandbox{docker, local} {
		require.NoError(t, sb.RestoreWorkspace(t.Context(), snap, info), sb.Spec().String())
		m, err := sb.WorkspaceManifest(t.Context(), workspace.Options{})
		require.NoError(t, err)
		assert.Equal(t, recorded, m, sb.Spec().String())
	}

	root := openImage(t, dockertest.TinyImage, sandbox.Options{Cwd: "/"})
	m, err := root.WorkspaceManifest(t.Context(), workspace.Options{Exclude: []string{"proc", "sys", "dev"}})
	require.NoError(t, err)
	var paths []string
	for _, e := range m {
		paths = append(paths, e.Path)
	}
	assert.Contains(t, paths, "bin")
}

// TestDockerManifestBounded: a tape's sparse file of 64 GiB in a container does not make its
// end manifest read 64 GiB of zeros from the engine's archive and hash them.
func TestDockerManifestBounded(t *testing.T) {
	sb := openImage(t, dockertest.TinyImage, sandbox.Options{Cwd: "/work/bounded"})
	sandboxtest.CheckManifestBounded(t, sb)
}
