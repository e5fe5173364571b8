package docker

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/errdefs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/internal/testutil/dockertest"
	"github.com/tapebox/tapebox/internal/testutil/sandboxtest"
	"github.com/tapebox/tapebox/sandbox"
	"github.com/tapebox/tapebox/sandbox/internal/kit"
)

// deadOwner is the owner of a process that has ended: a child, run and waited for.
func deadOwner(t *testing.T) kit.Owner {
	t.Helper()
	me, ok := kit.Self()
	if !ok {
		t.Skip("no /proc to tell processes apart")
	}
	cmd := exec.Command("true")
	require.NoError(t, cmd.Run())
	// Any start time is as good: no live process has this pid with it.
	_, rest, _ := strings.Cut(me.String(), ",start=")
	_, rest, _ = strings.Cut(rest, ",")
	o, ok := kit.ParseOwner(fmt.Sprintf("pid=%d,start=1,%s", cmd.Process.Pid, rest))
	require.True(t, ok)
	return o
}

// onBoot is o on another boot (or machine).
func onBoot(t *testing.T, o kit.Owner, boot string) kit.Owner {
	s, _, _ := strings.Cut(o.String(), ",boot=")
	o, ok := kit.ParseOwner(s + ",boot=" + boot)
	require.True(t, ok)
	return o
}

// TestDockerReapsLeftovers: Open removes the containers and socket directories of replays
// that are gone, and leaves those of live processes and of owners it cannot judge.
func TestDockerReapsLeftovers(t *testing.T) {
	cli, ref := dockertest.Image(t, dockertest.TinyImage)
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	me, _ := kit.Self()
	dead := deadOwner(t)
	foreign := onBoot(t, dead, "another-machine")

	leftover := func(o kit.Owner) (id, dir string) {
		created, err := cli.ContainerCreate(t.Context(), &container.Config{Image: ref, Cmd: []string{"sleep", "infinity"},
			Labels: map[string]string{sandbox.Label: "1", sandbox.OwnerLabel: o.String(), dockertest.Label: t.Name()}}, &container.HostConfig{NetworkMode: "none"}, nil, nil, "")
		require.NoError(t, err)
		t.Cleanup(func() { dockertest.Remove(t, created.ID) })
		require.NoError(t, cli.ContainerStart(t.Context(), created.ID, container.StartOptions{}))
		dir, err = os.MkdirTemp(tmp, "tapebox-sock-")
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, ownerFile), []byte(o.String()+"\n"), 0o600))
		require.NoError(t, os.Mkdir(filepath.Join(dir, "s"), 0o755))
		return created.ID, dir
	}
	deadID, deadDir := leftover(dead)
	liveID, liveDir := leftover(me)
	foreignID, foreignDir := leftover(foreign)
	unowned, err := os.MkdirTemp(tmp, "tapebox-sock-")
	require.NoError(t, err)

	var log sandboxtest.LogLines
	openImage(t, ref, sandbox.Options{Logf: log.Logf})
	_, err = cli.ContainerInspect(t.Context(), deadID)
	assert.True(t, errdefs.IsNotFound(err), "the dead replay's container is removed: %v", err)
	assert.NoDirExists(t, deadDir)
	assert.Contains(t, log.String(), "left by a replay that is gone")
	for _, id := range []string{liveID, foreignID} {
		_, err := cli.ContainerInspect(t.Context(), id)
		assert.NoError(t, err)
	}
	for _, dir := range []string{liveDir, foreignDir, unowned} {
		assert.DirExists(t, dir)
	}
}
