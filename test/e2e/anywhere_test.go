package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/internal/testutil/dockertest"
	"github.com/tapebox/tapebox/sandbox"
)

// These tests run TapeBox as a user outside the checkout does (issue 13): from their own Go
// module, and as a built binary run from another directory. Neither sets TAPEBOX_EXEC_DIR.

// checkoutRoot is the TapeBox checkout these tests are in.
func checkoutRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	require.NoError(t, err)
	require.FileExists(t, filepath.Join(root, "go.mod"))
	return root
}

// outsideDir returns a fresh temporary directory, failing if it is inside root.
func outsideDir(t *testing.T, root string) string {
	t.Helper()
	dir := t.TempDir()
	if rel, err := filepath.Rel(root, dir); err == nil && !strings.HasPrefix(rel, "..") {
		t.Fatalf("the temporary directory %s is inside the checkout %s: set TMPDIR elsewhere", dir, root)
	}
	return dir
}

// userEnv is the environment without TAPEBOX_EXEC_DIR, with extra set.
func userEnv(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		drop := name == sandbox.ExecDirEnv
		for _, e := range extra {
			if n, _, _ := strings.Cut(e, "="); n == name {
				drop = true
			}
		}
		if !drop {
			env = append(env, kv)
		}
	}
	return append(env, extra...)
}

// runIn runs name with args in dir and returns its exit code, stdout and stderr.
func runIn(t *testing.T, dir string, env []string, name string, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), name, args...)
	cmd.Dir, cmd.Env = dir, env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	t.Logf("%s %s (in %s): %v, %s", filepath.Base(name), strings.Join(args, " "), dir, err, time.Since(start).Round(time.Millisecond))
	if _, exited := errors.AsType[*exec.ExitError](err); err != nil && !exited {
		t.Fatalf("run %s: %v", name, err)
	}
	return cmd.ProcessState.ExitCode(), stdout.String(), stderr.String()
}

func copyInto(t *testing.T, src, dst string, mode os.FileMode) {
	t.Helper()
	b, err := os.ReadFile(src)
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll(filepath.Dir(dst), 0o755))
	require.NoError(t, os.WriteFile(dst, b, mode))
}

// userTest is the _test.go of the external module: testkit.Replay of the Codex tape on the
// local sandbox and in a fresh container, and which executor the lookup chose.
const userTest = `package tapeboxuser

import (
	"runtime"
	"testing"

	"github.com/tapebox/tapebox/sandbox"
	"github.com/tapebox/tapebox/testkit"
)

func TestExecutor(t *testing.T) {
	b, err := sandbox.FindExecutor(t.Context(), runtime.GOARCH)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("executor %s: %s", b.Path, b.Found)
}

func TestReplay(t *testing.T) {
	for _, tt := range []struct{ name, spec string }{
		{"local", "local"},
		{"docker", "docker-image:tapebox/sandbox:bookworm"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := testkit.Replay(t, "testdata/codex.json", tt.spec)
			if err := testkit.CheckReachedEnd(r); err != nil {
				t.Fatal(err)
			}
			if err := testkit.CheckIdentical(r); err != nil {
				t.Fatal(err)
			}
		})
	}
}
`

// testEvent is a line of go test -json.
type testEvent struct {
	Action, Test, Output string
}

