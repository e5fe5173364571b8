//go:build linux

package local

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/tapebox/tapebox/sandbox"
	"github.com/tapebox/tapebox/sandbox/internal/kit"
)

// jailRoots are the host directories a jailed sandbox sees, read-only: programs, their
// libraries and their configuration. Everything else of the host (home directories, /root,
// /var, /run with its sockets, /srv, /mnt, /media, the host's /tmp, other mounts) is absent.
var jailRoots = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt"}

// nsGetParent is NS_GET_PARENT (linux/nsfs.h): the ioctl that opens a namespace's parent.
const nsGetParent = 0xb702

// readyTimeout bounds the wait for the jail's keeper to be ready: some 0.1 to 0.9 s on a
// 2-core machine at load 25 to 30 (with bwrap, Docker and fork churn beside it), so the
// bound only ends a bwrap that hangs. A variable for the tests.
var readyTimeout = time.Minute

// errNotReady says the keeper did not get ready (in time, or before ctx ended): the machine
// can isolate, it is only slow or the caller gave up. Open fails then rather than run the
// tape's commands unisolated.
var errNotReady = errors.New("the sandbox's keeper did not get ready")

// jail runs a local sandbox's commands under bubblewrap. A keeper process ("cat" on a pipe
// that only Close closes) holds the sandbox's user and pid namespaces for its whole
// life; every command is a bwrap that joins them, with its own mount, network, IPC and UTS
// namespaces and the same view of the filesystem. So a background task outlives the
// executor that started it, a restarted executor sees it (same pids, same /tmp), and
// closing the keeper ends every process the sandbox started.
type jail struct {
	bwrap   string
	scratch string   // host directory: tmp/ (the sandbox's /tmp), skel/, empty, ownerFile
	args    []string // bwrap's arguments for a command, up to "--"
	// ns are the keeper's namespaces, passed to every command as fds 3 and on: the user
	// namespace bwrap sets up in, the nested one that forbids further user namespaces
	// (when bwrap knows --disable-userns), and the pid namespace.
	ns     []*os.File
	keeper *exec.Cmd
	stdin  io.WriteCloser // the keeper's; closing it ends the sandbox
	done   chan struct{}  // closed when the keeper has exited
}

// jailInfo is what bwrap's --info-fd says about the sandbox it made.
type jailInfo struct {
	ChildPID int    `json:"child-pid"`
	PidNS    uint64 `json:"pid-namespace"`
}

// openJail starts the keeper of a jailed sandbox working in dir, with exe (the host's
// tapebox-exec, "" for none) bound at jailExecutor. The error says why the machine cannot
// isolate, and the caller then runs without isolation; or it is errNotReady (ctx ended, or
// the keeper hung), and the caller fails.
func openJail(ctx context.Context, dir, exe string) (*jail, error) {
	bwrap, err := exec.LookPath("bwrap")
	if err != nil {
		return nil, errors.New("bwrap is not installed (install the bubblewrap package)")
	}
	cat, err := exec.LookPath("cat")
	if err != nil || !jailVisible(cat) {
		return nil, fmt.Errorf("no cat under %s for the sandbox's keeper process", strings.Join(jailRoots, ", "))
	}
	keepInherited()
	scratch, err := os.MkdirTemp("", "tapebox-local-")
	if err != nil {
		return nil, fmt.Errorf("make the sandbox's private directory: %w", err)
	}
	j := &jail{bwrap: bwrap, scratch: scratch}
	if err := writeOwner(scratch, dir); err != nil {
		j.close()
		return nil, err
	}
	if err := j.setup(ctx, cat, dir, exe); err != nil {
		j.close()
		return nil, err
	}
	return j, nil
}

