package sandbox

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"time"
)

// Module is the TapeBox module path; ExecutorPath builds its cmd/tapebox-exec.
const Module = "github.com/tapebox/tapebox"

// ExecDirEnv names the directory holding tapebox-exec-amd64 and tapebox-exec-arm64 that
// ExecutorPath looks in first.
const ExecDirEnv = "TAPEBOX_EXEC_DIR"

// ExecutorName is the executor's file name inside a sandbox.
const ExecutorName = "tapebox-exec"

// NormalizeArch maps an architecture name to Go's: amd64 and x86_64 to "amd64", arm64 and
// aarch64 to "arm64". Other names are an error.
func NormalizeArch(arch string) (string, error) {
	switch strings.ToLower(strings.TrimSpace(arch)) {
	case "amd64", "x86_64", "x86-64", "x64":
		return "amd64", nil
	case "arm64", "aarch64", "arm64/v8":
		return "arm64", nil
	}
	return "", fmt.Errorf("unknown architecture %q: use amd64 (x86_64) or arm64 (aarch64)", arch)
}

// ELFArch returns the Go architecture a Linux ELF binary is built for, from its header's
// machine field ("amd64", "arm64", or the machine's name for others).
func ELFArch(path string) (string, error) {
	f, err := elf.Open(path)
	if err != nil {
		return "", fmt.Errorf("read ELF header of %s: %w (the executor must be a Linux binary: make executor builds one)", path, err)
	}
	defer f.Close()
	switch f.Machine {
	case elf.EM_X86_64:
		return "amd64", nil
	case elf.EM_AARCH64:
		return "arm64", nil
	}
	return strings.ToLower(strings.TrimPrefix(f.Machine.String(), "EM_")), nil
}

// checkExecutorArch fails with ErrWrongArch when the binary at path is not built for arch.
func checkExecutorArch(path, arch, where string) error {
	got, err := ELFArch(path)
	if err != nil {
		return err
	}
	if got != arch {
		return fmt.Errorf("%w: %s is built for %s but %s is %s; use the %s build (tapebox exec-binary --arch %s), or leave ExecutorPath empty to pick it",
			ErrWrongArch, path, got, where, arch, arch, arch)
	}
	return nil
}

// ExecutorPath returns the path of a tapebox-exec binary for Linux on arch (amd64, arm64,
// x86_64 or aarch64). It looks, in order:
//
//  1. in $TAPEBOX_EXEC_DIR (an error if set and the binary is not there);
//  2. beside the running executable (how a release ships them);
//  3. in dist/ of the TapeBox source checkout that holds the working directory (found by
//     walking up to the go.mod of module github.com/tapebox/tapebox), when it is newer than
//     the executor's sources (make executor writes it there);
//  4. in the user cache dir, building it on demand with the Go toolchain: from that checkout
//     when there is one (a stale dist/ binary lands here), else from the module at the
//     version of the running program (a "go install" user). Builds are keyed by a hash of
//     the sources, so each is built once.
//
// The file name is tapebox-exec-<arch> in each place.
func ExecutorPath(ctx context.Context, arch string) (string, error) {
	goarch, err := NormalizeArch(arch)
	if err != nil {
		return "", fmt.Errorf("find the executor: %w", err)
	}
	name := ExecutorName + "-" + goarch
	if dir := os.Getenv(ExecDirEnv); dir != "" {
		p := filepath.Join(dir, name)
		if isFile(p) {
			return p, nil
		}
		return "", fmt.Errorf("find the executor: %w: %s=%s has no %s; build it there (make executor, then copy dist/%s) or unset %s",
			ErrNoExecutor, ExecDirEnv, dir, name, name, ExecDirEnv)
	}
	var tried []string
	if exe, err := os.Executable(); err == nil {
		if real, err := filepath.EvalSymlinks(exe); err == nil {
			exe = real
		}
		p := filepath.Join(filepath.Dir(exe), name)
		if isFile(p) {
			return p, nil
		}
		tried = append(tried, p)
	}
	if wd, err := os.Getwd(); err == nil {
		if root := findCheckout(wd); root != "" {
			return checkoutExecutor(ctx, root, goarch)
		}
		tried = append(tried, "no TapeBox checkout above "+wd)
	}
	return moduleExecutor(ctx, goarch, tried)
}

