package dockertest

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/client"
	"github.com/docker/docker/errdefs"
)

// The images scripts/sandbox-image.sh builds from Debian packages (make sandbox-image).
const (
	// SandboxImage is debootstrap minbase bookworm: bash, coreutils, grep, findutils; no Python.
	SandboxImage = "tapebox/sandbox:bookworm"
	// TinyImage is busybox-static (and bash-static), built in seconds.
	TinyImage = "tapebox/tiny:latest"
)

// RequireEnv is the variable that turns skips for a missing engine or image into failures.
const RequireEnv = "TAPEBOX_REQUIRE_DOCKER"

// Label marks the containers this package creates, so stragglers of a killed test run can be
// found: docker rm -f $(docker ps -aq --filter label=org.tapebox.test).
const Label = "org.tapebox.test"

var engine struct {
	once sync.Once
	cli  *client.Client
	err  error
}

// Required reports whether TAPEBOX_REQUIRE_DOCKER=1 is set.
func Required() bool { return os.Getenv(RequireEnv) == "1" }

// skipOrFail skips tb, or fails it when Docker is required.
func skipOrFail(tb testing.TB, format string, args ...any) {
	tb.Helper()
	msg := fmt.Sprintf(format, args...)
	if Required() {
		tb.Fatalf("%s (%s=1: Docker tests must run)", msg, RequireEnv)
	}
	tb.Skipf("%s (set %s=1 to make this a failure)", msg, RequireEnv)
}

// Client returns a client for the Docker engine named by the environment (DOCKER_HOST, else
// the default socket), with API version negotiation. It skips tb when no engine answers, or
// fails it when TAPEBOX_REQUIRE_DOCKER=1. The client is shared by the whole test binary; do
// not close it.
func Client(tb testing.TB) *client.Client {
	tb.Helper()
	engine.once.Do(func() {
		cli, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
		if err != nil {
			engine.err = fmt.Errorf("create Docker client: %w", err)
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if _, err := cli.Ping(ctx); err != nil {
			cli.Close()
			engine.err = fmt.Errorf("ping the Docker engine at %s: %w", cli.DaemonHost(), err)
			return
		}
		cli.NegotiateAPIVersion(ctx)
		engine.cli = cli
	})
	if engine.err != nil {
		skipOrFail(tb, "no Docker engine reachable: %v; start one (sudo scripts/ci-setup.sh, or dockerd &) or set DOCKER_HOST", engine.err)
	}
	return engine.cli
}

// Image returns ref after checking that the image exists locally, with the client. It skips
// or fails tb (see Client) when the engine or the image is missing, saying how to build it.
func Image(tb testing.TB, ref string) (*client.Client, string) {
	tb.Helper()
	cli := Client(tb)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := cli.ImageInspect(ctx, ref); err != nil {
		hint := "build or load it (docker import / docker load); nothing is pulled"
		if ref == SandboxImage || ref == TinyImage {
			hint = "build it from Debian packages with: make sandbox-image"
		}
		if errdefs.IsNotFound(err) {
			skipOrFail(tb, "image %s not found: %s", ref, hint)
		}
		skipOrFail(tb, "inspect image %s: %v; %s", ref, err, hint)
	}
	return cli, ref
}

// Run creates and starts a container from image (which must exist) running cmd, and removes
// it when the test ends. With no cmd it runs "sleep infinity" so that tests can exec into it.
// It returns the container's ID and name.
func Run(tb testing.TB, image string, cmd ...string) (id, name string) {
	tb.Helper()
	cli, _ := Image(tb, image)
	if len(cmd) == 0 {
		cmd = []string{"sleep", "infinity"}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	name = "tapebox-test-" + randomHex(6)
	init := true
	created, err := cli.ContainerCreate(ctx,
		&container.Config{Image: image, Cmd: cmd, Labels: map[string]string{Label: tb.Name()}},
		&container.HostConfig{NetworkMode: "none", Init: &init}, nil, nil, name)
	if err != nil {
		tb.Fatalf("create a container from %s: %v", image, err)
	}
	tb.Cleanup(func() { Remove(tb, created.ID) })
	if err := cli.ContainerStart(ctx, created.ID, container.StartOptions{}); err != nil {
		tb.Fatalf("start container %s from %s: %v", name, image, err)
	}
	return created.ID, name
}

// Remove force-removes a container and its anonymous volumes; a container already gone is
// not an error.
func Remove(tb testing.TB, id string) {
	tb.Helper()
	cli := Client(tb)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err := cli.ContainerRemove(ctx, id, container.RemoveOptions{Force: true, RemoveVolumes: true})
	if err != nil && !errdefs.IsNotFound(err) {
		tb.Errorf("remove container %s: %v", id, err)
	}
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// ReadStdout reads an exec's multiplexed stream frames (an 8-byte header: stream, 3 zero
// bytes, big-endian size; then the payload) until n bytes of stdout have arrived.
func ReadStdout(r *bufio.Reader, n int) error {
	var hdr [8]byte
	for got := 0; got < n; {
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			return err
		}
		size := int(binary.BigEndian.Uint32(hdr[4:]))
		if _, err := r.Discard(size); err != nil {
			return err
		}
		if hdr[0] == 1 {
			got += size
		}
	}
	return nil
}
