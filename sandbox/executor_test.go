package sandbox

import (
	"archive/zip"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestExecutorPathEnvDir(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "tapebox-exec-arm64"), elfHeader(183), 0o755))
	t.Setenv(ExecDirEnv, dir)

	got, err := ExecutorPath(t.Context(), "aarch64")
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(dir, "tapebox-exec-arm64"), got)

	_, err = ExecutorPath(t.Context(), "x86_64")
	require.ErrorIs(t, err, ErrNoExecutor)
	assert.Contains(t, err.Error(), "has no tapebox-exec-amd64")

	_, err = ExecutorPath(t.Context(), "mips")
	assert.ErrorContains(t, err, "unknown architecture")
}

// TestFindExecutorRunningProgram: this test binary records the checkout it was compiled
// from, so it finds that checkout's executor whatever the working directory is.
func TestFindExecutorRunningProgram(t *testing.T) {
	t.Setenv(ExecDirEnv, "")
	_, self, _, _ := runtime.Caller(0)
	root := filepath.Dir(filepath.Dir(self))
	t.Chdir(t.TempDir())
	got, err := FindExecutor(t.Context(), "x86_64")
	require.NoError(t, err)
	assert.Equal(t, "amd64", got.Arch)
	assert.Contains(t, got.Found, root+", the sources the running program was built from")
	arch, err := ELFArch(got.Path)
	require.NoError(t, err)
	assert.Equal(t, "amd64", arch)
}

// fakeCheckout lays out a minimal TapeBox module with a cmd/tapebox-exec.
func fakeCheckout(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	files := map[string]string{
		"go.mod":                      "module github.com/tapebox/tapebox\n\ngo 1.26\n",
		"cmd/tapebox-exec/main.go":    "package main\n\nimport \"fmt\"\n\nfunc main() { fmt.Println(\"v1\") }\n",
		"executor/doc.go":             "package executor\n",
		"executor/x_test.go":          "package executor\n",
		"tape/doc.go":                 "package tape\n",
		"unrelated/doc.go":            "package unrelated\n",
		"cmd/tapebox-exec/testdata/x": "ignored",
	}
	for name, body := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(body), 0o644))
	}
	return root
}

