package sandbox

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/workspace"
)

func TestParseSpec(t *testing.T) {
	tests := []struct {
		spec    string
		want    Spec
		wantErr string
	}{
		{spec: "local:/tmp/x", want: Spec{Scheme: SchemeLocal, Target: "/tmp/x"}},
		{spec: "local:rel/dir", want: Spec{Scheme: SchemeLocal, Target: "rel/dir"}},
		{spec: "docker:mybox", want: Spec{Scheme: SchemeDocker, Target: "mybox"}},
		{spec: "docker-image:tapebox/sandbox:bookworm", want: Spec{Scheme: SchemeDockerImage, Target: "tapebox/sandbox:bookworm"}},
		{spec: "mybox", wantErr: "want local:DIR, docker:CONTAINER or docker-image:IMAGE"},
		{spec: "k8s:pod", wantErr: `unknown scheme "k8s"`},
		{spec: "Docker:x", wantErr: `unknown scheme "Docker"`},
		{spec: "docker:", wantErr: "needs a container name or ID"},
		{spec: "local: /x", wantErr: "needs a directory"},
		{spec: "docker-image:", wantErr: "needs an image reference"},
	}
	for _, tt := range tests {
		t.Run(tt.spec, func(t *testing.T) {
			got, err := ParseSpec(tt.spec)
			if tt.wantErr != "" {
				require.ErrorIs(t, err, ErrBadSpec)
				assert.Contains(t, err.Error(), tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
			assert.Equal(t, tt.spec, got.String())
		})
	}
}

func TestOpenRejectsOptions(t *testing.T) {
	tests := []struct {
		name    string
		spec    string
		opts    Options
		wantErr error
		want    string
	}{
		{"unknown scheme", "vm:x", Options{}, ErrBadSpec, "unknown scheme"},
		{"limits on local", "local:" + t.TempDir(), Options{Memory: 1 << 30, PidsLimit: 10}, ErrOption, "Memory, PidsLimit only apply to containers TapeBox creates"},
		{"network on existing container", "docker:box", Options{Network: "bridge"}, ErrOption, "Network only apply"},
		{"read-only existing container", "docker:box", Options{ReadOnlyRoot: true, Runtime: "runsc"}, ErrOption, "ReadOnlyRoot, Runtime"},
		{"bad user", "docker-image:x", Options{User: "1000:"}, ErrOption, `User "1000:": want UID[:GID] or NAME[:GROUP]`},
		{"user on existing container", "docker:box", Options{User: "0"}, ErrOption, "User only apply"},
		{"executor path without install", "docker:box", Options{ExecutorPath: "/bin/true"}, ErrOption, "set InstallExecutor too"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sb, err := Open(t.Context(), tt.spec, tt.opts)
			if sb != nil {
				sb.Close(t.Context())
			}
			require.ErrorIs(t, err, tt.wantErr)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}

func TestOpenNoEngine(t *testing.T) {
	t.Setenv("DOCKER_HOST", "unix://"+filepath.Join(t.TempDir(), "no-docker.sock"))
	for _, spec := range []string{"docker:box", "docker-image:tapebox/sandbox:bookworm"} {
		t.Run(spec, func(t *testing.T) {
			_, err := Open(t.Context(), spec, Options{})
			require.ErrorIs(t, err, ErrNoEngine)
			assert.Contains(t, err.Error(), "no-docker.sock")
			assert.Contains(t, err.Error(), "local:DIR")
		})
	}
}

func TestNormalizeArch(t *testing.T) {
	for in, want := range map[string]string{"amd64": "amd64", "x86_64": "amd64", "AMD64": "amd64", "arm64": "arm64", "aarch64": "arm64"} {
		got, err := NormalizeArch(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
	}
	for _, bad := range []string{"", "386", "riscv64", "arm"} {
		_, err := NormalizeArch(bad)
		assert.ErrorContains(t, err, "use amd64 (x86_64) or arm64 (aarch64)", bad)
	}
}

// elfHeader returns a minimal 64-bit little-endian ELF header for machine.
func elfHeader(machine uint16) []byte {
	var b bytes.Buffer
	b.Write([]byte{0x7f, 'E', 'L', 'F', 2, 1, 1, 0})
	b.Write(make([]byte, 8))
	le := binary.LittleEndian
	for _, v := range []any{uint16(2), machine, uint32(1), uint64(0), uint64(0), uint64(0), uint32(0), uint16(64), uint16(56), uint16(0), uint16(64), uint16(0), uint16(0)} {
		_ = binary.Write(&b, le, v)
	}
	return b.Bytes()
}

func TestELFArch(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name    string
		data    []byte
		want    string
		wantErr string
	}{
		{"x86-64", elfHeader(62), "amd64", ""},
		{"aarch64", elfHeader(183), "arm64", ""},
		{"riscv", elfHeader(243), "riscv", ""},
		{"script", []byte("#!/bin/sh\necho hi\n"), "", "must be a Linux binary"},
		{"empty", nil, "", "must be a Linux binary"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := filepath.Join(dir, tt.name)
			require.NoError(t, os.WriteFile(p, tt.data, 0o755))
			got, err := ELFArch(p)
			if tt.wantErr != "" {
				assert.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}

	t.Run("wrong arch is ErrWrongArch", func(t *testing.T) {
		p := filepath.Join(dir, "aarch64")
		err := checkExecutorArch(p, "amd64", "container box")
		require.ErrorIs(t, err, ErrWrongArch)
		assert.Contains(t, err.Error(), "built for arm64 but container box is amd64")
		assert.Contains(t, err.Error(), "tapebox exec-binary --arch amd64")
		assert.NoError(t, checkExecutorArch(p, "arm64", "container box"))
	})
}

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

func TestExecutorPathCheckout(t *testing.T) {
	t.Setenv(ExecDirEnv, "")
	cache := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", cache)
	root := fakeCheckout(t)
	sub := filepath.Join(root, "executor")
	t.Chdir(sub)
	assert.Equal(t, root, findCheckout(sub))

	old := time.Now().Add(-time.Hour)
	for _, f := range []string{"go.mod", "cmd/tapebox-exec/main.go", "executor/doc.go", "tape/doc.go", "executor/x_test.go"} {
		require.NoError(t, os.Chtimes(filepath.Join(root, f), old, old))
	}

	// An up-to-date dist/ build wins.
	dist := filepath.Join(root, "dist", "tapebox-exec-amd64")
	require.NoError(t, os.MkdirAll(filepath.Dir(dist), 0o755))
	require.NoError(t, os.WriteFile(dist, elfHeader(62), 0o755))
	got, err := ExecutorPath(t.Context(), "x86_64")
	require.NoError(t, err)
	assert.Equal(t, dist, got)

	// A test file or an unrelated package being newer does not make it stale.
	require.NoError(t, os.WriteFile(filepath.Join(root, "unrelated/doc.go"), []byte("package unrelated // new\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(root, "executor/x_test.go"), []byte("package executor // new\n"), 0o644))
	got, err = ExecutorPath(t.Context(), "amd64")
	require.NoError(t, err)
	assert.Equal(t, dist, got)

	// A newer source makes dist/ stale: the executor is built into the cache, once.
	require.NoError(t, os.WriteFile(filepath.Join(root, "executor/doc.go"), []byte("package executor // changed\n"), 0o644))
	got, err = ExecutorPath(t.Context(), "arm64")
	require.NoError(t, err, "build on demand")
	assert.True(t, strings.HasPrefix(got, cache), "%s is not in the cache %s", got, cache)
	arch, err := ELFArch(got)
	require.NoError(t, err)
	assert.Equal(t, "arm64", arch)
	fi, err := os.Stat(got)
	require.NoError(t, err)
	again, err := ExecutorPath(t.Context(), "arm64")
	require.NoError(t, err)
	assert.Equal(t, got, again)
	fi2, err := os.Stat(again)
	require.NoError(t, err)
	assert.Equal(t, fi.ModTime(), fi2.ModTime(), "built twice")

	// A build of other sources older than a day is pruned by the next build; a recent one stays.
	stale, recent := filepath.Join(cache, "tapebox", "exec", "src-old"), filepath.Join(cache, "tapebox", "exec", "src-recent")
	require.NoError(t, os.MkdirAll(stale, 0o755))
	require.NoError(t, os.MkdirAll(recent, 0o755))
	require.NoError(t, os.Chtimes(stale, old.Add(-48*time.Hour), old.Add(-48*time.Hour)))
	require.NoError(t, os.WriteFile(filepath.Join(root, "tape/doc.go"), []byte("package tape // changed\n"), 0o644))
	rebuilt, err := ExecutorPath(t.Context(), "arm64")
	require.NoError(t, err)
	assert.NotEqual(t, got, rebuilt)
	assert.NoDirExists(t, stale)
	assert.DirExists(t, recent)
	assert.FileExists(t, got, "the previous build is recent")

	// A checkout without cmd/tapebox-exec says so.
	require.NoError(t, os.RemoveAll(filepath.Join(root, "cmd")))
	_, err = ExecutorPath(t.Context(), "amd64")
	require.ErrorIs(t, err, ErrNoExecutor)
	assert.Contains(t, err.Error(), "has no cmd/tapebox-exec")
}

func TestExecutorPathBuildError(t *testing.T) {
	t.Setenv(ExecDirEnv, "")
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	root := fakeCheckout(t)
	require.NoError(t, os.WriteFile(filepath.Join(root, "cmd/tapebox-exec/main.go"), []byte("package main\n\nfunc main() { undefined() }\n"), 0o644))
	t.Chdir(root)
	_, err := ExecutorPath(t.Context(), "amd64")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "build the executor: go build")
	assert.Contains(t, err.Error(), "undefined")
}

func TestTarRoundTrip(t *testing.T) {
	files := map[string]File{
		"a.txt":         {Mode: 0o644, Data: []byte("alpha\n")},
		"bin":           {Mode: fs.ModeDir | 0o755},
		"bin/run.sh":    {Mode: 0o755, Data: []byte("#!/bin/sh\n")},
		"deep/er/x.txt": {Mode: 0o600, Data: []byte{}},
		"link":          {Mode: fs.ModeSymlink | 0o777, Link: "a.txt"},
	}
	inApp := map[string]File{}
	for n, f := range files {
		inApp["app/"+n] = f // as CopyFromContainer names them
	}
	var buf bytes.Buffer
	require.NoError(t, writeTar(&buf, inApp, workspace.Owner{}))
	got, err := readTar(&buf)
	require.NoError(t, err)
	assert.Equal(t, files, got)

	err = writeTar(&bytes.Buffer{}, map[string]File{"p": {Mode: fs.ModeNamedPipe}}, workspace.Owner{})
	assert.ErrorContains(t, err, "unsupported file type")
}

func TestTailBuffer(t *testing.T) {
	tb := newTailBuffer(8)
	tb.Write([]byte("abc"))
	tb.Write([]byte("defgh"))
	assert.Equal(t, "abcdefgh", tb.String())
	tb.Write([]byte("ij"))
	assert.Equal(t, "cdefghij", tb.String())
	tb.Write([]byte("0123456789"))
	assert.Equal(t, "23456789", tb.String())
}

func TestExitErrorHints(t *testing.T) {
	tests := []struct {
		cmd    string
		code   int
		stderr string
		want   string
	}{
		{"/usr/local/bin/tapebox-exec", 127, `exec: "tapebox-exec": executable file not found in $PATH`, "--install-executor"},
		{"tapebox-exec", 126, "exec format error", "another architecture"},
		{"ls", 127, "not found", "could not be run"},
		{"x", 137, "", "out of memory"},
		{"x", 1, "boom", ""},
	}
	for _, tt := range tests {
		e := &ExitError{Command: tt.cmd, Code: tt.code, Stderr: tt.stderr, Hint: exitHint(tt.cmd, tt.code, tt.stderr)}
		assert.Contains(t, e.Error(), tt.want)
		assert.Contains(t, e.Error(), tt.stderr)
	}
}

func TestIsMountErr(t *testing.T) {
	for msg, want := range map[string]bool{
		"Error response from daemon: invalid mount config for type \"bind\": bind source path does not exist: /x": true,
		"Mounts denied: The path /Users/x is not shared from the host":                                            true,
		"Error response from daemon: No such image: x":                                                            false,
		"OCI runtime create failed: runc create failed: unable to start container process":                        false,
	} {
		assert.Equal(t, want, isMountErr(errors.New(msg)), msg)
	}
}