func (j *jail) setup(ctx context.Context, cat, dir, exe string) error {
	tmp := filepath.Join(j.scratch, "tmp")
	for _, d := range []struct {
		path string
		mode fs.FileMode
	}{{tmp, 0o777 | fs.ModeSticky}, {filepath.Join(tmp, filepath.Base(jailHome)), 0o700}, {filepath.Join(j.scratch, "empty"), 0o555}} {
		if err := os.Mkdir(d.path, d.mode.Perm()); err != nil {
			return fmt.Errorf("make the sandbox's private directory: %w", err)
		}
		if err := os.Chmod(d.path, d.mode); err != nil { // past the umask
			return fmt.Errorf("make the sandbox's private directory: %w", err)
		}
	}
	sys, err := j.systemMounts()
	if err != nil {
		return err
	}
	nested := true
	info, err := j.startKeeper(ctx, cat, sys, nested)
	if err != nil && strings.Contains(err.Error(), "--disable-userns") {
		// bwrap before 0.8: no way to forbid nested user namespaces; the rest holds.
		nested = false
		info, err = j.startKeeper(ctx, cat, sys, nested)
	}
	if err != nil {
		return err
	}
	if err := j.openNamespaces(info); err != nil {
		return err
	}
	a := []string{}
	if len(j.ns) == 3 {
		a = append(a, "--userns", "3", "--userns2", "4", "--assert-userns-disabled", "--pidns", "5")
	} else {
		a = append(a, "--userns", "3", "--pidns", "4")
	}
	a = append(a, "--unshare-net", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
		"--die-with-parent", "--new-session", "--cap-drop", "ALL")
	a = append(a, sys...)
	// /proc/sys read-only: its files are the host root's, and run as root the sandbox's uid
	// is the host's root, which is all a sysctl write checks (no capability): a writable
	// kernel.core_pattern would run a program of DIR as the host's root. bwrap covers
	// /proc/sys only when the directory itself is writable, which it is not (0555). The host's
	// /proc/sys is the same tree: a sysctl of a namespace (net, user) answers for the
	// process that reads it.
	a = append(a, "--dev", "/dev", "--proc", "/proc", "--ro-bind", "/proc/sys", "/proc/sys", "--bind", tmp, "/tmp")
	skel, err := j.skeleton(dir)
	if err != nil {
		return err
	}
	a = append(a, skel...)
	a = append(a, "--bind", dir, dir)
	if exe != "" {
		a = append(a, "--ro-bind", exe, jailExecutor)
	}
	j.args = append(a, "--remount-ro", "/", "--chdir", dir)
	return nil
}

// systemMounts binds jailRoots read-only (a symbolic link such as /bin -> usr/bin stays
// one). Run as root, the sandbox's root still owns root's files, so the entries of /etc
// that other users cannot read (shadow, private keys, sudoers) are covered with empty ones.
func (j *jail) systemMounts() ([]string, error) {
	var a []string
	for _, root := range jailRoots {
		fi, err := os.Lstat(root)
		switch {
		case err != nil:
			continue
		case fi.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(root)
			if err != nil {
				return nil, fmt.Errorf("read %s: %w", root, err)
			}
			a = append(a, "--symlink", target, root)
		case fi.IsDir():
			a = append(a, "--ro-bind", root, root)
		}
	}
	if os.Geteuid() != 0 {
		return a, nil
	}
	empty := filepath.Join(j.scratch, "empty")
	emptyFile := filepath.Join(j.scratch, "empty-file")
	if err := os.WriteFile(emptyFile, nil, 0o444); err != nil {
		return nil, fmt.Errorf("make the sandbox's private directory: %w", err)
	}
	for _, m := range etcHidden() {
		if m.dir {
			a = append(a, "--ro-bind", empty, m.path)
		} else {
			a = append(a, "--ro-bind", emptyFile, m.path)
		}
	}
	return a, nil
}

// etcHidden lists the directories and regular files under /etc that other users cannot
// read. The walk costs some milliseconds, so it is done once per process: a file made
// unreadable in /etc later is still seen by this process's sandboxes.
var etcHidden = sync.OnceValue(func() []etcEntry {
	var hidden []etcEntry
	_ = filepath.WalkDir("/etc", func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == "/etc" {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return nil
		}
		switch perm := fi.Mode().Perm(); {
		case d.IsDir() && perm&0o005 != 0o005:
			hidden = append(hidden, etcEntry{p, true})
			return filepath.SkipDir
		case d.Type().IsRegular() && perm&0o004 == 0:
			hidden = append(hidden, etcEntry{p, false})
		}
		return nil
	})
	return hidden
})

type etcEntry struct {
	path string
	dir  bool
}