// builtCheckout is a fakeCheckout with up-to-date dist/ binaries for both architectures.
func builtCheckout(t *testing.T) string {
	t.Helper()
	root := fakeCheckout(t)
	old := time.Now().Add(-time.Hour)
	require.NoError(t, filepath.WalkDir(root, func(p string, _ os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Chtimes(p, old, old)
	}))
	require.NoError(t, os.MkdirAll(filepath.Join(root, "dist"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(root, "dist", "tapebox-exec-amd64"), elfHeader(62), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(root, "dist", "tapebox-exec-arm64"), elfHeader(183), 0o755))
	return root
}

// isolateExecCache points the user cache dir at a fresh directory, keeping the Go build
// cache (which lives under it by default) so that builds stay warm.
func isolateExecCache(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOCACHE").Output()
	require.NoError(t, err)
	t.Setenv("GOCACHE", strings.TrimSpace(string(out)))
	cache := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", cache)
	return cache
}

// TestFindExecutorPlaces stands in for each kind of build: what the program records of its
// sources decides where the executor comes from, and the error says what to run.
func TestFindExecutorPlaces(t *testing.T) {
	a, b := builtCheckout(t), builtCheckout(t)
	trimmed := Module + "/sandbox/executor.go"
	in := func(root string) string { return filepath.Join(root, "sandbox", "executor.go") }
	beside := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(beside, "tapebox-exec-amd64"), elfHeader(62), 0o755))
	loose := t.TempDir()
	devel := &debug.BuildInfo{Main: debug.Module{Path: Module, Version: "(devel)"}}
	gone := filepath.Join(t.TempDir(), "gone")

	tests := []struct {
		name    string
		p       program
		want    string // the path found
		found   string // in Found
		wantErr []string
	}{
		{name: "beside the executable first",
			p:    program{exe: filepath.Join(beside, "tapebox"), srcFile: in(a)},
			want: filepath.Join(beside, "tapebox-exec-amd64"), found: "beside the executable " + filepath.Join(beside, "tapebox")},
		{name: "the compiled sources: make build, go test, a copied binary",
			p:    program{exe: filepath.Join(loose, "tapebox"), srcFile: in(a), build: devel},
			want: filepath.Join(a, "dist", "tapebox-exec-amd64"), found: "in dist/ of " + a + ", the sources the running program was built from; newer"},
		{name: "the compiled sources before the checkout holding the executable",
			p:    program{exe: filepath.Join(b, "bin", "tapebox"), srcFile: in(a)},
			want: filepath.Join(a, "dist", "tapebox-exec-amd64")},
		{name: "trimmed: the checkout above the executable",
			p:    program{exe: filepath.Join(b, "bin", "tapebox"), srcFile: trimmed, build: devel},
			want: filepath.Join(b, "dist", "tapebox-exec-amd64"), found: "in dist/ of " + b + ", the checkout that holds the executable"},
		{name: "sources gone: the checkout above the executable",
			p:    program{exe: filepath.Join(b, "bin", "tapebox"), srcFile: in(gone)},
			want: filepath.Join(b, "dist", "tapebox-exec-amd64")},
		{name: "trimmed, with a replace directory in the build info",
			p: program{exe: filepath.Join(loose, "user-tool"), srcFile: Module + "@v0.0.0/sandbox/executor.go", build: &debug.BuildInfo{
				Main: debug.Module{Path: "example.com/user"},
				Deps: []*debug.Module{{Path: "golang.org/x/sync", Version: "v0.1.0"}, {Path: Module, Version: "v0.0.0", Replace: &debug.Module{Path: a}}}}},
			want: filepath.Join(a, "dist", "tapebox-exec-amd64"), found: "the replace directory in the running program's build info"},

		{name: "a trimmed devel binary on its own",
			p: program{exe: filepath.Join(loose, "tapebox"), srcFile: trimmed, build: devel},
			wantErr: []string{"not beside " + filepath.Join(loose, "tapebox"), "built with -trimpath", "no TapeBox checkout above " + loose,
				"its version (devel) is no release",
				"run make executor && cp dist/tapebox-exec-amd64 dist/tapebox-exec-arm64 " + loose + "/"}},
		{name: "a copied binary whose sources are gone, at a dirty version",
			p: program{exe: filepath.Join(loose, "tapebox"), srcFile: in(gone),
				build: &debug.BuildInfo{Main: debug.Module{Path: Module, Version: "v0.0.0-20260101000000-0123456789ab+dirty"}}},
			wantErr: []string{"the sources it was built from (" + gone + ") are gone", "+dirty is no release", "&& cp dist/"}},
		{name: "a trimmed test binary of a module with a replace",
			p:       program{exe: filepath.Join(loose, "user.test"), srcFile: Module + "@v0.0.0/sandbox/executor.go", build: &debug.BuildInfo{Main: debug.Module{Path: "example.com/user"}}},
			wantErr: []string{"its version v0.0.0 is no release", `set TAPEBOX_EXEC_DIR to its dist directory: export TAPEBOX_EXEC_DIR="$PWD/dist"`}},
		{name: "a relative replace directory",
			p: program{exe: filepath.Join(loose, "user-tool"), srcFile: trimmed, build: &debug.BuildInfo{
				Main: debug.Module{Path: "example.com/user"}, Deps: []*debug.Module{{Path: Module, Version: "v0.0.0", Replace: &debug.Module{Path: "../tapebox"}}}}},
			wantErr: []string{"replaces " + Module + " with the relative directory ../tapebox", "&& cp dist/"}},
		{name: "a replace directory that is gone",
			p: program{exe: filepath.Join(loose, "user-tool"), srcFile: trimmed, build: &debug.BuildInfo{
				Main: debug.Module{Path: "example.com/user"}, Deps: []*debug.Module{{Path: Module, Version: "v0.0.0", Replace: &debug.Module{Path: gone}}}}},
			wantErr: []string{"replaces " + Module + " with " + gone + ", which is not there"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.p.find(t.Context(), "amd64")
			if tt.wantErr != nil {
				require.ErrorIs(t, err, ErrNoExecutor)
				for _, s := range tt.wantErr {
					assert.Contains(t, err.Error(), s)
				}
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got.Path)
			assert.Equal(t, "amd64", got.Arch)
			assert.Contains(t, got.Found, tt.found)
		})
	}
}

func TestShellQuote(t *testing.T) {
	for in, want := range map[string]string{
		"/usr/local/bin/": "/usr/local/bin/",
		"/home/a b/":      "'/home/a b/'",
		"/it's/":          `'/it'\''s/'`,
		"":                "''",
	} {
		assert.Equal(t, want, shellQuote(in), in)
	}
}

