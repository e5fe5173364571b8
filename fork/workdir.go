package fork

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/tapebox/tapebox/tape"
)

// ErrUnsafeWorkdir is wrapped by the errors of CheckWorkdir and HostWorkdir: a directory the
// harness must not work in, nor the start snapshot be restored into.
var ErrUnsafeWorkdir = errors.New("refused as a working directory")

// HostNote is the line a fork or a simulator replay prints once when the harness runs on
// this machine: a tape is untrusted, and its tool calls run for real there.
const HostNote = "the harness runs on this machine, not in a sandbox: the tool calls the tape holds run for real with your rights"

// HostWorkdir picks the directory of this machine where the harness of a fork (or of a
// simulator replay) works and where the tape's start snapshot is restored. It is never
// where the tape says unless the user says so:
//
//   - named (--workdir DIR) when it is not "";
//   - the tape's meta.cwd with inPlace (--in-place), an absolute path;
//   - else a fresh temporary directory, made here (temp is true: the caller may remove it).
//
// A named directory and meta.cwd must pass CheckWorkdir.
func HostWorkdir(named string, inPlace bool, rec *tape.Tape) (dir string, temp bool, err error) {
	switch {
	case named != "":
		if err := CheckWorkdir(named); err != nil {
			return "", false, err
		}
		abs, err := filepath.Abs(named)
		return abs, false, err
	case inPlace:
		cwd := rec.Meta.Cwd
		if cwd == "" || !filepath.IsAbs(cwd) {
			return "", false, fmt.Errorf("--in-place: the tape's meta.cwd %q: %w: not an absolute path", cwd, ErrUnsafeWorkdir)
		}
		if err := CheckWorkdir(cwd); err != nil {
			return "", false, fmt.Errorf("--in-place: the tape's meta.cwd: %w", err)
		}
		return filepath.Clean(cwd), false, nil
	}
	dir, err = os.MkdirTemp("", "tapebox-fork-")
	if err != nil {
		return "", false, fmt.Errorf("make a fresh working directory: %w", err)
	}
	return dir, true, nil
}

// systemTrees are directories nothing of a tape may be written in, at any depth.
var systemTrees = []string{"/etc", "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32",
	"/boot", "/dev", "/proc", "/sys", "/run", "/var", "/snap"}

// systemDirs are directories refused themselves (what is below them is fine): the root, the
// parents of homes, shared scratch directories, mount points.
var systemDirs = []string{"/", "/root", "/home", "/tmp", "/var/tmp", "/opt", "/srv", "/mnt", "/media"}

// CheckWorkdir refuses dir as the working directory of a harness on this machine when it:
//
//   - holds anything (the snapshot would mix with, or overwrite, what is there);
//   - is not a directory;
//   - is a system directory or lies in one (/, /etc, /usr, /bin, /lib*, /boot, /dev, /proc,
//     /sys, /run, /var but /var/tmp/..., /snap; /root, /home, /tmp, /opt, /srv, /mnt and
//     /media themselves);
//   - is a home directory ($HOME, or one /etc/passwd names), or a hidden directory in one
//     (~/.ssh, ~/.config/autostart: what a snapshot's files there would make run).
//
// dir is checked as written and as the symbolic links on its way resolve (the longest part
// that exists); the errors wrap ErrUnsafeWorkdir.
func CheckWorkdir(dir string) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return fmt.Errorf("working directory %s: %w", dir, err)
	}
	homes := homeDirs()
	for _, p := range []string{abs, resolved(abs)} {
		if why := unsafeDir(p, homes); why != "" {
			if p != abs {
				why += " (where " + abs + " leads)"
			}
			return fmt.Errorf("working directory %s: %w: %s", dir, ErrUnsafeWorkdir, why)
		}
	}
	entries, err := os.ReadDir(abs)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("working directory %s: %w", dir, err)
	case len(entries) > 0:
		return fmt.Errorf("working directory %s: %w: it is not empty (%s ...); name an empty or missing directory", dir, ErrUnsafeWorkdir, entries[0].Name())
	}
	return nil
}

// unsafeDir says why the clean absolute path p is refused, or "".
func unsafeDir(p string, homes []string) string {
	if h, err := os.UserHomeDir(); err == nil && p == filepath.Clean(h) {
		return "a home directory"
	}
	if slices.Contains(systemDirs, p) {
		return "a system directory"
	}
	if p == "/var/tmp" || strings.HasPrefix(p, "/var/tmp/") {
		return ""
	}
	for _, t := range systemTrees {
		if p == t || strings.HasPrefix(p, t+"/") {
			return "in the system directory " + t
		}
	}
	for _, h := range homes {
		if p == h {
			return "a home directory"
		}
		rel, ok := strings.CutPrefix(p, h+"/")
		if !ok {
			continue
		}
		for c := range strings.SplitSeq(rel, "/") {
			if strings.HasPrefix(c, ".") {
				return "a hidden directory of the home directory " + h
			}
		}
	}
	return ""
}

// resolved is p with the symbolic links of its longest existing part resolved. A link whose
// target does not exist (yet) is followed too: ~/.ssh made later would be where it leads.
func resolved(p string) string {
	rest := ""
	for cur, hops := p, 0; ; {
		if r, err := filepath.EvalSymlinks(cur); err == nil {
			return filepath.Join(r, rest)
		}
		if fi, err := os.Lstat(cur); err == nil && fi.Mode()&fs.ModeSymlink != 0 && hops < 40 {
			if t, err := os.Readlink(cur); err == nil {
				if !filepath.IsAbs(t) {
					t = filepath.Join(filepath.Dir(cur), t)
				}
				cur, hops = filepath.Clean(t), hops+1
				continue
			}
		}
		parent := filepath.Dir(cur)
		if parent == cur {
			return p
		}
		rest = filepath.Join(filepath.Base(cur), rest)
		cur = parent
	}
}

// homeDirs are $HOME and the home directories /etc/passwd names, cleaned; "/" is left out
// (a system directory already, and not a prefix to refuse).
func homeDirs() []string {
	var homes []string
	add := func(h string) {
		if h = filepath.Clean(h); filepath.IsAbs(h) && h != "/" && !slices.Contains(homes, h) {
			homes = append(homes, h, resolved(h))
		}
	}
	if h, err := os.UserHomeDir(); err == nil {
		add(h)
	}
	add("/root")
	if f, err := os.Open("/etc/passwd"); err == nil {
		defer f.Close()
		s := bufio.NewScanner(f)
		for s.Scan() {
			if f := strings.Split(s.Text(), ":"); len(f) >= 7 {
				add(f[5])
			}
		}
	}
	return homes
}