// skeleton keeps the parents of a dir under /tmp read-only: /tmp is the sandbox's own and
// writable, so without it "../x" from /tmp/a/dir would create /tmp/a/x there. The topmost
// parent below /tmp is bound from a tree of empty directories that leads to dir.
func (j *jail) skeleton(dir string) ([]string, error) {
	rel, ok := strings.CutPrefix(dir, "/tmp/")
	if !ok || !strings.Contains(rel, "/") {
		return nil, nil
	}
	if err := os.MkdirAll(filepath.Join(j.scratch, "skel", rel), 0o755); err != nil {
		return nil, fmt.Errorf("make the sandbox's private directory: %w", err)
	}
	top, _, _ := strings.Cut(rel, "/")
	return []string{"--ro-bind", filepath.Join(j.scratch, "skel", top), "/tmp/" + top}, nil
}

// startKeeper starts the keeper and returns what bwrap says of its sandbox. nested asks for
// --disable-userns.
func (j *jail) startKeeper(ctx context.Context, cat string, sys []string, nested bool) (jailInfo, error) {
	a := []string{"--unshare-all", "--unshare-user"}
	if nested {
		a = append(a, "--disable-userns")
	}
	a = append(a, "--die-with-parent", "--new-session", "--cap-drop", "ALL", "--info-fd", "3")
	a = append(a, sys...)
	a = append(a, "--remount-ro", "/", "--", cat)
	cmd := exec.Command(j.bwrap, a...)
	// The keeper is the sandbox's pid 1's child: its environment is readable inside.
	cmd.Env = []string{"PATH=" + jailPATH}
	stderr := kit.NewTail(kit.TailSize)
	cmd.Stderr = stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return jailInfo{}, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		stdin.Close()
		return jailInfo{}, err
	}
	ir, iw, err := os.Pipe()
	if err != nil {
		stdin.Close()
		return jailInfo{}, err
	}
	defer ir.Close()
	cmd.ExtraFiles = []*os.File{iw}
	err = cmd.Start()
	iw.Close()
	if err != nil {
		stdin.Close()
		return jailInfo{}, fmt.Errorf("start bwrap: %w", err)
	}
	done := make(chan struct{})
	ready := make(chan error, 1)
	var info jailInfo
	go func() {
		// bwrap names the sandbox's first process once it exists, but sets up its user
		// namespace after that: a command joining it too early would have no uid. cat
		// echoing a line says the setup is done.
		err := json.NewDecoder(ir).Decode(&info)
		if err == nil {
			_, err = stdin.Write([]byte("ready\n"))
		}
		if err == nil {
			line := make([]byte, len("ready\n"))
			_, err = io.ReadFull(stdout, line)
		}
		ready <- err
		_, _ = io.Copy(io.Discard, stdout)
		_ = cmd.Wait()
		close(done)
	}()
	t := time.NewTimer(readyTimeout)
	defer t.Stop()
	var notReady error
	select {
	case err = <-ready:
	case <-ctx.Done():
		notReady = fmt.Errorf("%w: %w", errNotReady, ctx.Err())
	case <-t.C:
		notReady = fmt.Errorf("%w within %v", errNotReady, readyTimeout)
	}
	stop := func() {
		stdin.Close()
		_ = cmd.Process.Kill()
		<-done
	}
	if notReady != nil {
		stop()
		return jailInfo{}, notReady
	}
	if err == nil && info.ChildPID <= 0 {
		err = errors.New("bwrap named no sandbox process")
	}
	if err != nil {
		stop()
		if msg, _, _ := strings.Cut(strings.TrimSpace(stderr.String()), "\n"); msg != "" {
			err = errors.New(msg)
		}
		return jailInfo{}, fmt.Errorf("bwrap cannot make a sandbox here (it needs unprivileged user namespaces): %w", err)
	}
	j.keeper, j.stdin, j.done = cmd, stdin, done
	return info, nil
}

