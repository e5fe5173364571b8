package sandbox

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
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

// CheckExecutorArch fails with ErrWrongArch when the binary at path is not built for arch.
func CheckExecutorArch(path, arch, where string) error {
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

// ExecutorBinary is a tapebox-exec binary on this machine, as FindExecutor found it.
type ExecutorBinary struct {
	// Path is the binary's file.
	Path string
	// Arch is the Linux architecture it is built for, in Go's spelling: amd64 or arm64.
	Arch string
	// Found says, for people, where Path came from (tapebox exec-binary prints it).
	Found string
}

// ExecutorPath returns the path of a tapebox-exec binary for Linux on arch: the Path of
// FindExecutor's answer.
func ExecutorPath(ctx context.Context, arch string) (string, error) {
	b, err := FindExecutor(ctx, arch)
	return b.Path, err
}

// FindExecutor finds, or builds, the tapebox-exec binary for Linux on arch (amd64, arm64,
// x86_64 or aarch64) that belongs to the running program. It looks, in order:
//
//  1. in $TAPEBOX_EXEC_DIR (an error if set and the binary is not there);
//  2. beside the running executable (how a release archive ships them);
//  3. in the TapeBox sources the running program was compiled from, whose directory every
//     build records unless made with -trimpath: a checkout (make build, go build, go test
//     or go run in a clone, and a copy of such a binary), the directory of a replace
//     directive (a module that uses testkit with its own checkout), or the module cache
//     (go install ...@version, a module that requires a release);
//  4. in the checkout above the running executable (bin/tapebox of a -trimpath build);
//  5. in the module at the running program's version, from its build info or its trimmed
//     source paths, fetched with "go mod download" (a release build whose module cache copy
//     was cleaned, or one made with -trimpath).
//
// The file name is tapebox-exec-<arch> in each place. From a source directory, dist/ is used
// when it is newer than the executor's sources (make executor writes it there); otherwise
// the executor is built from those sources with the Go toolchain into the user cache dir,
// once per distinct source. The working directory plays no part: the executor must match
// the running program, not whichever checkout one stands in. When nothing applies, the
// error (ErrNoExecutor) says what to run.
func FindExecutor(ctx context.Context, arch string) (ExecutorBinary, error) {
	goarch, err := NormalizeArch(arch)
	if err != nil {
		return ExecutorBinary{}, fmt.Errorf("find the executor: %w", err)
	}
	return running().find(ctx, goarch)
}

// program is what FindExecutor knows about the running program; tests fill one in to stand
// for other kinds of build.
type program struct {
	exe     string           // the executable, symlinks resolved; "" when unknown
	srcFile string           // this file's name as compiled in: absolute, or module-relative with -trimpath
	build   *debug.BuildInfo // nil when the binary has none
	execDir string           // $TAPEBOX_EXEC_DIR
}

func running() program {
	var p program
	if exe, err := os.Executable(); err == nil {
		if real, err := filepath.EvalSymlinks(exe); err == nil {
			exe = real
		}
		p.exe = exe
	}
	_, p.srcFile, _, _ = runtime.Caller(0)
	p.build, _ = debug.ReadBuildInfo()
	p.execDir = os.Getenv(ExecDirEnv)
	return p
}

func (p program) find(ctx context.Context, goarch string) (ExecutorBinary, error) {
	name := ExecutorName + "-" + goarch
	if p.execDir != "" {
		path := filepath.Join(p.execDir, name)
		if isFile(path) {
			return ExecutorBinary{Path: path, Arch: goarch, Found: "in $" + ExecDirEnv}, nil
		}
		return ExecutorBinary{}, fmt.Errorf("find the executor: %w: %s=%s has no %s; build it there (make executor, then copy dist/%s) or unset %s",
			ErrNoExecutor, ExecDirEnv, p.execDir, name, name, ExecDirEnv)
	}
	var tried []string
	if p.exe != "" {
		path := filepath.Join(filepath.Dir(p.exe), name)
		if isFile(path) {
			return ExecutorBinary{Path: path, Arch: goarch, Found: "beside the executable " + p.exe}, nil
		}
		tried = append(tried, "not beside "+p.exe)
	}
	b, err := p.fromSources(ctx, goarch, &tried)
	if err != nil || b.Path != "" {
		if errors.Is(err, errNoGo) {
			err = fmt.Errorf("%w; install Go (https://go.dev/dl/), or %s", err, p.fix())
		}
		return b, err
	}
	return ExecutorBinary{}, fmt.Errorf("find the executor: %w for %s: %s; %s",
		ErrNoExecutor, goarch, strings.Join(tried, ", "), p.fix())
}

// fromSources tries places 3 to 5 of FindExecutor, noting in tried why each did not apply.
// It returns a zero ExecutorBinary and no error when none did.
func (p program) fromSources(ctx context.Context, goarch string, tried *[]string) (ExecutorBinary, error) {
	compiled := ""
	if src := filepath.FromSlash(p.srcFile); filepath.IsAbs(src) {
		compiled = filepath.Dir(filepath.Dir(src)) // src is <root>/sandbox/executor.go
		if isCheckout(compiled) {
			return checkoutExecutor(ctx, compiled, goarch, "the sources the running program was built from")
		}
		*tried = append(*tried, "the sources it was built from ("+compiled+") are gone")
	} else {
		*tried = append(*tried, "built with -trimpath, so it does not know where its sources are")
	}
	if p.exe != "" {
		if root := findCheckout(filepath.Dir(p.exe)); root != "" && root != compiled {
			return checkoutExecutor(ctx, root, goarch, "the checkout that holds the executable")
		}
		*tried = append(*tried, "no TapeBox checkout above "+filepath.Dir(p.exe))
	}
	mod, dir := p.module()
	switch {
	case dir != "" && !filepath.IsAbs(dir):
		// Relative to a go.mod whose place the binary does not record.
		*tried = append(*tried, "its build info replaces "+Module+" with the relative directory "+dir)
	case dir != "" && isCheckout(dir):
		return checkoutExecutor(ctx, dir, goarch, "the replace directory in the running program's build info")
	case dir != "":
		*tried = append(*tried, "its build info replaces "+Module+" with "+dir+", which is not there")
	case released(mod.Version):
		b, err := moduleExecutor(ctx, goarch, mod)
		if err != nil && !errors.Is(err, errNoGo) {
			// A version the proxy does not serve: a commit never pushed, a private fork.
			err = fmt.Errorf("%w; %s", err, p.fix())
		}
		return b, err
	case mod.Version == "":
		*tried = append(*tried, "it has no version to fetch its sources by")
	default:
		*tried = append(*tried, "its version "+mod.Version+" is no release to fetch the sources of")
	}
	return ExecutorBinary{}, nil
}

// module returns the TapeBox module the running program was built with: its path and
// version, or the directory that replaces it (as written in go.mod, maybe relative).
func (p program) module() (mod debug.Module, dir string) {
	if p.build != nil {
		if p.build.Main.Path == Module {
			return p.build.Main, ""
		}
		for _, d := range p.build.Deps {
			switch {
			case d.Path != Module:
			case d.Replace == nil:
				return *d, ""
			case d.Replace.Version != "":
				return *d.Replace, "" // another module, a fork
			default:
				return debug.Module{}, d.Replace.Path
			}
		}
	}
	// Test binaries carry no dependencies in their build info, but a trimmed file name is
	// module@version/path.
	if rest, ok := strings.CutPrefix(p.srcFile, Module+"@"); ok {
		version, _, _ := strings.Cut(rest, "/")
		return debug.Module{Path: Module, Version: version}, ""
	}
	return debug.Module{}, ""
}

// released reports whether version names sources the module proxy can serve: not a local
// build ("(devel)", "+dirty"), and not v0.0.0, the placeholder a replace directive stands for.
func released(version string) bool {
	return strings.HasPrefix(version, "v") && version != "v0.0.0" && !strings.HasSuffix(version, "+dirty")
}

// fix says what to run when no executor can be found or built.
func (p program) fix() string {
	if p.exe == "" || strings.HasSuffix(p.exe, ".test") {
		return "in a TapeBox checkout of the same version run make executor, then set " + ExecDirEnv + ` to its dist directory: export ` + ExecDirEnv + `="$PWD/dist"`
	}
	return "put the executors beside it: in a TapeBox checkout of the same version run make executor" +
		" && cp dist/" + ExecutorName + "-amd64 dist/" + ExecutorName + "-arm64 " + shellQuote(filepath.Dir(p.exe)+"/")
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-+@%:,=") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// isCheckout reports whether dir holds the go.mod of module Module: a checkout, a replace
// directory or a module cache copy.
func isCheckout(dir string) bool {
	b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	return err == nil && modulePath(b) == Module
}

// findCheckout walks up from dir to the directory whose go.mod declares module Module.
func findCheckout(dir string) string {
	for {
		if isCheckout(dir) {
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

// executorSources are the checkout's files the executor is built from (docs/design.md: the
// executor imports only executor/..., tape and the standard library).
var executorSources = []string{"cmd/tapebox-exec", "executor", "tape"}

// checkoutExecutor returns dist/tapebox-exec-<arch> of the TapeBox sources at root when it
// is up to date, else a build of those sources in the cache. why says how root was chosen.
func checkoutExecutor(ctx context.Context, root, goarch, why string) (ExecutorBinary, error) {
	name := ExecutorName + "-" + goarch
	if !isDir(filepath.Join(root, "cmd", "tapebox-exec")) {
		return ExecutorBinary{}, fmt.Errorf("find the executor: %w: %s (%s) has no cmd/tapebox-exec to build it from; set %s to a directory with %s",
			ErrNoExecutor, root, why, ExecDirEnv, name)
	}
	files, newest, err := sourceFiles(root)
	if err != nil {
		return ExecutorBinary{}, fmt.Errorf("find the executor: %w", err)
	}
	dist := filepath.Join(root, "dist", name)
	if fi, err := os.Stat(dist); err == nil && fi.Mode().IsRegular() && !fi.ModTime().Before(newest) {
		return ExecutorBinary{Path: dist, Arch: goarch, Found: fmt.Sprintf("in dist/ of %s, %s; newer than the executor's sources", root, why)}, nil
	}
	found := fmt.Sprintf("built from %s, %s, into the user cache", root, why)
	if isFile(dist) {
		found += " (dist/" + name + " is older than the executor's sources: make executor refreshes it)"
	}
	key, err := hashFiles(root, files)
	if err != nil {
		return ExecutorBinary{}, fmt.Errorf("find the executor: %w", err)
	}
	out, err := cachePath("src-"+key, name)
	if err != nil {
		return ExecutorBinary{}, err
	}
	b := ExecutorBinary{Path: out, Arch: goarch, Found: found}
	if isFile(out) {
		// Pruning goes by the directory's time: mark this build as used.
		now := time.Now()
		_ = os.Chtimes(filepath.Dir(out), now, now)
		return b, nil
	}
	if err := goBuild(ctx, root, goarch, "./cmd/tapebox-exec", out); err != nil {
		return ExecutorBinary{}, fmt.Errorf("find the executor in %s, %s: %w", root, why, err)
	}
	pruneBuilds(filepath.Dir(filepath.Dir(out)), filepath.Base(filepath.Dir(out)))
	return b, nil
}

// pruneBuilds removes the builds of other sources (src-*) under dir not used for a day: each
// edit of the executor, and each TapeBox version, leaves one behind.
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

// moduleExecutor builds cmd/tapebox-exec of mod (TapeBox, or a fork replacing it) at its
// version, from the module cache, downloading the module first when it is not there.
func moduleExecutor(ctx context.Context, goarch string, mod debug.Module) (ExecutorBinary, error) {
	at := mod.Path + "@" + mod.Version
	var out bytes.Buffer
	err := runGo(ctx, os.TempDir(), []string{"GOWORK=off"}, &out, "mod", "download", "-json", at)
	var dl struct{ Dir, Error string }
	if jerr := json.Unmarshal(out.Bytes(), &dl); jerr == nil && dl.Error != "" {
		err = errors.New(dl.Error)
	}
	if err != nil {
		return ExecutorBinary{}, fmt.Errorf("find the executor: fetch %s, the running program's version: %w", at, err)
	}
	return checkoutExecutor(ctx, dl.Dir, goarch, "the module cache copy of "+at+", the running program's version")
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
	// GOWORK=off and -mod=readonly: the sources are built as they are, whatever workspace or
	// GOFLAGS=-mod=mod the caller has (the module cache is read-only). No VCS stamp: it needs
	// git and may fail on a checkout owned by another user.
	env := []string{"CGO_ENABLED=0", "GOOS=linux", "GOARCH=" + goarch, "GOWORK=off"}
	if err := runGo(ctx, dir, env, io.Discard, "build", "-mod=readonly", "-buildvcs=false", "-trimpath", "-gcflags=all=-l", "-ldflags=-s -w", "-o", tmp, pkg); err != nil {
		return err
	}
	if err := os.Rename(tmp, out); err != nil {
		return fmt.Errorf("build the executor: %w", err)
	}
	return nil
}

// errNoGo is why an executor cannot be built: FindExecutor adds what to do instead.
var errNoGo = errors.New("the Go toolchain is not on PATH")

// runGo runs the go command in dir with env added to the environment and stdout to stdout.
func runGo(ctx context.Context, dir string, env []string, stdout io.Writer, args ...string) error {
	gobin, err := exec.LookPath("go")
	if err != nil {
		return fmt.Errorf("build the executor: %w: %w", ErrNoExecutor, errNoGo)
	}
	cmd := exec.CommandContext(ctx, gobin, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var stderr bytes.Buffer
	cmd.Stdout = stdout
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
