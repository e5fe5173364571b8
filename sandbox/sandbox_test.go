package sandbox

import (
	"bytes"
	"context"
	"encoding/binary"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

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
		{spec: "unsafe-local:/tmp/x", want: Spec{Scheme: SchemeLocal, Target: "/tmp/x", Unsafe: true}},
		{spec: "docker:mybox", want: Spec{Scheme: SchemeDocker, Target: "mybox"}},
		{spec: "docker-image:tapebox/sandbox:bookworm", want: Spec{Scheme: SchemeDockerImage, Target: "tapebox/sandbox:bookworm"}},
		{spec: "mybox", wantErr: "want local:DIR, docker:CONTAINER or docker-image:IMAGE"},
		{spec: "k8s:default?image=busybox", want: Spec{Scheme: SchemeK8s, Target: "default?image=busybox"}},
		{spec: "kube:pod", wantErr: `unknown scheme "kube"`},
		{spec: "k8s:", wantErr: "needs a namespace and ?image=IMAGE"},
		{spec: "Docker:x", wantErr: `unknown scheme "Docker"`},
		{spec: "docker:", wantErr: "needs a container name or ID"},
		{spec: "local: /x", wantErr: "needs a directory"},
		{spec: "unsafe-local:", wantErr: "unsafe-local: needs a directory"},
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

// TestOpenWithoutBackend: this test binary links no backend, so every scheme fails, naming the
// package that would serve it; an unknown scheme is a bad spec as before.
func TestOpenWithoutBackend(t *testing.T) {
	require.Empty(t, Schemes())
	for spec, pkg := range map[string]string{"local:/tmp/x": "sandbox/local", "unsafe-local:/tmp/x": "sandbox/local",
		"docker:box": "sandbox/docker", "docker-image:tapebox/tiny": "sandbox/docker", "k8s:default?image=x": "sandbox/k8s"} {
		sb, err := Open(t.Context(), spec, Options{})
		require.ErrorIs(t, err, ErrNoBackend, spec)
		assert.Nil(t, sb)
		assert.Contains(t, err.Error(), `import _ "github.com/tapebox/tapebox/`+pkg+`"`, spec)
		assert.Contains(t, err.Error(), "sandbox/all", spec)
	}
	_, err := Open(t.Context(), "vm:x", Options{})
	require.ErrorIs(t, err, ErrBadSpec)
	assert.NotErrorIs(t, err, ErrNoBackend)
}

// TestRegister: a registered opener gets the parsed spec and the options; a scheme taken
// twice panics.
func TestRegister(t *testing.T) {
	var got Spec
	Register("test-scheme", func(ctx context.Context, spec Spec, opts Options) (*Sandbox, error) {
		got = spec
		return New(spec, nil, Info{Cwd: opts.Cwd}), nil
	})
	t.Cleanup(func() {
		openersMu.Lock()
		delete(openers, "test-scheme")
		openersMu.Unlock()
	})
	assert.Equal(t, []string{"test-scheme"}, Schemes())
	assert.Panics(t, func() { Register("test-scheme", nil) })
	s := Spec{Scheme: "test-scheme", Target: "x"}
	open, err := opener(s)
	require.NoError(t, err)
	sb, err := open(t.Context(), s, Options{Cwd: "/w"})
	require.NoError(t, err)
	assert.Equal(t, s, got)
	assert.Equal(t, "/w", sb.Cwd())
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
		err := CheckExecutorArch(p, "amd64", "container box")
		require.ErrorIs(t, err, ErrWrongArch)
		assert.Contains(t, err.Error(), "built for arm64 but container box is amd64")
		assert.Contains(t, err.Error(), "tapebox exec-binary --arch amd64")
		assert.NoError(t, CheckExecutorArch(p, "arm64", "container box"))
	})
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
	require.NoError(t, WriteTar(&buf, inApp, workspace.Owner{}))
	got, err := ReadTar(&buf)
	require.NoError(t, err)
	assert.Equal(t, files, got)

	err = WriteTar(&bytes.Buffer{}, map[string]File{"p": {Mode: fs.ModeNamedPipe}}, workspace.Owner{})
	assert.ErrorContains(t, err, "unsupported file type")
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
		e := NewExitError(tt.cmd, tt.code, tt.stderr)
		assert.Contains(t, e.Error(), tt.want)
		assert.Contains(t, e.Error(), tt.stderr)
	}
}
