//go:build linux

package local

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/sandbox/internal/kit"
)

// goneOwner is an owner marker for a process that has ended.
func goneOwner(t *testing.T) string {
	t.Helper()
	cmd := exec.Command("true")
	require.NoError(t, cmd.Run())
	me, ok := kit.Self()
	require.True(t, ok)
	s := regexp.MustCompile(`pid=\d+`).ReplaceAllString(me.String(), "pid="+strconv.Itoa(cmd.Process.Pid))
	o, ok := kit.ParseOwner(s)
	require.True(t, ok)
	require.True(t, o.Gone())
	return s
}

// TestReapLeftoversTrustsOnlyItsOwn: the reaper clears and removes what a replay that is
// gone left in $TMPDIR, and nothing else: a live owner's, a marker in a directory others
// can write, or one of another user (a shared /tmp: a marker there could name any DIR).
func TestReapLeftoversTrustsOnlyItsOwn(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	gone, me := goneOwner(t), func() string { o, _ := kit.Self(); return o.String() }()
	type leftover struct {
		owner  string
		mode   os.FileMode
		chown  bool
		reaped bool
	}
	cases := map[string]leftover{
		"gone":             {gone, 0o700, false, true},
		"live":             {me, 0o700, false, false},
		"others can write": {gone, 0o777, false, false},
	}
	if os.Geteuid() == 0 {
		cases["another user's"] = leftover{gone, 0o700, true, false}
	}
	dirs := map[string][2]string{}
	for name, c := range cases {
		scratch, err := os.MkdirTemp(tmp, scratchPrefix)
		require.NoError(t, err)
		dir := filepath.Join(t.TempDir(), "work")
		require.NoError(t, os.MkdirAll(filepath.Join(dir, "hide"), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "hide", "sh"), []byte("#!/bin/sh\n"), 0o755))
		require.NoError(t, os.Chmod(filepath.Join(dir, "hide", "sh"), os.ModeSetuid|0o755))
		require.NoError(t, os.Chmod(filepath.Join(dir, "hide"), 0o111))
		require.NoError(t, os.WriteFile(filepath.Join(scratch, ownerFile), []byte("owner="+c.owner+"\ndir="+dir+"\n"), 0o600))
		require.NoError(t, os.Chmod(scratch, c.mode))
		if c.chown {
			require.NoError(t, os.Chown(scratch, 65534, 65534))
		}
		dirs[name] = [2]string{scratch, dir}
	}
	var logged []string
	reapLeftovers(func(format string, args ...any) { logged = append(logged, format) })
	assert.Len(t, logged, 1)
	for name, c := range cases {
		scratch, dir := dirs[name][0], dirs[name][1]
		fi, err := os.Stat(filepath.Join(dir, "hide", "sh"))
		require.NoError(t, err)
		if c.reaped {
			assert.NoDirExists(t, scratch, name)
			assert.Equal(t, os.FileMode(0o755), fi.Mode(), name)
		} else {
			assert.DirExists(t, scratch, name)
			assert.Equal(t, os.FileMode(0o755)|os.ModeSetuid, fi.Mode(), name)
		}
		fi, err = os.Lstat(filepath.Join(dir, "hide"))
		require.NoError(t, err)
		assert.Equal(t, os.ModeDir|0o111, fi.Mode(), "%s: hide keeps its mode", name)
		os.Chmod(filepath.Join(dir, "hide"), 0o755) // for t.TempDir's removal
	}
}
