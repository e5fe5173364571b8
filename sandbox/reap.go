package sandbox

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/client"
	"github.com/docker/docker/errdefs"
)

// OwnerLabel names the process that created a container ("pid=P,start=T,pidns=N,boot=B": its
// pid, its start time in clock ticks since boot, its pid namespace and the boot's id), so
// that a later Open can tell a killed replay's leftovers from a running replay's containers.
const OwnerLabel = "org.tapebox.owner"

// ownerFile holds the same in a socket directory's private parent.
const ownerFile = "owner"

// sockDirPattern matches the socket directories' private parents in $TMPDIR.
const sockDirPattern = "tapebox-sock-*"

// owner identifies a process across pid reuse, within one boot and one pid namespace.
type owner struct {
	pid   int
	start string // field 22 of /proc/PID/stat
	pidNS string // the target of /proc/PID/ns/pid, "pid:[N]"
	boot  string // /proc/sys/kernel/random/boot_id
}

func (o owner) String() string {
	return fmt.Sprintf("pid=%d,start=%s,pidns=%s,boot=%s", o.pid, o.start, strings.TrimSuffix(strings.TrimPrefix(o.pidNS, "pid:["), "]"), o.boot)
}

func parseOwner(s string) (owner, bool) {
	var o owner
	for kv := range strings.SplitSeq(s, ",") {
		k, v, _ := strings.Cut(kv, "=")
		switch k {
		case "pid":
			o.pid, _ = strconv.Atoi(v)
		case "start":
			o.start = v
		case "pidns":
			o.pidNS = "pid:[" + v + "]"
		case "boot":
			o.boot = v
		}
	}
	return o, o.pid > 0 && o.start != "" && o.pidNS != "pid:[]" && o.boot != ""
}

// self is this process as an owner; ok is false where /proc cannot tell (not Linux), and
// then nothing is labeled or reaped.
var self = sync.OnceValues(func() (owner, bool) {
	o, ok := procOwner(os.Getpid())
	if !ok {
		return owner{}, false
	}
	boot, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return owner{}, false
	}
	o.boot = string(bytes.TrimSpace(boot))
	return o, o.boot != ""
})

// procOwner reads a live process's start time and pid namespace from /proc; ok is false
// when it is gone or a zombie.
func procOwner(pid int) (owner, bool) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return owner{}, false
	}
	// The command name, in parentheses, may hold spaces: the fields follow its last ")".
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return owner{}, false
	}
	f := strings.Fields(string(stat[i+1:]))
	if len(f) < 20 || f[0] == "Z" || f[0] == "X" {
		return owner{}, false
	}
	ns, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/pid", pid))
	if err != nil {
		return owner{}, false
	}
	return owner{pid: pid, start: f[19], pidNS: ns}, true
}

// gone reports whether the owner o is known to have ended: it ran in this boot and this
// pid namespace, and no live process has its pid and start time. An owner elsewhere (another
// machine on a shared engine, another pid namespace, an earlier boot) is never gone: nothing
// here can tell.
func (o owner) gone() bool {
	me, ok := self()
	if !ok || o.boot != me.boot || o.pidNS != me.pidNS {
		return false
	}
	live, ok := procOwner(o.pid)
	return !ok || live.start != o.start
}

// reapLeftovers removes what replays that are gone left behind: the containers they created
// (labeled with OwnerLabel) and their socket directories in $TMPDIR. A replay killed with
// SIGKILL cannot clean up; the next one does. Failures are logged, not returned: a replay
// goes on without the cleanup.
func reapLeftovers(ctx context.Context, cli *client.Client, logf func(string, ...any)) {
	if _, ok := self(); !ok {
		return
	}
	list, err := cli.ContainerList(ctx, container.ListOptions{All: true, Filters: filters.NewArgs(filters.Arg("label", OwnerLabel))})
	if err != nil {
		logf("look for containers left by killed replays: %v", err)
	}
	for _, c := range list {
		o, ok := parseOwner(c.Labels[OwnerLabel])
		if !ok || c.Labels[Label] == "" || !o.gone() {
			continue
		}
		err := cli.ContainerRemove(ctx, c.ID, container.RemoveOptions{Force: true, RemoveVolumes: true})
		if err != nil && !errdefs.IsNotFound(err) {
			logf("remove container %.12s, left by a replay that is gone (pid %d): %v", c.ID, o.pid, err)
			continue
		}
		logf("removed container %s (%.12s), left by a replay that is gone (pid %d)", strings.TrimPrefix(firstName(c.Names), "/"), c.ID, o.pid)
	}
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), sockDirPattern))
	for _, dir := range dirs {
		b, err := os.ReadFile(filepath.Join(dir, ownerFile))
		if err != nil {
			continue // not ours to judge: another user's, or one being made
		}
		o, ok := parseOwner(string(bytes.TrimSpace(b)))
		if !ok || !o.gone() {
			continue
		}
		if err := os.RemoveAll(dir); err != nil {
			logf("remove %s, left by a replay that is gone (pid %d): %v", dir, o.pid, err)
			continue
		}
		logf("removed %s, left by a replay that is gone (pid %d)", dir, o.pid)
	}
}

func firstName(names []string) string {
	if len(names) == 0 {
		return ""
	}
	return names[0]
}