// openNamespaces opens the keeper's namespaces, checking that they are the keeper's new
// ones and not this process's own (a pid reused by another process).
func (j *jail) openNamespaces(info jailInfo) error {
	proc := "/proc/" + strconv.Itoa(info.ChildPID) + "/ns/"
	pidns, err := os.Open(proc + "pid")
	if err != nil {
		return fmt.Errorf("open the sandbox's pid namespace: %w", err)
	}
	j.ns = append(j.ns, pidns)
	if ino := nsInode(pidns); ino == 0 || (info.PidNS != 0 && ino != info.PidNS) || ino == selfNS("pid") {
		return fmt.Errorf("the sandbox's pid namespace: %s is not the one bwrap made", proc+"pid")
	}
	user, err := os.Open(proc + "user")
	if err != nil {
		return fmt.Errorf("open the sandbox's user namespace: %w", err)
	}
	parent, err := nsParent(user)
	if err != nil {
		user.Close()
		return fmt.Errorf("open the parent of the sandbox's user namespace: %w", err)
	}
	self := selfNS("user")
	switch {
	case nsInode(user) == self:
		err = errors.New("it is this process's own")
	case nsInode(parent) == self:
		// No nested namespace (bwrap before 0.8): the keeper's is the one to join.
		j.ns = []*os.File{user, pidns}
		parent.Close()
		return nil
	default:
		grand, perr := nsParent(parent)
		if perr == nil && nsInode(grand) == self {
			j.ns = []*os.File{parent, user, pidns}
			grand.Close()
			return nil
		}
		if grand != nil {
			grand.Close()
		}
		err = errors.New("it is not a child or grandchild of this process's own")
	}
	user.Close()
	parent.Close()
	return fmt.Errorf("the sandbox's user namespace (%s): %v", proc+"user", err)
}

func nsParent(f *os.File) (*os.File, error) {
	r, _, errno := syscall.Syscall(syscall.SYS_IOCTL, f.Fd(), nsGetParent, 0)
	if errno != 0 {
		return nil, errno
	}
	return os.NewFile(r, f.Name()+"/.."), nil
}

func nsInode(f *os.File) uint64 {
	var st syscall.Stat_t
	if err := syscall.Fstat(int(f.Fd()), &st); err != nil {
		return 0
	}
	return st.Ino
}

func selfNS(kind string) uint64 {
	var st syscall.Stat_t
	if err := syscall.Stat("/proc/self/ns/"+kind, &st); err != nil {
		return 0
	}
	return st.Ino
}

// command returns bwrap's path and arguments that run argv in the sandbox, and the files
// the command must get as fds 3 and on.
func (j *jail) command(argv []string) (string, []string, []*os.File) {
	keepInherited()
	a := make([]string, 0, len(j.args)+1+len(argv))
	a = append(append(append(a, j.args...), "--"), argv...)
	return j.bwrap, a, j.ns
}

// keepInherited marks close-on-exec every descriptor above 2 of this process that lacks it:
// what its own starter left open (Go opens its own close-on-exec). os/exec passes such
// descriptors to every child, bwrap passes them into the jail, and any process there that
// holds one (the keeper's cat, the executor, a command) would let the tape's commands use
// it through /proc/PID/fd/N: a host directory among them opens the host's files. What a
// jail needs it gets explicitly (ExtraFiles). Called before each bwrap, for descriptors
// made in between.
func keepInherited() {
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return
	}
	for _, e := range entries {
		fd, err := strconv.Atoi(e.Name())
		if err != nil || fd <= 2 {
			continue
		}
		flags, _, errno := syscall.Syscall(syscall.SYS_FCNTL, uintptr(fd), syscall.F_GETFD, 0)
		if errno == 0 && flags&syscall.FD_CLOEXEC == 0 {
			syscall.CloseOnExec(fd)
		}
	}
}

// path keeps the entries of the host's PATH that the sandbox sees.
func (j *jail) path(host string) string {
	var keep []string
	for _, p := range filepath.SplitList(host) {
		if jailVisible(p) && !slices.Contains(keep, filepath.Clean(p)) {
			keep = append(keep, filepath.Clean(p))
		}
	}
	if len(keep) == 0 {
		return jailPATH
	}
	return strings.Join(keep, string(filepath.ListSeparator))
}

// jailVisible says whether the host path p is under one of jailRoots.
func jailVisible(p string) bool {
	if !filepath.IsAbs(p) {
		return false
	}
	p = filepath.Clean(p)
	for _, root := range jailRoots {
		if p == root || strings.HasPrefix(p, root+"/") {
			return true
		}
	}
	return false
}

// close ends the keeper, and with it every process of the sandbox (a pid namespace ends
// with its first process), then removes the private directory.
func (j *jail) close() error {
	if j.stdin != nil {
		j.stdin.Close()
		select {
		case <-j.done:
		case <-time.After(sandbox.SessionGrace):
			_ = j.keeper.Process.Kill()
			<-j.done
		}
	}
	for _, f := range j.ns {
		f.Close()
	}
	j.ns = nil
	if err := removeAll(j.scratch); err != nil {
		return fmt.Errorf("remove the sandbox's private directory: %w", err)
	}
	return nil
}