func TestCheckoutExecutor(t *testing.T) {
	cache := isolateExecCache(t)
	root := fakeCheckout(t)
	p := program{srcFile: filepath.Join(root, "sandbox", "executor.go")}
	assert.Equal(t, root, findCheckout(filepath.Join(root, "executor")))

	old := time.Now().Add(-time.Hour)
	for _, f := range []string{"go.mod", "cmd/tapebox-exec/main.go", "executor/doc.go", "tape/doc.go", "executor/x_test.go"} {
		require.NoError(t, os.Chtimes(filepath.Join(root, f), old, old))
	}

	// An up-to-date dist/ build wins.
	dist := filepath.Join(root, "dist", "tapebox-exec-amd64")
	require.NoError(t, os.MkdirAll(filepath.Dir(dist), 0o755))
	require.NoError(t, os.WriteFile(dist, elfHeader(62), 0o755))
	// Older than now, so that an edit below is newer even on a coarse file clock.
	require.NoError(t, os.Chtimes(dist, old.Add(time.Minute), old.Add(time.Minute)))
	got, err := p.find(t.Context(), "amd64")
	require.NoError(t, err)
	assert.Equal(t, dist, got.Path)

	// A test file or an unrelated package being newer does not make it stale.
	require.NoError(t, os.WriteFile(filepath.Join(root, "unrelated/doc.go"), []byte("package unrelated // new\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(root, "executor/x_test.go"), []byte("package executor // new\n"), 0o644))
	got, err = p.find(t.Context(), "amd64")
	require.NoError(t, err)
	assert.Equal(t, dist, got.Path)

	// A newer source makes dist/ stale: the executor is built into the cache, once.
	require.NoError(t, os.WriteFile(filepath.Join(root, "executor/doc.go"), []byte("package executor // changed\n"), 0o644))
	got, err = p.find(t.Context(), "amd64")
	require.NoError(t, err, "build on demand")
	assert.True(t, strings.HasPrefix(got.Path, cache), "%s is not in the cache %s", got.Path, cache)
	assert.Contains(t, got.Found, "built from "+root+", the sources the running program was built from, into the user cache (dist/tapebox-exec-amd64 is older")
	got, err = p.find(t.Context(), "arm64")
	require.NoError(t, err, "build on demand")
	assert.True(t, strings.HasPrefix(got.Path, cache), "%s is not in the cache %s", got.Path, cache)
	assert.NotContains(t, got.Found, "is older", "there is no dist/ arm64 build")
	arch, err := ELFArch(got.Path)
	require.NoError(t, err)
	assert.Equal(t, "arm64", arch)
	fi, err := os.Stat(got.Path)
	require.NoError(t, err)
	again, err := p.find(t.Context(), "arm64")
	require.NoError(t, err)
	assert.Equal(t, got.Path, again.Path)
	fi2, err := os.Stat(again.Path)
	require.NoError(t, err)
	assert.Equal(t, fi.ModTime(), fi2.ModTime(), "built twice")

	// A build of other sources unused for a day is pruned by the next build; a recent one
	// stays, and using a build counts as recent.
	builds := filepath.Join(cache, "tapebox", "exec")
	stale, recent := filepath.Join(builds, "src-old"), filepath.Join(builds, "src-recent")
	require.NoError(t, os.MkdirAll(stale, 0o755))
	require.NoError(t, os.MkdirAll(recent, 0o755))
	require.NoError(t, os.Chtimes(stale, old.Add(-48*time.Hour), old.Add(-48*time.Hour)))
	require.NoError(t, os.Chtimes(filepath.Dir(got.Path), old.Add(-48*time.Hour), old.Add(-48*time.Hour)))
	_, err = p.find(t.Context(), "arm64")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(root, "tape/doc.go"), []byte("package tape // changed\n"), 0o644))
	rebuilt, err := p.find(t.Context(), "arm64")
	require.NoError(t, err)
	assert.NotEqual(t, got.Path, rebuilt.Path)
	assert.NoDirExists(t, stale)
	assert.DirExists(t, recent)
	assert.FileExists(t, got.Path, "the previous build was used just now")

	// A checkout without cmd/tapebox-exec says so.
	require.NoError(t, os.RemoveAll(filepath.Join(root, "cmd")))
	_, err = p.find(t.Context(), "amd64")
	require.ErrorIs(t, err, ErrNoExecutor)
	assert.Contains(t, err.Error(), "has no cmd/tapebox-exec")
}

func TestCheckoutExecutorBuildError(t *testing.T) {
	isolateExecCache(t)
	root := fakeCheckout(t)
	require.NoError(t, os.WriteFile(filepath.Join(root, "cmd/tapebox-exec/main.go"), []byte("package main\n\nfunc main() { undefined() }\n"), 0o644))
	_, err := program{srcFile: filepath.Join(root, "sandbox", "executor.go")}.find(t.Context(), "amd64")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "build the executor: go build")
	assert.Contains(t, err.Error(), "undefined")
	assert.Contains(t, err.Error(), "find the executor in "+root+", the sources the running program was built from: build the executor")
}

