//go:build linux

package local

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/tapebox/tapebox/sandbox/internal/kit"
)

// scratchPrefix names a jailed sandbox's private directory in $TMPDIR (its /tmp, HOME,
// and the owner marker).
const scratchPrefix = "tapebox-local-"

// ownerFile, in a private directory, says who made it and where its sandbox worked, for the
// replay that finds it after this process was killed: "owner=" kit.Owner, "dir=" DIR, and
// "temp=" the temporary directory DIR was made in, when there is one (see tempParent).
const ownerFile = "owner"

// writeOwner writes ownerFile into scratch, for the sandbox working in dir.
func writeOwner(scratch, dir string) error {
	me, ok := kit.Self()
	if !ok {
		return nil // nothing here can tell when it is gone: nothing is reaped
	}
	s := "owner=" + me.String() + "\ndir=" + dir + "\n"
	if t := tempParent(dir); t != "" {
		s += "temp=" + t + "\n"
	}
	if err := os.WriteFile(filepath.Join(scratch, ownerFile), []byte(s), 0o600); err != nil {
		return fmt.Errorf("make the sandbox's private directory: %w", err)
	}
	return nil
}

// tempParent is dir's parent when it is a temporary directory made for this sandbox, as
// tapebox replay and corpus replay make one for the bare "local": in $TMPDIR, named
// tapebox-*, ours, private (0700) and holding only dir. "" otherwise: a DIR the user named
// is never removed, only cleared of set-id bits.
func tempParent(dir string) string {
	parent := filepath.Dir(dir)
	if filepath.Dir(parent) != filepath.Clean(os.TempDir()) || !strings.HasPrefix(filepath.Base(parent), "tapebox-") || !ours(parent, true) {
		return ""
	}
	entries, err := os.ReadDir(parent)
	if err != nil || len(entries) != 1 || entries[0].Name() != filepath.Base(dir) {
		return ""
	}
	return parent
}

// ours says whether p is a directory (dir) or a regular file of this process's user, and no
// link; a private directory also has no rights for others.
func ours(p string, dir bool) bool {
	fi, err := os.Lstat(p)
	if err != nil {
		return false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok || int(st.Uid) != os.Geteuid() {
		return false
	}
	if dir {
		return fi.IsDir() && fi.Mode().Perm()&0o077 == 0
	}
	return fi.Mode().IsRegular()
}

// leftover is what an owner marker says.
type leftover struct {
	owner     kit.Owner
	dir, temp string
}

// readOwner reads scratch's owner marker; ok is false when scratch or the marker is not
// this user's (another user's directory in a shared /tmp is never trusted), or a part is
// missing.
func readOwner(scratch string) (l leftover, ok bool) {
	if !ours(scratch, true) || !ours(filepath.Join(scratch, ownerFile), false) {
		return l, false
	}
	f, err := os.Open(filepath.Join(scratch, ownerFile))
	if err != nil {
		return l, false
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		k, v, _ := strings.Cut(s.Text(), "=")
		switch k {
		case "owner":
			l.owner, ok = kit.ParseOwner(v)
		case "dir":
			l.dir = v
		case "temp":
			l.temp = v
		}
	}
	return l, ok && filepath.IsAbs(l.dir)
}

// reapLeftovers clears what jailed sandboxes of replays that are gone (killed with SIGKILL:
// no Close ran) left behind, as the Docker backend reaps containers: the set-id bits of
// their DIR's files (run as root, a setuid-root shell for any user), their private
// directories, and the temporary directory DIR was made in (tempParent). A sandbox whose
// owner may still run (kit.Owner.Gone) is left alone. Failures are logged, not returned: a
// replay goes on without the cleanup.
func reapLeftovers(logf func(string, ...any)) {
	if _, ok := kit.Self(); !ok {
		return
	}
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), scratchPrefix+"*"))
	for _, scratch := range dirs {
		l, ok := readOwner(scratch)
		if !ok || !l.owner.Gone() {
			continue
		}
		var errs []error
		if fi, err := os.Lstat(l.dir); err == nil && fi.IsDir() {
			errs = append(errs, stripSetID(l.dir))
		}
		if l.temp != "" && filepath.Dir(l.temp) == filepath.Clean(os.TempDir()) && strings.HasPrefix(filepath.Base(l.temp), "tapebox-") && ours(l.temp, true) {
			errs = append(errs, removeAll(l.temp))
		}
		errs = append(errs, removeAll(scratch))
		if err := errors.Join(errs...); err != nil {
			logf("clear what a replay that is gone (pid %d) left in %s and %s: %v", l.owner.PID, l.dir, scratch, err)
			continue
		}
		what := "cleared the setuid bits in " + l.dir
		if l.temp != "" {
			what = "removed " + l.temp
		}
		logf("%s and removed %s, left by a replay that is gone (pid %d)", what, scratch, l.owner.PID)
	}
}