// TestExternalModule: a module of a user's, in a directory outside the checkout, requires
// TapeBox through a replace directive and replays a tape with testkit, locally and in a
// container. The executor comes from the replace directory, which its test binary was
// compiled from.
func TestExternalModule(t *testing.T) {
	root := checkoutRoot(t)
	gobin, err := exec.LookPath("go")
	require.NoError(t, err)
	mod := outsideDir(t, root)
	gomod := "module example.com/tapeboxuser\n\ngo 1.26.0\n\nrequire github.com/tapebox/tapebox v0.0.0\n\nreplace github.com/tapebox/tapebox => " + root + "\n"
	require.NoError(t, os.WriteFile(filepath.Join(mod, "go.mod"), []byte(gomod), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(mod, "user_test.go"), []byte(userTest), 0o644))
	copyInto(t, filepath.Join(root, "testdata", "replay", "codex.json"), filepath.Join(mod, "testdata", "codex.json"), 0o644)

	// -mod=mod and tidy: the go.sum is made here, from the module cache (or the proxy).
	env := userEnv("GOFLAGS=-mod=mod", "GOWORK=off")
	code, _, stderr := runIn(t, mod, env, gobin, "mod", "tidy")
	require.Equal(t, 0, code, "go mod tidy: %s", stderr)
	// The packages' examples compile from outside the module: they use only public API.
	for _, pkg := range []string{"testkit", "testkit/fakeprovider", "testkit/miniagent"} {
		copyInto(t, filepath.Join(root, pkg, "example_test.go"), filepath.Join(mod, "examples", pkg, "example_test.go"), 0o644)
	}
	code, _, stderr = runIn(t, mod, env, gobin, "vet", "./examples/...")
	require.Equal(t, 0, code, "go vet of the examples outside the module: %s", stderr)
	code, stdout, stderr := runIn(t, mod, env, gobin, "test", "-json", "-count=1", "-timeout=10m", ".")

	outcome, output := map[string]string{}, map[string]*strings.Builder{}
	sc := bufio.NewScanner(strings.NewReader(stdout))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var e testEvent
		if json.Unmarshal(sc.Bytes(), &e) != nil || e.Test == "" {
			continue
		}
		switch e.Action {
		case "pass", "fail", "skip":
			outcome[e.Test] = e.Action
		case "output":
			if output[e.Test] == nil {
				output[e.Test] = &strings.Builder{}
			}
			output[e.Test].WriteString(e.Output)
		}
	}
	say := func(test string) string {
		if b := output[test]; b != nil {
			return b.String()
		}
		return "(no output)\n" + stdout + stderr
	}
	if code != 0 {
		t.Logf("go test in %s exited %d:\n%s%s", mod, code, stdout, stderr)
	}

	t.Run("executor", func(t *testing.T) {
		t.Log(say("TestExecutor"))
		require.Equal(t, "pass", outcome["TestExecutor"], say("TestExecutor"))
		assert.Contains(t, say("TestExecutor"), root+", the sources the running program was built from")
	})
	t.Run("local", func(t *testing.T) {
		require.Equal(t, "pass", outcome["TestReplay/local"], say("TestReplay/local"))
	})
	t.Run("docker", func(t *testing.T) {
		dockertest.Image(t, dockertest.SandboxImage)
		t.Log(say("TestReplay/docker"))
		require.Equal(t, "pass", outcome["TestReplay/docker"], say("TestReplay/docker"))
	})
}

// TestBinaryOutsideCheckout: make build, then bin/tapebox, and a copy of it alone in another
// directory, replay from a working directory outside the checkout. The executor comes from
// the checkout the binary was built from.
func TestBinaryOutsideCheckout(t *testing.T) {
	root := checkoutRoot(t)
	mk, err := exec.LookPath("make")
	if err != nil {
		t.Skip("make is not on PATH")
	}
	gobin, err := exec.LookPath("go")
	require.NoError(t, err)
	env := userEnv()
	code, _, stderr := runIn(t, root, env, mk, "build", "GO="+gobin)
	require.Equal(t, 0, code, "make build: %s", stderr)

	work := outsideDir(t, root)
	rec := filepath.Join(work, "tapes", "codex.json")
	copyInto(t, filepath.Join(root, "testdata", "replay", "codex.json"), rec, 0o644)
	copied := filepath.Join(outsideDir(t, root), "tapebox")
	copyInto(t, filepath.Join(root, "bin", "tapebox"), copied, 0o755)

	for _, tt := range []struct {
		name, exe string
		spec      string
	}{
		{"bin-tapebox/local", filepath.Join(root, "bin", "tapebox"), "local:" + filepath.Join(work, "bin-local")},
		{"copy/local", copied, "local:" + filepath.Join(work, "copy-local")},
		{"bin-tapebox/docker", filepath.Join(root, "bin", "tapebox"), "docker-image:" + dockertest.SandboxImage},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if strings.HasPrefix(tt.spec, "docker-image:") {
				dockertest.Image(t, dockertest.SandboxImage)
			}
			code, stdout, stderr := runIn(t, work, env, tt.exe, "exec-binary")
			require.Equal(t, 0, code, "exec-binary: %s", stderr)
			assert.Contains(t, stderr, root+", the sources the running program was built from")
			assert.FileExists(t, strings.TrimSpace(stdout))

			out := filepath.Join(work, strings.ReplaceAll(tt.name, "/", "-")+".json")
			code, _, stderr = runIn(t, work, env, tt.exe, "replay", "--tape", rec, "--sandbox", tt.spec, "--output", out)
			require.Equal(t, 0, code, "replay: %s", stderr)
			code, stdout, stderr = runIn(t, work, env, tt.exe, "compare", rec, out)
			require.Equal(t, 0, code, "compare:\n%s%s", stdout, stderr)
		})
	}
}
