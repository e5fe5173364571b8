package kit

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
)

// Owner identifies a process across pid reuse, within one boot and one pid namespace: what
// sandbox.OwnerLabel holds ("pid=P,start=T,pidns=N,boot=B").
type Owner struct {
	PID   int
	start string // field 22 of /proc/PID/stat
	pidNS string // the target of /proc/PID/ns/pid, "pid:[N]"
	boot  string // /proc/sys/kernel/random/boot_id
}

func (o Owner) String() string {
	return fmt.Sprintf("pid=%d,start=%s,pidns=%s,boot=%s", o.PID, o.start, strings.TrimSuffix(strings.TrimPrefix(o.pidNS, "pid:["), "]"), o.boot)
}

// ParseOwner reads an OwnerLabel value; ok is false when a part is missing.
func ParseOwner(s string) (Owner, bool) {
	var o Owner
	for kv := range strings.SplitSeq(s, ",") {
		k, v, _ := strings.Cut(kv, "=")
		switch k {
		case "pid":
			o.PID, _ = strconv.Atoi(v)
		case "start":
			o.start = v
		case "pidns":
			o.pidNS = "pid:[" + v + "]"
		case "boot":
			o.boot = v
		}
	}
	return o, o.PID > 0 && o.start != "" && o.pidNS != "pid:[]" && o.boot != ""
}

// Self is this process as an owner; ok is false where /proc cannot tell (not Linux), and
// then nothing is labeled or reaped.
var Self = sync.OnceValues(func() (Owner, bool) {
	o, ok := procOwner(os.Getpid())
	if !ok {
		return Owner{}, false
	}
	boot, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return Owner{}, false
	}
	o.boot = string(bytes.TrimSpace(boot))
	return o, o.boot != ""
})

// procOwner reads a live process's start time and pid namespace from /proc; ok is false
// when it is gone or a zombie.
func procOwner(pid int) (Owner, bool) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return Owner{}, false
	}
	// The command name, in parentheses, may hold spaces: the fields follow its last ")".
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return Owner{}, false
	}
	f := strings.Fields(string(stat[i+1:]))
	if len(f) < 20 || f[0] == "Z" || f[0] == "X" {
		return Owner{}, false
	}
	ns, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/pid", pid))
	if err != nil {
		return Owner{}, false
	}
	return Owner{PID: pid, start: f[19], pidNS: ns}, true
}

// Gone reports whether the owner o is known to have ended: it ran in this boot and this
// pid namespace, and no live process has its pid and start time. An owner elsewhere (another
// machine on a shared engine, another pid namespace, an earlier boot) is never gone: nothing
// here can tell.
func (o Owner) Gone() bool {
	me, ok := Self()
	if !ok || o.boot != me.boot || o.pidNS != me.pidNS {
		return false
	}
	live, ok := procOwner(o.PID)
	return !ok || live.start != o.start
}