// findCheckout walks up from dir to the directory whose go.mod declares module Module.
func findCheckout(dir string) string {
	for {
		if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && modulePath(b) == Module {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
}

func modulePath(gomod []byte) string {
	sc := bufio.NewScanner(bytes.NewReader(gomod))
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "module"); ok {
			return strings.Trim(strings.TrimSpace(rest), `"`)
		}
	}
	return ""
}

// executorSources are the checkout's files the executor is built from (DESIGN.md: the
// executor imports only executor/..., tape and the standard library).
var executorSources = []string{"cmd/tapebox-exec", "executor", "tape"}

// checkoutExecutor returns dist/tapebox-exec-<arch> of the checkout at root when it is up to
// date, else a build of the checkout's sources in the cache.
func checkoutExecutor(ctx context.Context, root, goarch string) (string, error) {
	name := ExecutorName + "-" + goarch
	if !isDir(filepath.Join(root, "cmd", "tapebox-exec")) {
		return "", fmt.Errorf("find the executor: %w: the checkout %s has no cmd/tapebox-exec to build it from; set %s to a directory with %s",
			ErrNoExecutor, root, ExecDirEnv, name)
	}
	files, newest, err := sourceFiles(root)
	if err != nil {
		return "", fmt.Errorf("find the executor: %w", err)
	}
	dist := filepath.Join(root, "dist", name)
	if fi, err := os.Stat(dist); err == nil && fi.Mode().IsRegular() && !fi.ModTime().Before(newest) {
		return dist, nil
	}
	key, err := hashFiles(root, files)
	if err != nil {
		return "", fmt.Errorf("find the executor: %w", err)
	}
	out, err := cachePath("src-"+key, name)
	if err != nil {
		return "", err
	}
	if isFile(out) {
		return out, nil
	}
	if err := goBuild(ctx, root, goarch, "./cmd/tapebox-exec", out); err != nil {
		return "", err
	}
	pruneBuilds(filepath.Dir(filepath.Dir(out)), filepath.Base(filepath.Dir(out)))
	return out, nil
}

// pruneBuilds removes the builds of other checkout sources (src-*) under dir that have not
// changed for a day: each edit of the executor leaves one behind.
func pruneBuilds(dir, keep string) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if !e.IsDir() || e.Name() == keep || !strings.HasPrefix(e.Name(), "src-") {
			continue
		}
		if fi, err := e.Info(); err == nil && time.Since(fi.ModTime()) > 24*time.Hour {
			os.RemoveAll(filepath.Join(dir, e.Name()))
		}
	}
}

// sourceFiles lists the executor's source files in the checkout (relative, sorted) and the
// newest modification time among them.
func sourceFiles(root string) ([]string, time.Time, error) {
	var files []string
	var newest time.Time
	add := func(rel string, fi fs.FileInfo) {
		files = append(files, rel)
		if fi.ModTime().After(newest) {
			newest = fi.ModTime()
		}
	}
	for _, f := range []string{"go.mod", "go.sum"} {
		if fi, err := os.Stat(filepath.Join(root, f)); err == nil {
			add(f, fi)
		}
	}
	for _, dir := range executorSources {
		err := filepath.WalkDir(filepath.Join(root, dir), func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				if errors.Is(err, fs.ErrNotExist) {
					return nil
				}
				return err
			}
			if d.IsDir() && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) {
				return filepath.SkipDir
			}
			if d.IsDir() || !strings.HasSuffix(d.Name(), ".go") || strings.HasSuffix(d.Name(), "_test.go") {
				return nil
			}
			fi, err := d.Info()
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(root, p)
			add(filepath.ToSlash(rel), fi)
			return nil
		})
		if err != nil {
			return nil, time.Time{}, fmt.Errorf("list executor sources in %s: %w", root, err)
		}
	}
	slices.Sort(files)
	return files, newest, nil
}

