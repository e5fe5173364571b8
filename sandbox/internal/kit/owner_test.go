package kit

import (
	"os/exec"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// deadOwner is the owner of a process that has ended: a child, run and waited for.
func deadOwner(t *testing.T) Owner {
	t.Helper()
	me, ok := Self()
	if !ok {
		t.Skip("no /proc to tell processes apart")
	}
	cmd := exec.Command("sh", "-c", "cat /proc/self/stat >/dev/null")
	require.NoError(t, cmd.Start())
	o, ok := procOwner(cmd.Process.Pid)
	require.NoError(t, cmd.Wait())
	if !ok { // it ended before it could be read: any start time is as good
		o = Owner{PID: cmd.Process.Pid, start: "1", pidNS: me.pidNS}
	}
	o.boot = me.boot
	return o
}

func TestOwner(t *testing.T) {
	me, ok := Self()
	if !ok {
		t.Skip("no /proc to tell processes apart")
	}
	back, ok := ParseOwner(me.String())
	require.True(t, ok, "%s", me)
	assert.Equal(t, me, back)
	assert.False(t, me.Gone(), "this process")

	dead := deadOwner(t)
	assert.True(t, dead.Gone(), "a process that ended")
	reused := me
	reused.start += "0"
	assert.True(t, reused.Gone(), "this pid with another start time: the pid was reused")
	other := dead
	other.boot = "another-boot"
	assert.False(t, other.Gone(), "another boot (or machine) cannot be judged")
	other = dead
	other.pidNS = "pid:[1]"
	assert.False(t, other.Gone(), "another pid namespace cannot be judged")
	for _, bad := range []string{"", "pid=1", "pid=x,start=1,pidns=2,boot=b", "garbage"} {
		_, ok := ParseOwner(bad)
		assert.False(t, ok, "%q", bad)
	}
}