func TestCheckoutExecutorNoGo(t *testing.T) {
	isolateExecCache(t)
	root := fakeCheckout(t)
	t.Setenv("PATH", t.TempDir())
	p := program{exe: filepath.Join(t.TempDir(), "tapebox"), srcFile: filepath.Join(root, "sandbox", "executor.go")}
	_, err := p.find(t.Context(), "amd64")
	require.ErrorIs(t, err, ErrNoExecutor)
	assert.Contains(t, err.Error(), "the Go toolchain is not on PATH; install Go (https://go.dev/dl/), or put the executors beside it: in a TapeBox checkout")
}

// moduleProxy serves a fakeCheckout as module version v1.2.3 of TapeBox from a file://
// GOPROXY, with a module cache of its own.
func moduleProxy(t *testing.T) {
	t.Helper()
	src := fakeCheckout(t)
	proxy := t.TempDir()
	dir := filepath.Join(proxy, filepath.FromSlash(Module), "@v")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	const version = "v1.2.3"
	f, err := os.Create(filepath.Join(dir, version+".zip"))
	require.NoError(t, err)
	zw := zip.NewWriter(f)
	require.NoError(t, filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		w, err := zw.Create(Module + "@" + version + "/" + filepath.ToSlash(rel))
		if err != nil {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		_, err = w.Write(b)
		return err
	}))
	require.NoError(t, zw.Close())
	require.NoError(t, f.Close())
	gomod, err := os.ReadFile(filepath.Join(src, "go.mod"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, version+".mod"), gomod, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, version+".info"), []byte(`{"Version":"v1.2.3","Time":"2026-01-01T00:00:00Z"}`), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "list"), []byte(version+"\n"), 0o644))

	t.Setenv("GOPROXY", "file://"+filepath.ToSlash(proxy))
	t.Setenv("GOSUMDB", "off")
	t.Setenv("GOMODCACHE", t.TempDir())
	t.Setenv("GOFLAGS", "-modcacherw") // so that t.TempDir can remove the module cache
}

// TestModuleExecutor: a trimmed program, or one whose build info names a release, builds
// the executor from that release, fetched into the module cache when it is not there.
func TestModuleExecutor(t *testing.T) {
	cache := isolateExecCache(t)
	moduleProxy(t)
	loose := filepath.Join(t.TempDir(), "tapebox")
	tests := []struct {
		name    string
		p       program
		wantErr string
	}{
		{name: "trimmed test binary of a module requiring a release",
			p: program{exe: filepath.Join(t.TempDir(), "user.test"), srcFile: Module + "@v1.2.3/sandbox/executor.go", build: &debug.BuildInfo{Main: debug.Module{Path: "example.com/user"}}}},
		{name: "go install at a release, module cache cleaned",
			p: program{exe: loose, srcFile: filepath.Join(t.TempDir(), "gone", "sandbox", "executor.go"), build: &debug.BuildInfo{Main: debug.Module{Path: Module, Version: "v1.2.3"}}}},
		{name: "a dependency at a release",
			p: program{exe: loose, srcFile: Module + "@v1.2.3/sandbox/executor.go", build: &debug.BuildInfo{Main: debug.Module{Path: "example.com/user"}, Deps: []*debug.Module{{Path: Module, Version: "v1.2.3"}}}}},
		{name: "a version the proxy does not have",
			p:       program{exe: loose, srcFile: Module + "@v9.9.9/sandbox/executor.go"},
			wantErr: "find the executor: fetch " + Module + "@v9.9.9, the running program's version"},
		{name: "a pseudo-version of a commit the proxy does not have",
			p:       program{exe: loose, srcFile: Module + "@v0.0.0-20260101000000-0123456789ab/sandbox/executor.go"},
			wantErr: "; put the executors beside it: in a TapeBox checkout of the same version run make executor && cp dist/"},
	}
	var first string
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.p.find(t.Context(), "arm64")
			if tt.wantErr != "" {
				assert.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.True(t, strings.HasPrefix(got.Path, cache), "%s is not in the cache %s", got.Path, cache)
			assert.Contains(t, got.Found, "the module cache copy of "+Module+"@v1.2.3, the running program's version")
			arch, err := ELFArch(got.Path)
			require.NoError(t, err)
			assert.Equal(t, "arm64", arch)
			if first == "" {
				first = got.Path
			}
			assert.Equal(t, first, got.Path, "one build per release")
		})
	}
}