func hashFiles(root string, files []string) (string, error) {
	h := sha256.New()
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(f)))
		if err != nil {
			return "", fmt.Errorf("hash executor sources: %w", err)
		}
		fmt.Fprintf(h, "%s\x00%d\x00", f, len(b))
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil))[:20], nil
}

// moduleExecutor builds cmd/tapebox-exec of the running program's module version.
func moduleExecutor(ctx context.Context, goarch string, tried []string) (string, error) {
	name := ExecutorName + "-" + goarch
	version := ""
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Path == Module {
		version = bi.Main.Version
	}
	if version == "" || version == "(devel)" {
		return "", fmt.Errorf("find the executor: %w for %s: looked in %s; build one with make executor (in a checkout) and set %s to its dist/ directory",
			ErrNoExecutor, goarch, strings.Join(tried, ", "), ExecDirEnv)
	}
	out, err := cachePath("mod-"+strings.NewReplacer("/", "_", "+", "_").Replace(version), name)
	if err != nil {
		return "", err
	}
	if isFile(out) {
		return out, nil
	}
	// A throwaway module that requires TapeBox at this version: "go install" cannot
	// cross-compile into a chosen directory, "go build pkg@version" does not exist.
	tmp, err := os.MkdirTemp("", "tapebox-exec-build-")
	if err != nil {
		return "", fmt.Errorf("build the executor: %w", err)
	}
	defer os.RemoveAll(tmp)
	if err := os.WriteFile(filepath.Join(tmp, "go.mod"), []byte("module tapebox-exec-build\n\nrequire "+Module+" "+version+"\n"), 0o644); err != nil {
		return "", fmt.Errorf("build the executor: %w", err)
	}
	if err := runGo(ctx, tmp, nil, "mod", "download", Module+"@"+version); err != nil {
		return "", err
	}
	if err := runGo(ctx, tmp, nil, "get", Module+"/cmd/tapebox-exec@"+version); err != nil {
		return "", err
	}
	return out, goBuild(ctx, tmp, goarch, Module+"/cmd/tapebox-exec", out)
}

func cachePath(key, name string) (string, error) {
	base, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("find the executor: no user cache dir to build it in (%v); set %s to a directory with %s", err, ExecDirEnv, name)
	}
	return filepath.Join(base, "tapebox", "exec", key, name), nil
}

// goBuild builds pkg statically for linux/goarch into out, atomically.
func goBuild(ctx context.Context, dir, goarch, pkg, out string) error {
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return fmt.Errorf("build the executor: %w", err)
	}
	tmp := fmt.Sprintf("%s.tmp%d", out, os.Getpid())
	defer os.Remove(tmp)
	env := []string{"CGO_ENABLED=0", "GOOS=linux", "GOARCH=" + goarch}
	if err := runGo(ctx, dir, env, "build", "-trimpath", "-gcflags=all=-l", "-ldflags=-s -w", "-o", tmp, pkg); err != nil {
		return err
	}
	if err := os.Rename(tmp, out); err != nil {
		return fmt.Errorf("build the executor: %w", err)
	}
	return nil
}

func runGo(ctx context.Context, dir string, env []string, args ...string) error {
	gobin, err := exec.LookPath("go")
	if err != nil {
		return fmt.Errorf("build the executor: %w: the Go toolchain is not on PATH; install Go, or set %s to a directory with tapebox-exec-amd64 and tapebox-exec-arm64 (make executor)",
			ErrNoExecutor, ExecDirEnv)
	}
	cmd := exec.CommandContext(ctx, gobin, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var stderr bytes.Buffer
	cmd.Stdout = io.Discard
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("build the executor: go %s in %s: %w\n%s", strings.Join(args, " "), dir, err, strings.TrimSpace(stderr.String()))
	}
	return nil
}

func isFile(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular()
}

func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}
