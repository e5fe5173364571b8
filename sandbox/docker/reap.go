package docker

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/client"
	"github.com/docker/docker/errdefs"
	"github.com/tapebox/tapebox/sandbox"
	"github.com/tapebox/tapebox/sandbox/internal/kit"
)

// reapLeftovers removes what replays that are gone left behind: the containers they created
// (labeled with OwnerLabel) and their socket directories in $TMPDIR. A replay killed with
// SIGKILL cannot clean up; the next one does. Failures are logged, not returned: a replay
// goes on without the cleanup.
func reapLeftovers(ctx context.Context, cli *client.Client, logf func(string, ...any)) {
	if _, ok := kit.Self(); !ok {
		return
	}
	list, err := cli.ContainerList(ctx, container.ListOptions{All: true, Filters: filters.NewArgs(filters.Arg("label", sandbox.OwnerLabel))})
	if err != nil {
		logf("look for containers left by killed replays: %v", err)
	}
	for _, c := range list {
		o, ok := kit.ParseOwner(c.Labels[sandbox.OwnerLabel])
		if !ok || c.Labels[sandbox.Label] == "" || !o.Gone() {
			continue
		}
		err := cli.ContainerRemove(ctx, c.ID, container.RemoveOptions{Force: true, RemoveVolumes: true})
		if err != nil && !errdefs.IsNotFound(err) {
			logf("remove container %.12s, left by a replay that is gone (pid %d): %v", c.ID, o.PID, err)
			continue
		}
		logf("removed container %s (%.12s), left by a replay that is gone (pid %d)", strings.TrimPrefix(firstName(c.Names), "/"), c.ID, o.PID)
	}
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), sockDirPattern))
	for _, dir := range dirs {
		b, err := os.ReadFile(filepath.Join(dir, ownerFile))
		if err != nil {
			continue // not ours to judge: another user's, or one being made
		}
		o, ok := kit.ParseOwner(string(bytes.TrimSpace(b)))
		if !ok || !o.Gone() {
			continue
		}
		if err := os.RemoveAll(dir); err != nil {
			logf("remove %s, left by a replay that is gone (pid %d): %v", dir, o.PID, err)
			continue
		}
		logf("removed %s, left by a replay that is gone (pid %d)", dir, o.PID)
	}
}

func firstName(names []string) string {
	if len(names) == 0 {
		return ""
	}
	return names[0]
}
