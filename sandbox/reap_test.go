package sandbox

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/errdefs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/internal/dockertest"
)

// deadOwner is the owner of a process that has ended: a child, run and waited for.
func deadOwner(t *testing.T) owner {
	t.Helper()
	me, ok := self()
	if !ok {
		t.Skip("no /proc to tell processes apart")
	}
	cmd := exec.Command("sh", "-c", "cat /proc/self/stat >/dev/null")
	require.NoError(t, cmd.Start())
	o, ok := procOwner(cmd.Process.Pid)
	require.NoError(t, cmd.Wait())
	if !ok { // it ended before it could be read: any start time is as good
		o = owner{pid: cmd.Process.Pid, start: "1", pidNS: me.pidNS}
	}
	o.boot = me.boot
	return o
}

func TestOwner(t *testing.T) {
	me, ok := self()
	if !ok {
		t.Skip("no /proc to tell processes apart")
	}
	back, ok := parseOwner(me.String())
	require.True(t, ok, "%s", me)
	assert.Equal(t, me, back)
	assert.False(t, me.gone(), "this process")

	dead := deadOwner(t)
	assert.True(t, dead.gone(), "a process that ended")
	reused := me
	reused.start += "0"
	assert.True(t, reused.gone(), "this pid with another start time: the pid was reused")
	other := dead
	other.boot = "another-boot"
	assert.False(t, other.gone(), "another boot (or machine) cannot be judged")
	other = dead
	other.pidNS = "pid:[1]"
	assert.False(t, other.gone(), "another pid namespace cannot be judged")
	for _, bad := range []string{"", "pid=1", "pid=x,start=1,pidns=2,boot=b", "garbage"} {
		_, ok := parseOwner(bad)
		assert.False(t, ok, "%q", bad)
	}
}

// TestDockerReapsLeftovers: Open removes the containers and socket directories of replays
// that are gone, and leaves those of live processes and of owners it cannot judge.
func TestDockerReapsLeftovers(t *testing.T) {
	cli, ref := dockertest.Image(t, dockertest.TinyImage)
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	me, _ := self()
	dead := deadOwner(t)
	foreign := dead
	foreign.boot = "another-machine"

	leftover := func(o owner) (id, dir string) {
		created, err := cli.ContainerCreate(t.Context(), &container.Config{Image: ref, Cmd: []string{"sleep", "infinity"},
			Labels: map[string]string{Label: "1", OwnerLabel: o.String(), dockertest.Label: t.Name()}}, &container.HostConfig{NetworkMode: "none"}, nil, nil, "")
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

	var log logLines
	openImage(t, ref, Options{Logf: log.logf})
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
